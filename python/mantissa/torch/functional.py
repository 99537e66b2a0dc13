"""Functions for torch models over mantissa's operators: the same bits on every thread count and
SIMD target.

Each function is a ``torch.autograd.Function`` whose forward and backward are library calls
(their rounding orders are the operators' documented ones; docs/ops/), with torch's signature
where torch has the function. The glue between library calls is exact: views, ``contiguous()``
copies, dtype casts (rounded once to nearest even), masks and single element-wise products. No
torch reduction runs, since torch's reduction orders change with the thread count.

dtypes (see docs/python.md, "Layers and functions for torch models"):

- fp32, fp16 and bf16 tensors; other dtypes raise ``mantissa.Error`` (161002).
- Inside ``torch.autocast("cpu", dtype=...)`` the products (``linear``, ``matmul`` and the two
  products of ``scaled_dot_product_attention``) cast their operands to the autocast dtype, as
  torch does, and return that dtype; the fp32 accumulator is rounded once. Every other function
  runs in its input's dtype, as torch 1.13 does on a CPU; the norms take fp32 weights with a
  16-bit input.
- ``scaled_dot_product_attention`` keeps its scores and probabilities in fp32 whatever the
  operands' dtype, and rounds the probabilities once to the value's dtype.
"""

import math

import torch

from .. import _mantissa as _m

__all__ = [
    "linear", "matmul", "layer_norm", "rms_norm", "softmax", "log_softmax", "gelu", "swiglu",
    "cross_entropy", "scaled_dot_product_attention",
]

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _error(code, message):
    e = _m.Error(message)
    e.code = code
    e.code_name = _m.status_code_name(code)
    return e


def _check(name, arg, t):
    if not isinstance(t, torch.Tensor):
        raise _error(161001, f"{name}: {arg} must be a torch tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise _error(161002, f"{name}: {arg} is on device {t.device}; mantissa runs on the CPU")
    if t.dtype not in _FLOATS:
        raise _error(161002, f"{name}: {arg} has dtype {t.dtype}; mantissa takes float32, "
                     "float16 or bfloat16")
    return t


def _autocast_dtype():
    if torch.is_autocast_cpu_enabled():
        return torch.get_autocast_cpu_dtype()
    return None


def _cast_for_product(*tensors):
    """torch's autocast rule for products: operands in the autocast dtype."""
    dtype = _autocast_dtype()
    if dtype is None:
        return tensors
    return tuple(None if t is None else t.to(dtype) for t in tensors)


def _dense(t):
    return t if t.is_contiguous() else t.contiguous()


def _mT(t):
    return t.transpose(-2, -1)


class _MatMul(torch.autograd.Function):
    """out = a @ b over [..., m, k] x [..., k, n] with equal batch dims (MatMul); the operands may
    be strided views and of different dtypes (promoted as docs/ops/matmul.md says)."""

    @staticmethod
    def forward(ctx, a, b, out_dtype):
        out = torch.empty(a.shape[:-1] + b.shape[-1:], dtype=out_dtype)
        _m.ops.matmul(a, b, out)
        ctx.save_for_backward(a, b)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors  # g as autograd gives it: the GEMM reads strided operands
        da = db = None
        if ctx.needs_input_grad[0]:
            da = torch.empty(a.shape, dtype=a.dtype)
            _m.ops.matmul(g, _mT(b), da)
        if ctx.needs_input_grad[1]:
            db = torch.empty(b.shape, dtype=b.dtype)
            _m.ops.matmul(_mT(a), g, db)
        return da, db, None


def matmul(a, b, *, out_dtype=None):
    """``a @ b`` for operands of rank 2 or more with equal batch dims, through the deterministic
    GEMM (fp32 FMA chain in k order, one rounding to the result's dtype). ``out_dtype`` defaults
    to the promoted dtype (torch's); under autocast the operands take the autocast dtype."""
    _check("matmul", "a", a)
    _check("matmul", "b", b)
    a, b = _cast_for_product(a, b)
    if a.dim() < 2 or b.dim() < 2 or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise _error(161002, f"matmul: a of shape {list(a.shape)} and b of shape "
                     f"{list(b.shape)} must be [..., m, k] and [..., k, n] with equal batch dims")
    if out_dtype is None:
        out_dtype = torch.promote_types(a.dtype, b.dtype)
    return _MatMul.apply(a, b, out_dtype)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        out = torch.empty((x.shape[0], weight.shape[0]),
                          dtype=torch.promote_types(x.dtype, weight.dtype))
        if bias is None:
            _m.ops.matmul(x, _mT(weight), out)
        else:
            _m.ops.addmm(bias, x, _mT(weight), out)
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors  # g may be strided: the GEMM reads it where it is
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = torch.empty(x.shape, dtype=x.dtype)
            _m.ops.matmul(g, weight, dx)
        if ctx.needs_input_grad[1]:
            dw = torch.empty(weight.shape, dtype=weight.dtype)
            _m.ops.matmul(_mT(g), x, dw)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            # The column sums of g in row order: a ones row times g (an FMA by 1 is an add).
            db = torch.empty((1, g.shape[1]), dtype=ctx.bias_dtype)
            _m.ops.matmul(torch.ones((1, g.shape[0]), dtype=g.dtype), g, db)
            db = db.view(-1)
        return dx, dw, db


def linear(input, weight, bias=None):
    """torch.nn.functional.linear: ``input @ weight.T + bias`` (Addmm: the product's fp32
    accumulator plus the bias in fp32, rounded once). The bias gradient sums the rows in order."""
    _check("linear", "input", input)
    _check("linear", "weight", weight)
    if bias is not None:
        _check("linear", "bias", bias)
    input, weight, bias = _cast_for_product(input, weight, bias)
    if weight.dim() != 2 or input.dim() < 1 or input.shape[-1] != weight.shape[1]:
        raise _error(161002, f"linear: input of shape {list(input.shape)} does not match weight "
                     f"of shape {list(weight.shape)} (input [..., in_features], weight "
                     "[out_features, in_features])")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise _error(161002, f"linear: bias has shape {list(bias.shape)} but must be "
                     f"[{weight.shape[0]}]")
    lead = input.shape[:-1]
    x = _dense(input).reshape(-1, input.shape[-1])
    out = _Linear.apply(x, weight, bias)
    return out.reshape(*lead, weight.shape[0])


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, normalized_shape, eps):
        lead = x.shape[:x.dim() - len(normalized_shape)]
        out = torch.empty_like(x)
        mean = torch.empty(lead, dtype=torch.float32)
        rstd = torch.empty(lead, dtype=torch.float32)
        _m.layer_norm(x, normalized_shape, out, weight=weight, bias=bias, mean=mean, rstd=rstd,
                      eps=eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.normalized_shape = normalized_shape
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, mean, rstd = ctx.saved_tensors
        g = _dense(g).to(x.dtype)
        want = ctx.needs_input_grad
        dx = torch.empty_like(x) if want[0] else None
        dw = torch.empty(weight.shape, dtype=weight.dtype) if weight is not None and want[1] \
            else None
        db = torch.empty(ctx.normalized_shape, dtype=ctx.bias_dtype) \
            if ctx.bias_dtype is not None and want[2] else None
        if dx is not None or dw is not None or db is not None:
            _m.layer_norm_grad(g, x, ctx.normalized_shape, mean, rstd, weight=weight, dx=dx,
                               dweight=dw, dbias=db)
        return dx, dw, db, None, None


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm (LayerNormV4; statistics and the row in fp64, rounded
    once); the weight and bias may be fp32 with a 16-bit input."""
    _check("layer_norm", "input", input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            _check("layer_norm", arg, t)
    return _LayerNorm.apply(_dense(input), weight, bias, list(normalized_shape), float(eps))


class _RmsNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, eps, ndim):
        y = torch.empty_like(x)
        rstd = torch.empty(x.shape[:x.dim() - ndim], dtype=torch.float32)
        _m.rms_norm(x, gamma, y, rstd, epsilon=eps)
        ctx.save_for_backward(x, gamma, rstd)
        return y

    @staticmethod
    def backward(ctx, g):
        x, gamma, rstd = ctx.saved_tensors
        g = _dense(g).to(x.dtype)
        dx = torch.empty_like(x)
        dgamma = torch.empty(gamma.shape, dtype=torch.float32)
        _m.rms_norm_grad(g, x, rstd, gamma, dx, dgamma)
        return dx, dgamma.to(gamma.dtype), None, None


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.nn.functional.rms_norm (torch 2.4's signature; CANN's RmsNorm):
    ``x * rstd * weight``, rstd = 1 / sqrt(mean(x^2) + eps), eps by default torch's
    ``finfo(input.dtype).eps``. Without a weight, a weight of ones (no gradient)."""
    _check("rms_norm", "input", input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    if eps is None:
        eps = torch.finfo(input.dtype).eps
    if weight is None:
        weight = torch.ones(normalized_shape, dtype=input.dtype)
    else:
        _check("rms_norm", "weight", weight)
    if tuple(weight.shape) != normalized_shape:
        raise _error(161002, f"rms_norm: weight has shape {list(weight.shape)} but "
                     f"normalized_shape is {list(normalized_shape)}")
    return _RmsNorm.apply(_dense(input), weight, float(eps), len(normalized_shape))


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, log):
        out = torch.empty_like(x)
        (_m.log_softmax if log else _m.softmax)(x, out, dim=dim)
        ctx.save_for_backward(out)
        ctx.dim, ctx.log = dim, log
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        dx = torch.empty_like(out)
        (_m.log_softmax_grad if ctx.log else _m.softmax_grad)(_dense(g).to(out.dtype), out, dx,
                                                              dim=ctx.dim)
        return dx, None, None


def _softmax(name, input, dim, dtype, log):
    _check(name, "input", input)
    if dim is None:
        raise _error(161002, f"{name}: dim must be given")
    if dtype is not None:
        input = input.to(dtype)
    return _Softmax.apply(_dense(input), int(dim), log)


def softmax(input, dim=None, dtype=None):
    """torch.nn.functional.softmax (SoftmaxV2; the row's max, exp and sum in a fixed order)."""
    return _softmax("softmax", input, dim, dtype, False)


def log_softmax(input, dim=None, dtype=None):
    """torch.nn.functional.log_softmax (LogSoftmaxV2)."""
    return _softmax("log_softmax", input, dim, dtype, True)


_APPROXIMATE = {"none": 0, "tanh": 1}


class _Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, approximate):
        y = torch.empty_like(x)
        _m.ops.gelu_v2(x, y, approximate=approximate)
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        _m.ops.gelu_backward_v2(_dense(g).to(x.dtype), x, dx, approximate=ctx.approximate)
        return dx, None


def gelu(input, approximate="none"):
    """torch.nn.functional.gelu (GeluV2: "none" the erf form, "tanh" GPT-2's; fp64 inside,
    rounded once)."""
    _check("gelu", "input", input)
    if approximate not in _APPROXIMATE:
        raise _error(161002, f"gelu: approximate is {approximate!r}; it must be 'none' or 'tanh'")
    return _Gelu.apply(_dense(input), _APPROXIMATE[approximate])


class _SwiGlu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        shape = list(x.shape)
        shape[dim] //= 2
        out = torch.empty(shape, dtype=x.dtype)
        _m.swi_glu(x, out, dim=dim)
        ctx.save_for_backward(x)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        _m.swi_glu_grad(_dense(g).to(x.dtype), x, dx, dim=ctx.dim)
        return dx, None


def swiglu(input, dim=-1):
    """CANN's SwiGlu: ``silu(a) * b`` with a, b the first and second halves of input along
    ``dim`` (fp64 inside, rounded once). torch has no such function; this is LLaMA's gate."""
    _check("swiglu", "input", input)
    if input.dim() == 0 or not -input.dim() <= dim < input.dim() or input.shape[dim] % 2:
        raise _error(161002, f"swiglu: input of shape {list(input.shape)} cannot be halved "
                     f"along dim {dim}")
    return _SwiGlu.apply(_dense(input), dim % input.dim())


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, target, weight, reduction, ignore_index, label_smoothing):
        n = x.shape[0]
        loss = torch.empty((n,) if reduction == 0 else (), dtype=x.dtype)
        log_prob = torch.empty_like(x)
        zloss = torch.empty_like(loss)
        lse = torch.empty((n,), dtype=x.dtype)
        _m.ops.cross_entropy_loss(x, target, weight, loss, log_prob, zloss, lse,
                                  reduction=reduction, ignore_index=ignore_index,
                                  label_smoothing=label_smoothing)
        ctx.save_for_backward(log_prob, target, weight)
        ctx.attrs = (reduction, ignore_index, label_smoothing)
        return loss

    @staticmethod
    def backward(ctx, g):
        log_prob, target, weight = ctx.saved_tensors
        reduction, ignore_index, label_smoothing = ctx.attrs
        dx = torch.empty_like(log_prob)
        _m.ops.cross_entropy_loss_grad(_dense(g).to(log_prob.dtype), log_prob, target, weight,
                                       None, None, dx, reduction=reduction,
                                       ignore_index=ignore_index,
                                       label_smoothing=label_smoothing)
        return dx, None, None, None, None, None


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy over class indices (CrossEntropyLoss: the fused
    log-softmax, class weights, ignore_index, label smoothing, every reduction). input [N, C] or
    [N, C, d...] (moved to [N * d..., C], an exact copy), target int64 or int32 [N] or
    [N, d...]. Class-probability targets are not supported."""
    _check("cross_entropy", "input", input)
    if size_average is not None or reduce is not None:
        raise _error(161002, "cross_entropy: size_average and reduce are deprecated in torch; "
                     "use reduction")
    if reduction not in _REDUCTIONS:
        raise _error(161002, f"cross_entropy: reduction is {reduction!r}; it must be 'none', "
                     "'mean' or 'sum'")
    if not isinstance(target, torch.Tensor) or target.dtype not in (torch.int64, torch.int32):
        raise _error(161002, "cross_entropy: target must be a tensor of class indices (int64 or "
                     "int32); class-probability targets are not supported")
    if weight is not None:
        _check("cross_entropy", "weight", weight)
        weight = _dense(weight.to(torch.float32))
    shape = None
    if input.dim() > 2:  # [N, C, d...] -> [N * d..., C]
        shape = (input.shape[0],) + tuple(input.shape[2:])
        input = input.movedim(1, -1).reshape(-1, input.shape[1])
        target = target.reshape(-1)
    elif input.dim() == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    loss = _CrossEntropy.apply(_dense(input), _dense(target), weight, _REDUCTIONS[reduction],
                               int(ignore_index), float(label_smoothing))
    if reduction == "none" and shape is not None:
        loss = loss.reshape(shape)
    return loss


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    """torch 2's F.scaled_dot_product_attention, composed of the functions above:
    ``softmax(q @ k^T * scale + mask) @ v`` over [..., L, E], [..., S, E], [..., S, Ev].

    The scores are computed into fp32 (16-bit operands without a 16-bit rounding), scaled and
    masked in fp32 (a bool mask's False and the causal mask's upper triangle become -inf; a float
    mask is added), the softmax is fp32, and the probabilities are rounded once to value's dtype
    for the second product. Dropout is not supported (``dropout_p`` must be 0)."""
    for arg, t in (("query", query), ("key", key), ("value", value)):
        _check("scaled_dot_product_attention", arg, t)
    if dropout_p != 0.0:
        raise _error(161002, f"scaled_dot_product_attention: dropout_p is {dropout_p}; mantissa's "
                     "attention has no dropout (0 only)")
    query, key, value = _cast_for_product(query, key, value)
    return _attention(query, key, value, attn_mask, is_causal, scale)[0]


def _attention(query, key, value, attn_mask, is_causal, scale):
    """(output, probabilities) of scaled_dot_product_attention, its operands already cast."""
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = matmul(query, _mT(key), out_dtype=torch.float32)
    scores = scores.mul_(scale)  # in place: _MatMul keeps its operands, not its output
    if is_causal:
        L, S = scores.shape[-2], scores.shape[-1]
        upper = torch.ones(L, S, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(upper, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(torch.float32)
    probs = softmax(scores, -1)
    return matmul(probs.to(value.dtype), value), probs
