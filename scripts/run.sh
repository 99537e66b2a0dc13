#!/usr/bin/env bash
# The main job: install what is missing, build, show the machine, run the sample programs, train
# the digits MLP in every precision mode side by side, and check every operator against its
# independent golden with the shipped case sets.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"

bash "$root/scripts/install-deps.sh"
BUILD_DIR="$build_dir" bash "$root/scripts/build.sh" -DMANTISSA_BUILD_TESTS=OFF

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

if "$build_dir/mantissa" check --help >/dev/null 2>&1; then
  echo "== mantissa check (every shipped case set)"
  "$build_dir/mantissa" check --case-dir "$root/cases" --backend all --json "$build_dir/check-report.json"
fi
