#!/usr/bin/env bash
# The main job: install what is missing (the "main" group of scripts/install-deps.sh), build the
# library, the tool and the sample programs, show the machine, run the sample programs, train the
# digits MLP in every precision mode side by side, and check every operator against its
# independent golden with the shipped case sets (one line per operator; every row in the JSON).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
start=$(date +%s)

bash "$root/scripts/install-deps.sh" main
BUILD_DIR="$build_dir" bash "$root/scripts/build.sh" -DMANTISSA_BUILD_TESTS=OFF \
  -DMANTISSA_BUILD_BENCH=OFF -DMANTISSA_BUILD_PYTHON=OFF

echo "== mantissa info"
"$build_dir/mantissa" info

for example in "$build_dir"/examples/*; do
  [ -x "$example" ] && [ -f "$example" ] || continue
  echo "== example $(basename "$example")"
  "$example"
done

echo "== mantissa train --compare (digits set, 30 epochs, every precision mode)"
"$build_dir/mantissa" train --compare --epochs 30 --log "$build_dir/train-run.jsonl" \
  --csv "$build_dir/train-run.csv" --plot "$build_dir/train-curves.svg"

echo "== mantissa check (every shipped case set, every entry point)"
"$build_dir/mantissa" check --case-dir "$root/cases" --backend all \
  --json "$build_dir/check-report.json"
echo "every row: $build_dir/check-report.json (or mantissa check ... --rows)"
echo "== main job done in $(( $(date +%s) - start )) s"
