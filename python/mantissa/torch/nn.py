"""torch modules over mantissa's operators: the same bits on every thread count and SIMD target.

Each module subclasses torch's module of the same name (where torch has one) and overrides only
``forward``: the constructor arguments, parameter names, initialisation and ``state_dict`` are
torch's, so ``load_state_dict`` works across. ``RMSNorm`` (torch 2.4's signature) and ``SwiGLU``
stand alone on torch 1.13. ``deterministic(model)`` swaps a model's torch modules for these.
What runs in which dtype: mantissa.torch.functional and docs/python.md.
"""

import warnings

import torch
from torch import nn

from . import functional as F
from .functional import _error

__all__ = [
    "Linear", "LayerNorm", "RMSNorm", "Softmax", "LogSoftmax", "GELU", "SwiGLU",
    "CrossEntropyLoss", "MultiheadAttention", "TransformerEncoderLayer", "deterministic",
]


class Linear(nn.Linear):
    """torch.nn.Linear on the deterministic GEMM (Addmm forward, MatMul backward)."""

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class LayerNorm(nn.LayerNorm):
    """torch.nn.LayerNorm on LayerNormV4 / LayerNormGradV3."""

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm (torch 2.4's arguments and parameter name) on CANN's RmsNorm."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape, device=device,
                                                  dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


def _softmax_dim(ndim):
    # torch's rule for nn.Softmax(dim=None) (deprecated there, kept for its old models).
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(nn.Softmax):
    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim(input.dim())
        return F.softmax(input, dim)


class LogSoftmax(nn.LogSoftmax):
    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim(input.dim())
        return F.log_softmax(input, dim)


class GELU(nn.GELU):
    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)


class SwiGLU(nn.Module):
    """``silu(a) * b`` of the two halves of the input along ``dim`` (CANN's SwiGlu). Put it
    after a Linear of twice the hidden width, as LLaMA's gate and up projections fused."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.swiglu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss over class indices on CANN's CrossEntropyLoss."""

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


def _mha_unsupported(m):
    """Why a torch.nn.MultiheadAttention cannot run on mantissa's attention, or None."""
    if not m._qkv_same_embed_dim:
        return "kdim or vdim differs from embed_dim"
    if m.bias_k is not None or m.add_zero_attn:
        return "add_bias_kv or add_zero_attn is set"
    if m.dropout != 0.0:
        return f"attention dropout {m.dropout}"
    return None


class MultiheadAttention(nn.MultiheadAttention):
    """torch.nn.MultiheadAttention (the same parameters: in_proj_weight, in_proj_bias,
    out_proj) on mantissa's Linear and scaled_dot_product_attention. Not supported: kdim/vdim
    other than embed_dim, add_bias_kv, add_zero_attn, attention dropout."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        why = _mha_unsupported(self)
        if why is not None:
            raise _error(161002, f"MultiheadAttention: {why} is not supported by mantissa")

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        self_attention = query is key and key is value
        batch_first = self.batch_first and batched
        if not batched:  # [T, E] as [T, 1, E]
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        # The tokens stay in the caller's layout, [B, T, E] (batch_first) or [T, B, E]: a
        # projection treats every token alike, and the heads are strided views of either.
        B = query.shape[0] if batch_first else query.shape[1]
        L = query.shape[1] if batch_first else query.shape[0]
        S = key.shape[1] if batch_first else key.shape[0]
        E, H, D = self.embed_dim, self.num_heads, self.head_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        if self_attention:  # one product for q, k and v (the same bits as three)
            q, k, v = F.linear(query, w, b).chunk(3, dim=-1)
        else:
            wq, wk, wv = w.chunk(3)
            bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
            q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

        def heads(t, T):  # -> [B, H, T, D], a view (the GEMM reads it where it is)
            if batch_first:
                return t.reshape(B, T, H, D).permute(0, 2, 1, 3)
            return t.reshape(T, B, H, D).permute(1, 2, 0, 3)

        mask = None  # additive fp32 [B or 1, H or 1, L, S]
        if attn_mask is not None:
            am = attn_mask
            if am.dim() == 3:
                am = am.reshape(B, H, L, S)
            mask = _additive(am)
        if key_padding_mask is not None:
            kp = _additive(key_padding_mask).reshape(B, 1, 1, S)
            mask = kp if mask is None else mask + kp
        if is_causal and attn_mask is None:
            mask = _additive(torch.ones(L, S, dtype=torch.bool).triu(1))
        q, k, v = F._cast_for_product(heads(q, L), heads(k, S), heads(v, S))
        out, probs = F._attention(q, k, v, mask, False, None)
        if batch_first:
            out = out.permute(0, 2, 1, 3).reshape(B, L, E)
        else:
            out = out.permute(2, 0, 1, 3).reshape(L, B, E)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
        if not batched:
            out = out.squeeze(1)
        weights = None
        if need_weights:
            weights = _mean_over_heads(probs) if average_attn_weights else probs
            if not batched:
                weights = weights.squeeze(0)
        return out, weights


def _additive(mask):
    """torch.nn.MultiheadAttention's masks as an additive fp32 mask: a bool True (or a byte 1)
    keeps the position out (-inf), a float mask is added as it is."""
    if mask.dtype in (torch.bool, torch.uint8):
        return torch.zeros(mask.shape, dtype=torch.float32).masked_fill(mask.bool(),
                                                                         float("-inf"))
    return mask.to(torch.float32)


def _mean_over_heads(probs):
    # Summed in head order (a torch mean's order may depend on the thread count).
    total = probs[:, 0]
    for h in range(1, probs.shape[1]):
        total = total + probs[:, h]
    return total / probs.shape[1]


class TransformerEncoderLayer(nn.TransformerEncoderLayer):
    """torch.nn.TransformerEncoderLayer whose forward always takes the composed path (torch's
    inference fast path would call its own fused kernel): mantissa's attention, Linear,
    LayerNorm and GELU where the layer holds torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _adopt_encoder_layer(self)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff(self.norm2(x))
        else:
            x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff(x))
        return x

    def _sa(self, x, attn_mask, key_padding_mask, is_causal):
        extra = {}
        if isinstance(self.self_attn, MultiheadAttention):
            extra["is_causal"] = is_causal
        elif is_causal and attn_mask is None:  # torch's own attention (an option mantissa lacks)
            T = x.shape[1] if self.self_attn.batch_first else x.shape[0]
            attn_mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, **extra)[0]
        return self.dropout1(x)

    def _ff(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


def _adopt_encoder_layer(layer):
    for name in ("linear1", "linear2", "norm1", "norm2", "self_attn"):
        _swap(getattr(layer, name), strict=True)
    _adopt_activation(layer)


def _adopt_activation(layer):
    # torch's transformer layers hold their activation as a function: torch's GELU becomes
    # mantissa's (torch's element-wise transcendental kernels differ between SIMD widths).
    if layer.activation is torch.nn.functional.gelu:
        layer.activation = F.gelu


def _unexact_activation(module):
    """The name of a torch activation function a module holds that is not exact, or None."""
    act = getattr(module, "activation", None)
    if act is None or isinstance(act, nn.Module) or act in (F.gelu, torch.nn.functional.relu,
                                                              torch.relu):
        return None
    return getattr(act, "__name__", repr(act))


# torch's module type -> mantissa's. Swapping changes the instance's class and nothing else:
# its parameters (the same Parameter objects an optimizer already holds), buffers, hooks and
# state_dict names stay.
_SWAPS = {
    nn.Linear: Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: Linear,
    nn.LayerNorm: LayerNorm,
    nn.Softmax: Softmax,
    nn.LogSoftmax: LogSoftmax,
    nn.GELU: GELU,
    nn.CrossEntropyLoss: CrossEntropyLoss,
    nn.MultiheadAttention: MultiheadAttention,
    nn.TransformerEncoderLayer: TransformerEncoderLayer,
}
if hasattr(nn, "RMSNorm"):  # torch >= 2.4
    _SWAPS[nn.RMSNorm] = RMSNorm

# torch modules whose results do not depend on the thread count or SIMD width: element-wise
# exact operations, views, and Embedding (a row gather; its gradient adds the rows of each index
# in the order of the indices).
_EXACT = (nn.Identity, nn.ReLU, nn.Flatten, nn.Unflatten, nn.Embedding)
_OURS = tuple(set(_SWAPS.values())) + (RMSNorm, SwiGLU)


def _swap(module, strict):
    """Swaps one module's class; returns why it was left as torch's, or None."""
    if type(module) is nn.MultiheadAttention:
        why = _mha_unsupported(module)
        if why is not None:
            return why
    if type(module) is nn.TransformerDecoderLayer:  # no fast path: its parts are swapped
        _adopt_activation(module)
    if type(module) is nn.TransformerEncoder:
        # Its inference fast path would hand the layers nested tensors (torch's own kernels).
        module.enable_nested_tensor = False
        if hasattr(module, "use_nested_tensor"):
            module.use_nested_tensor = False
    target = _SWAPS.get(type(module))
    if target is None:
        return None
    module.__class__ = target
    if target is TransformerEncoderLayer:
        _adopt_encoder_layer(module)
    return None


def deterministic(model, strict=False):
    """Swaps ``model``'s supported torch modules (Linear, LayerNorm, RMSNorm, Softmax,
    LogSoftmax, GELU, CrossEntropyLoss, MultiheadAttention, TransformerEncoderLayer) for
    mantissa's, in place, and returns the model.

    TransformerDecoderLayer and TransformerEncoder are containers of those (their GELU activation
    function becomes mantissa's; the encoder's nested-tensor inference path is turned off). A
    model built only from supported modules (and the exact ones: Identity, ReLU, Flatten,
    Unflatten, Embedding) then trains to the same bits on every thread count and SIMD target,
    with mantissa's optimizers. Modules left as torch's that compute (dropout, convolutions, ...,
    or a MultiheadAttention with an option mantissa lacks) are named in a warning, or with
    ``strict=True`` in a mantissa.Error. Functions a model's forward calls directly (e.g.
    ``torch.nn.functional.softmax``) are not seen: call mantissa.torch.functional's instead."""
    left = []
    for name, module in model.named_modules():
        why = _swap(module, strict)
        if why is not None:
            left.append(f"{name or type(model).__name__} ({type(module).__name__}: {why})")
    for name, module in model.named_modules():
        activation = _unexact_activation(module)
        if activation is not None:
            left.append(f"{name or type(model).__name__} ({type(module).__name__}: activation "
                        f"{activation})")
        if isinstance(module, _OURS) or isinstance(module, _EXACT) or not _computes(module):
            continue
        if isinstance(module, nn.Dropout) and module.p == 0.0:
            continue
        if any(entry.startswith(f"{name} (") for entry in left):
            continue
        left.append(f"{name or type(model).__name__} ({type(module).__name__})")
    if left:
        message = ("deterministic: these modules stay torch's and their results may depend on "
                   "the thread count or SIMD width: " + ", ".join(left))
        if strict:
            raise _error(161002, message)
        warnings.warn(message, stacklevel=2)
    return model


def _computes(module):
    """A leaf module (no submodules), or a module with its own parameters."""
    children = list(module.children())
    own = list(module.parameters(recurse=False))
    return not children or bool(own)
