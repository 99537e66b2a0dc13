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

# The ApplyAdamWV2 sample (AMSGrad and maximize, fp32 step 1: t = 2). The expected values were
# computed independently with numpy float32 in the operator's normative grouping, the host
# constants in double and rounded once.
adamw="$bin_dir/example_aclnn_apply_adam_w_v2_amsgrad"
if [[ ! -x "$adamw" ]]; then
  fail "$adamw is not built"
else
  adamw_out="$("$adamw")" || fail "aclnn_apply_adam_w_v2_amsgrad exited with $?"
  echo "$adamw_out"
  adamw_expected=(
    "var: 0.499895155 -0.249955922 1.00000048 -1.50024343 0.750102937 -5.76582315e-05 -0.499990821 2.00017118"
    "m: 0.0599999912 -0.0249999948 -0.0100000026 0.220000014 -0.11500001 0.0600000024 -0.00500000129 -0.230000019"
    "v: 0.0100799995 0.0200200006 0.0299800001 0.0401199982 0.0500124991 0.0599624999 0.0699325055 0.0801699981"
    "maxGradNorm: 0.0199999996 0.0200200006 0.0500000007 0.0401199982 0.0599999987 0.0599624999 0.0799999982 0.0801699981"
  )
  for want in "${adamw_expected[@]}"; do
    grep -qxF "$want" <<<"$adamw_out" || fail "aclnn_apply_adam_w_v2_amsgrad did not print: $want"
  done
  grep -q "workspace 0 bytes" <<<"$adamw_out" || fail "contiguous in-place call should need no workspace"
fi
# The Softmax and LogSoftmax samples (CANN's published inputs). Expected values computed
# independently with numpy float32 (max-shifted, as the operators' formulas), printed with %f;
# the library's result is within 1 ulp of those, far below the 6 printed decimals.
check_rows() {  # name, python expression giving the values
  local exe="$bin_dir/example_$1"
  if [[ ! -x "$exe" ]]; then
    fail "$exe is not built"
    return
  fi
  local out
  out="$("$exe")" || fail "$1 exited with $?"
  echo "$out"
  local expected
  expected="$(/usr/bin/python3 -c "
import numpy as np
$2
for i, v in enumerate(np.asarray(y, dtype=np.float32).ravel()):
    print('result[%d] is: %f' % (i, v))
")" || fail "numpy failed for $1"
  [[ "$(grep '^result' <<<"$out")" == "$expected" ]] || fail "$1 printed other values than numpy:
$expected"
}
check_rows test_aclnn_softmax "
x = np.arange(8, dtype=np.float32).reshape(4, 2)
e = np.exp(x - x.max(axis=0, keepdims=True))
y = e / e.sum(axis=0, keepdims=True)"
check_rows test_aclnn_log_softmax_v2 "
x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
s = x - x.max(axis=1, keepdims=True)
y = s - np.log(np.exp(s).sum(axis=1, keepdims=True))"

# Every simd target must print the same lines (bit-exact promise), so force the lowest ones too.
# (SSE4 where this build has it: the ASan stage compiles fewer targets.)
targets=(EMU128)
if [[ "$("$MANTISSA_BINARY_DIR/mantissa" info | sed -n 's/^compiled targets: *//p')" == *"SSE4 "* ]]; then
  targets+=(SSE4)
fi
for target in "${targets[@]}"; do
  if [[ -x "$adamw" ]]; then
    forced="$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$adamw")" ||
      fail "aclnn_apply_adam_w_v2_amsgrad exited with $? under MANTISSA_SIMD_TARGET=$target"
    [[ "$forced" == "$adamw_out" ]] ||
      fail "aclnn_apply_adam_w_v2_amsgrad output differs under MANTISSA_SIMD_TARGET=$target"
  fi
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

# The AddRmsNorm sample (CANN's published inputs): x = x1 + x2 in float32, then RmsNorm's steps on
# that x (docs/ops/add_rms_norm.md), computed here with numpy.
check_sample test_aclnn_add_rms_norm '
import numpy as np
x1 = np.tile(np.arange(8, dtype=np.float32), 4).reshape(2, 16)
x = x1 + x1
g = np.tile(np.arange(8, dtype=np.float32), 2)
ss = (x.astype(np.float64) ** 2).sum(axis=1)
rstd = (1.0 / np.sqrt(ss / 16 + 1e-6)).astype(np.float32)
y = (x * rstd[:, None]) * g
for i, v in enumerate(y.reshape(-1)): print("result[%d] is: %f" % (i, v))
for i, v in enumerate(rstd): print("rstd[%d] is: %.9g" % (i, v))
for i, v in enumerate(x.reshape(-1)): print("x[%d] is: %f" % (i, v))
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

# The matrix-product samples: values in quarters, so every product and sum is exact in fp32 and
# numpy's float64 products, rounded to float32, are the expected bits.
check_sample test_aclnn_matmul '
import numpy as np
v = lambda n, seed: ((np.arange(n) + seed) % 7 - 3) / 4
g = lambda x: " ".join("%g" % np.float32(e) for e in np.asarray(x).reshape(-1))
a = v(24, 0).reshape(2, 3, 4)
print("aclnnMatmul workspace 0 bytes")
print("matmul: " + g(a @ v(20, 2).reshape(5, 4).T))
print("aclnnBatchMatMul workspace 0 bytes")
print("batch_matmul: " + g(a @ v(8, 5).reshape(1, 4, 2)))
print("aclnnAddmm workspace 0 bytes")
print("addmm: " + g(0.5 * v(5, 1) + 2 * (v(12, 3).reshape(3, 4) @ v(20, 4).reshape(4, 5))))
'

# The GeluV2 / GeluBackwardV2 sample (the erf form). numpy with the C library's erfc in double
# (math.erfc), each value rounded once to float32: the operators are correctly rounded from
# fp64 steps, so the 9-digit lines agree.
check_sample test_aclnn_gelu_backward_v2 '
import math
import numpy as np
x = [-4.0 + 0.5 * i for i in range(16)]
phi = [0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x]
dens = [math.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi) for v in x]
g = [p + v * d for v, p, d in zip(x, phi, dens)]
for i, (v, p) in enumerate(zip(x, phi)): print("gelu[%d] is: %.9g" % (i, np.float32(v * p)))
for i, d in enumerate(g): print("grad[%d] is: %.9g" % (i, np.float32(d)))
for i, d in enumerate(g): print("half_grad[%d] is: %.9g" % (i, np.float32(0.5 * d)))
'

# The LayerNorm and LayerNormBackward samples with upstream's published inputs. numpy, in
# float64 then rounded to float32 (docs/ops/layer_norm.md: fp64 statistics and arithmetic, one
# rounding): constant rows give out 0, mean 2 and rstd 1/sqrt(eps); the backward sample's mean
# and rstd are the given ones, not the rows' own.
check_sample test_aclnn_layer_norm '
import numpy as np
x = np.full((2, 32), 2.0)
m = x.mean(axis=1)
rstd = 1.0 / np.sqrt(((x - m[:, None]) ** 2).mean(axis=1) + 1e-5)
out = ((x - m[:, None]) * rstd[:, None]).astype(np.float32)
for i, v in enumerate(out.reshape(-1)): print("out result[%d] is: %f" % (i, v))
for i, v in enumerate(m.astype(np.float32)): print("mean result[%d] is: %f" % (i, v))
for i, v in enumerate(rstd.astype(np.float32)): print("rstd result[%d] is: %f" % (i, v))
'

check_sample test_aclnn_layer_norm_backward '
import numpy as np
dy = np.array([[2, 3], [4, 5]], dtype=np.float64)
x = dy.copy()
mean = np.array([[2], [3]], dtype=np.float64)
rstd = np.array([[4], [5]], dtype=np.float64)
xhat = (x - mean) * rstd
g = dy * 1.0
dx = (g - (g.mean(axis=1, keepdims=True) + xhat * (g * xhat).mean(axis=1, keepdims=True))) * rstd
for i, v in enumerate(dx.astype(np.float32).reshape(-1)): print("gradInput result[%d] is: %f" % (i, v))
for i, v in enumerate((dy * xhat).sum(axis=0).astype(np.float32)): print("gradWeight result[%d] is: %f" % (i, v))
for i, v in enumerate(dy.sum(axis=0).astype(np.float32)): print("gradBias result[%d] is: %f" % (i, v))
'

# The Quantize sample (upstream's inputs): x / scales + zero points in float32, rounded half to
# even (np.rint), INT32 (docs/ops/quantize.md).
check_sample test_aclnn_quantize '
import numpy as np
x = np.array([0.3382, -0.0919, 0.7564, 0.0234, 3.1024, 1.0761, 0.4228, 1.4621], np.float32).reshape(4, 2)
s = np.array([1.0, -3.0], np.float32)
z = np.array([2, 10], np.int32).astype(np.float32)
out = np.rint(x / s + z).astype(np.int32)
for i, v in enumerate(out.reshape(-1)): print("out[%d] is: %d" % (i, v))
'

# The QuantMax sample (upstream's inputs): x * 1 in float32, then each value's E4M3FN code by
# enumeration of the 256 codes (the nearest finite one, a tie to the even code, saturated at 448);
# amax = max |x| (docs/ops/quant_max.md).
check_sample test_aclnn_quant_max '
import numpy as np
def e4m3(c):
    s = -1.0 if c & 0x80 else 1.0
    e, m = (c >> 3) & 15, c & 7
    if e == 15 and m == 7: return float("nan")
    return s * (m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7))
codes = [c for c in range(256) if not np.isnan(e4m3(c))]
def code(v):
    v = float(np.clip(v, -448.0, 448.0))
    return min(codes, key=lambda c: (abs(e4m3(c) - v), c & 1, (c & 0x80) != (0x80 if np.signbit(v) else 0)))
x = np.array([1, -2, 3, -4, 5, -6, 7, -8, 0.5, -0.5, 0, 448, -448, 0.125, -0.125, 2.5], np.float32)
y = x * np.float32(1.0)
for i, v in enumerate(y): print("yOut[%d] is: %d" % (i, code(v)))
print("amaxOut is: %f" % np.abs(x).max())
'

# The FusedAdamw sample (CANN's sample's inputs: steps taken 3 and 4, so t = 4 and 5; gradScale
# 2; amsgrad): ApplyAdamWV2's grouping in numpy float32, the per-step constants in double from
# the fp32 attributes and rounded once, g = grad * fp32(1 / gradScale).
check_sample test_aclnn_fused_adamw '
import numpy as np
f = np.float32
lr, b1, b2, wd, eps = (float(f(x)) for x in (0.001, 0.9, 0.999, 0.0, 1e-8))
def step(name, p, g, m, v, vmax, taken):
    t = float(f(taken)) + 1.0
    step_size, inv_bc2 = f(lr / (1 - b1 ** t)), f(1 / np.sqrt(1 - b2 ** t))
    decay, omb1, omb2 = f(1 - lr * wd), f(1 - b1), f(1 - b2)
    p, g, m, v, vmax = (np.array(a, f) for a in (p, g, m, v, vmax))
    g = g * (f(1) / f(2))
    m = m + (g - m) * omb1
    v = v * f(b2) + (g * g) * omb2
    vmax = np.where((v > vmax) | np.isnan(v), v, vmax)
    p = p * decay - (m / (np.sqrt(vmax) * inv_bc2 + f(eps))) * step_size
    for label, a in (("paramsRef", p), ("expAvgsRef", m), ("expAvgSqsRef", v),
                     ("maxExpAvgSqsRef", vmax)):
        for i, x in enumerate(a): print("%s%s[%d] is: %.9g" % (label, name, i, x))
step("1", range(1, 9), [0.1 * k for k in range(1, 9)], [0.1 * k for k in range(1, 9)],
     [0.1 * k for k in range(1, 9)], range(1, 9), 3)
step("2", range(9, 13), [0.9, 1.0, 1.1, 1.2], [-1, -2, -3, -4], [1, 2, 3, 4], [2, 2, 2, 2], 4)
'

# The FusedSgd sample (CANN's sample's inputs, then a second step with gradScale 4): CANN's
# kernel in numpy float32, one rounding per line; the unscaled gradients written back.
check_sample test_aclnn_fused_sgd '
import numpy as np
f = np.float32
wd, mom, lr = f(0.01), f(0.9), f(0.001)
p = [np.arange(1, 9, dtype=f), np.arange(9, 13, dtype=f)]
g = [np.array([0.1 * k for k in range(1, 9)], f), np.array([0.9, 1.0, 1.1, 1.2], f)]
buf = [np.zeros(8, f), np.zeros(4, f)]
for s, scale in enumerate((1.0, 4.0)):
    print("step %d" % (s + 1))
    for k in range(2):
        g[k] = g[k] * (f(1) / f(scale))
        d = g[k] + wd * p[k]
        buf[k] = d if s == 0 else mom * buf[k] + (f(1) - f(0)) * d
        p[k] = p[k] - lr * buf[k]
        for label, a in (("paramsRef", p[k]), ("gradsRef", g[k]), ("momentum", buf[k])):
            for i, x in enumerate(a): print("%s%d[%d] is: %.9g" % (label, k + 1, i, x))
'

# The DynamicMxQuant FLOAT4_E2M1 sample (x [2, 32] bf16, row r (i - 16) / 4 * (r + 1), "floor",
# OCP rule): code = E(amax) - 2 with E the biased exponent of the row's max |x|, factor
# 2^(127 - code), each value floored onto E2M1's grid (0, 0.5, 1, 1.5, 2, 3, 4, 6, saturated),
# two codes per byte with element 2i in the low nibble.
check_sample test_aclnn_dynamic_mx_quant_fp4 '
import math
import numpy as np
grid = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
def floor_code(v):
    if v >= 0:
        k = max(i for i, g in enumerate(grid) if g <= v)
        return k
    a = -v
    k = min([i for i, g in enumerate(grid + [8]) if g >= a])
    return 8 | min(k, 7)
codes, scales = [], []
for r in range(2):
    x = [(i - 16) / 4 * (r + 1) for i in range(32)]
    amax = max(abs(v) for v in x)
    e = math.frexp(amax)[1] - 1 + 127
    scales += [e - 2, 0]
    f = 2.0 ** (127 - (e - 2))
    codes += [floor_code(v * f) for v in x]
for i in range(32): print("yOut byte[%d] is: %d" % (i, codes[2 * i] | (codes[2 * i + 1] << 4)))
for i, s in enumerate(scales): print("mxscaleOut[%d] is: %d" % (i, s))
'

# The DynamicMxQuantV3 sample (upstream's inputs, whose expected codes its docs print: y 0, 72,
# 96, 120 and mxscale 128, 0): the cuBLAS rule in float32 (S = amax * fp32(1 / 448), the
# exponent rounded up unless S is a power of two), then each element's E4M3FN code by
# enumeration (docs/ops/dynamic_mx_quant.md).
check_sample test_aclnn_dynamic_mx_quant_v3 '
import numpy as np
def e4m3(c):
    s = -1.0 if c & 0x80 else 1.0
    e, m = (c >> 3) & 15, c & 7
    if e == 15 and m == 7: return float("nan")
    return s * (m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7))
codes = [c for c in range(256) if not np.isnan(e4m3(c))]
def code(v):
    v = float(np.clip(v, -448.0, 448.0))
    return min(codes, key=lambda c: (abs(e4m3(c) - v), c & 1))
x = np.array([0, 8, 64, 512], np.float32)
amax = max(np.abs(x).max(), np.float32(0.5))
s = (amax * np.float32(1.0 / 448)).astype(np.float32)
bits = int(s.view(np.uint32))
e, man = bits >> 23, bits & 0x7FFFFF
scale_code = e + (1 if (0 < e < 254 and man > 0) or (e == 0 and man > 0x400000) else 0)
factor = np.float32(2.0 ** (127 - scale_code))
for i, v in enumerate(x * factor): print("yOut[%d] is: %d" % (i, code(v)))
print("mxscaleOut[0] is: %d" % scale_code)
print("mxscaleOut[1] is: 0")
'

# The AntiMxQuant sample (upstream's inputs, whose expected bf16 bits its docs print: 0, 16640,
# 17024, 17408): each E4M3FN code's value times 2^(128 - 127) in float32, as bf16 bits.
check_sample test_aclnn_anti_mx_quant '
import numpy as np
def e4m3(c):
    e, m = (c >> 3) & 15, c & 7
    return m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
y = np.array([e4m3(c) for c in (0, 72, 96, 120)], np.float32) * np.float32(2.0 ** (128 - 127))
for i, v in enumerate(y.view(np.uint32) >> 16): print("y[%d] is: %d" % (i, v))
'

# The DynamicQuant sample (upstream's inputs): float32 products, the row max over 127, the
# quotient rounded half to even (docs/ops/dynamic_quant.md).
check_sample test_aclnn_dynamic_quant '
import numpy as np
x = np.arange(128, dtype=np.float16).reshape(4, 32).astype(np.float32)
s = (np.arange(32) * 32 + 1).astype(np.float16).astype(np.float32)
v = x * s
scale = np.abs(v).max(axis=1) / np.float32(127)
y = np.clip(np.rint(v / scale[:, None]), -128, 127).astype(np.int8)
for i, q in enumerate(y.reshape(-1)): print("y result[%d] is: %d" % (i, q))
for i, c in enumerate(scale): print("scale result[%d] is: %.9g" % (i, c))
'

# The AscendQuantV3 sample (upstream's inputs): x * scale + offset in float32, rounded half to
# even (docs/ops/ascend_quant_v3.md), INT8.
check_sample test_aclnn_ascend_quant_v3 '
import numpy as np
x = np.arange(8, dtype=np.float32).reshape(4, 2)
s = np.array([1, 2], np.float32)
o = np.array([1, 2], np.float32)
y = np.clip(np.rint(x * s + o), -128, 127).astype(np.int8)
for i, v in enumerate(y.reshape(-1)): print("result[%d] is: %d" % (i, v))
'

# The ApplyAdamWQuant sample (upstream's attributes, step 0: t = 1): the documented steps in
# float32 (constants in double, rounded once), each new moment coded by the nearest entry of the
# ascending map (the lower on a tie; m's entry of the opposite sign moved one code towards it).
check_sample test_aclnn_apply_adam_w_quant '
import numpy as np
f = np.float32
def dmap(signed):
    out = [0.0, 1.0]
    for e, s in enumerate([1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]):
        k = (1 << e) if signed else (2 << e)
        for j in range(k):
            mid = 0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * k)
            out.append(float(f(s * mid)))
            if signed: out.append(float(f(-(s * mid))))
    return np.array(sorted(out), f)
qm, qv = dmap(True), dmap(False)
i = np.arange(256)
var = (i - 128).astype(f) / f(64)
grad = ((i * 37) % 101 - 50).astype(f) / f(16)
m0 = qm[(i * 7) % 256] * f(5)
v0 = qv[128 + (i * 11) % 128] * f(3)
lr, b1, b2, wd, eps, gs = [float(f(x)) for x in (0.1, 0.1, 0.1, 0.1, 0.01, 0.1)]
c2 = np.sqrt(1 - b2)
g = grad * f(gs)
m = m0 * f(b1) + g * f(1 - b1)
v = v0 * f(b2) + (g * g) * f(1 - b2)
var = (var + (m * f(-lr * c2 / (1 - b1))) / (np.sqrt(v) + f(eps * c2))) * f(1 - lr * wd)
def code(x, q, signed):
    hi = np.clip(np.searchsorted(q, x, side="left"), 1, 255)
    lo = hi - 1
    c = np.where(np.abs(x - q[lo]) <= np.abs(x - q[hi]), lo, hi)
    if signed:
        c = np.where((x > 0) & (q[c] < 0), np.minimum(c + 1, 255), c)
        c = np.where((x < 0) & (q[c] > 0), np.maximum(c - 1, 0), c)
    return c
am, av = np.abs(m).max(), np.abs(v).max()
print("var: " + " ".join("%.9g" % x for x in var))
print("m: " + " ".join(str(c) for c in code(m / am, qm, True)))
print("v: " + " ".join(str(c) for c in code(v / av, qv, False)))
print("absmaxM: %.9g" % am)
print("absmaxV: %.9g" % av)
'

# The ForeachNonFiniteCheckAndUnscale sample: a finite list scaled by 3.1 (values from numpy
# float32, computed here), then a list holding an inf scaled by 0.5 with foundInf set to 1.
unscale="$bin_dir/example_aclnn_foreach_unscale"
if [[ ! -x "$unscale" ]]; then
  fail "$unscale is not built"
else
  unscale_out="$("$unscale")" || fail "aclnn_foreach_unscale exited with $?"
  echo "$unscale_out"
  unscale_expected="$(/usr/bin/python3 -c '
import numpy as np
g1 = np.arange(1, 7, dtype=np.float32)
g2 = np.array([7, 8, 9], dtype=np.float32)
print("finite g1:" + "".join(" %f" % v for v in g1 * np.float32(3.1)))
print("finite g2:" + "".join(" %f" % v for v in g2 * np.float32(3.1)))
print("finite foundInf: %f" % 0.0)
print("with-inf g1:" + "".join(" %f" % v for v in g1 * np.float32(0.5)))
print("with-inf g2:" + "".join(" %f" % v for v in np.array([7, np.inf, 9], np.float32) * np.float32(0.5)))
print("with-inf foundInf: %f" % 1.0)
')" || fail "numpy failed for aclnn_foreach_unscale"
  [[ "$unscale_out" == "$unscale_expected" ]] ||
    fail "aclnn_foreach_unscale printed other values than numpy:
$unscale_expected"
fi

# The loss-scaling walk-through (the library's own program). Checked against GradScaler's rule
# (interval 4, factors 2 and 0.5), transcribed here: each row's next scale follows from its scale
# and overflow column; the toy's gradients (up to about 2 in magnitude) overflow fp16 at scales
# 65536 and 32768 but not 16384, so steps 0 and 1 overflow, then the bad batch (step 6, NaN) and
# the steep batch (step 9); the optimizer runs exactly on the other steps.
scaling="$bin_dir/example_amp_loss_scaling"
if [[ ! -x "$scaling" ]]; then
  fail "$scaling is not built"
else
  scaling_out="$("$scaling")" || fail "amp_loss_scaling exited with $?"
  echo "$scaling_out"
  /usr/bin/python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l[:4].strip().isdigit()]
assert len(rows) == 14, rows
scale, tracker = 65536.0, 0
for step, used, loss, overflow, optimizer, nxt in rows:
    assert float(used) == scale, (step, used, scale)
    assert (overflow == "yes") == (int(step) in (0, 1, 6, 9)), (step, overflow)
    assert (optimizer == "skipped") == (overflow == "yes"), (step, optimizer)
    if overflow == "yes":
        scale, tracker = scale * 0.5, 0
    else:
        tracker += 1
        if tracker == 4:
            scale, tracker = scale * 2.0, 0
    assert float(nxt) == scale, (step, nxt, scale)
' <<<"$scaling_out" || fail "amp_loss_scaling does not follow the loss-scaling rule"
  grep -qF "steps 14, skipped 4, best scale 16384, scale changes 6" <<<"$scaling_out" ||
    fail "amp_loss_scaling printed other statistics"
  grep -qF "[severity 9] nan_inf: the loss is nan" <<<"$scaling_out" ||
    fail "amp_loss_scaling: no report for the NaN step"
fi

# The SoftmaxCrossEntropyWithLogits program: the constant batch of CANN's sample (features 1,
# labels 2: loss = 2 * 4 * log 4, backprop = 1/4 - 2) and a 3-class batch, against numpy in
# float64 (loss = -sum(labels * log_softmax), backprop = softmax - labels), within 2e-6.
sce="$bin_dir/example_aclnn_softmax_cross_entropy_with_logits"
if [[ ! -x "$sce" ]]; then
  fail "$sce is not built"
else
  sce_out="$("$sce")" || fail "aclnn_softmax_cross_entropy_with_logits exited with $?"
  echo "$sce_out"
  /usr/bin/python3 -c '
import sys, numpy as np
got = {}
for line in sys.stdin:
    key, values = line.split(":")
    got[key] = np.array([float(v) for v in values.split()])
def expect(name, x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    s = x - x.max(axis=1, keepdims=True)
    lsm = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    assert np.allclose(got[name + " loss"], -(y * lsm).sum(axis=1), rtol=0, atol=2e-6), name
    assert np.allclose(got[name + " backprop"], (np.exp(lsm) - y).ravel(), rtol=0, atol=2e-6), name
expect("constant", np.ones((16, 4)), np.full((16, 4), 2.0))
expect("classifier", [[2, 1, 0.1], [0.5, 2.5, 0.3], [-1, 0, 3]], np.eye(3))
' <<<"$sce_out" || fail "aclnn_softmax_cross_entropy_with_logits printed other values than numpy"
fi

# CANN's own SoftmaxCrossEntropyWithLogits sample, as written: its output buffers are sized from
# int16 host vectors (32 and 128 bytes) for fp32 [16] and [16, 4] tensors, so the operator writes
# 32 and 128 bytes past them. It must run to the end with the right losses (numpy: 8 ln 4 per
# row), and MANTISSA_DEBUG_MEMORY=1 must report both overruns at aclrtFree.
sce_up="$bin_dir/example_test_aclnn_softmax_cross_entropy_with_logits"
if [[ ! -x "$sce_up" ]]; then
  fail "$sce_up is not built"
else
  up_err="$(mktemp)"
  up_out="$(MANTISSA_DEBUG_MEMORY=1 "$sce_up" 2>"$up_err")" ||
    fail "test_aclnn_softmax_cross_entropy_with_logits exited with $?"
  echo "$up_out"
  cat "$up_err"
  /usr/bin/python3 -c '
import sys, numpy as np
got = [float(line.split(":")[1]) for line in sys.stdin if line.startswith("loss[")]
assert len(got) == 16, got
assert np.allclose(got, -(2.0 * np.log(0.25)) * 4, rtol=0, atol=2e-6), got
' <<<"$up_out" || fail "test_aclnn_softmax_cross_entropy_with_logits: expected 16 losses of 8 ln 4"
  grep -q "of 32 bytes was written 32 bytes past its end" "$up_err" ||
    fail "the loss buffer's overrun was not reported"
  grep -q "of 128 bytes was written 128 bytes past its end" "$up_err" ||
    fail "the backprop buffer's overrun was not reported"
  rm -f "$up_err"
fi

# The SoftmaxGrad and LogSoftmaxGrad samples (CANN's published inputs: gradOutput [4, 2] = 0..7,
# output = 1 1 1 2 2 2 3 3, dim 0). The reference is computed here, independently, with numpy in
# float64; each printed value must be within 2 fp32 ulp of it (the softmax one is exact; the
# log-softmax one carries the fp32 exp's error), and every target must print the same lines.
check_close() {  # name, python expression giving the float64 values y
  local exe="$bin_dir/example_$1"
  if [[ ! -x "$exe" ]]; then
    fail "$exe is not built"
    return
  fi
  local out
  out="$("$exe")" || { fail "$1 exited with $?"; return; }
  echo "$out"
  "$py" -c "
import sys
import numpy as np
$2
want = np.asarray(y, dtype=np.float64).ravel()
got = []
for line in sys.stdin:
    if line.startswith('result['):
        got.append(float(line.split(':')[1]))
got = np.asarray(got)
assert got.shape == want.shape, (got.shape, want.shape)
ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
err = np.abs(got - want) / ulp
assert np.all(err <= 2.0 + 1e-6 / ulp), (got, want, err)
" <<<"$out" || fail "$1 printed values more than 2 ulp from numpy's"
  for target in "${targets[@]}"; do
    [[ "$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$exe")" == "$out" ]] ||
      fail "$1 output differs under MANTISSA_SIMD_TARGET=$target"
  done
}
check_close test_aclnn_softmax_grad "
dy = np.arange(8, dtype=np.float64).reshape(4, 2)
o = np.array([1, 1, 1, 2, 2, 2, 3, 3], dtype=np.float64).reshape(4, 2)
y = o * (dy - (dy * o).sum(axis=0, keepdims=True))"
check_close test_aclnn_log_softmax_grad "
dy = np.arange(8, dtype=np.float64).reshape(4, 2)
o = np.array([1, 1, 1, 2, 2, 2, 3, 3], dtype=np.float64).reshape(4, 2)
y = dy - np.exp(o) * dy.sum(axis=0, keepdims=True)"
# The SwiGlu and SwiGluGrad samples (CANN's published inputs: x [2, 32] = 0..63 split along
# dim -1, then along dim 0; yGrad [2, 16] = -2..29 and x [2, 32] = -2..61 along dim -1). The
# references are computed here, independently, with numpy in float64: silu(a) = a / (1 + exp(-a)),
# silu'(a) = s + a s (1 - s) with s = sigmoid(a); each printed value must be within 2 fp32 ulp of
# them (or 1e-6, the printed resolution), and every target must print the same lines.
check_close test_aclnn_swi_glu_grad "
g = np.arange(-2, 30, dtype=np.float64).reshape(2, 16)
x = np.arange(-2, 62, dtype=np.float64).reshape(2, 32)
a, b = x[:, :16], x[:, 16:]
s = 1 / (1 + np.exp(-a))
y = np.concatenate([g * b * (s + a * s * (1 - s)), g * a * s], axis=1)"
swiglu="$bin_dir/example_test_aclnn_swi_glu"
if [[ ! -x "$swiglu" ]]; then
  fail "$swiglu is not built"
else
  swiglu_out="$("$swiglu")" || fail "test_aclnn_swi_glu exited with $?"
  echo "$swiglu_out"
  "$py" -c "
import sys
import numpy as np
x = np.arange(64, dtype=np.float64).reshape(2, 32)
silu = lambda a: a / (1 + np.exp(-a))
want = {'': silu(x[:, :16]) * x[:, 16:], 'dim0 ': silu(x[:1]) * x[1:]}
got = {'': [], 'dim0 ': []}
for line in sys.stdin:
    key = 'dim0 ' if line.startswith('dim0 ') else ''
    assert line[len(key):].startswith('result['), line
    got[key].append(float(line.split(':')[1]))
for key, w in want.items():
    w, g = w.ravel(), np.asarray(got[key])
    assert g.shape == w.shape, (key, g.shape, w.shape)
    ulp = np.spacing(np.abs(w).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(g - w) <= 2 * ulp + 1e-6), (key, g, w)
" <<<"$swiglu_out" || fail "test_aclnn_swi_glu printed values more than 2 ulp from numpy's"
  for target in "${targets[@]}"; do
    [[ "$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$swiglu")" == "$swiglu_out" ]] ||
      fail "test_aclnn_swi_glu output differs under MANTISSA_SIMD_TARGET=$target"
  done
fi

# The ForeachNorm sample (upstream's published inputs: x1 = 1..6 as [2, 3], x2 = 7, 8, 9 as
# [1, 3]): the 2-, 1- and inf-norms of each, from numpy in float64 rounded to float32.
norm="$bin_dir/example_aclnn_foreach_norm"
if [[ ! -x "$norm" ]]; then
  fail "$norm is not built"
else
  norm_out="$("$norm")" || fail "aclnn_foreach_norm exited with $?"
  echo "$norm_out"
  norm_expected="$(/usr/bin/python3 -c '
import numpy as np
xs = [np.arange(1, 7, dtype=np.float32).reshape(2, 3), np.array([[7, 8, 9]], dtype=np.float32)]
for label, order in (("p=2", 2), ("p=1", 1), ("p=inf", np.inf)):
    for i, x in enumerate(xs):
        v = np.float32(np.linalg.norm(x.astype(np.float64).ravel(), ord=order))
        print("%s out%d: %f" % (label, i + 1, v))
')" || fail "numpy failed for aclnn_foreach_norm"
  [[ "$norm_out" == "$norm_expected" ]] ||
    fail "aclnn_foreach_norm printed other values than numpy:
$norm_expected"
fi

# The CrossEntropyLoss sample: CANN's published batch (input [2, 5], targets 0 and 0, mean; upstream
# prints loss 1.0937543) and a weighted, smoothed batch with an ignored row (sum), each with its
# gradient for gradLoss = 1. The reference is computed here, independently, with numpy in float64
# (PyTorch's cross_entropy: log_softmax, the targets' weights, label smoothing eps / C); every
# value within 2e-6 + 2e-6 |v|, and every target prints the same lines.
ce="$bin_dir/example_test_aclnn_cross_entropy_loss"
if [[ ! -x "$ce" ]]; then
  fail "$ce is not built"
else
  ce_out="$("$ce")" || fail "test_aclnn_cross_entropy_loss exited with $?"
  echo "$ce_out"
  /usr/bin/python3 -c '
import sys, numpy as np
got = {}
for line in sys.stdin:
    key, values = line.split(":")
    got[key] = np.array([float(v) for v in values.split()])
def expect(name, x, target, w, reduction, eps):
    x = np.asarray(x, np.float64)
    n, c = x.shape
    w = np.ones(c) if w is None else np.asarray(w, np.float64)
    s = x - x.max(axis=1, keepdims=True)
    lp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    keep = np.array([t != -100 for t in target])
    t = np.where(keep, target, 0)
    per = (1 - eps) * -w[t] * lp[np.arange(n), t] + eps / c * -(lp * w).sum(axis=1)
    per = np.where(keep, per, 0.0)
    onehot = np.eye(c)[t]
    # d per_i / d x = (1 - eps) w_t (p - onehot) + eps / C (p sum(w) - w), on rows kept
    grad = ((1 - eps) * w[t][:, None] * (np.exp(lp) - onehot)
            + eps / c * (np.exp(lp) * w.sum() - w)) * keep[:, None]
    if reduction == "mean":
        loss, grad = per.sum() / w[t][keep].sum(), grad / w[t][keep].sum()
    else:
        loss = per.sum()
    for key, want in (("loss", np.atleast_1d(loss)), ("logProb", lp.ravel()), ("xGrad", grad.ravel())):
        v = got[name + " " + key]
        assert v.shape == want.shape and np.all(np.abs(v - want) <= 2e-6 + 2e-6 * np.abs(want)), (name, key, v, want)
expect("upstream", [[5, 0, 3, 3, 7], [9, 3, 5, 2, 4]], [0, 0], None, "mean", 0.0)
expect("weighted", [[2, 1, 0.1, -1], [0.5, 2.5, 0.3, 0], [-1, 0, 3, 1]], [1, -100, 3],
       [0.5, 1, 2, 1.5], "sum", 0.1)
assert abs(got["upstream loss"][0] - 1.0937543) < 1e-6
' <<<"$ce_out" || fail "test_aclnn_cross_entropy_loss printed other values than numpy"
  for target in "${targets[@]}"; do
    [[ "$(MANTISSA_SIMD_TARGET=$target MANTISSA_NUM_THREADS=1 "$ce")" == "$ce_out" ]] ||
      fail "test_aclnn_cross_entropy_loss output differs under MANTISSA_SIMD_TARGET=$target"
  done
fi

exit $status
