#!/usr/bin/env bash
# mantissa train end to end: malformed data refused with line and column, the JSONL/CSV/SVG
# outputs, the same digests for 1 and 2 threads and every SIMD target, and a short digits run
# that reaches a stated accuracy; the precision analysis's outputs.
set -euo pipefail
tool="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/mantissa"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- Malformed files: exit status 1, "<file>:<line>:<column>: ..." on stderr, nothing trained.
refused() {  # refused NAME CONTENT EXPECTED-LOCATION EXPECTED-TEXT
  printf '%b' "$2" > "$work/$1"
  if "$tool" train --data "$work/$1" --epochs 1 > "$work/out.txt" 2> "$work/err.txt"; then
    fail "$1 was accepted"
  fi
  grep -qF "$work/$1:$3: $4" "$work/err.txt" || { cat "$work/err.txt"; fail "$1: message"; }
  ! grep -q "epoch" "$work/out.txt" || fail "$1: training started"
}
refused bad_number.csv '1,2,0\n1,2,1\n1,2e,0\n' 3:2 "not a finite number: '2e'"
refused columns.csv 'x,y,label\n1,2,0\n1,2,1\n4,5,6,1\n' 4:4 "expected 3 columns, found 4"
refused label.csv '1,2,0\n1,2,0.5\n' 2:3 "the label must be an integer"

# ---- Unknown mode: a usage error.
if "$tool" train --data synthetic:64 --precision fp8 --epochs 1 > /dev/null 2> "$work/err.txt"; then
  fail "unknown mode accepted"
fi
grep -q "unknown precision mode 'fp8'" "$work/err.txt" || fail "unknown mode message"

# ---- Option values refused, not replaced or wrapped: NaN and infinities, seeds outside
# [0, 2^64-1], hidden widths left empty. Usage errors: exit status 2 (CLI11's 105 for a failed
# validator), a message naming the option, nothing trained.
bad_option() {  # bad_option EXPECTED-TEXT ARG...
  local want="$1"
  shift
  if "$tool" train --data synthetic:64 --epochs 1 "$@" > "$work/out.txt" 2> "$work/err.txt"; then
    fail "train $* was accepted"
  fi
  grep -qF -- "$want" "$work/err.txt" || { cat "$work/err.txt"; fail "train $*: message"; }
  ! grep -q "epoch" "$work/out.txt" || fail "train $*: training started"
}
bad_option "must be a finite number within fp32's range, got 'nan'" --lr nan
bad_option "must be a finite number within fp32's range, got 'inf'" --lr inf
bad_option "must be a finite number within fp32's range, got '1e300'" --lr 1e300
bad_option "must be a finite number, got 'nan'" --weight-decay nan
bad_option "must be a finite number, got 'nan'" --test-fraction nan
bad_option "must be an integer in [0, 18446744073709551615], got '-1'" --seed -1
bad_option "must be an integer in [0, 18446744073709551615], got '18446744073709551616'" \
  --seed 18446744073709551616
bad_option "must be an integer in [0, 18446744073709551615], got '1e23'" --seed 1e23
bad_option "--hidden: '' is not a width" --hidden ,,,
bad_option "--hidden: '' is not a width" --hidden 16,,16
bad_option "must be a finite number, got 'nan'" --bucket-mib nan

# ---- Outputs checked before training: none may be an input or another output, and each one's
# directory must be writable. Usage errors, nothing trained, the data untouched.
printf '1,2,0\n2,1,1\n1,3,0\n3,1,1\n1,4,0\n4,1,1\n' > "$work/small.csv"
cp "$work/small.csv" "$work/small.orig"
bad_paths() {  # bad_paths EXPECTED-TEXT ARG...
  local want="$1"
  shift
  if "$tool" train --epochs 1 "$@" > "$work/out.txt" 2> "$work/err.txt"; then
    fail "train $* was accepted"
  fi
  grep -qF -- "$want" "$work/err.txt" || { cat "$work/err.txt"; fail "train $*: message"; }
  ! grep -q "epoch" "$work/out.txt" || fail "train $*: training started"
}
bad_paths "--csv $work/small.csv is the --data file" --data "$work/small.csv" --csv "$work/small.csv"
cmp -s "$work/small.csv" "$work/small.orig" || fail "--csv equal to --data changed the data"
bad_paths "--log and --csv name the same file" --data synthetic:64 --log "$work/x.out" \
  --csv "$work/./x.out"
bad_paths "does not exist or is not writable" --data synthetic:64 --plot "$work/no/such/dir/p.svg"

# ---- Text from the user escaped in the outputs: a data path with < and & in the plot's title,
# a policy name with a comma, a quote and a line break in the CSV.
odd="$work/a<b&c"
mkdir -p "$odd"
/usr/bin/python3 - "$odd/data.csv" <<'PY'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(90):
        c = i % 3
        f.write(f"{c + random.random():.3f},{random.random():.3f},{c}\n")
PY
printf '{"name": "odd, \\"name\\"\\nx", "layers": {}}' > "$work/odd.json"
"$tool" train --data "$odd/data.csv" --epochs 1 --hidden 8 --policy "$work/odd.json" \
  --plot "$work/odd.svg" --csv "$work/odd.csv" > /dev/null 2> "$work/err.txt" \
  || { cat "$work/err.txt"; fail "escaping run"; }
/usr/bin/python3 - "$work/odd.svg" "$work/odd.csv" <<'PY' || fail "escaped outputs"
import csv, sys, xml.etree.ElementTree as ET
title = "".join(ET.parse(sys.argv[1]).getroot().find("{http://www.w3.org/2000/svg}text").itertext())
assert "a<b&c" in title, title
rows = list(csv.reader(open(sys.argv[2], newline="")))
assert all(len(r) == len(rows[0]) for r in rows), rows
assert any('odd, "name"\nx' in r[0] for r in rows[1:]), [r[0] for r in rows]
PY

# ---- Out of memory: one line naming the command and exit status 1, not an abort. (Not in
# sanitized builds: their runtimes reserve the address space a limit would have to allow.)
sanitize="$(sed -n 's/^MANTISSA_SANITIZE:STRING=//p' "$MANTISSA_BINARY_DIR/CMakeCache.txt" 2>/dev/null || true)"
if [[ -z "$sanitize" ]]; then
  status=0
  (ulimit -v 1000000; exec "$tool" train --data synthetic:200 --hidden 65536,65536 --epochs 1 \
    --precision bf16-amp) > /dev/null 2> "$work/err.txt" || status=$?
  [ "$status" -eq 1 ] || { cat "$work/err.txt"; fail "out of memory: exit status $status"; }
  grep -qx "mantissa train: out of memory" "$work/err.txt" || { cat "$work/err.txt"; fail "oom message"; }
fi

# ---- Every mode, outputs, and the digests for threads and targets.
run() {  # run OUTPUT-PREFIX [env...]
  local prefix="$1"
  shift
  env "$@" "$tool" train --data synthetic:400 --compare --epochs 2 --hidden 32,16 --batch-size 32 \
    --lr 0.01 --seed 3 --log "$prefix.jsonl" --csv "$prefix.csv" --plot "$prefix.svg" \
    > "$prefix.out" 2>&1 || { cat "$prefix.out"; fail "run $prefix ($*)"; }
}
digests() { grep '"event":"final"' "$1" | sed 's/.*"digest":"\([0-9a-f]*\)".*/\1/'; }
run "$work/t2" MANTISSA_NUM_THREADS=2
[ "$(grep -c '"event":"final"' "$work/t2.jsonl")" -eq 7 ] || fail "7 final records expected"
/usr/bin/python3 - "$work/t2.jsonl" "$work/t2.csv" "$work/t2.svg" <<'PY' || fail "outputs"
import csv, json, sys
finals = [json.loads(l) for l in open(sys.argv[1]) if '"final"' in l]
modes = [f["mode"] for f in finals]
assert modes == ["fp32", "fp16-amp", "bf16-amp", "bf16-pure", "bf16-kahan", "bf16-sr",
                 "fp16-noscale"], modes
for f in finals:
    for key in ("epochs", "test_accuracy", "test_loss", "skipped_steps", "digest"):
        assert key in f, (key, f)
    assert f["epochs"] == 2 and len(f["digest"]) == 16 and f["test_accuracy"] >= 0.9, f
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 14 and {r["mode"] for r in rows} == set(modes), len(rows)
svg = open(sys.argv[3]).read()
assert svg.startswith("<svg") and svg.count("<polyline") == 14, svg.count("<polyline")
PY
# Distinct modes give distinct weights.
[ "$(digests "$work/t2.jsonl" | sort -u | wc -l)" -eq 7 ] || fail "modes share a digest"
run "$work/t1" MANTISSA_NUM_THREADS=1
[ "$(digests "$work/t1.jsonl")" = "$(digests "$work/t2.jsonl")" ] || fail "1 vs 2 threads"
run "$work/again" MANTISSA_NUM_THREADS=2
[ "$(digests "$work/again.jsonl")" = "$(digests "$work/t2.jsonl")" ] || fail "run to run"
targets="$("$tool" info | sed -n 's/^available targets: *//p')"
for target in $targets; do
  run "$work/$target" MANTISSA_SIMD_TARGET="$target" MANTISSA_NUM_THREADS=2
  [ "$(digests "$work/$target.jsonl")" = "$(digests "$work/t2.jsonl")" ] ||
    fail "digests differ under MANTISSA_SIMD_TARGET=$target"
done

# ---- An exploding run under fp16-amp: overflowing steps are skipped, the scale backs off, the
# anomaly detector's findings reach the log and (severity >= 7) the screen.
"$tool" train --data synthetic:400 --precision fp16-amp --lr 3 --epochs 2 --hidden 32,16 \
  --batch-size 32 --seed 3 --log "$work/boom.jsonl" > /dev/null 2> "$work/boom.err" ||
  fail "exploding run failed"
grep -q "nan_inf (severity" "$work/boom.err" || { cat "$work/boom.err"; fail "finding not shown"; }
/usr/bin/python3 - "$work/boom.jsonl" <<'PY' || fail "exploding run's log"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
final = [r for r in records if r["event"] == "final"][0]
findings = [r for r in records if r["event"] == "finding"]
epochs = [r for r in records if r["event"] == "epoch"]
assert final["skipped_steps"] >= 1 and final["skipped_steps"] == final["overflow_steps"], final
assert len(findings) >= final["skipped_steps"], len(findings)
assert all(f["pattern"] == "nan_inf" and f["severity"] >= 7 for f in findings), findings[0]
assert epochs[-1]["loss_scale"] < 65536, epochs[-1]
PY

# ---- --analyze: the table, the JSON of the interface, the SVG next to it; one mode only.
"$tool" train --data synthetic:200 --hidden 16,16 --epochs 1 --precision bf16-amp \
  --analyze "$work/an.json" > "$work/an.out" || fail "analyze run"
grep -q "largest added (local) error" "$work/an.out" || fail "analyze table"
grep -q "<polyline" "$work/an.svg" || fail "analyze svg"
/usr/bin/python3 - "$work/an.json" <<'PY' || fail "analyze json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["mode"] == "bf16-amp", doc["mode"]
kinds = {l["tensor"] for l in doc["layers"]}
assert kinds == {"activation", "grad_input", "grad_weight"}, kinds
for l in doc["layers"]:
    for k in ("name", "rel_error_max", "rel_error_rms", "amplification"):
        assert k in l, (k, l)
    assert 0 <= l["rel_error_rms"] <= l["rel_error_max"], l
    # bf16 storage: output errors of a few 2^-9, not fp32's 2^-24 nor garbage.
    assert l["local"] < 1e-2, l
lin = [l for l in doc["layers"] if l["name"] == "linear0" and l["tensor"] == "activation"][0]
assert 1e-4 < lin["rel_error_norm"] < 1e-2, lin
names = [s["name"] for s in doc["sensitivity"]]
assert names[-1] == "loss" and names[0] == "linear0", names
assert all(s["dtype"] == "bf16" and s["grad_error"] >= 0 for s in doc["sensitivity"]), doc
PY
if "$tool" train --data synthetic:64 --precision fp32,bf16-amp --analyze "$work/x.json" \
  > /dev/null 2> "$work/err.txt"; then
  fail "--analyze with two modes accepted"
fi
grep -q "one --precision mode" "$work/err.txt" || fail "--analyze modes message"

# ---- The digits set (when python3-sklearn is installed): 5 epochs of fp32 reach 95%.
if "$tool" train --epochs 5 --precision fp32 --log "$work/digits.jsonl" > "$work/digits.out" 2>&1; then
  /usr/bin/python3 - "$work/digits.jsonl" <<'PY' || { cat "$work/digits.out"; fail "digits accuracy"; }
import json, sys
final = [json.loads(l) for l in open(sys.argv[1]) if '"final"' in l][0]
assert final["test_accuracy"] >= 0.95, final
PY
elif grep -q "digits set .* was not found" "$work/digits.out"; then
  echo "train: digits set not installed, its check skipped"
else
  cat "$work/digits.out"
  fail "digits run"
fi
echo "train: all checks passed ($(echo $targets | wc -w) targets)"
