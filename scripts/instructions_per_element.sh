#!/usr/bin/env bash
# Instructions per element of ApplyAdamD and SGD (momentum) for fp32, fp16 and bf16, counted by
# callgrind (valgrind) on one thread. Valgrind does not run AVX-512, so the AVX2 target is used.
#   bash scripts/instructions_per_element.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
exe="$build/bench/instructions_per_element"
[ -x "$exe" ] || { echo "build $exe first (bash scripts/build.sh)"; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '%-6s %-11s %s\n' dtype op "instructions/element (AVX2, 1 thread)"
for dtype in fp32 fp16 bf16; do
  for op in adam sgd; do
    MANTISSA_SIMD_TARGET=AVX2 MANTISSA_NUM_THREADS=1 valgrind --tool=callgrind \
      --callgrind-out-file="$tmp/out" "$exe" "$dtype" "$op" >/dev/null 2>&1
    count="$(callgrind_annotate --inclusive=yes "$tmp/out" 2>/dev/null |
             grep -E 'mantissa::(apply_adam_d|sgd)\(' | head -n 1 | awk '{print $1}' | tr -d ,)"
    name=$([ "$op" = adam ] && echo ApplyAdamD || echo SGD)
    awk -v c="$count" -v d="$dtype" -v o="$name" \
      'BEGIN { printf "%-6s %-11s %.2f\n", d, o, c / (10 * 65536) }'
  done
done
