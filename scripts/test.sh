#!/usr/bin/env bash
# The test suite: install what is missing, build with warnings as errors and run every test
# (the exhaustive sweeps included); then build again with AddressSanitizer and
# UndefinedBehaviorSanitizer and run every test but the exhaustive sweeps and the mpirun tests
# (label mpi: Open MPI's own allocations would read as leaks; the data-parallel trainer itself is
# covered there by test_train_distributed, which needs no MPI); then a lean ThreadSanitizer build
# of the library and the concurrency stress test (label "stress"); then build the libFuzzer
# targets with clang and run each for a bounded time (scripts/fuzz.sh).
#   MANTISSA_SKIP_SANITIZERS=1  leave out the ASan and TSan stages
#   MANTISSA_FUZZ=0             leave out the fuzzers; MANTISSA_FUZZ_SECONDS: time each (20)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

bash "$root/scripts/install-deps.sh"

echo "== Release build, warnings as errors"
BUILD_DIR="$root/build-test" bash "$root/scripts/build.sh" -DMANTISSA_WERROR=ON
ctest --test-dir "$root/build-test" --output-on-failure -j "$jobs"

if [ "${MANTISSA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== ASan + UBSan build (exhaustive sweeps left out)"
  # -O1 with line tables: the usual sanitizer setting, and half the compile time of -O2 -g for
  # the per-target kernel copies. SSSE3 and SSE4 are left out (HWY_DISABLED_TARGETS = their bits,
  # 1<<12 | 1<<11): the kernels' loads and tails are checked at 1 (SCALAR), 8 (AVX2) and 16 (AVX3)
  # lanes, and the Release stage compares every target's bits.
  BUILD_DIR="$root/build-asan" BUILD_TYPE=RelWithDebInfo bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG -DHWY_DISABLED_TARGETS=6144" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE "exhaustive|mpi"
fi

if [ "${MANTISSA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== ThreadSanitizer build (library and the concurrency stress test)"
  # Lean: -O1, the stress test only, kernels for the baseline SIMD target only (the pool, the
  # registries and the chunking are the same on every target; ASan covers every target).
  # halt_on_error and exitcode: any report fails the stage.
  BUILD_DIR="$root/build-tsan" BUILD_TYPE=RelWithDebInfo BUILD_TARGETS=test_concurrency \
    bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON -DMANTISSA_SANITIZE=thread -DMANTISSA_BUILD_BENCH=OFF \
    -DMANTISSA_BUILD_EXAMPLES=OFF -DMANTISSA_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG -DHWY_COMPILE_ONLY_STATIC=1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1" \
    ctest --test-dir "$root/build-tsan" --output-on-failure -L stress
fi

# The libFuzzer targets: their own clang build (ASan, UBSan, coverage; the SIMD kernels left
# uninstrumented, fuzz/kernels.ignorelist), then each target for a bounded time.
if [ "${MANTISSA_FUZZ:-1}" = "1" ]; then
  echo "== libFuzzer targets (clang, ASan + UBSan), ${MANTISSA_FUZZ_SECONDS:-20} s each"
  bash "$root/scripts/fuzz.sh" "${MANTISSA_FUZZ_SECONDS:-20}"
fi
