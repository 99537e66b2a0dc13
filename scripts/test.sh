#!/usr/bin/env bash
# The test suite, in stages; with no argument every stage runs, in this order:
#   release     install what is missing (groups main and test of scripts/install-deps.sh), build
#               everything with warnings as errors (build-test/) and run every test but the
#               exhaustive sweeps; every SIMD target's bits are compared there
#   exhaustive  the exhaustive sweeps (ctest label "exhaustive") whose code has changed since
#               their recorded pass (scripts/exhaustive.py; tests/exhaustive.json); needs release.
#               MANTISSA_EXHAUSTIVE=all runs every sweep
#   asan        AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/): every test but
#               the exhaustive sweeps and the mpirun tests (label mpi: Open MPI's own allocations
#               would read as leaks; the data-parallel trainer is covered by
#               test_train_distributed, which needs no MPI); the declarations that must not
#               compile are not registered there (they run the compiler, not the build's code)
#   tsan        ThreadSanitizer build of the library and the concurrency stress test (label
#               "stress")
#   fuzz        the libFuzzer targets built with clang, each run for MANTISSA_FUZZ_SECONDS (20)
#   bash scripts/test.sh [STAGE...]
# At the end, a table of each stage's time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(release exhaustive asan tsan fuzz)

timings=()
timed() {  # timed NAME COMMAND...: runs the command and records its wall time
  local name="$1" t0
  shift
  t0=$(date +%s)
  "$@"
  timings+=("$(printf '%-34s %6d s' "$name" $(( $(date +%s) - t0 )))")
}

release() {
  echo "== Release build, warnings as errors"
  timed "release: build" env BUILD_DIR="$root/build-test" bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON
  echo "== Release tests (the exhaustive sweeps: next stage)"
  timed "release: tests" ctest --test-dir "$root/build-test" --output-on-failure -j "$jobs" \
    -LE exhaustive
}

exhaustive() {
  echo "== Exhaustive sweeps whose code changed since their recorded pass"
  local args=()
  [ "${MANTISSA_EXHAUSTIVE:-}" != "all" ] || args+=(--all)
  timed "exhaustive sweeps" python3 "$root/scripts/exhaustive.py" --build "$root/build-test" \
    "${args[@]}"
}

asan() {
  echo "== ASan + UBSan build (exhaustive sweeps left out)"
  # -Og with line tables: GCC's level for debugging builds (the sanitizers check the same). Under
  # the sanitizers it compiles the library in under three quarters of the CPU time -O1 takes
  # (the reduction kernels: 38 s against 179 s), and the tests run about a sixth longer; -O1
  # made this the longest stage of the suite. (ThreadSanitizer keeps -O1: there -Og built no
  # faster and the stress test ran half as long again.) Two SIMD targets: SCALAR (one lane) and
  # the widest vector target this CPU runs (AVX3, 16 fp32 lanes, with AVX-512; else AVX2, 8), so
  # the kernels' loads and tails are checked at one lane and at a full vector; the Release stage
  # compares the bits of every target. The benchmarks and the exhaustive sweeps are not built
  # (the Release stage compiles them).
  local disabled="SSSE3;SSE4;AVX2"
  grep -qw avx512f /proc/cpuinfo || disabled="SSSE3;SSE4;AVX3"
  timed "asan: build" env BUILD_DIR="$root/build-asan" BUILD_TYPE=RelWithDebInfo \
    bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_BENCH=OFF \
    -DMANTISSA_DISABLED_SIMD_TARGETS="$disabled" -DMANTISSA_BUILD_EXHAUSTIVE=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG"
  echo "== ASan + UBSan tests"
  timed "asan: tests" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE "exhaustive|mpi"
}

tsan() {
  echo "== ThreadSanitizer build (library and the concurrency stress test)"
  # Lean: -O1, the stress test only, kernels for the baseline SIMD target only (the pool, the
  # registries and the chunking are the same on every target; ASan covers every target).
  # halt_on_error and exitcode: any report fails the stage.
  timed "tsan: build" env BUILD_DIR="$root/build-tsan" BUILD_TYPE=RelWithDebInfo \
    BUILD_TARGETS=test_concurrency bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON -DMANTISSA_SANITIZE=thread -DMANTISSA_BUILD_BENCH=OFF \
    -DMANTISSA_BUILD_EXAMPLES=OFF -DMANTISSA_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG -DHWY_COMPILE_ONLY_STATIC=1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  timed "tsan: stress test" env TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1" \
    ctest --test-dir "$root/build-tsan" --output-on-failure -L stress
}

fuzz() {
  # The libFuzzer targets: their own clang build (ASan, UBSan, coverage; the SIMD kernels left
  # uninstrumented, fuzz/kernels.ignorelist), then each target for a bounded time.
  echo "== libFuzzer targets (clang, ASan + UBSan), ${MANTISSA_FUZZ_SECONDS:-20} s each"
  timed "fuzz: build and run" bash "$root/scripts/fuzz.sh" "${MANTISSA_FUZZ_SECONDS:-20}"
}

total0=$(date +%s)
timed "install-deps (main, test)" bash "$root/scripts/install-deps.sh" main test
for stage in "${stages[@]}"; do
  case "$stage" in
    release | exhaustive | asan | tsan | fuzz) "$stage" ;;
    *) echo "test.sh: unknown stage '$stage' (release, exhaustive, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done
echo "== stage times"
printf '%s\n' "${timings[@]}"
printf '%-34s %6d s\n' "total" $(( $(date +%s) - total0 ))
