#!/usr/bin/env bash
# `pip install ./python` into a venv, offline, with Debian's pip and setuptools, packaging this
# build as it is (MANTISSA_BUILD_DIR: nothing is rebuilt): imported from elsewhere, the package is
# the venv's and loads the venv's libmantissa, an operator runs, `python -m mantissa info` prints
# what the build's `mantissa info` prints, and `pip uninstall` removes every file it installed.
# Registered only where the module is built.
set -euo pipefail
src="${MANTISSA_SOURCE_DIR:?MANTISSA_SOURCE_DIR must name the source directory}"
bin="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}"
python=/usr/bin/python3  # Debian's interpreter: the module is built against it
unset PYTHONPATH         # the package must come from the venv, not a build tree
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1  # offline: nothing is downloaded

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
work="$(cd "$work" && pwd -P)"  # the real path, as /proc/self/maps shows it

# pip builds in the directory it is given (python/build, python/*.egg-info): it gets a copy of
# python/, so the test writes nothing into the source tree (setup.py takes the version and the
# sources to compare from the build's CMakeCache.txt).
tar -C "$src" --exclude=python/build --exclude=python/dist --exclude='*.egg-info' \
  --exclude=__pycache__ -cf - python | tar -C "$work" -xf -

# The venv sees Debian's numpy (--system-site-packages). Its own pip comes from Debian's
# python3-venv; without that package, Debian's python3-pip runs inside the venv (and installs
# into it all the same).
venv="$work/venv"
if "$python" -c "import ensurepip" 2>/dev/null; then
  "$python" -m venv --system-site-packages "$venv"
else
  "$python" -m venv --system-site-packages --without-pip "$venv"
fi
pip=("$venv/bin/python" -m pip)
"${pip[@]}" --version

cd "$work"
MANTISSA_BUILD_DIR="$bin" "${pip[@]}" install --quiet ./python

cd "$(mktemp -d -p "$work")"  # not next to the copy of python/
"$venv/bin/python" - "$venv" <<'PY'
import sys
import numpy as np
import mantissa
venv = sys.argv[1]
assert mantissa.__file__.startswith(venv + "/"), mantissa.__file__
libs = [line.split()[-1] for line in open("/proc/self/maps") if "libmantissa.so" in line]
assert libs and all(path.startswith(venv + "/") for path in libs), libs
scale, tracker = np.array([4.0], np.float32), np.array([0], np.int32)
mantissa.amp_update_scale(scale, tracker, np.array([1.0], np.float32))
assert scale[0] == 2.0
print("venv package:", mantissa.__file__, "library:", libs[0])
PY
diff <("$venv/bin/python" -m mantissa info) <("$bin/mantissa" info)
echo "python -m mantissa info: the same text as mantissa info"
"$venv/bin/python" -m mantissa --help | grep -q "info"
rc=0
"$venv/bin/python" -m mantissa 2>/dev/null || rc=$?
[[ $rc == 2 ]] || { echo "python -m mantissa without a command: status $rc, expected 2"; exit 1; }

"${pip[@]}" uninstall --yes --quiet mantissa
left="$(find "$venv/lib" -name '*mantissa*')"
[[ -z "$left" ]] || { echo "left after pip uninstall: $left"; exit 1; }
echo "pip uninstall: no file left"
