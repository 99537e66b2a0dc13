#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan (in BUILD_DIR, default build-fuzz) and
# runs each for SECONDS seconds (default 20) on its corpus (fuzz/corpus/<target>, checked in;
# new inputs the run finds go to BUILD_DIR/corpus/<target>, not into the source tree).
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
# A long run: bash scripts/fuzz.sh 3600. Exit status: non-zero when a target crashes (its
# reproducer is left in BUILD_DIR/crashes/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-20}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_case_file fuzz_loaders fuzz_c_api)

# Kernels for the baseline SIMD target only (HWY_COMPILE_ONLY_STATIC), and compiled without
# sanitizer and coverage instrumentation (fuzz/kernels.ignorelist, applied by CMakeLists.txt): the
# targets exercise validation, parsing and the C layer, which do not differ between SIMD targets;
# an instrumented kernel file took minutes to compile, an uninstrumented one seconds.
CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DHWY_COMPILE_ONLY_STATIC=1" \
  -DMANTISSA_SANITIZE=address,undefined \
  -DMANTISSA_BUILD_FUZZERS=ON -DMANTISSA_BUILD_TESTS=OFF -DMANTISSA_BUILD_BENCH=OFF \
  -DMANTISSA_BUILD_EXAMPLES=OFF -DMANTISSA_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

# The targets run side by side (each for SECONDS), their reports printed in order afterwards.
status=0
mkdir -p "$build_dir/crashes"
pids=()
for t in "${targets[@]}"; do
  work="$build_dir/corpus/$t"
  mkdir -p "$work"
  echo "== $t: ${seconds} s"
  # -rss_limit_mb and -malloc_limit_mb: a call that asks for more memory is a finding too.
  "$build_dir/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=4096 -timeout=10 -artifact_prefix="$build_dir/crashes/$t-" -print_final_stats=1 \
    "$work" "$root/fuzz/corpus/$t" >"$build_dir/$t.log" 2>&1 &
  pids+=($!)
done
for i in "${!targets[@]}"; do
  t="${targets[$i]}"
  log="$build_dir/$t.log"
  if ! wait "${pids[$i]}"; then
    echo "FAIL: $t found a crash (see $log and $build_dir/crashes/)" >&2
    tail -30 "$log" >&2
    status=1
  fi
  echo "== $t:"
  grep -E "stat::number_of_executed_units|stat::new_units_added|cov: " "$log" | tail -3 || true
done
exit $status
