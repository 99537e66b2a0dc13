#!/usr/bin/env bash
# mantissa train --policy, --sensitivity, --tradeoff end to end: invalid policy files refused
# with exit status 2, a message naming the key and value, and nothing written; the checked-in
# seed policy equals the seed preset bit for bit; the sensitivity and trade-off outputs, and the
# suggested policy passed back with --policy.
set -euo pipefail
tool="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/mantissa"
src="${MANTISSA_SOURCE_DIR:?MANTISSA_SOURCE_DIR must name the source directory}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
small=(--data synthetic:200 --hidden 16,16 --batch-size 32 --seed 2)

# ---- Refusals: exit 2, the key and value named, no log written, no training.
refused() {  # refused NAME CONTENT EXPECTED-TEXT
  printf '%s' "$2" > "$work/$1.json"
  set +e
  "$tool" train "${small[@]}" --epochs 1 --policy "$work/$1.json" --log "$work/$1.jsonl" \
    > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$1: exit status $rc, expected 2"
  grep -qF "$3" "$work/err.txt" || { cat "$work/err.txt"; fail "$1: message"; }
  [ ! -e "$work/$1.jsonl" ] || fail "$1: the log was written"
  ! grep -q "epoch" "$work/out.txt" || fail "$1: training started"
}
refused unknown_key '{"layers": {}, "precision": "bf16"}' "unknown key 'precision'"
refused unknown_layer '{"layers": {"linear7": {"compute": "bf16"}}}' "layers.linear7: no such layer"
refused bad_dtype '{"default": {"compute": "half"}}' "default.compute: unknown dtype 'half'"
refused bad_update '{"layers": {"linear0": {"compute": "fp16", "update": "kahan"}}}' \
  "update 'kahan' keeps bf16 weights and needs compute 'bf16', got 'fp16'"
refused not_json '{"default": ' "not JSON"
set +e
"$tool" train "${small[@]}" --epochs 1 --policy preset:bf16-pure > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "unknown preset 'bf16-pure'" "$work/err.txt" || fail "unknown preset"
# Policies run in one process: with shards they are refused before anything trains.
set +e
"$tool" train "${small[@]}" --epochs 1 --policy preset:seed --shards 2 > "$work/out.txt" \
  2> "$work/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "without shards" "$work/err.txt" || fail "policy with shards: $rc"
! grep -q "epoch" "$work/out.txt" || fail "policy with shards: training started"

# ---- The checked-in seed policy, the preset and the fp32 mode next to a policy.
"$tool" train "${small[@]}" --epochs 2 --precision fp32 --policy preset:seed \
  --policy "$src/examples/policies/seed.json" --policy preset:fp32 --log "$work/runs.jsonl" \
  > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "policy runs"; }
digests() { grep '"event":"final"' "$1" | sed 's/.*"digest":"\([0-9a-f]*\)".*/\1/'; }
mapfile -t d < <(digests "$work/runs.jsonl")
[ "${#d[@]}" -eq 4 ] || fail "expected 4 final records"
[ "${d[1]}" = "${d[2]}" ] || fail "seed preset ${d[1]} != seed.json ${d[2]}"
[ "${d[0]}" = "${d[3]}" ] || fail "fp32 mode ${d[0]} != preset:fp32 ${d[3]}"
[ "${d[0]}" != "${d[1]}" ] || fail "the seed preset trained as fp32"
# Policies mixing dtypes and update forms: the same digests for 1 and 2 threads and under every
# SIMD target.
mixed=(--policy preset:seed --policy "$src/examples/policies/fp16-middle.json"
  --policy "$src/examples/policies/bf16-kahan-fp32-ends.json")
"$tool" train "${small[@]}" --epochs 2 "${mixed[@]}" --log "$work/m2.jsonl" > /dev/null 2>&1 ||
  fail "mixed policies"
[ "$(digests "$work/m2.jsonl" | sort -u | wc -l)" -eq 3 ] || fail "policies share a digest"
MANTISSA_NUM_THREADS=1 "$tool" train "${small[@]}" --epochs 2 "${mixed[@]}" \
  --log "$work/m1.jsonl" > /dev/null 2>&1 || fail "mixed policies, 1 thread"
[ "$(digests "$work/m1.jsonl")" = "$(digests "$work/m2.jsonl")" ] || fail "1 vs 2 threads"
for target in $("$tool" info | sed -n 's/^available targets: *//p'); do
  MANTISSA_SIMD_TARGET="$target" "$tool" train "${small[@]}" --epochs 2 "${mixed[@]}" \
    --log "$work/m-$target.jsonl" > /dev/null 2>&1 || fail "mixed policies, $target"
  [ "$(digests "$work/m-$target.jsonl")" = "$(digests "$work/m2.jsonl")" ] ||
    fail "policy digests differ under MANTISSA_SIMD_TARGET=$target"
done
for f in "$src"/examples/policies/*.json; do
  "$tool" train "${small[@]}" --epochs 1 --policy "$f" > /dev/null 2>&1 || fail "example $f"
done

# ---- Sensitivity and trade-off: tables, JSON, SVG, the suggested policy trains.
"$tool" train "${small[@]}" --epochs 2 --sensitivity "$work/sens.json" --tradeoff \
  "$work/trade.json" --policy "$src/examples/policies/fp16-middle.json" > "$work/out.txt" \
  2> "$work/err.txt" || { cat "$work/out.txt" "$work/err.txt"; fail "sensitivity run"; }
grep -q "Training sensitivity" "$work/out.txt" || fail "no training ranking"
grep -q "Inference sensitivity" "$work/out.txt" || fail "no inference ranking"
grep -q "^fp16-middle " "$work/out.txt" || fail "the --policy row is missing from the trade-off"
grep -q "\[29/29\]" "$work/err.txt" || fail "no progress"
for f in sens.json sens.svg sens-suggested.json trade.json trade.svg; do
  [ -s "$work/$f" ] || fail "$f not written"
done
grep -q "<svg" "$work/sens.svg" && grep -q "<svg" "$work/trade.svg" || fail "SVG"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
s = json.load(open(w + "/sens.json"))
assert len(s["training"]) == 14 and len(s["inference"]) == 14, s.keys()
for r in s["training"] + s["inference"]:
    for k in ("layer", "format", "test_loss", "test_accuracy", "loss_change", "accuracy_change"):
        assert k in r, (k, r)
assert {r["format"] for r in s["training"]} == {"bf16", "fp16"}
assert {r["format"] for r in s["inference"]} == {"int8", "fp8-e4m3"}
changes = [r["loss_change"] for r in s["training_ranking"]]
assert changes == sorted(changes, reverse=True), changes
t = json.load(open(w + "/trade.json"))
names = [r["policy"] for r in t["rows"]]
assert names[:4] == ["fp32", "bf16-amp", "fp16-amp", "seed"] and names[-1] == "fp16-middle", names
rows = {r["policy"]: r for r in t["rows"]}
assert rows["bf16-amp"]["activation_bytes"] < rows["fp32"]["activation_bytes"]
assert rows["bf16-amp"]["state_bytes"] > rows["fp32"]["state_bytes"]  # master + working copies
PY
"$tool" train "${small[@]}" --epochs 1 --policy "$work/sens-suggested.json" > /dev/null 2>&1 ||
  fail "the suggested policy does not train"
echo "train policy CLI: ok"
