#!/usr/bin/env python3
"""The exhaustive sweeps (ctest label "exhaustive"), run when the code they cover has changed.

Each sweep of tests/exhaustive.json gets a digest (SHA-256) of everything its verdict depends on:
  - the test's own object and the objects of the library sources the sweep "covers", with every
    file each of them was compiled from (ninja's dependency records: sources, project headers,
    Highway's and the standard library's headers);
  - those objects' compile commands, the compiler's --version, the test's ctest command line;
  - the other files the sweep names (case files);
  - this CPU's SIMD targets (`mantissa info`): a sweep recorded on another CPU runs again.
A sweep keeps one recorded pass per set of SIMD targets ("passed": {targets: digest}), so hosts
of two CPU kinds (say AVX3_BF16 and AVX3) each skip what they have passed; recording on one
kind replaces that kind's entry only.
Paths inside the source and build trees are taken relative to them, so a clean clone anywhere
gives the same digest.

  scripts/exhaustive.py --build DIR            run each sweep whose digest differs from the one
                                               recorded at its last pass; list the others
  scripts/exhaustive.py --build DIR --all      run every sweep
  scripts/exhaustive.py --build DIR --record   as the default (or with --all), then write the
                                               digests of the sweeps that passed into
                                               tests/exhaustive.json (commit it)
  scripts/exhaustive.py --build DIR --list     digests and what would run; runs nothing

Exit status: 0 when every sweep that ran passed, 1 otherwise, 2 on a usage or build problem.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "tests", "exhaustive.json")


def fail(message):
    print(f"exhaustive: {message}", file=sys.stderr)
    sys.exit(2)


def run(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def normalise(text, build):
    """Source and build paths made relative, so digests do not depend on where the clone is."""
    return text.replace(build, "<build>").replace(ROOT, "<source>")


def ninja_deps(build):
    """{object: [files it was compiled from]} from ninja's dependency log."""
    deps, current = {}, None
    for line in run(["ninja", "-C", build, "-t", "deps"]).splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = line.split(":", 1)[0]
            deps[current] = []
        elif current is not None:
            deps[current].append(line.strip())
    return deps


def compile_commands(build):
    """{object: normalised compile command} from ninja's compilation database."""
    out = {}
    for entry in json.loads(run(["ninja", "-C", build, "-t", "compdb"])):
        command = entry.get("command") or " ".join(entry.get("arguments", []))
        if command:
            out[entry["output"]] = normalise(command, build)
    return out


def ctest_commands(build):
    """{test name: normalised command line} from ctest."""
    info = json.loads(run(["ctest", "--test-dir", build, "--show-only=json-v1"]))
    return {t["name"]: normalise(" ".join(t.get("command", [])), build) for t in info["tests"]}


def recorded_passes(sweep):
    """The sweep's recorded passes, {SIMD targets: digest}."""
    passed = sweep.get("passed", {})
    if not isinstance(passed, dict):
        fail("tests/exhaustive.json: 'passed' must map SIMD targets to a digest")
    return passed


def simd_targets(build):
    tool = os.path.join(build, "mantissa")
    for line in run([tool, "info"]).splitlines():
        if line.startswith("available targets:"):
            return line.split(":", 1)[1].split()
    fail(f"{tool} info printed no 'available targets' line")


def absolute(path, build):
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(build, path))


def file_digest(path, build, cache):
    """A file's SHA-256; files the build generated (unity batches, the precompiled header's
    include list) name the source tree by its absolute path, so they are hashed normalised."""
    if path not in cache:
        with open(path, "rb") as f:
            data = f.read()
        if path.startswith(build + os.sep):
            data = normalise(data.decode(errors="replace"), build).encode()
        cache[path] = hashlib.sha256(data).hexdigest()
    return cache[path]


def sweep_digest(name, covers, ctx):
    """The digest of one sweep, and how many files went into it."""
    build, deps, commands, tests = ctx["build"], ctx["deps"], ctx["commands"], ctx["tests"]
    if name not in tests:
        fail(f"{name} is in tests/exhaustive.json but ctest has no such test")
    command = tests[name]
    executable = os.path.basename(command.split()[0])
    objects = [o for o in deps if re.search(rf"/{re.escape(executable)}\.dir/", o)]
    files = set()
    for pattern in covers:
        matched = sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
        if not matched:
            fail(f"{name}: '{pattern}' matches no file")
        for path in matched:
            # The objects compiled from it: its own, or the unity batch that includes it.
            built = ctx["compiled_from"].get(path, [])
            if path.endswith(".cc") and built:
                objects.extend(built)
            else:
                files.add(path)  # data, or a source this configuration does not build
    if not objects or not any(f"/{executable}.dir/" in o for o in objects):
        fail(f"{name}: no dependency record for {executable} (build it first)")
    h = hashlib.sha256()
    h.update(f"test {name}: {command}\ncompiler {ctx['compiler']}\ntargets {ctx['targets']}\n"
             .encode())
    pending, seen = sorted(set(objects)), set()
    while pending:
        obj = pending.pop()
        if obj in seen:
            continue
        seen.add(obj)
        h.update(f"object {obj}: {commands.get(obj, '')}\n".encode())
        for d in deps[obj]:
            rel = os.path.relpath(absolute(d, build), build)
            if rel in deps:  # a precompiled header: the files it was built from instead
                pending.append(rel)
            else:
                files.add(absolute(d, build))
    # In the order of the normalised paths: the same in every clone.
    for path in sorted(files, key=lambda p: normalise(p, build)):
        if path.endswith((".gch", ".pch")):
            continue  # not reproducible byte for byte; its sources are in `files`
        digest = file_digest(path, build, ctx["cache"])
        h.update(f"file {normalise(path, build)} {digest}\n".encode())
    return h.hexdigest(), len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="a built Ninja tree with the tests")
    ap.add_argument("--all", action="store_true", help="run every sweep")
    ap.add_argument("--record", action="store_true", help="record the digests of passing sweeps")
    ap.add_argument("--list", action="store_true", help="print digests and decisions only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="ctest -j")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "build.ninja")):
        fail(f"{build} is not a Ninja build tree")
    with open(MANIFEST) as f:
        manifest = json.load(f)
    sweeps = manifest["sweeps"]

    deps = ninja_deps(build)
    commands = compile_commands(build)
    compilers = {c.split()[0] for o, c in commands.items() if o.endswith(".o")}
    compiler = "; ".join(run([c, "--version"]).splitlines()[0] for c in sorted(compilers))
    compiled_from = {}
    for obj, files in deps.items():
        for f in files:
            if f.endswith(".cc"):
                compiled_from.setdefault(absolute(f, build), []).append(obj)
    ctx = dict(build=build, deps=deps, commands=commands, tests=ctest_commands(build),
               compiled_from=compiled_from,
               compiler=compiler, targets=" ".join(simd_targets(build)), cache={})
    labelled = {n for n in ctx["tests"] if n.endswith("_exhaustive")}
    missing = sorted(labelled - set(sweeps))
    if missing:
        fail(f"tests/exhaustive.json does not list {', '.join(missing)}: add what each covers")

    print(f"exhaustive sweeps: SIMD targets {ctx['targets']}; {compiler}")
    print(f"{'sweep':<40} {'files':>5}  {'digest':<12}  decision")
    digests, to_run = {}, []
    for name in sorted(sweeps):
        digest, nfiles = sweep_digest(name, sweeps[name]["covers"], ctx)
        digests[name] = digest
        recorded = recorded_passes(sweeps[name])
        if args.all:
            decision = "run (--all)"
        elif digest in recorded.values():
            decision = "unchanged since its recorded pass: not run"
        else:
            decision = "changed since its recorded pass: run" if recorded else "never recorded: run"
        if decision.startswith(("run", "changed", "never")):
            to_run.append(name)
        print(f"{name:<40} {nfiles:>5}  {digest[:12]}  {decision}")
    if args.list or not to_run:
        return 0

    start = time.time()
    pattern = "^(" + "|".join(re.escape(n) for n in to_run) + ")$"
    junit = os.path.join(build, "exhaustive-results.xml")
    rc = subprocess.run(["ctest", "--test-dir", build, "--output-on-failure", "-j",
                         str(args.jobs), "-R", pattern, "--output-junit", junit]).returncode
    passed = set()
    if os.path.exists(junit):
        for m in re.finditer(r'<testcase name="([^"]+)"[^>]*status="run"', open(junit).read()):
            passed.add(m.group(1))
    failed = [n for n in to_run if n not in passed]
    print(f"exhaustive sweeps: {len(to_run) - len(failed)} of {len(to_run)} passed in "
          f"{time.time() - start:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    if args.record:
        for name in to_run:
            if name in passed:
                sweeps[name]["passed"] = {**recorded_passes(sweeps[name]),
                                          ctx["targets"]: digests[name]}
        with open(MANIFEST, "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        print(f"recorded the digests of {len([n for n in to_run if n in passed])} sweeps in "
              "tests/exhaustive.json")
    elif not failed:
        print("(the digests above are not recorded: scripts/exhaustive.py --record, then commit "
              "tests/exhaustive.json)")
    return 0 if rc == 0 and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
