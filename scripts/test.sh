#!/usr/bin/env bash
# The test suite: install what is missing, build with warnings as errors and run every test
# (the exhaustive sweeps included); then build again with AddressSanitizer and
# UndefinedBehaviorSanitizer and run every test but the exhaustive sweeps; with MANTISSA_FUZZ=1,
# then build the libFuzzer targets with clang and run each for a bounded time (scripts/fuzz.sh).
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
  # the per-target kernel copies.
  BUILD_DIR="$root/build-asan" BUILD_TYPE=RelWithDebInfo bash "$root/scripts/build.sh" \
    -DMANTISSA_WERROR=ON -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE exhaustive
fi

# The libFuzzer targets need their own clang build of the library with ASan, UBSan and coverage;
# on 2 cores that build alone takes longer than the rest of the suite, so it is opt-in here
# (MANTISSA_FUZZ=1) and run on its own with scripts/fuzz.sh.
if [ "${MANTISSA_FUZZ:-0}" = "1" ]; then
  echo "== libFuzzer targets (clang, ASan + UBSan), ${MANTISSA_FUZZ_SECONDS:-20} s each"
  bash "$root/scripts/fuzz.sh" "${MANTISSA_FUZZ_SECONDS:-20}"
fi
