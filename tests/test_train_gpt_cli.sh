#!/usr/bin/env bash
# mantissa train --model gpt end to end: bad corpora and options refused naming the problem, the
# JSONL records and keys scripts rely on, the SVG, the initial weights as .npy, the same digest
# for 1 and 2 threads, precision per unit (--policy, --sensitivity, --suggest, --tradeoff), the
# FP8 and MX modes' statistics, and checkpoint resume.
set -euo pipefail
tool="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/mantissa"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tiny=(--model gpt --layers 1 --d-model 16 --heads 2 --context 16 --batch-size 4 --eval-windows 8)

refused() {  # refused STATUS EXPECTED-TEXT ARG...
  local want_status="$1" want="$2" status=0
  shift 2
  "$tool" train "$@" > "$work/out.txt" 2> "$work/err.txt" || status=$?
  [ "$status" = "$want_status" ] || { cat "$work/err.txt"; fail "train $*: status $status"; }
  grep -qF -- "$want" "$work/err.txt" || { cat "$work/err.txt"; fail "train $*: message"; }
  ! grep -q "step" "$work/out.txt" || fail "train $*: training started"
}
refused 1 "text:$work/absent.txt: no such file" "${tiny[@]}" --data "text:$work/absent.txt"
: > "$work/empty.txt"
refused 1 "text:$work/empty.txt: the file is empty" "${tiny[@]}" --data "text:$work/empty.txt"
head -c 100 /dev/zero | tr '\0' 'a' > "$work/short.txt"
refused 1 "short.txt: 100 bytes; the validation split (the last 10%) needs at least context + 1 = 17" \
  "${tiny[@]}" --data "text:$work/short.txt"
refused 2 "--data takes text:FILE, got '$work/short.txt'" "${tiny[@]}" --data "$work/short.txt"
refused 2 "--heads must divide --d-model (16), got 3" --model gpt --d-model 16 --heads 3
refused 2 "--epochs is not available with --model gpt" "${tiny[@]}" --epochs 3
refused 2 "--steps needs --model gpt" --steps 3
refused 2 "--optimizer-state needs --model gpt" --optimizer-state int8
refused 2 "unknown precision mode 'fp8'" "${tiny[@]}" --precision fp8

# A corpus with structure: words from a small lexicon.
/usr/bin/env python3 - "$work/text.txt" <<'PY'
import random, sys
random.seed(1)
words = ["the ", "cat ", "sat ", "on ", "the ", "mat. ", "a ", "dog ", "ran\n"]
open(sys.argv[1], "w").write("".join(random.choice(words) for _ in range(6000)))
PY
run() {  # run THREADS LOG ARG...
  local threads="$1" log="$2"
  shift 2
  MANTISSA_NUM_THREADS="$threads" "$tool" train "${tiny[@]}" --data "text:$work/text.txt" \
    --steps 6 --eval-every 3 --log "$log" "$@"
}
mkdir "$work/init"
run 2 "$work/a.jsonl" --precision fp32,bf16-amp,fp16-amp --plot "$work/a.svg" \
  --export-init "$work/init" > "$work/a.txt"
grep -q "^bf16-amp " "$work/a.txt" || fail "no comparison table"
grep -q "<svg" "$work/a.svg" || fail "no SVG"
/usr/bin/env python3 - "$work/a.jsonl" "$work/init" <<'PY'
import json, os, sys
records = [json.loads(line) for line in open(sys.argv[1])]
evals = [r for r in records if r["event"] == "eval"]
finals = [r for r in records if r["event"] == "final"]
assert [r["mode"] for r in finals] == ["fp32", "bf16-amp", "fp16-amp"], finals
assert [r["step"] for r in evals if r["mode"] == "fp32"] == [3, 6], evals
for r in evals:
    assert {"event", "mode", "step", "val_loss", "val_bpb"} <= r.keys(), r
    assert abs(r["val_bpb"] - r["val_loss"] / 0.6931471805599453) < 1e-9, r
for r in finals:
    assert {"event", "mode", "steps", "val_loss", "val_bpb", "train_loss", "skipped_steps",
            "step_time_s", "params", "digest"} <= r.keys(), r
    assert r["steps"] == 6 and len(r["digest"]) == 16 and r["params"] > 0, r
    assert r["val_loss"] < 5.545, r  # below log(256): it learned something
steps = [r for r in records if r["event"] == "step" and r["mode"] == "fp32"]
assert [r["step"] for r in steps] == [1, 2, 3, 4, 5, 6], steps
names = sorted(os.listdir(sys.argv[2]))
assert "wte.npy" in names and "block0.attn.qkv.npy" in names, names
PY
run 1 "$work/b.jsonl" --precision fp32,bf16-amp,fp16-amp > /dev/null
digests() { grep '"event":"final"' "$1" | sed 's/.*"digest":"\([0-9a-f]*\)".*/\1/'; }
[ "$(digests "$work/a.jsonl")" = "$(digests "$work/b.jsonl")" ] ||
  fail "digests differ between 1 and 2 threads"

# Precision per unit. A policy of the MLP's layers, or one storing wider than it computes, is
# refused before anything trains; the presets give their modes' digests.
echo '{"layers": {"linear0": {"compute": "bf16"}}}' > "$work/mlp-policy.json"
refused 2 "layers.linear0: no such layer (the model's: embeddings, block0)" "${tiny[@]}" \
  --data "text:$work/text.txt" --policy "$work/mlp-policy.json"
echo '{"layers": {"block0": {"compute": "fp32", "stored": "bf16"}}}' > "$work/wide.json"
refused 2 "layers.block0.stored" "${tiny[@]}" --data "text:$work/text.txt" --policy "$work/wide.json"
refused 2 "--sensitivity and --tradeoff run their own policies" "${tiny[@]}" --compare \
  --sensitivity "$work/s.json"
refused 2 "--sensitivity $work/wide.json is the --policy file: it would be overwritten" "${tiny[@]}" \
  --policy "$work/wide.json" --sensitivity "$work/wide.json"
run 2 "$work/p.jsonl" --policy preset:fp32 --policy preset:bf16-amp > "$work/p.txt"
[ "$(digests "$work/p.jsonl")" = "$(digests "$work/a.jsonl" | head -2)" ] ||
  fail "the fp32 and bf16-amp presets' digests differ from their modes'"
grep -q '"policy":{' "$work/p.jsonl" || fail "no policy in the start records"
MANTISSA_NUM_THREADS=2 "$tool" train "${tiny[@]}" --data "text:$work/text.txt" --steps 4 \
  --eval-every 4 --sensitivity "$work/sens.json" --tradeoff "$work/trade.json" > "$work/s.txt" \
  2> /dev/null
grep -q "^1 .* \(bf16\|fp16\) " "$work/s.txt" || { cat "$work/s.txt"; fail "no sensitivity ranking"; }
/usr/bin/env python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
s = json.load(open(w + "/sens.json"))
assert s["model"] == "gpt" and s["steps"] == 4, s
assert [(r["layer"], r["format"]) for r in s["training"]] == [
    ("embeddings", "bf16"), ("embeddings", "fp16"), ("block0", "bf16"), ("block0", "fp16")], s
assert s["inference"] == [], s
suggested = json.load(open(w + "/sens-suggested.json"))
assert list(suggested["layers"]) == ["embeddings", "block0"], suggested
t = json.load(open(w + "/trade.json"))
assert [r["policy"] for r in t["rows"]] == ["fp32", "bf16-amp", "fp16-amp", "seed",
                                            "suggested-bf16"], t
for name in ("sens.svg", "trade.svg"):
    assert "<svg" in open(w + "/" + name).read(), name
PY
# The suggested policy trains as a policy of this model.
run 1 "$work/q.jsonl" --policy "$work/sens-suggested.json" > /dev/null

# FP8 and MX modes: the GPT's alone; --analyze lists every quantized operand, the log records
# them on evaluation steps; a stopped and resumed run ends with the uninterrupted digest.
refused 2 "unknown precision mode 'fp8-delayed'" --precision fp8-delayed
refused 2 "--mx-scale-rule needs --model gpt" --mx-scale-rule rceil
refused 2 "--save-checkpoint and --resume take one --precision mode" "${tiny[@]}" \
  --data "text:$work/text.txt" --precision bf16-amp,mxfp8 --save-checkpoint "$work/x.ckpt"
run 2 "$work/f.jsonl" --precision mxfp8 --mx-scale-rule rceil --analyze "$work/f.json" > "$work/f.txt"
grep -q "operands of the blocks' products" "$work/f.txt" || fail "no operand table"
/usr/bin/env python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
a = json.load(open(w + "/f.json"))
layers = {q["layer"] for q in a["quantized"]}
assert layers == {"block0.attn.qkv", "block0.attn.proj", "block0.mlp.up", "block0.mlp.down"}, layers
assert [q["operand"] for q in a["quantized"][:6]] == ["x", "w", "dy", "w^T", "x^T", "dy^T"], a
for q in a["quantized"]:
    assert q["format"] == "e4m3" and q["count"] > 0 and 0 <= q["underflow"] <= q["nonzero"], q
    assert q["saturated"] == 0, q  # rceil never saturates
events = [json.loads(l) for l in open(w + "/f.jsonl")]
assert [e["step"] for e in events if e["event"] == "quantized"] == [3, 6], events
PY
run 2 "$work/d1.jsonl" --precision fp8-delayed --amax-history 4 > /dev/null
run 2 "$work/d2.jsonl" --precision fp8-delayed --amax-history 4 --stop-after 3 \
  --save-checkpoint "$work/d.ckpt" > /dev/null
run 2 "$work/d3.jsonl" --precision fp8-delayed --amax-history 4 --resume "$work/d.ckpt" > /dev/null
[ "$(digests "$work/d3.jsonl")" = "$(digests "$work/d1.jsonl")" ] ||
  fail "the resumed fp8-delayed run's digest differs from the uninterrupted one's"
status=0
run 2 "$work/d4.jsonl" --precision fp8-delayed --resume "$work/d.ckpt" > /dev/null \
  2> "$work/err.txt" || status=$?
[ "$status" = 1 ] && grep -q "written by another run" "$work/err.txt" ||
  fail "a checkpoint of another run (--amax-history 4) was not refused"
echo "test_train_gpt_cli: ok"
