"""The mantissa module on numpy arrays and torch tensors: the bits of the C++ API (known values
and an independent numpy float32 evaluation of the normative groupings), zero copies, bf16
through torch, errors with CANN codes and nothing written, runtime settings, the kit's check."""

import os
import threading

import numpy as np
import pytest

import mantissa

torch = pytest.importorskip("torch")

SOURCE_DIR = os.environ.get(
    "MANTISSA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
f32 = np.float32


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def one(x, dtype=np.float32):
    return np.array([x], dtype=dtype)


def adamw_golden32(var, m, v, grad, step, lr, beta1, beta2, wd, eps):
    """ApplyAdamWV2's normative rule (docs/ops/apply_adam_w_v2.md) in numpy float32: host
    constants in double rounded once, then every operation rounded to fp32, no FMA."""
    t = step + 1.0
    lr, beta1, beta2, wd, eps = (float(f32(x)) for x in (lr, beta1, beta2, wd, eps))
    step_size = f32(lr / (1.0 - beta1**t))
    inv_bc2_sqrt = f32(1.0 / np.sqrt(1.0 - beta2**t))
    decay = f32(1.0 - lr * wd)
    one_m_b1, one_m_b2 = f32(1.0 - beta1), f32(1.0 - beta2)
    var1 = var * decay
    m_new = m + ((grad - m) * one_m_b1)
    v_new = (v * f32(beta2)) + ((grad * grad) * one_m_b2)
    denom = (np.sqrt(v_new) * inv_bc2_sqrt) + f32(eps)
    return var1 - ((m_new / denom) * step_size), m_new, v_new


def test_apply_adam_w_v2_worked_example_bits():
    # docs/ops/apply_adam_w_v2.md's worked example (bits computed independently with numpy).
    var, m, v, g = one(1.0), one(0.2), one(0.01), one(0.5)
    mantissa.apply_adam_w_v2(var, m, v, g, np.array([0], dtype=np.int64))
    assert bits(m)[0] == 0x3E6B8520
    assert bits(v)[0] == 0x3C27C5A9
    assert bits(var)[0] == 0x3F7FD03D


@pytest.mark.parametrize("step", [0, 7, 999])
def test_apply_adam_w_v2_matches_numpy_golden32_bitwise(step):
    rng = np.random.default_rng(step)
    n = 4099  # past several vector widths, with a tail
    var = rng.standard_normal(n).astype(f32)
    m = (rng.standard_normal(n) * 0.1).astype(f32)
    v = (rng.random(n) * 0.01).astype(f32)
    g = rng.standard_normal(n).astype(f32)
    want = adamw_golden32(var, m, v, g, step, 1e-3, 0.9, 0.999, 1e-2, 1e-8)
    mantissa.apply_adam_w_v2(var, m, v, g, np.array([step], dtype=np.int64))
    for got, exp in zip((var, m, v), want):
        np.testing.assert_array_equal(bits(got), bits(exp))


def test_multi_tensor_adam_w_equals_single_operator_bitwise():
    rng = np.random.default_rng(3)
    shapes = [(3, 5), (1000,), (17, 1, 4), (1,)]
    single = [[rng.standard_normal(s).astype(f32) for _ in range(4)] for s in shapes]
    multi = [[a.copy() for a in p] for p in single]
    for var, m, v, g in single:
        v[...] = np.abs(v)
        mantissa.apply_adam_w_v2(var, m, v, g, np.array([4], dtype=np.int64), lr=1e-2,
                                 weight_decay=0.1)
    for p in multi:
        p[2][...] = np.abs(p[2])
    mantissa.multi_tensor_adam_w([p[0] for p in multi], [p[1] for p in multi],
                                 [p[2] for p in multi], [p[3] for p in multi], step=4, lr=1e-2,
                                 weight_decay=0.1)
    for a, b in zip(single, multi):
        for x, y in zip(a[:3], b[:3]):
            np.testing.assert_array_equal(bits(x), bits(y))


def test_fused_adamw_steps_per_parameter_equal_apply_adam_w_v2_bitwise():
    # aclnnFusedAdamw's contract: t = state_steps[i] + 1 per parameter, ApplyAdamWV2's math.
    rng = np.random.default_rng(4)
    shapes, steps = [(3, 5), (1000,), (0,), (17, 4)], [0, 4, 2, 99]
    single = [[rng.standard_normal(s).astype(f32) for _ in range(4)] for s in shapes]
    for p in single:
        p[2][...] = np.abs(p[2])
    fused = [[a.copy() for a in p] for p in single]
    for (var, m, v, g), step in zip(single, steps):
        if var.size:
            mantissa.apply_adam_w_v2(var, m, v, g, np.array([step], dtype=np.int64), lr=1e-2,
                                     weight_decay=0.1)
    mantissa.fused_adamw([p[0] for p in fused], [p[3] for p in fused], [p[1] for p in fused],
                         [p[2] for p in fused],
                         state_steps=[np.array([s], dtype=np.float32) for s in steps], lr=1e-2,
                         weight_decay=0.1)
    for a, b in zip(single, fused):
        for x, y in zip(a[:3], b[:3]):
            np.testing.assert_array_equal(bits(x), bits(y))
    # found_inf == 1 writes nothing; a grad scale of 2 is an exact halving of the gradient.
    before = [a.copy() for a in fused[0]]
    mantissa.fused_adamw([fused[0][0]], [fused[0][3]], [fused[0][1]], [fused[0][2]],
                         state_steps=[np.array([1], dtype=np.int64)], found_inf=one(1.0))
    for x, y in zip(before, fused[0]):
        np.testing.assert_array_equal(bits(x), bits(y))
    with pytest.raises(mantissa.Error) as e:
        mantissa.fused_adamw([fused[0][0]], [fused[0][3]], [fused[0][1]], [fused[0][2]],
                             state_steps=[np.array([1], dtype=np.int64)], lr=-1.0)
    assert e.value.code == 161002 and "lr" in str(e.value)


def test_fused_sgd_matches_numpy_transcription_bitwise():
    # CANN's FusedSgd kernel in fp32, one rounding per line, the results rounded once to fp16;
    # the unscaled gradient written back.
    rng = np.random.default_rng(6)
    n = 777
    p = rng.standard_normal(n).astype(np.float16)
    g = rng.standard_normal(n).astype(np.float16)
    buf = (0.1 * rng.standard_normal(n)).astype(np.float16)
    lr, mom, damp, wd, scale = f32(0.05), f32(0.9), f32(0.2), f32(0.01), f32(8.0)
    gs = g.astype(f32) * (f32(1) / scale)
    gd = gs + wd * p.astype(f32)
    new_buf = mom * buf.astype(f32) + (f32(1) - damp) * gd
    want_p = (p.astype(f32) - lr * new_buf).astype(np.float16)
    mantissa.fused_sgd([p], [g], momentum_buffers=[buf], grad_scale=one(8.0), weight_decay=0.01,
                       momentum=0.9, lr=0.05, dampening=0.2)
    np.testing.assert_array_equal(bits(p), bits(want_p))
    np.testing.assert_array_equal(bits(buf), bits(new_buf.astype(np.float16)))
    np.testing.assert_array_equal(bits(g), bits(gs.astype(np.float16)))
    with pytest.raises(mantissa.Error) as e:
        mantissa.fused_sgd([p], [g], momentum=0.9, lr=0.05)
    assert e.value.code == 161002 and "momentum" in str(e.value)

def test_sgd_matches_numpy_golden32_bitwise():
    # docs/ops/sgd.md's rule: grad = g + p*wd; accum_t = accum*m + grad - (grad*(1-stat))*d;
    # p -= accum_t*lr.
    rng = np.random.default_rng(5)
    n = 1000
    p = rng.standard_normal(n).astype(f32)
    g = rng.standard_normal(n).astype(f32)
    accum = rng.standard_normal(n).astype(f32)
    stat = (rng.random(n) < 0.5).astype(f32)
    lr, mom, d, wd = f32(0.01), f32(0.9), f32(0.25), f32(1e-3)
    grad = g + (p * wd)
    acc_t = ((accum * mom) + grad) - ((grad * (f32(1) - stat)) * d)
    want_p = p - (acc_t * lr)
    mantissa.sgd(p, g, one(lr), accum, one(mom), stat, dampening=float(d),
                 weight_decay=float(wd))
    np.testing.assert_array_equal(bits(p), bits(want_p))
    np.testing.assert_array_equal(bits(accum), bits(acc_t))
    assert np.all(stat == 0) and not np.any(np.signbit(stat))


def test_amp_update_scale_known_values():
    scale, tracker, found = one(65536.0), np.array([900], dtype=np.int32), one(0.0)
    mantissa.amp_update_scale(scale, tracker, found, growth_interval=1000)
    assert scale[0] == 65536.0 and tracker[0] == 901
    tracker[0] = 999
    mantissa.amp_update_scale(scale, tracker, found, growth_interval=1000)
    assert scale[0] == 131072.0 and tracker[0] == 0
    found[0] = 1.0
    mantissa.amp_update_scale(scale, tracker, found, growth_interval=1000)
    assert scale[0] == 65536.0 and tracker[0] == 0


def test_softmax_and_cross_entropy_against_fp64():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((7, 33)).astype(f32) * 4
    y = np.empty_like(x)
    mantissa.softmax(x, y, dim=-1)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    # docs/ops/softmax.md: a few ulp, growing like |x - max| / 2 ulp (x - max is rounded to fp32
    # before the exponential).
    bound = ref * 2.0**-24 * (4 + np.abs(x - x.max(axis=1, keepdims=True)))
    assert np.all(np.abs(y - ref) <= bound)
    labels = np.zeros_like(x)
    labels[np.arange(7), rng.integers(0, 33, 7)] = 1
    loss = np.empty(7, dtype=f32)
    backprop = np.empty_like(x)
    mantissa.softmax_cross_entropy_with_logits(x, labels, loss, backprop)
    np.testing.assert_allclose(loss, -(labels * np.log(ref)).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(backprop, ref - labels, atol=2e-7)


def test_foreach_ops_and_norm():
    grads = [np.full((3, 4), 2.0, f32), np.full(5, -4.0, np.float16)]
    found = one(0.0)
    mantissa.foreach_non_finite_check_and_unscale(grads, found, one(0.5))
    assert found[0] == 0.0 and np.all(grads[0] == 1.0) and np.all(grads[1] == -2.0)
    grads[1][2] = np.inf
    mantissa.foreach_non_finite_check_and_unscale(grads, found, one(1.0))
    assert found[0] == 1.0
    outs = [np.zeros(1, f32), np.zeros((), f32)]
    mantissa.foreach_norm([np.array([3, 4], f32), np.array([[1, -2], [2, 0]], f32)], outs)
    assert outs[0][0] == 5.0 and outs[1] == 3.0
    assert mantissa.grad_norm([np.array([3, 4], f32)], norm_type=1.0) == 7.0
    g = [np.array([3, 4], f32)]
    total = mantissa.clip_grad_norm(g, 1.0)
    assert total == 5.0 and abs(float(np.hypot(*g[0])) - 1.0) < 1e-6


def test_rms_norm_forward_and_backward_against_fp64():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 32)).astype(f32)
    gamma = rng.standard_normal(32).astype(f32)
    y, rstd = np.empty_like(x), np.empty((6, 1), f32)
    mantissa.rms_norm(x, gamma, y, rstd, epsilon=1e-6)
    r = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(rstd, r, rtol=1e-6)
    np.testing.assert_allclose(y, x * r * gamma, rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal(x.shape).astype(f32)
    dx, dgamma = np.empty_like(x), np.empty_like(gamma)
    mantissa.rms_norm_grad(dy, x, rstd, gamma, dx, dgamma)
    np.testing.assert_allclose(dgamma, (x * r * dy).sum(axis=0), rtol=1e-5, atol=1e-5)


def test_layer_norm_against_torch_and_fp64():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((5, 4, 48)).astype(f32) * 3 + 1e3)
    w = torch.from_numpy(rng.standard_normal(48).astype(f32))
    b = torch.from_numpy(rng.standard_normal(48).astype(f32))
    out, mean, rstd = torch.empty_like(x), torch.empty(5, 4, 1), torch.empty(5, 4, 1)
    mantissa.layer_norm(x, [48], out, weight=w, bias=b, mean=mean, rstd=rstd, eps=1e-5)
    x64 = x.double()
    m64 = x64.mean(-1, keepdim=True)
    r64 = 1 / torch.sqrt(((x64 - m64) ** 2).mean(-1, keepdim=True) + 1e-5)
    want = ((x64 - m64) * r64 * w.double() + b.double()).float()
    # fp64 statistics and arithmetic, one rounding: at most one ulp from the fp64 result.
    assert ((out - want).abs() <= torch.finfo(torch.float32).eps * want.abs().clamp(min=1)).all()
    assert torch.equal(mean, m64.float()) and torch.allclose(rstd, r64.float(), rtol=1e-7)
    dy = torch.from_numpy(rng.standard_normal((5, 4, 48)).astype(f32))
    dx, dw = torch.empty_like(x), torch.empty(48)
    mantissa.layer_norm_grad(dy, x, [48], mean, rstd, weight=w, dx=dx, dweight=dw)
    xr = x.clone().requires_grad_(True)
    wr, br = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    torch.nn.functional.layer_norm(xr, (48,), wr, br, 1e-5).backward(dy)
    assert torch.allclose(dx, xr.grad, rtol=1e-3, atol=1e-4)
    # dweight against fp64 from the same (stored fp32) mean and rstd; torch's fp32 xhat loses
    # ~1e-4 here, the rows' mean being 1e3.
    dw64 = (dy.double() * (x64 - mean.double()) * rstd.double()).sum(dim=(0, 1))
    assert torch.allclose(dw.double(), dw64, rtol=1e-6, atol=1e-6)
    assert torch.allclose(dw, wr.grad, rtol=1e-3, atol=1e-3)
    # normalized_shape that is not x's trailing dims: mantissa.Error with 161002, nothing written.
    before = out.clone()
    with pytest.raises(mantissa.Error) as e:
        mantissa.layer_norm(x, [4], out)
    assert e.value.code == 161002 and "normalized_shape" in str(e.value)
    assert torch.equal(out, before)


def test_quantize_operators():
    x = np.array([[0.5, 1.5, -2.5, 300.0], [1.0, -1.0, 2.0, -0.2]], f32)
    y = np.zeros(x.shape, np.int8)
    mantissa.quantize(x, np.array([1.0], f32), y, axis=1)
    # Ties to even, saturation at 127.
    assert y.tolist() == [[0, 2, -2, 127], [1, -1, 2, 0]]
    y3 = np.zeros(x.shape, np.int8)
    mantissa.ascend_quant_v3(x, np.array([2.0], f32), y3, round_mode="floor")
    assert y3.tolist() == [[1, 3, -5, 127], [2, -2, 4, -1]]
    fp8 = np.zeros(x.shape, np.uint8)
    mantissa.quantize(x, np.array([1.0], f32), fp8, dtype="fp8_e4m3")
    assert fp8[0, 0] == 0x30  # 0.5 in E4M3FN
    # QuantMax: FP8 codes of x * scale and max |x| in one pass (E4M3FN: 2 * 300 saturates).
    codes, amax = np.zeros(x.shape, np.uint8), np.zeros(1, f32)
    mantissa.quant_max(x, np.array([2.0], f32), codes, amax)
    assert codes[0, 0] == 0x38 and codes[0, 3] == 0x7E and amax[0] == 300.0  # 1.0; 448
    e5 = np.zeros(x.shape, np.uint8)
    xt = torch.tensor(x, dtype=torch.bfloat16)
    amax_t = torch.zeros(1, dtype=torch.bfloat16)
    mantissa.quant_max(xt, np.array([1.0], f32), e5, amax_t, dtype="fp8_e5m2")
    assert e5[0, 1] == 0x3E and amax_t.item() == 300.0  # 1.5 in E5M2
    with pytest.raises(mantissa.Error) as e:
        mantissa.quant_max(x, np.array([1.0], f32), codes, amax, round_mode="hybrid")
    assert e.value.code == 161002 and "rint" in str(e.value)
    xd = torch.tensor([[1.0, -4.0, 2.0], [0.5, 0.25, -0.125]], dtype=torch.float16)
    yd, sd = torch.zeros(2, 3, dtype=torch.int8), torch.zeros(2)
    mantissa.dynamic_quant(xd, yd, sd)
    assert torch.allclose(sd, torch.tensor([4.0 / 127, 0.5 / 127]))
    assert yd[0].tolist() == [32, -127, 64] and yd[1, 0].item() == 127
    with pytest.raises(mantissa.Error) as e:
        mantissa.ascend_quant_v3(x, np.array([2.0], f32), y3, round_mode="nearest")
    assert e.value.code == 161002


def bnb_dynamic_map(signed):
    """bitsandbytes' create_dynamic_map (8 bits, 7 exponent bits), built as they build it: torch
    float32 linspace and midpoints, scaled by a Python float."""
    data = []
    for i in range(7):
        items = 2 ** i + 1 if signed else 2 ** (i + 1) + 1
        b = torch.linspace(0.1, 1, items, dtype=torch.float32)
        means = (b[:-1] + b[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0.0, 1.0]
    return np.array(sorted(data), f32)


def test_dynamic_quant_maps_and_the_8_bit_adam_w_step():
    # The maps follow bitsandbytes' rule; built in double and rounded once, each entry is within
    # 2 ulp of bitsandbytes' float32 construction.
    for signed in (True, False):
        ours, theirs = mantissa.dynamic_quant_map(signed), bnb_dynamic_map(signed)
        assert ours.dtype == f32 and ours.shape == (256,) and np.all(np.diff(ours) >= 0)
        ulps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32))
        assert ulps.max() <= 2, (signed, ulps.max())
    # 100 steps of 8-bit AdamW (torch tensors in place) beside torch.optim.AdamW on the same
    # gradients: the 8-bit trajectory stays within 10% of fp32's displacement and its distance
    # to the target within 2% (measured: 4.6% and 1.1%).
    torch.manual_seed(0)
    n = 4096
    w0, target = torch.randn(n), torch.randn(n)
    w8, w32 = w0.clone(), w0.clone().requires_grad_(True)
    opt = torch.optim.AdamW([w32], lr=1e-2, weight_decay=0.0)
    m, v = torch.zeros(n, dtype=torch.uint8), torch.zeros(n, dtype=torch.uint8)
    am, av = torch.zeros(n // 256), torch.zeros(n // 256)
    qm = torch.from_numpy(mantissa.dynamic_quant_map(True))
    qv = torch.from_numpy(mantissa.dynamic_quant_map(False))
    for step in range(100):
        g = (w8 - target) + 0.1 * torch.randn(n)
        mantissa.ops.apply_adam_w_quant(w8, g, m, v, qm, qv, am, av, torch.tensor([step]),
                                        lr=1e-2, weight_decay=0.0)
        w32.grad = g.clone()
        opt.step()
    w32 = w32.detach()
    assert float((w8 - w32).norm() / (w32 - w0).norm()) < 0.1
    assert abs(float((w8 - target).norm() / (w32 - target).norm()) - 1) < 0.02
    # A map of 255 entries: mantissa.Error 161002 naming it, nothing written.
    before = w8.clone()
    with pytest.raises(mantissa.Error) as e:
        mantissa.ops.apply_adam_w_quant(w8, g, m, v, qm[:255], qv, am, av, torch.tensor([0]))
    assert e.value.code == 161002 and "qmap_m" in str(e.value)
    assert torch.equal(w8, before)


def test_zero_copy_in_place_numpy_and_torch():
    a = np.ones(1000, f32)
    ptr = a.ctypes.data
    mantissa.softmax(a, a)  # in place
    assert a.ctypes.data == ptr and np.allclose(a, 1e-3)
    t = torch.randn(64, 10)
    out = torch.empty_like(t)
    ptr = out.data_ptr()
    mantissa.log_softmax(t, out)
    assert out.data_ptr() == ptr
    assert torch.allclose(out, torch.log_softmax(t, -1), atol=1e-6)
    # A view into a bigger buffer: only the view's elements change.
    base = torch.zeros(10)
    view = base[2:6]
    mantissa.softmax(torch.ones(4), view)
    assert base[:2].eq(0).all() and base[6:].eq(0).all() and view.eq(0.25).all()


def test_bf16_and_fp16_torch_tensors():
    rng = torch.Generator().manual_seed(4)
    x = torch.randn(5, 40, generator=rng).to(torch.bfloat16)
    y = torch.empty_like(x)
    mantissa.softmax(x, y)
    ref = torch.softmax(x.float(), -1)
    assert ((y.float() - ref).abs() <= ref.abs() * 2**-8 + 1e-7).all()
    # bf16 ApplyAdamWV2 in place equals the fp32 golden rounded once per output (same-dtype
    # form: widened, computed in fp32, rounded once).
    var = torch.randn(300, generator=rng).to(torch.bfloat16)
    m = torch.zeros(300, dtype=torch.bfloat16)
    v = torch.zeros(300, dtype=torch.bfloat16)
    g = torch.randn(300, generator=rng).to(torch.bfloat16)
    want = adamw_golden32(var.float().numpy(), m.float().numpy(), v.float().numpy(),
                          g.float().numpy(), 0, 1e-3, 0.9, 0.999, 1e-2, 1e-8)
    ptr = var.data_ptr()
    mantissa.apply_adam_w_v2(var, m, v, g, torch.tensor([0]))
    assert var.data_ptr() == ptr
    for got, exp in zip((var, m, v), want):
        assert torch.equal(got, torch.from_numpy(exp).to(torch.bfloat16))
    h = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    hn = np.zeros(3, np.float16)
    mantissa.softmax(h, hn)  # fp16 torch in, fp16 numpy out
    assert np.allclose(hn, torch.softmax(h.float(), 0).numpy(), rtol=1e-3)


def test_errors_carry_codes_and_write_nothing():
    var, m, v = one(1.0), one(0.0), one(0.0)
    g = np.ones(2, f32)  # wrong shape
    with pytest.raises(mantissa.Error) as e:
        mantissa.apply_adam_w_v2(var, m, v, g, np.array([0], np.int64))
    assert e.value.code == 161002 and e.value.code_name == "ACLNN_ERR_PARAM_INVALID"
    assert "ApplyAdamWV2" in str(e.value)
    assert isinstance(e.value, ValueError)
    assert var[0] == 1.0 and m[0] == 0.0 and v[0] == 0.0
    # A failure in the last parameter of a list writes nothing in the first.
    p0 = np.ones(4, f32)
    with pytest.raises(mantissa.Error) as e:
        mantissa.multi_tensor_adam_w([p0, one(1)], [np.zeros(4, f32), one(0)],
                                     [np.zeros(4, f32), one(0)],
                                     [np.ones(4, f32), np.ones(1, np.float64)], step=0)
    assert e.value.code == 161002 and np.all(p0 == 1.0)
    with pytest.raises(mantissa.Error) as e:
        mantissa.amp_update_scale(one(1.0), np.zeros(1, np.int32), one(0.0), growth_interval=0)
    assert e.value.code == 561002
    with pytest.raises(mantissa.Error) as e:
        mantissa.softmax(np.ones(3, f32), None)
    assert e.value.code == 161001
    with pytest.raises(mantissa.Error):
        mantissa.set_num_threads(-1)
    with pytest.raises(mantissa.Error):
        mantissa.set_simd_target("NO_SUCH_TARGET")


def test_non_contiguous_and_read_only_are_refused():
    x = np.ones((4, 8), f32)
    out = np.zeros((8, 4), f32).T  # a transposed view
    with pytest.raises(mantissa.Error) as e:
        mantissa.softmax(x, out)
    assert e.value.code == 161002 and np.all(out == 0)
    t = torch.zeros(8, 4).t()
    with pytest.raises(mantissa.Error):
        mantissa.softmax(torch.ones(4, 8), t)
    assert t.eq(0).all()
    ro = np.zeros((4, 8), f32)
    ro.setflags(write=False)
    with pytest.raises(mantissa.Error) as e:
        mantissa.softmax(x, ro)
    assert e.value.code == 161002
    with pytest.raises(mantissa.Error):  # a dtype with no mantissa counterpart
        mantissa.softmax(np.ones(3, np.complex64), np.ones(3, np.complex64))


def test_same_bits_for_every_target_and_thread_count():
    rng = np.random.default_rng(11)
    base = [rng.standard_normal(n).astype(f32) for n in (1, 31, 4096, 70001)]
    results = []
    try:
        for target in mantissa.available_simd_targets():
            for threads in (1, 2, 3):
                mantissa.set_simd_target(target)
                mantissa.set_num_threads(threads)
                assert mantissa.simd_target() == target and mantissa.num_threads() == threads
                var = [b.copy() for b in base]
                m = [b * f32(0.1) for b in base]
                v = [np.abs(b) for b in base]
                mantissa.multi_tensor_adam_w(var, m, v, [b[::-1].copy() for b in base], step=3)
                results.append(np.concatenate([bits(x) for x in var + m + v]))
    finally:
        mantissa.set_simd_target("auto")
        mantissa.set_num_threads(0)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_gil_released_during_kernels():
    # While one thread runs a long fused step, another thread runs Python code.
    n = 8_000_000
    var, m, v, g = (np.ones(n, f32) for _ in range(4))
    ticks = []
    done = threading.Event()

    def kernel():
        for step in range(6):
            mantissa.multi_tensor_adam_w([var], [m], [v], [g], step=step)
        done.set()

    th = threading.Thread(target=kernel)
    th.start()
    while not done.is_set():
        ticks.append(1)
        done.wait(0.001)
    th.join()
    assert len(ticks) > 3


def test_info_and_check():
    info = mantissa.info()
    assert info["version"].startswith("mantissa ")
    assert info["simd_target"] in info["available_simd_targets"]
    assert mantissa.__version__ == info["version"].split()[-1]
    report = mantissa.check(os.path.join(SOURCE_DIR, "cases"), op="ApplyAdamWV2")
    assert report["summary"]["failed"] == 0 and report["summary"]["passed"] > 10
    assert all(c["verdict"] == "PASS" for c in report["cases"])
    empty = mantissa.check(os.path.join(SOURCE_DIR, "cases"), op="NoSuchOp")
    assert empty["summary"]["passed"] == 0


def test_every_operator_of_the_cpp_api_is_bound():
    # Every `Status op(...)` of include/mantissa/ops/*.h (and of optim.h) has a function of the
    # same name here: a new operator without a binding fails this test.
    import re

    names = set()
    for header in ("ops", "optim.h"):
        path = os.path.join(SOURCE_DIR, "include", "mantissa", header)
        files = [os.path.join(path, f) for f in sorted(os.listdir(path))] \
            if os.path.isdir(path) else [path]
        for f in files:
            with open(f) as text:
                names.update(re.findall(r"MANTISSA_API Status\s+(\w+)\s*\(", text.read()))
    names = {n for n in names if not n.endswith("_validate")}
    assert len(names) >= 18
    # Every generated binding carries a C++ API name (the declarations' kFunction).
    generated = {n for n in dir(mantissa.ops) if not n.startswith("_")}
    assert generated and generated <= names, sorted(generated - names)
    missing = sorted(n for n in names if not hasattr(mantissa, n))
    assert not missing, f"operators without a Python binding: {missing}"


def test_gelu_generated_binding_against_fp64():
    # mantissa.gelu comes from the declaration alone (no hand-written binding): tensors by
    # position or by name, in place, errors with CANN codes.
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(1000) * 4).astype(np.float32)
    x[:4] = [0.0, -0.0, np.inf, -np.inf]
    out = np.full_like(x, np.nan)
    mantissa.gelu(x, out)
    xd = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.sqrt(2 / np.pi) * (xd + 0.044715 * xd**3)
        want = 0.5 * xd * (1 + np.tanh(u))  # the documented tanh form in fp64
    want[3] = -0.0
    finite = np.abs(xd) < 4  # the tanh form in fp64 cancels further out in the negative tail
    np.testing.assert_allclose(out[finite], want[finite], rtol=2e-7, atol=0)
    assert bits(out[:4]).tolist() == [0x00000000, 0x80000000, 0x7F800000, 0x80000000]
    same = np.empty_like(x)
    mantissa.ops.gelu(self=x, out=same)
    assert bits(same).tolist() == bits(out).tolist()
    inplace = x.copy()
    mantissa.gelu(inplace, inplace)
    assert bits(inplace).tolist() == bits(out).tolist()
    with pytest.raises(mantissa.Error) as e:
        mantissa.gelu(x, np.empty(999, np.float32))
    assert e.value.code == 161002
    with pytest.raises(TypeError):
        mantissa.gelu(x)
    with pytest.raises(TypeError):
        mantissa.gelu(x, out, approximate="tanh")


def test_gelu_v2_and_backward_against_fp64():
    # The erf form and the derivatives, from the declarations: approximate by CANN's int or its
    # graph string (torch's spelling), broadcast and promoted gradients, against fp64 (math.erfc:
    # 1 + erf(x) would cancel in the negative tail).
    import math

    rng = np.random.default_rng(9)
    x = (rng.standard_normal(2000) * 3).astype(np.float32)
    xd = x.astype(np.float64)
    erfc = np.vectorize(math.erfc)
    phi = 0.5 * erfc(-xd / math.sqrt(2))
    y = np.empty_like(x)
    mantissa.gelu_v2(x, y)  # approximate none (0) by default
    np.testing.assert_allclose(y, xd * phi, rtol=2e-7, atol=1e-44)
    same = np.empty_like(x)
    mantissa.gelu_v2(x, same, approximate="none")
    assert bits(same).tolist() == bits(y).tolist()
    tanh = np.empty_like(x)
    mantissa.gelu_v2(x, tanh, approximate="tanh")
    ref = np.empty_like(x)
    mantissa.gelu(x, ref)
    assert bits(tanh).tolist() == bits(ref).tolist()
    with pytest.raises(mantissa.Error) as e:
        mantissa.gelu_v2(x, y, approximate="erf")
    assert e.value.code == 161002
    dy = rng.standard_normal(2000).astype(np.float32)
    g = np.empty_like(x)
    mantissa.gelu_backward_v2(dy, x, g, approximate="none")
    dens = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(g, dy * (phi + xd * dens), rtol=4e-7, atol=1e-30)
    # Broadcast: one gradient row against a [4, 500] self, bf16 self with fp32 dy -> fp32.
    xs = x.reshape(4, 500)
    row = dy[:500].copy()
    gb = np.empty((4, 500), np.float32)
    mantissa.gelu_backward_v2(row, xs, gb, approximate="none")
    for i in range(4):
        single = np.empty(500, np.float32)
        mantissa.gelu_backward_v2(row, np.ascontiguousarray(xs[i]), single)
        assert bits(gb[i]).tolist() == bits(single).tolist()
    with pytest.raises(mantissa.Error) as e:
        mantissa.gelu_backward_v2(dy, x, np.empty(1999, np.float32))
    assert e.value.code == 161002
    # GeluBackward (the tanh form's derivative) equals GeluBackwardV2 tanh bit for bit.
    g1 = np.empty_like(x)
    mantissa.gelu_backward(dy, x, g1)
    g2 = np.empty_like(x)
    mantissa.gelu_backward_v2(dy, x, g2, approximate="tanh")
    assert bits(g1).tolist() == bits(g2).tolist()


def test_swi_glu_generated_bindings_against_numpy():
    # mantissa.swi_glu / swi_glu_grad come from the declarations: x split in halves along dim
    # (A first, B second), out = silu(A) * B; the gradient dA, dB in x's layout. numpy in float64
    # (fp64 steps rounded once in the library: within 1 ulp of fp32 here), every dim, in place.
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 8, 10)) * 3).astype(np.float32)
    xd = x.astype(np.float64)

    def silu(a):
        return a / (1 + np.exp(-a))

    for dim in (0, 1, 2, -1, -3):
        a, b = np.split(xd, 2, axis=dim)
        out = np.empty(a.shape, np.float32)
        mantissa.swi_glu(x, out, dim=dim)
        want = silu(a) * b
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(out - want) <= ulp), dim
        same = np.empty_like(out)
        mantissa.ops.swi_glu(x=x, out=same, dim=dim)
        assert bits(same).tolist() == bits(out).tolist()

        g = rng.standard_normal(a.shape).astype(np.float32)
        dx = np.empty_like(x)
        mantissa.swi_glu_grad(g, x, dx, dim=dim)
        s = 1 / (1 + np.exp(-a))
        want = np.concatenate([g * b * (s + a * s * (1 - s)), g * a * s], axis=dim)
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(dx - want) <= ulp), dim
        inplace = x.copy()
        mantissa.ops.swi_glu_grad(y_grad=g, x=inplace, out=inplace, dim=dim)
        assert bits(inplace).tolist() == bits(dx).tolist()
    # dim defaults to -1; the limits silu(-inf) = -0, silu(+inf) = +inf.
    lim = np.array([[-np.inf, np.inf, 0.0, 1.0, 1.0, 2.0]], np.float32)
    out = np.empty((1, 3), np.float32)
    mantissa.swi_glu(lim, out)
    assert bits(out).ravel().tolist() == [0x80000000, 0x7F800000, 0x00000000]
    # bf16 torch tensors, and the errors with CANN's codes.
    t = torch.from_numpy(x[:, :, :4]).contiguous().to(torch.bfloat16)
    tout = torch.empty((6, 8, 2), dtype=torch.bfloat16)
    mantissa.swi_glu(t, tout)
    ta = t[..., :2].double()
    want = (ta / (1 + torch.exp(-ta)) * t[..., 2:].double()).to(torch.bfloat16)
    assert torch.all((tout.double() - want.double()).abs()
                     <= want.double().abs() * 2.0**-7 + 1e-38)
    with pytest.raises(mantissa.Error) as e:
        mantissa.swi_glu(np.ones((4, 5), np.float32), np.empty((4, 2), np.float32))
    assert e.value.code == 161002 and "size 5" in str(e.value)
    with pytest.raises(mantissa.Error) as e:
        mantissa.swi_glu(x, np.empty((6, 8, 5), np.float32), dim=3)
    assert e.value.code == 161002 and "dim is 3" in str(e.value)


def test_matmul_generated_bindings_against_fp64():
    # mantissa.matmul / batch_matmul / addmm come from the declarations: torch.matmul's shapes,
    # transposed numpy views read where they are (the same bits as their contiguous copies),
    # within the fp32 dot-product bound of the fp64 product.
    rng = np.random.default_rng(11)
    a = rng.standard_normal((70, 33)).astype(np.float32)  # used transposed
    b = rng.standard_normal((70, 45)).astype(np.float32)
    out = np.empty((33, 45), np.float32)
    mantissa.matmul(a.T, b, out)
    contiguous = np.empty_like(out)
    mantissa.ops.matmul(self=np.ascontiguousarray(a.T), mat2=b, out=contiguous)
    assert bits(out).tolist() == bits(contiguous).tolist()
    exact = a.T.astype(np.float64) @ b.astype(np.float64)
    bound = 70 * 2.0**-24 / (1 - 70 * 2.0**-24) * (np.abs(a.T).astype(np.float64) @ np.abs(b))
    assert np.all(np.abs(out - exact) <= bound)
    x = rng.standard_normal((4, 16, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8, 5)).astype(np.float32)
    z = np.empty((4, 16, 5), np.float32)
    mantissa.batch_matmul(x, y, z)
    for i in range(4):
        single = np.empty((16, 5), np.float32)
        mantissa.matmul(x[i], y[i], single)
        assert bits(z[i]).tolist() == bits(single).tolist()
    bias = rng.standard_normal(45).astype(np.float32)
    biased = np.empty_like(out)
    mantissa.addmm(bias, np.ascontiguousarray(a.T), b, biased, beta=1.0, alpha=1.0)
    assert bits(biased).tolist() == bits((bias + contiguous).astype(np.float32)).tolist()
    with pytest.raises(mantissa.Error) as e:
        mantissa.matmul(a, b, out)  # k differs: 33 against 70
    assert e.value.code == 161002


def test_add_rms_norm_against_numpy():
    # x is numpy's x1 + x2 (the sum rounded once to the dtype) bit for bit; rstd and y against
    # the norm of that x in float64; y and rstd equal rms_norm's on x bit for bit.
    rng = np.random.default_rng(11)
    for dt, rtol in ((np.float32, 1e-6), (np.float16, 2e-3)):
        x1 = (4 * rng.standard_normal((6, 96))).astype(dt)
        x2 = rng.standard_normal((6, 96)).astype(dt)
        gamma = (1 + 0.1 * rng.standard_normal(96)).astype(dt)
        y, x, rstd = np.empty_like(x1), np.empty_like(x1), np.empty((6, 1), f32)
        mantissa.add_rms_norm(x1, x2, gamma, y, rstd, x, epsilon=1e-5)
        s = x1 + x2
        assert s.dtype == dt and np.array_equal(x.view(np.uint8), s.view(np.uint8))
        xs = s.astype(np.float64)
        r = 1 / np.sqrt((xs ** 2).mean(axis=1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(rstd, r, rtol=1e-6)
        np.testing.assert_allclose(y.astype(np.float64), xs * r * gamma, rtol=rtol, atol=rtol)
        y2, r2 = np.empty_like(x1), np.empty((6, 1), f32)
        mantissa.rms_norm(x, gamma, y2, r2, epsilon=1e-5)
        assert np.array_equal(y.view(np.uint8), y2.view(np.uint8))
        assert bits(rstd).tolist() == bits(r2).tolist()
        # The residual updated in place (x into x2) and the outputs left out give the same bits.
        h, y3 = x2.copy(), np.empty_like(x1)
        mantissa.add_rms_norm(x1, h, gamma, y3, x=h, epsilon=1e-5)
        assert np.array_equal(h.view(np.uint8), x.view(np.uint8))
        assert np.array_equal(y3.view(np.uint8), y.view(np.uint8))
        y4 = np.empty_like(x1)
        mantissa.ops.add_rms_norm(x1, x2, gamma, y4, None, None, 1e-5)
        assert np.array_equal(y4.view(np.uint8), y.view(np.uint8))
    with pytest.raises(mantissa.Error) as e:  # gamma's dtype must be x1's
        mantissa.add_rms_norm(x1, x2, gamma.astype(f32), y, rstd, x)
    assert e.value.code == 161002


def test_every_declared_operator_is_in_mantissa_ops():
    # mantissa.ops holds every operator without tensor lists under its C++ API's name, generated
    # from the declaration; its call gives the hand-written binding's bits.
    for name in ("gelu", "rms_norm", "rms_norm_grad", "softmax", "log_softmax", "softmax_grad",
                 "sgd", "apply_adam_d", "apply_adam_w_v2", "layer_norm", "layer_norm_grad",
                 "quantize", "dynamic_quant", "ascend_quant_v3", "amp_update_scale",
                 "softmax_cross_entropy_with_logits", "matmul", "batch_matmul", "addmm",
                 "add_rms_norm", "cross_entropy_loss", "cross_entropy_loss_grad", "swi_glu",
                 "swi_glu_grad", "gelu_v2", "gelu_backward", "gelu_backward_v2", "quant_max"):
        assert hasattr(mantissa.ops, name), name
        assert getattr(mantissa, name) is not None
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16)
    gamma = np.linspace(0.5, 1.5, 16, dtype=np.float32)
    y1, r1 = np.empty_like(x), np.empty((4, 1), np.float32)
    y2, r2 = np.empty_like(x), np.empty((4, 1), np.float32)
    mantissa.rms_norm(x, gamma, y1, r1, epsilon=1e-5)
    mantissa.ops.rms_norm(x, gamma, y2, r2, epsilon=1e-5)
    assert bits(y1).tolist() == bits(y2).tolist() and bits(r1).tolist() == bits(r2).tolist()


def cross_entropy_numpy(x, target, weight, reduction, eps, ignore=-100, zscale=0.0):
    """F.cross_entropy's loss (docs/ops/cross_entropy_loss.md) in float64, with the z-loss:
    loss, log_prob, zloss, lse."""
    x64 = x.astype(np.float64)
    n, c = x.shape
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(x64 - m).sum(axis=1))
    lp = x64 - lse[:, None]
    keep = target != ignore
    t = np.where(keep, target, 0)
    nll = -w[t] * lp[np.arange(n), t]
    per = (1 - eps) * nll + eps / c * -(lp * w).sum(axis=1) if eps > 0 else nll
    per = np.where(keep, per, 0.0)
    z = np.where(keep, zscale * lse * lse, 0.0)
    if reduction == "none":
        loss, zloss = per, z
    elif reduction == "sum":
        loss, zloss = per.sum(keepdims=True), z.sum(keepdims=True)
    else:
        loss = per.sum(keepdims=True) / w[t][keep].sum()
        zloss = z.sum(keepdims=True) / keep.sum()
    return loss + (zloss if zscale else 0), lp, zloss, lse


def test_cross_entropy_loss_against_numpy_and_torch():
    # docs/ops/cross_entropy_loss.md: log_prob within a few fp32 ulp of the fp64 value, the loss
    # rounded once from fp64; the gradient torch's autograd of F.cross_entropy.
    F = torch.nn.functional
    rng = np.random.default_rng(5)
    n, c = 9, 37
    x = (rng.standard_normal((n, c)) * 3).astype(f32)
    weight = rng.uniform(0.5, 1.5, c).astype(f32)
    for target_dtype in (np.int64, np.int32):
        target = rng.integers(0, c, n).astype(target_dtype)
        target[2] = -100
        for reduction, eps, w in (("mean", 0.0, weight), ("sum", 0.1, None), ("none", 0.2, weight),
                                  ("mean", 0.3, weight)):
            shape = (n,) if reduction == "none" else (1,)
            loss, zloss = np.empty(shape, f32), np.empty(shape, f32)
            log_prob, lse = np.empty_like(x), np.empty(n, f32)
            mantissa.cross_entropy_loss(x, target, w, loss, log_prob, zloss, lse,
                                        reduction=reduction, label_smoothing=eps)
            ref_loss, ref_lp, ref_z, ref_lse = cross_entropy_numpy(x, target, w, reduction, eps)
            np.testing.assert_allclose(loss, ref_loss, rtol=2e-6, atol=1e-6)
            np.testing.assert_allclose(log_prob, ref_lp, rtol=1e-6, atol=4e-6)
            np.testing.assert_allclose(lse, ref_lse, rtol=1e-6)
            assert np.all(zloss == 0)
            xt = torch.tensor(x, requires_grad=True)
            wt = None if w is None else torch.tensor(w)
            tl = F.cross_entropy(xt, torch.tensor(target.astype(np.int64)), weight=wt,
                                 reduction=reduction, label_smoothing=eps)
            np.testing.assert_allclose(loss, tl.detach().numpy().reshape(shape), rtol=2e-6,
                                       atol=2e-6)
            g = rng.uniform(0.5, 2.0, shape if reduction == "none" else ()).astype(f32)
            out = np.empty_like(x)
            mantissa.cross_entropy_loss_grad(g, log_prob, target, w, None, None, out,
                                             reduction=reduction, label_smoothing=eps)
            tl.backward(torch.tensor(g).reshape(tl.shape))
            np.testing.assert_allclose(out, xt.grad.numpy(), rtol=1e-5, atol=2e-7)
            assert np.all(out[2] == 0)  # the ignored row
    # The z-loss: s * lse^2 added to the loss, its gradient 2 s lse softmax (numpy, fp64).
    target = rng.integers(0, c, n).astype(np.int64)
    loss, zloss = np.empty(1, f32), np.empty(1, f32)
    log_prob, lse = np.empty_like(x), np.empty(n, f32)
    mantissa.cross_entropy_loss(x, target, None, loss, log_prob, zloss, lse, reduction="mean",
                                lse_square_scale_for_zloss=1e-3, return_zloss=True)
    ref_loss, _, ref_z, _ = cross_entropy_numpy(x, target, None, "mean", 0.0, zscale=1e-3)
    np.testing.assert_allclose(loss, ref_loss, rtol=2e-6)
    np.testing.assert_allclose(zloss, ref_z, rtol=2e-6)
    out = np.empty_like(x)
    mantissa.cross_entropy_loss_grad(one(1.0), log_prob, target, None, one(0.0), lse, out,
                                     reduction="mean", lse_square_scale_for_zloss=1e-3)
    p = np.exp(log_prob.astype(np.float64))
    ref = p.copy()
    ref[np.arange(n), target] -= 1
    ref = (ref + 2e-3 * lse[:, None].astype(np.float64) * p) / n
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-8)
    # Every target ignored: mean is 0 / 0 = NaN, as torch's.
    ignored = np.full(n, -100, np.int64)
    mantissa.cross_entropy_loss(x, ignored, None, loss, log_prob, zloss, lse)
    assert np.isnan(loss[0])
    assert torch.isnan(F.cross_entropy(torch.tensor(x), torch.tensor(ignored)))
    # A target out of range: 161002, nothing written.
    bad = target.copy()
    bad[4] = c
    loss[0] = 7.0
    with pytest.raises(mantissa.Error) as e:
        mantissa.cross_entropy_loss(x, bad, None, loss, log_prob, zloss, lse)
    assert e.value.code == 161002 and "target[4] = 37" in str(e.value) and loss[0] == 7.0
    with pytest.raises(mantissa.Error) as e:
        mantissa.cross_entropy_loss(x, target, None, loss, log_prob, zloss, lse, reduction="avg")
    assert e.value.code == 161002


def test_a_storage_dropped_by_another_thread_during_a_call_stays_allocated():
    """The GIL is released while a kernel runs; another thread that set_()s the argument tensors
    to new storage must not free the memory the kernel is writing (the call holds each torch
    argument's storage). Run in a subprocess: without the hold, glibc unmaps the 128 MiB buffers
    mid-call and the process dies of SIGSEGV."""
    import subprocess
    import sys
    script = """
import gc, threading, time
import torch
import mantissa
rows, cols = 1024, 32768
for trial in range(3):
    x = torch.ones(rows, cols)
    y = torch.empty(rows, cols)
    started = threading.Event()
    def drop():
        started.wait()
        time.sleep(0.005)
        x.set_(torch.empty(0))
        y.set_(torch.empty(0))
        gc.collect()
    t = threading.Thread(target=drop)
    t.start()
    started.set()
    mantissa.softmax(x, y, dim=-1)
    t.join()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr)


def test_fp8_delayed_and_current_scaling():
    # Transformer Engine's rule in numpy float32, with its rolled history: the scale from the
    # window's max, kept for 0 and non-finite amaxes.
    def reference(amaxes, length, margin, fmax):
        history, scale, scales = np.zeros(length, np.float32), np.float32(1.0), []
        for a in amaxes:
            history[0] = max(history[0], np.float32(a)) if not np.isnan(a) else np.nan
            amax = np.float32(np.max(history))  # NaN propagates
            if np.isfinite(amax) and amax > 0:
                scale = np.float32(np.float32(fmax * 2.0 ** -margin) / amax)
            history = np.roll(history, -1)
            history[0] = 0
            scales.append(scale)
        return scales

    amaxes = [3.0, 0.5, 0.0, 7.0, float("nan"), 2.0, 1e30, 0.25, 6.0, 1.5, 4.0, 0.125]
    s = mantissa.DelayedScaling(amax_history_len=3, margin=1, role="gradient")
    assert s.dtype == "fp8_e5m2" and s.scale == 1.0
    got = []
    for a in amaxes:
        s.record(a)
        s.update()
        got.append(s.scale)
    want = reference(amaxes, 3, 1, 57344.0)
    assert [np.float32(g).tobytes() for g in got] == [w.tobytes() for w in want]
    # quantize() casts with the current scale and records max |x|; state() round-trips.
    x = torch.linspace(-5, 5, 40, dtype=torch.bfloat16)
    y = np.zeros(40, np.uint8)
    saved = s.state()
    s.quantize(x, y)
    assert s.amax_history[0] == 5.0
    y_ref, amax = np.zeros(40, np.uint8), np.zeros(1, f32)
    mantissa.quant_max(x.float().numpy(), np.array([s.scale], f32), y_ref, amax, dtype="fp8_e5m2")
    assert y.tolist() == y_ref.tolist()
    r = mantissa.DelayedScaling()
    r.load_state(saved)
    assert r.state() == saved and r.steps == len(amaxes)
    with pytest.raises(mantissa.Error) as e:
        mantissa.DelayedScaling(amax_history_len=0)
    assert e.value.code == 161002 and "amax_history_len" in str(e.value)
    # Current scaling.
    assert mantissa.current_scale(1.0) == 448.0
    assert mantissa.current_scale(3.0, power_of_two_scales=True) == 128.0
    assert mantissa.current_scale(0.0) == 1.0
    yc = np.zeros(40, np.uint8)
    scale, amax = mantissa.current_scaling_quantize(x, yc, dtype="fp8_e4m3")
    assert amax == 5.0 and scale == np.float32(448.0) / np.float32(5.0)


def test_dynamic_mx_quant():
    # CANN's sample: bf16 (0, 8, 64, 512), cuBLAS scale rule with max_low_bound 0.5 -> codes
    # (0, 72, 96, 120) and scale code 128 (2^1), the pad 0.
    x = torch.tensor([[0.0, 8.0, 64.0, 512.0]], dtype=torch.bfloat16)
    y, s = np.zeros((1, 4), np.uint8), np.full((1, 1, 2), 0xAA, np.uint8)
    mantissa.dynamic_mx_quant(x, y, s, scale_alg=1, max_low_bound=0.5)
    assert y.tolist() == [[0, 72, 96, 120]] and s.tolist() == [[[128, 0]]]
    # OCP rule along an earlier axis: x [64, 3] over axis 0 is two blocks per column, one pair.
    x2 = np.ones((64, 3), f32)
    x2[40, 1] = 448.0
    y2, s2 = np.zeros((64, 3), np.uint8), np.zeros((1, 3, 2), np.uint8)
    mantissa.dynamic_mx_quant(x2, y2, s2, axis=0)
    assert s2[0, :, 0].tolist() == [119, 119, 119]  # block 0: amax 1 -> 2^-8
    assert s2[0, :, 1].tolist() == [119, 127, 119]  # block 1: column 1 holds 448 -> 2^0
    with pytest.raises(mantissa.Error) as e:
        mantissa.dynamic_mx_quant(x2, y2, s2, axis=0, blocksize=48)
    assert e.value.code == 161002 and "blocksize" in str(e.value)

    # AntiMxQuant inverts it: CANN's sample gives back bf16 (0, 8, 64, 512).
    back = torch.zeros(1, 4, dtype=torch.bfloat16)
    mantissa.anti_mx_quant(y, s, back)
    assert back.tolist() == [[0.0, 8.0, 64.0, 512.0]]



def test_dynamic_mx_quant_fp4_matches_numpy():
    # FLOAT4_E2M1 along the last axis, blocks of 32, OCP rule: code = E(amax) - 2, factor
    # 2^(127 - code); each value snapped to the grid (ties to the even code), saturated at 6,
    # two codes per byte with element 2i in the low nibble.
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((3, 64)) * 5).astype(f32)
    y = np.zeros((3, 32), np.uint8)
    s = np.zeros((3, 1, 2), np.uint8)
    mantissa.dynamic_mx_quant(x, y, s, dtype="fp4_e2m1")
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, 8])
    want = np.zeros((3, 64), np.uint8)
    for r in range(3):
        for b in range(2):
            blk = x[r, 32 * b:32 * b + 32]
            e = int(np.frexp(np.abs(blk).max())[1]) - 1 + 127
            assert s[r, 0, b] == e - 2
            v = blk.astype(np.float64) * 2.0 ** (127 - (e - 2))
            for i, t in enumerate(v):
                d = np.abs(grid - abs(t))
                k = min((k for k in range(9) if d[k] == d.min()), key=lambda k: k % 2)
                want[r, 32 * b + i] = (8 if t < 0 else 0) | min(k, 7)
    np.testing.assert_array_equal(y, want[:, 0::2] | (want[:, 1::2] << 4))
    # AntiMxQuant takes the packed bytes back: each code's value times 2^(scale - 127).
    back = np.zeros((3, 64), f32)
    mantissa.anti_mx_quant(y, s, back, dtype="fp4_e2m1")
    vals = np.where(want & 8, -1.0, 1.0) * grid[want & 7]
    scale = 2.0 ** (np.repeat(s[:, 0, :].astype(np.float64), 32, axis=1) - 127)
    np.testing.assert_array_equal(back, (vals * scale).astype(f32))
    with pytest.raises(mantissa.Error) as e:
        mantissa.dynamic_mx_quant(x[:, :63], np.zeros((3, 32), np.uint8), s, dtype="fp4_e2m1")
    assert e.value.code == 161002

def test_emulated_fp8_and_mx_matmul():
    # E4M3 codes of small integers: 1.0 0x38, 2.0 0x40, 3.0 0x44; the sums are exact.
    a = np.array([[0x38, 0x40], [0x44, 0x38]], np.uint8)
    b = np.array([[0x40, 0x38], [0x38, 0x44]], np.uint8)
    out = np.zeros((2, 2), f32)
    mantissa.fp8_matmul(a, b, out, scale_inv_a=0.5, scale_inv_b=0.25)
    assert out.tolist() == [[(2 + 2) / 8, (1 + 6) / 8], [(6 + 1) / 8, (3 + 3) / 8]]
    # MX: quantize along k, multiply, compare with the dequantized operands' product.
    x = np.linspace(-2, 2, 6 * 64, dtype=f32).reshape(6, 64)
    q, s = np.zeros((6, 64), np.uint8), np.zeros((6, 1, 2), np.uint8)
    mantissa.dynamic_mx_quant(x, q, s, scale_alg=1)
    deq = np.zeros((6, 64), f32)
    mantissa.anti_mx_quant(q, s, deq)
    prod = np.zeros((6, 6), f32)
    mantissa.mx_matmul(q, s, q, s, prod)
    assert np.allclose(prod, deq.astype(np.float64) @ deq.T.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_mx_quantize_blocks_scale_rules():
    # floor and rceil are DynamicMxQuant's scale algorithms; EVEN moves a block whose amax's
    # significand rounds up in E4M3's 3 bits (1.9375 -> 2) to the next scale, where floor keeps
    # it (and saturates its largest values) and rceil rounds up any significand above 1.75.
    x = np.full((2, 32), 0.5, f32)
    x[0, 3] = 1.9375
    x[1, 3] = 1.8
    codes = {}
    for rule in ("floor", "rceil", "even"):
        q, s = np.zeros((2, 32), np.uint8), np.zeros((2, 1, 2), np.uint8)
        mantissa.mx_quantize_blocks(x, q, s, rule=rule)
        codes[rule] = s[:, 0, 0].tolist()
        if rule != "even":
            q2, s2 = np.zeros_like(q), np.zeros_like(s)
            mantissa.dynamic_mx_quant(x, q2, s2, scale_alg=0 if rule == "floor" else 1)
            np.testing.assert_array_equal(q, q2)
            np.testing.assert_array_equal(s, s2)
    assert codes == {"floor": [119, 119], "rceil": [120, 120], "even": [120, 119]}, codes
    with pytest.raises(mantissa.Error) as e:
        mantissa.mx_quantize_blocks(x, np.zeros((2, 32), np.uint8), np.zeros((2, 1, 2), np.uint8),
                                    rule="ceil")
    assert e.value.code == 161002


def test_nvfp4_recipe_round_trip_and_matmul():
    # NVFP4: S = 2688 / amax; block scale E4M3(bmax / 6 * S); elements E2M1(x * S / s); the
    # dequantized values within half an E2M1 step of the block's range; the GEMM of the decoded
    # operands times both tensor scales.
    rng = np.random.default_rng(21)
    a = rng.standard_normal((4, 32)).astype(f32)
    b = rng.standard_normal((3, 32)).astype(f32)
    qa, sa = np.zeros((4, 16), np.uint8), np.zeros((4, 2), np.uint8)
    qb, sb = np.zeros((3, 16), np.uint8), np.zeros((3, 2), np.uint8)
    ia = mantissa.nvfp4_quantize(a, qa, sa)
    ib = mantissa.nvfp4_quantize(b, qb, sb)
    assert ia == f32(1) / (f32(2688) / np.abs(a).max())
    da = np.zeros_like(a)
    mantissa.nvfp4_dequantize(qa, sa, ia, da)
    bmax = np.repeat(np.abs(a).reshape(4, 2, 16).max(axis=2), 16, axis=1)
    assert np.all(np.abs(da - a) <= bmax * 0.25)
    db = np.zeros_like(b)
    mantissa.nvfp4_dequantize(qb, sb, ib, db)
    out = np.zeros((4, 3), f32)
    mantissa.nvfp4_matmul(qa, sa, ia, qb, sb, ib, out)
    np.testing.assert_allclose(out, da.astype(np.float64) @ db.T.astype(np.float64), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(mantissa.Error):
        mantissa.nvfp4_quantize(a[:, :20].copy(), np.zeros((4, 10), np.uint8), sa)
