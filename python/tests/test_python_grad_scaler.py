"""mantissa.torch.GradScaler against torch's GradScaler semantics: the scale sequence (backoff on
Inf/NaN, growth after growth_interval clean steps), skipped steps, unscale_ in place, the fused
path equal to the unscale path, state_dict."""

import pytest

import mantissa

torch = pytest.importorskip("torch")
mt = mantissa.torch


def reference_scales(found_infs, init, growth, backoff, interval):
    """torch's _amp_update_scale_ rule, written out."""
    scale, tracker, out = init, 0, []
    for found in found_infs:
        if found:
            scale, tracker = scale * backoff, 0
        else:
            tracker += 1
            if tracker == interval:
                scale, tracker = scale * growth, 0
        out.append((scale, tracker))
    return out


def make(n=64, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(n, generator=gen).to(dtype)), gen


@pytest.mark.parametrize("fused", [True, False])
def test_scale_sequence_and_skipped_steps(fused):
    found_pattern = [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    want = reference_scales(found_pattern, 1024.0, 2.0, 0.5, 3)
    p, gen = make()
    opt = mt.AdamW([p], lr=1e-2) if fused else torch.optim.AdamW([p], lr=1e-2)
    scaler = mt.GradScaler(init_scale=1024.0, growth_interval=3)
    for step, found in enumerate(found_pattern):
        opt.zero_grad()
        loss = (p * torch.randn(64, generator=gen)).sum()
        scaler.scale(loss).backward()
        if found:
            p.grad[5] = float("inf") if step % 2 else float("nan")
        before = p.detach().clone()
        scaler.step(opt)
        assert torch.equal(p, before) == bool(found), f"step {step}"
        scaler.update()
        assert (scaler.get_scale(), scaler._get_growth_tracker()) == want[step]
    assert opt.state[p]["step"].item() == found_pattern.count(0)


@pytest.mark.parametrize("cls,kw", [
    (mt.AdamW, dict(lr=1e-2)),
    (mt.Adam, dict(lr=1e-2, weight_decay=0.1)),  # L2: the staged grad is unscaled first
    (mt.SGD, dict(lr=1e-2, momentum=0.9, maximize=True)),
])
def test_fused_path_equals_unscale_path_bitwise(cls, kw):
    p_f, gen = make(seed=1)
    p_u = torch.nn.Parameter(p_f.detach().clone())
    o_f, o_u = cls([p_f], **kw), cls([p_u], **kw)
    s_f, s_u = mt.GradScaler(init_scale=2.0**12), mt.GradScaler(init_scale=2.0**12)
    for _ in range(4):
        x = torch.randn(64, generator=gen)
        for p, o, s in ((p_f, o_f, s_f), (p_u, o_u, s_u)):
            o.zero_grad()
            s.scale((p * x).sum()).backward()
        grad_scaled = p_f.grad.clone()
        s_f.step(o_f)  # fused: the grads are only read
        assert torch.equal(p_f.grad, grad_scaled)
        s_u.unscale_(o_u)  # in place: grads * (1 / scale)
        assert torch.equal(p_u.grad, grad_scaled * (1.0 / 2.0**12))
        s_u.step(o_u)
        s_f.update()
        s_u.update()
    assert torch.equal(p_f, p_u)


def test_bf16_and_fp16_grads_unscaled_in_one_call():
    a = torch.nn.Parameter(torch.ones(10, dtype=torch.bfloat16))
    b = torch.nn.Parameter(torch.ones(10, dtype=torch.float16))
    opt = torch.optim.SGD([a, b], lr=0.1)
    scaler = mt.GradScaler(init_scale=256.0)
    a.grad = torch.full((10,), 512.0, dtype=torch.bfloat16)
    b.grad = torch.full((10,), 1024.0, dtype=torch.float16)
    scaler.unscale_(opt)
    assert a.grad.eq(2.0).all() and b.grad.eq(4.0).all()
    with pytest.raises(RuntimeError):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError):
        scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 256.0 and scaler._get_growth_tracker() == 1


def test_state_dict_round_trip_and_disabled():
    s = mt.GradScaler(init_scale=8.0, growth_factor=4.0, backoff_factor=0.25,
                      growth_interval=7)
    sd = s.state_dict()
    assert sd == {"scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25,
                  "growth_interval": 7, "_growth_tracker": 0}
    sd["scale"], sd["_growth_tracker"] = 32.0, 5
    t = mt.GradScaler()
    t.load_state_dict(sd)
    assert t.state_dict() == sd
    off = mt.GradScaler(enabled=False)
    loss = torch.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    p, _ = make()
    p.grad = torch.full_like(p, float("inf"))
    before = p.detach().clone()
    off.step(torch.optim.SGD([p], lr=1.0))  # disabled: the optimizer always runs
    assert not torch.equal(p, before)
    with pytest.raises(ValueError):
        mt.GradScaler(growth_factor=1.0)


def test_update_with_new_scale_and_scale_of_lists():
    s = mt.GradScaler(init_scale=16.0)
    out = s.scale([torch.tensor([1.0]), (torch.tensor([2.0]),)])
    assert out[0].item() == 16.0 and out[1][0].item() == 32.0
    s.update(new_scale=4.0)
    assert s.get_scale() == 4.0
    s.update(new_scale=torch.tensor(2.0))
    assert s.get_scale() == 2.0
