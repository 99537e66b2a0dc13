#!/usr/bin/env bash
# Instructions per element of ApplyAdamD and SGD (momentum) for fp32, fp16 and bf16 on one thread.
# First table: callgrind (valgrind) on the AVX2 target, since valgrind does not run AVX-512.
# Second table: every x86 SIMD target this CPU has from AVX3_BF16 down to AVX2, counted by
# single-stepping one call (bench/count_instructions; no hardware counters needed).
#   bash scripts/instructions_per_element.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
exe="$build/bench/instructions_per_element"
stepper="$build/bench/count_instructions"
[ -x "$exe" ] || { echo "build $exe first (bash scripts/build.sh)"; exit 1; }
elements=65536
name_of() { [ "$1" = adam ] && echo ApplyAdamD || echo SGD; }

if command -v valgrind >/dev/null; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  printf '%-6s %-11s %s\n' dtype op "instructions/element (callgrind, AVX2, 1 thread)"
  for dtype in fp32 fp16 bf16; do
    for op in adam sgd; do
      MANTISSA_SIMD_TARGET=AVX2 MANTISSA_NUM_THREADS=1 valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/out" "$exe" "$dtype" "$op" >/dev/null 2>&1
      count="$(callgrind_annotate --inclusive=yes "$tmp/out" 2>/dev/null |
               grep -E 'mantissa::(apply_adam_d|sgd)\(' | head -n 1 | awk '{print $1}' | tr -d ,)"
      awk -v c="$count" -v d="$dtype" -v o="$(name_of "$op")" -v n="$elements" \
        'BEGIN { printf "%-6s %-11s %.2f\n", d, o, c / (10 * n) }'
    done
  done
else
  echo "(valgrind not found: callgrind table skipped)"
fi

[ -x "$stepper" ] || { echo "(no $stepper: single-step table skipped)"; exit 0; }
available=" $("$build/mantissa" info | sed -n 's/^available targets: *//p') "
targets=()
for t in AVX3_BF16 AVX3 AVX2; do
  [[ "$available" == *" $t "* ]] && targets+=("$t")
done
echo
printf '%-6s %-11s' dtype op
for t in "${targets[@]}"; do printf ' %10s' "$t"; done
echo "   (instructions/element, single-stepped, 1 thread)"
for dtype in fp32 fp16 bf16; do
  for op in adam sgd; do
    printf '%-6s %-11s' "$dtype" "$(name_of "$op")"
    for t in "${targets[@]}"; do
      count="$(MANTISSA_SIMD_TARGET="$t" MANTISSA_NUM_THREADS=1 "$stepper" "$exe" "$dtype" "$op" \
               --markers)"
      awk -v c="$count" -v n="$elements" 'BEGIN { printf " %10.2f", c / n }'
    done
    echo
  done
done
