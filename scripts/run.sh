#!/usr/bin/env bash
# The main job: install what is missing (the "main" group of scripts/install-deps.sh), build the
# library, the tool and the sample programs, show the machine, check every operator against its
# independent golden with the shipped case sets (one line per operator; every row in the JSON),
# run the sample programs, and train the digits MLP, then the GPT on text, in its precision modes
# side by side.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
start=$(date +%s)

bash "$root/scripts/install-deps.sh" main
# Built for this machine: the kernels for the best vector target its CPU runs (AVX3 with AVX-512,
# else AVX2) and the SCALAR fallback, not for the x86 targets below that best one, which dispatch
# would never choose here; they were 37% of its compile time. Every target gives the same bits (the
# test suite compares them all), so the results below do not depend on it. MANTISSA_ALL_TARGETS=1,
# or scripts/build.sh, builds every target.
targets=(-DMANTISSA_DISABLED_SIMD_TARGETS=SSSE3)  # the default: every target
if [ "${MANTISSA_ALL_TARGETS:-0}" != 1 ] && [ "$(uname -m)" = x86_64 ]; then
  flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
  if [[ $flags == *" avx512f "* && $flags == *" avx512vl "* && $flags == *" avx512dq "* &&
        $flags == *" avx512bw "* ]]; then
    targets=(-DMANTISSA_DISABLED_SIMD_TARGETS="SSSE3;SSE4;AVX2")
  elif [[ $flags == *" avx2 "* && $flags == *" fma "* && $flags == *" f16c "* ]]; then
    targets=(-DMANTISSA_DISABLED_SIMD_TARGETS="SSSE3;SSE4;AVX3")
  fi
fi
BUILD_DIR="$build_dir" bash "$root/scripts/build.sh" -DMANTISSA_BUILD_TESTS=OFF \
  -DMANTISSA_BUILD_BENCH=OFF -DMANTISSA_BUILD_PYTHON=OFF "${targets[@]}"

echo "== mantissa info"
"$build_dir/mantissa" info

echo "== mantissa check (every shipped case set, through the kernels)"
"$build_dir/mantissa" check --case-dir "$root/cases" --backend kernel \
  --json "$build_dir/check-report.json"
echo "every row: $build_dir/check-report.json (or mantissa check ... --rows); --backend all adds"
echo "the aclnn and op-by-name entries (the sample programs below call them; the tests check all)"

# The sample programs: one line each here, their output in build/examples-output/.
echo "== sample programs (output in $build_dir/examples-output/)"
mkdir -p "$build_dir/examples-output"
ran=0
for example in "$build_dir"/examples/*; do
  [ -x "$example" ] && [ -f "$example" ] || continue
  name=$(basename "$example")
  if ! "$example" > "$build_dir/examples-output/$name.txt" 2>&1; then
    cat "$build_dir/examples-output/$name.txt"
    echo "example $name failed" >&2
    exit 1
  fi
  ran=$((ran + 1))
done
echo "$ran sample programs ran, each exited 0"

# The per-epoch lines go to the JSONL log; the terminal shows each mode's result and the table.
echo "== mantissa train --compare (digits set, 30 epochs, every precision mode)"
"$build_dir/mantissa" train --compare --epochs 30 --log "$build_dir/train-run.jsonl" \
  --csv "$build_dir/train-run.csv" --plot "$build_dir/train-curves.svg" |
  grep -v -E '^[a-z0-9-]+ +epoch +[0-9]+ '
echo "every epoch: $build_dir/train-run.jsonl, $build_dir/train-run.csv; curves: $build_dir/train-curves.svg"

# The GPT on the default corpus (Debian's fortunes): its seven precision modes side by side (the
# FP8 and MX modes, `--compare` or `--precision fp8-delayed,mxfp8,...`, take 2-5x a mode's time
# and do not fit the main job's budget). The per-step lines go to the JSONL log, the terminal
# shows each mode's result and the table.
modes=fp32,fp16-amp,bf16-amp,bf16-pure,bf16-kahan,bf16-sr,fp16-noscale
echo "== mantissa train --model gpt --precision $modes (the fortunes corpus, 150 steps)"
"$build_dir/mantissa" train --model gpt --precision "$modes" --steps 150 \
  --log "$build_dir/gpt-run.jsonl" --plot "$build_dir/gpt-curves.svg" |
  grep -v -E '^[a-z0-9-]+ +step +[0-9]+ '
echo "every step and evaluation: $build_dir/gpt-run.jsonl; curves: $build_dir/gpt-curves.svg"
echo "== main job done in $(( $(date +%s) - start )) s"
