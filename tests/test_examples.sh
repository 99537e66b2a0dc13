#!/usr/bin/env bash
# Runs the built sample programs and checks what they print.
set -euo pipefail

bin_dir="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/examples"
status=0

fail() {
  echo "FAIL: $*" >&2
  status=1
}

# The AmpUpdateScale sample (the seed's program, unchanged): scale 65536, tracker 900, no inf,
# interval 1000 -> the scale is kept and the tracker counts to 901.
amp="$bin_dir/example_test_aclnn_amp_update_scale"
if [[ ! -x "$amp" ]]; then
  fail "$amp is not built"
else
  out="$("$amp")" || fail "test_aclnn_amp_update_scale exited with $?"
  echo "$out"
  line="$(grep -F 'aclnnAmpUpdateScale result:' <<<"$out" || true)"
  [[ "$line" == *"updatedScale 65536.000000"* ]] || fail "no 'updatedScale 65536.000000' in: $line"
  [[ "$line" == *"updatedGrowthTracker 901"* ]] || fail "no 'updatedGrowthTracker 901' in: $line"
fi

# The in-place ApplyAdamD sample. The expected values were computed independently with numpy
# float32 in the operator's normative grouping (every operation rounded once, no FMA); the
# library promises the same bits on every SIMD target and thread count.
adam="$bin_dir/example_aclnn_apply_adam_d_inplace"
if [[ ! -x "$adam" ]]; then
  fail "$adam is not built"
else
  out="$("$adam")" || fail "aclnn_apply_adam_d_inplace exited with $?"
  echo "$out"
  expected=(
    "var: 0.499622047 -0.249854729 0.999981761 -1.50022101 0.75009191 -3.87416621e-05 -0.50000596 2.0001452"
    "m: 0.120000005 -0.0650000051 0.0100000026 0.139999986 -0.0649999976 0.0299999956 0.00500000129 -0.129999995"
    "v: 0.0100799985 0.0200199988 0.0299800001 0.0401199982 0.0500124991 0.0599624999 0.069932498 0.0801699981"
  )
  for want in "${expected[@]}"; do
    grep -qxF "$want" <<<"$out" || fail "aclnn_apply_adam_d_inplace did not print: $want"
  done
  grep -q "workspace 0 bytes" <<<"$out" || fail "contiguous in-place call should need no workspace"
fi

# Every simd target must print the same lines (bit-exact promise), so force the lowest ones too.
targets=(EMU128)
[[ "$(uname -m)" == x86_64 ]] && targets+=(SSE4)
for target in "${targets[@]}"; do
  if [[ -x "$adam" ]]; then
    forced="$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$adam")" ||
      fail "aclnn_apply_adam_d_inplace exited with $? under MANTISSA_SIMD_TARGET=$target"
    [[ "$(grep -v workspace <<<"$forced")" == "$(grep -v workspace <<<"$out")" ]] ||
      fail "output differs under MANTISSA_SIMD_TARGET=$target"
  fi
done

# The RmsNorm and RmsNormGrad samples. The expected lines are computed here, independently, with
# numpy: sums in float64, then the operators' fp32 steps in float32 (docs/ops/rms_norm.md,
# docs/ops/rms_norm_grad.md), printed as the samples print them.
py=/usr/bin/python3
check_sample() {
  local name="$1" script="$2"
  local exe="$bin_dir/example_$name"
  if [[ ! -x "$exe" ]]; then
    fail "$exe is not built"
    return
  fi
  local out want
  out="$("$exe")" || { fail "$name exited with $?"; return; }
  echo "$out"
  want="$("$py" -c "$script")" || { fail "numpy reference for $name failed"; return; }
  [[ "$out" == "$want" ]] || fail "$name printed other values than numpy's:
$(diff <(echo "$want") <(echo "$out") || true)"
  for target in "${targets[@]}"; do
    [[ "$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$exe")" == "$out" ]] ||
      fail "$name output differs under MANTISSA_SIMD_TARGET=$target"
  done
}

check_sample test_aclnn_rms_norm '
import numpy as np
x = np.tile(np.arange(8, dtype=np.float32), 4).reshape(2, 16)
g = np.tile(np.arange(8, dtype=np.float32), 2)
ss = (x.astype(np.float64) ** 2).sum(axis=1)
rstd = (1.0 / np.sqrt(ss / 16 + 1e-6)).astype(np.float32)
y = (x * rstd[:, None]) * g
for i, v in enumerate(y.reshape(-1)): print("result[%d] is: %f" % (i, v))
for i, v in enumerate(rstd): print("rstd[%d] is: %.9g" % (i, v))
'

check_sample test_aclnn_rms_norm_grad '
import numpy as np
x = np.arange(1, 33, dtype=np.float32).reshape(2, 16)
dy = x.copy()
g = np.arange(1, 17, dtype=np.float32)
r = np.array([1, 2], dtype=np.float32)
s = ((dy.astype(np.float64) * g) * x * r[:, None].astype(np.float64)).sum(axis=1)
m = (s / 16).astype(np.float32)
dx = ((dy * g) - ((x * r[:, None]) * m[:, None])) * r[:, None]
dg = ((x.astype(np.float64) * r[:, None]) * dy).sum(axis=0).astype(np.float32)
for i, v in enumerate(dx.reshape(-1)): print("result[%d] is: %f" % (i, v))
for i, v in enumerate(dg): print("dgamma[%d] is: %f" % (i, v))
'

exit $status
