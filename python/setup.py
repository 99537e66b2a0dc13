"""`pip install ./python`: builds the mantissa package through CMake and installs it.

setuptools with no pyproject.toml, so pip builds it with the setuptools already installed (no
isolated build environment to download). The extension's build step configures the repository
(one level up) in <setuptools build temp>/cmake (Release; tests, benchmarks, examples and fuzzers
off; warnings not errors), builds the target _mantissa (and libmantissa, which it links), and puts
into the package:

  - the package tree the CMake build lays out in <build>/python/mantissa/ (the .py files, their
    subpackages, the _mantissa extension);
  - libmantissa.so.<major> (the name the extension needs) next to the extension, whose RUNPATH
    becomes $ORIGIN (CMake's own ELF editor, `cmake -P` with file(RPATH_SET): no patchelf).

Environment:
  MANTISSA_CMAKE_ARGS    extra configure arguments (shell words), e.g. "-DMANTISSA_LLD=OFF"
  MANTISSA_BUILD_DIR     an existing CMake build directory with the Python module built: it is
                         packaged as it is (no configure, no build); the version comes from it
  CMAKE_BUILD_PARALLEL_LEVEL  parallel jobs (default: the number of CPUs)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent  # the repository: python/..

# Configure options for the package build; MANTISSA_CMAKE_ARGS comes after them and wins.
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DMANTISSA_BUILD_PYTHON=ON",
    "-DMANTISSA_BUILD_TESTS=OFF",
    "-DMANTISSA_BUILD_BENCH=OFF",
    "-DMANTISSA_BUILD_EXAMPLES=OFF",
    "-DMANTISSA_BUILD_FUZZERS=OFF",
    "-DMANTISSA_MPI=OFF",
    "-DMANTISSA_WERROR=OFF",
]

# Sets the RUNPATH of FILE to $ORIGIN (run by `cmake -P`). The build tree's RUNPATH (the build
# directory, padded by CMake to fit the install RUNPATH) has room for it.
RPATH_SCRIPT = 'file(RPATH_SET FILE "${FILE}" NEW_RPATH "$ORIGIN")\n'


def existing_build_dir():
    value = os.environ.get("MANTISSA_BUILD_DIR", "")
    return Path(value).resolve() if value else None


def cmake_cache(build_dir):
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        raise SystemExit(f"mantissa setup.py: {build_dir} has no CMakeCache.txt: not a build")
    entries = {}
    for line in cache.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line)
        if m:
            entries[m.group(1)] = m.group(2)
    return entries


def project_version():
    """The CMake project version: the packaged build's, or the source tree's project() line."""
    build_dir = existing_build_dir()
    if build_dir is not None:
        version = cmake_cache(build_dir).get("CMAKE_PROJECT_VERSION", "")
        if version:
            return version
    text = (SOURCE_ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(\s*mantissa\s+VERSION\s+([0-9][0-9.]*)", text)
    if not m:
        raise SystemExit(f"mantissa setup.py: no project(mantissa VERSION ...) in {SOURCE_ROOT}")
    return m.group(1)


def run(cmd, **kwargs):
    print("mantissa setup.py:", shlex.join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)


class CMakeBuild(build_ext):
    """Builds (or takes) the CMake build and copies its package tree into the setuptools one."""

    def build_extension(self, ext):
        if self.inplace:
            raise SystemExit(
                "mantissa setup.py: editable/in-place builds are not supported; use the build "
                "tree (PYTHONPATH=<build>/python) or a normal install"
            )
        build_dir = existing_build_dir()
        if build_dir is None:
            build_dir = Path(self.build_temp).resolve() / "cmake"
            self.configure_and_build(build_dir)
        else:
            print(f"mantissa setup.py: packaging the build {build_dir} (MANTISSA_BUILD_DIR)")
        self.package_build(build_dir, Path(self.get_ext_fullpath(ext.name)).resolve())

    def configure_and_build(self, build_dir):
        configure = ["cmake", "-S", SOURCE_ROOT, "-B", build_dir]
        if not (build_dir / "CMakeCache.txt").exists():  # a generator is chosen once
            if "CMAKE_GENERATOR" not in os.environ and shutil.which("ninja"):
                configure += ["-G", "Ninja"]
        # The interpreter running pip: the extension is built for it (its headers, its suffix).
        configure += CMAKE_OPTIONS + [f"-DPython3_EXECUTABLE={sys.executable}"]
        configure += shlex.split(os.environ.get("MANTISSA_CMAKE_ARGS", ""))
        run(configure)
        if not (build_dir / "python" / "mantissa" / "__init__.py").exists():
            raise SystemExit(
                "mantissa setup.py: CMake did not configure the Python module (see its output: "
                "pybind11 and the Python development files are needed, e.g. Debian's "
                "pybind11-dev python3-pybind11 python3-dev)"
            )
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        # _mantissa and what it links (libmantissa, the precision kit). Not "--target mantissa":
        # with Ninja that names the tool's executable (the file "mantissa"), not the library.
        run(["cmake", "--build", build_dir, "--target", "_mantissa", "-j", jobs])

    def package_build(self, build_dir, ext_path):
        package_src = build_dir / "python" / "mantissa"
        if not package_src.is_dir():
            raise SystemExit(
                f"mantissa setup.py: {package_src} does not exist: the build has no Python module"
            )
        # The build tree's package must match the sources it was built from (CMake copies the
        # .py files when it builds): a stale copy is refused rather than installed.
        source_dir = Path(cmake_cache(build_dir).get("CMAKE_HOME_DIRECTORY", SOURCE_ROOT))
        for source in sorted((source_dir / "python" / "mantissa").rglob("*.py")):
            built = package_src / source.relative_to(source_dir / "python" / "mantissa")
            if not built.is_file() or built.read_bytes() != source.read_bytes():
                raise SystemExit(
                    f"mantissa setup.py: {built} is missing or differs from {source}: the build "
                    f"is out of date (cmake --build {build_dir})"
                )
        if not (package_src / ext_path.name).is_file():
            found = sorted(p.name for p in package_src.glob("_mantissa*.so"))
            raise SystemExit(
                f"mantissa setup.py: {package_src} has no {ext_path.name} (this interpreter's "
                f"suffix {sysconfig.get_config_var('EXT_SUFFIX')}); found {found}: the build was "
                f"made for another Python (CMake's -DPython3_EXECUTABLE)"
            )
        # libmantissa.so.<major>: the SONAME link the build made, the name the extension needs.
        libs = [p for p in build_dir.glob("libmantissa.so.*") if re.fullmatch(r".*so\.\d+", p.name)]
        if len(libs) != 1:
            raise SystemExit(f"mantissa setup.py: not one libmantissa.so.<major> in {build_dir}")

        package_dst = ext_path.parent
        if package_dst.exists():
            shutil.rmtree(package_dst)  # files of an earlier build (build/lib*/mantissa) go
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(package_src, package_dst, ignore=ignore)
        shutil.copyfile(libs[0], package_dst / libs[0].name)  # the file, not the link
        os.chmod(package_dst / libs[0].name, 0o755)
        script = Path(self.build_temp).resolve() / "set_rpath_origin.cmake"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(RPATH_SCRIPT)
        run(["cmake", f"-DFILE={ext_path}", "-P", script])


setup(
    name="mantissa",
    version=project_version(),
    description="Bit-exact mixed-precision training operators for CPUs (CANN's operators): numpy "
    "and PyTorch CPU tensors in place; drop-in AdamW, Adam, SGD and GradScaler",
    python_requires=">=3.8",
    install_requires=["numpy"],  # torch is optional: mantissa.torch imports it on first use
    # The package is the tree the CMake build lays out (build_extension copies it whole).
    packages=[],
    py_modules=[],
    ext_modules=[Extension("mantissa._mantissa", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
