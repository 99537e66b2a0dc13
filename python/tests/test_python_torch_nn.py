"""mantissa.torch.functional and mantissa.torch.nn: derivatives (finite differences), agreement
with torch's modules against an fp64 reference, torch's state_dict names, errors, autocast
dtypes, and the same bits for every thread count and SIMD target."""

import hashlib
import warnings

import pytest

torch = pytest.importorskip("torch")
import mantissa  # noqa: E402
import mantissa.torch as mt  # noqa: E402
from mantissa.torch import functional as MF  # noqa: E402
from mantissa.torch import nn as mnn  # noqa: E402

F = torch.nn.functional
nn = torch.nn


def _gradcheck(fn, *inputs, eps=1e-2, atol=2e-3, rtol=2e-2):
    # The library computes in fp32/fp16/bf16 only, so the numerical Jacobian is fp32 central
    # differences: truncation ~eps^2 * f''' and rounding ~2^-24 * |f| / eps, both under the
    # stated tolerances for these smooth functions on O(1) inputs. A wrong derivative (a missing
    # term, a transposed operand) is off by O(1).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.autograd.gradcheck(fn, inputs, eps=eps, atol=atol, rtol=rtol,
                                        check_undefined_grad=False)


def _rand(*shape, seed=0, requires_grad=True, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).requires_grad_(requires_grad)


class TestDerivatives:
    def test_linear(self):
        _gradcheck(MF.linear, _rand(3, 4, 5), _rand(6, 5, seed=1), _rand(6, seed=2))
        _gradcheck(lambda x, w: MF.linear(x, w), _rand(7, 5), _rand(3, 5, seed=1))

    def test_matmul(self):
        a, b = _rand(2, 3, 4, 5), _rand(2, 3, 5, 2, seed=1)
        _gradcheck(MF.matmul, a, b)
        # Strided operands (a transposed view) and an fp32 product of 16-bit operands.
        _gradcheck(lambda a, b: MF.matmul(a.transpose(-2, -1), b), _rand(2, 5, 4), _rand(2, 5, 3))

    def test_layer_norm(self):
        _gradcheck(lambda x, w, b: MF.layer_norm(x, (6,), w, b), _rand(4, 6),
                   _rand(6, seed=1), _rand(6, seed=2))
        _gradcheck(lambda x: MF.layer_norm(x, (3, 4)), _rand(2, 3, 4))

    def test_rms_norm(self):
        _gradcheck(lambda x, w: MF.rms_norm(x, 6, w, 1e-6), _rand(4, 6), _rand(6, seed=1))

    @pytest.mark.parametrize("log", [False, True])
    @pytest.mark.parametrize("dim", [-1, 0])
    def test_softmax(self, log, dim):
        fn = MF.log_softmax if log else MF.softmax
        # A weighted sum, so the derivative of a softmax (whose rows sum to 1) is not trivially 0.
        wt = _rand(5, 7, seed=3, requires_grad=False)
        _gradcheck(lambda x: (fn(x, dim) * wt).sum(), _rand(5, 7))

    @pytest.mark.parametrize("approximate", ["none", "tanh"])
    def test_gelu(self, approximate):
        _gradcheck(lambda x: MF.gelu(x, approximate), _rand(4, 9, scale=2.0))

    def test_swiglu(self):
        _gradcheck(lambda x: MF.swiglu(x), _rand(3, 8))
        _gradcheck(lambda x: MF.swiglu(x, 0), _rand(4, 3))

    @pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
    def test_cross_entropy(self, reduction):
        target = torch.tensor([1, 4, -100, 0, 2])
        weight = torch.rand(6, generator=torch.Generator().manual_seed(5)) + 0.5
        _gradcheck(lambda x: MF.cross_entropy(x, target, weight, reduction=reduction,
                                              label_smoothing=0.1), _rand(5, 6))

    def test_attention(self):
        q, k, v = _rand(2, 2, 5, 4), _rand(2, 2, 6, 4, seed=1), _rand(2, 2, 6, 3, seed=2)
        _gradcheck(lambda q, k, v: MF.scaled_dot_product_attention(q, k, v), q, k, v)
        q, k, v = _rand(1, 4, 4), _rand(1, 4, 4, seed=1), _rand(1, 4, 4, seed=2)
        _gradcheck(lambda q, k, v: MF.scaled_dot_product_attention(q, k, v, is_causal=True),
                   q, k, v)


def _error_vs(golden, value):
    return (value.double() - golden).abs().max().item()


def _pair(make):
    """mantissa's module and torch's with the same weights."""
    torch.manual_seed(0)
    ours = make()
    theirs = make()
    theirs.load_state_dict(ours.state_dict())
    mt.deterministic(ours, strict=True)
    return ours, theirs


AGREEMENT = [
    ("Linear", lambda: nn.Linear(48, 40), (6, 48)),
    ("LayerNorm", lambda: nn.LayerNorm(64), (10, 64)),
    ("Softmax", lambda: nn.Softmax(-1), (10, 64)),
    ("LogSoftmax", lambda: nn.LogSoftmax(-1), (10, 64)),
    ("GELU", lambda: nn.GELU(), (10, 64)),
    ("GELU-tanh", lambda: nn.GELU("tanh"), (10, 64)),
    ("MultiheadAttention", lambda: nn.MultiheadAttention(32, 4, batch_first=True), (2, 7, 32)),
    ("MultiheadAttention-LBE", lambda: nn.MultiheadAttention(32, 4), (7, 2, 32)),
    ("MultiheadAttention-unbatched", lambda: nn.MultiheadAttention(32, 4), (7, 32)),
]


@pytest.mark.parametrize("name,make,shape", AGREEMENT, ids=[a[0] for a in AGREEMENT])
def test_agrees_with_torch_within_its_own_error(name, make, shape):
    # Bound: mantissa's error against torch's module in fp64 is within 4 times torch's own fp32
    # error plus 8 fp32 ulps of the largest magnitude, for the output and every gradient.
    ours, theirs = _pair(make)
    golden = make().double()
    golden.load_state_dict(theirs.state_dict())
    x = _rand(*shape, seed=7)
    grads = {}
    for label, module, dtype in (("ours", ours, None), ("torch", theirs, None),
                                 ("golden", golden, torch.float64)):
        xi = x.detach().clone().to(dtype or torch.float32).requires_grad_()
        out = module(xi, xi, xi)[0] if "Attention" in name else module(xi)
        out.backward(torch.ones_like(out) * torch.linspace(-1, 1, out.numel()).reshape(out.shape)
                     .to(out.dtype))
        grads[label] = [out.detach(), xi.grad] + [p.grad for p in module.parameters()]
    for g, ours_t, torch_t in zip(grads["golden"], grads["ours"], grads["torch"]):
        bound = 4 * _error_vs(g, torch_t) + 8 * 2.0**-23 * g.abs().max().item()
        assert _error_vs(g, ours_t) <= bound, (name, _error_vs(g, ours_t), bound)


def test_cross_entropy_agrees_with_torch():
    x = _rand(12, 30)
    target = torch.randint(0, 30, (12,), generator=torch.Generator().manual_seed(1))
    target[3] = -100
    weight = torch.rand(30, generator=torch.Generator().manual_seed(2)) + 0.5
    for kw in ({}, {"weight": weight}, {"label_smoothing": 0.2}, {"reduction": "sum"},
               {"reduction": "none", "weight": weight, "label_smoothing": 0.1}):
        xo, xg = x.detach().clone().requires_grad_(), x.detach().double().requires_grad_()
        ours = mnn.CrossEntropyLoss(**kw)(xo, target)
        kw64 = dict(kw, weight=weight.double()) if "weight" in kw else kw
        gold = F.cross_entropy(xg, target, **kw64)
        ours.sum().backward()
        gold.sum().backward()
        assert _error_vs(gold.detach(), ours.detach()) <= 1e-6 * max(1.0, gold.abs().max().item())
        assert _error_vs(xg.grad, xo.grad) <= 1e-7
    # [N, C, d] inputs move C last; "none" keeps torch's [N, d] shape.
    x3 = _rand(2, 5, 3)
    t3 = torch.tensor([[0, 1, 4], [2, 3, 0]])
    torch.testing.assert_close(MF.cross_entropy(x3, t3, reduction="none"),
                               F.cross_entropy(x3, t3, reduction="none"))


def test_rms_norm_and_swiglu_against_formulas():
    x, w = _rand(5, 16).double(), _rand(16, seed=1).double()
    gold = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * w
    ours = mnn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.copy_(w.float())
    assert _error_vs(gold, ours(x.float())) <= 1e-6
    a, b = x.chunk(2, -1)
    assert _error_vs(F.silu(a) * b, mnn.SwiGLU()(x.float())) <= 1e-6


def test_the_modules_keep_torchs_state_dict_names():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8),
                          nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    names = list(model.state_dict())
    ids = [id(p) for p in model.parameters()]
    mt.deterministic(model, strict=True)
    assert list(model.state_dict()) == names
    assert [id(p) for p in model.parameters()] == ids  # an optimizer's references stay valid
    fresh = nn.Sequential(mnn.Linear(8, 8), mnn.LayerNorm(8),
                          mnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    fresh.load_state_dict(model.state_dict())
    x = _rand(2, 3, 8, requires_grad=False)
    assert torch.equal(fresh(x), model(x))


def test_deterministic_names_what_it_leaves_to_torch():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Conv1d(1, 1, 3))
    with pytest.raises(mantissa.Error, match=r"1 \(Dropout\).*2 \(Conv1d\)"):
        mt.deterministic(model, strict=True)
    with pytest.warns(UserWarning, match="Conv1d"):
        mt.deterministic(nn.Sequential(nn.Conv1d(1, 1, 3)))
    mha = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(mantissa.Error, match="add_bias_kv"):
        mt.deterministic(nn.Sequential(mha), strict=True)
    assert type(mha) is nn.MultiheadAttention


def test_errors_raise_mantissa_error():
    w = torch.randn(3, 4)
    cases = [
        (lambda: MF.linear(torch.randn(2, 4, dtype=torch.float64), w), 161002, "float64"),
        (lambda: MF.linear(torch.randn(2, 5), w), 161002, r"linear: input of shape \[2, 5\]"),
        (lambda: MF.softmax(torch.empty(2, 3, device="meta"), -1), 161002, "device meta"),
        (lambda: MF.softmax(torch.randn(2, 3), 2), 161002, "dim"),
        (lambda: MF.swiglu(torch.randn(2, 3)), 161002, "halved"),
        (lambda: MF.cross_entropy(torch.randn(2, 3), torch.tensor([0, 3])), 161002, "target"),
        (lambda: MF.cross_entropy(torch.randn(2, 3), torch.rand(2, 3)), 161002, "probability"),
        (lambda: MF.gelu(torch.randn(2), "exact"), 161002, "approximate"),
        (lambda: MF.scaled_dot_product_attention(*[torch.randn(1, 2, 2)] * 3, dropout_p=0.1),
         161002, "dropout"),
        (lambda: MF.matmul(torch.randn(2, 3, 4), torch.randn(3, 4, 5)), 161002, "batch dims"),
    ]
    for call, code, pattern in cases:
        with pytest.raises(mantissa.Error, match=pattern) as info:
            call()
        assert info.value.code == code


def test_autocast_dtypes():
    torch.manual_seed(0)
    lin, ln = mnn.Linear(8, 8), mnn.LayerNorm(8)
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(x)
        assert y.dtype == torch.bfloat16  # the product in the autocast dtype, as torch's
        assert ln(y).dtype == torch.bfloat16  # fp32 weights with a bf16 input
        assert MF.softmax(x, -1).dtype == torch.float32  # the input's dtype, as torch 1.13
    # The bf16 product is the fp32 accumulator of the bf16 operands rounded once.
    ref = (x.bfloat16().float() @ lin.weight.detach().bfloat16().float().t()
           + lin.bias.detach().bfloat16().float()).bfloat16()
    assert torch.equal(y, ref)


class TinyGPT(nn.Module):
    """Byte tokens, learned positions, two pre-norm torch encoder layers (causal), a head."""

    def __init__(self, vocab=64, d=32, heads=4, layers=2, context=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(T))
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        for block in self.blocks:
            x = block(x, src_mask=mask)
        logits = self.head(self.norm(x))
        return self.loss(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _train_digest(threads, target, autocast, steps=3):
    torch.manual_seed(0)
    model = mt.deterministic(TinyGPT(), strict=True)
    opt = mt.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, 64, (4, 17), generator=g)  # one batch: the loss must fall
    mantissa.set_num_threads(threads)
    torch.set_num_threads(threads)
    mantissa.set_simd_target(target)
    losses = []
    try:
        for step in range(steps):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(data[:, :-1], data[:, 1:])
            loss.backward()
            opt.step()
            losses.append(loss.item())
    finally:
        mantissa.set_simd_target("auto")
        mantissa.set_num_threads(0)
        torch.set_num_threads(1)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest(), losses


@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16-autocast"])
def test_a_swapped_transformer_trains_to_the_same_bits_on_every_thread_count_and_target(
        autocast):
    digest, losses = _train_digest(1, "auto", autocast)
    assert losses[-1] < losses[0]
    for threads in (2, 7):
        assert _train_digest(threads, "auto", autocast)[0] == digest, threads
    for target in mantissa.available_simd_targets():
        assert _train_digest(2, target, autocast)[0] == digest, target


@pytest.mark.parametrize("average", [True, False])
def test_attention_weights_and_masks_match_torch(average):
    ours, theirs = _pair(lambda: nn.MultiheadAttention(16, 4))  # [L, B, E], torch's default
    q, kv = _rand(5, 3, 16, requires_grad=False), _rand(6, 3, 16, seed=1, requires_grad=False)
    attn_mask = torch.zeros(5, 6, dtype=torch.bool)
    attn_mask[:, 4] = True
    padding = torch.zeros(3, 6, dtype=torch.bool)
    padding[1, 5] = True
    kw = dict(attn_mask=attn_mask, key_padding_mask=padding, average_attn_weights=average)
    out, weights = ours(q, kv, kv, **kw)
    ref_out, ref_weights = theirs(q, kv, kv, **kw)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weights, ref_weights, rtol=1e-5, atol=1e-6)
    assert (weights[..., 4] == 0).all() and (weights[1, ..., 5] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_modules_run_in_their_dtype_and_agree_with_fp32(dtype):
    def run(model_dtype, threads):
        torch.manual_seed(0)
        model = mt.deterministic(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32),
                                               nn.Linear(32, 8)), strict=True).to(model_dtype)
        x = _rand(6, 16, requires_grad=False).to(model_dtype).requires_grad_()
        mantissa.set_num_threads(threads)
        try:
            loss = mnn.CrossEntropyLoss()(model(x), torch.tensor([1, 2, 3, 4, 5, 6]))
            loss.backward()
        finally:
            mantissa.set_num_threads(0)
        return loss, [x.grad] + [p.grad for p in model.parameters()]

    loss, grads = run(dtype, 1)
    assert loss.dtype == dtype and all(g.dtype == dtype for g in grads)
    loss3, grads3 = run(dtype, 3)
    assert torch.equal(loss, loss3) and all(torch.equal(a, b) for a, b in zip(grads, grads3))
    loss32, _ = run(torch.float32, 1)
    assert abs(loss.float() - loss32).item() < 0.05 * loss32.item()


def test_decoder_layers_and_the_encoders_inference_path_run_on_mantissa():
    torch.manual_seed(0)
    dec = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
    ref = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
    ref.load_state_dict(dec.state_dict())
    mt.deterministic(dec, strict=True)
    assert dec.activation is MF.gelu and isinstance(dec.multihead_attn, mnn.MultiheadAttention)
    tgt, mem = _rand(2, 5, 16, requires_grad=False), _rand(2, 7, 16, seed=1, requires_grad=False)
    torch.testing.assert_close(dec(tgt, mem), ref(tgt, mem), rtol=1e-5, atol=1e-5)

    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).eval()
    ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                                           batch_first=True), 2).eval()
    ref.load_state_dict(enc.state_dict())
    mt.deterministic(enc, strict=True)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    with torch.no_grad():  # torch's nested-tensor fast path would apply here
        out = enc(tgt, src_key_padding_mask=padding)
        with warnings.catch_warnings():  # torch's nested tensors are a "prototype"
            warnings.simplefilter("ignore")
            expected = ref(tgt, src_key_padding_mask=padding)
    assert not out.is_nested
    # torch's fast path leaves the padded positions' outputs as zeros; compare the others.
    torch.testing.assert_close(out[~padding], expected[~padding], rtol=1e-5, atol=1e-5)

    silu_layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=F.silu)
    with pytest.raises(mantissa.Error, match="activation silu"):
        mt.deterministic(silu_layer, strict=True)
