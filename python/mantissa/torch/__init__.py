"""Drop-in PyTorch optimizers and GradScaler on mantissa's fused multi-tensor kernels.

``AdamW``, ``Adam`` and ``SGD`` are ``torch.optim.Optimizer`` subclasses with torch's constructor
arguments, param groups and state_dict names (``step``, ``exp_avg``, ``exp_avg_sq``,
``max_exp_avg_sq``, ``momentum_buffer``). Each ``step()`` makes one library call per param group
(one parallel pass over every parameter of the group), on the parameters' own memory.
``GradScaler`` is ``torch.cuda.amp.GradScaler``'s interface on the library's
ForeachNonFiniteCheckAndUnscale and AmpUpdateScale, for CPU training.

``mantissa.torch.functional`` and ``mantissa.torch.nn`` hold functions and modules for torch
models on the library's operators, and ``deterministic(model)`` swaps a model's torch modules
for them: the same bits on every thread count and SIMD target.

Where the bits differ from torch's and by how much: docs/python.md.
"""

from collections import defaultdict

import torch
from torch.optim.optimizer import Optimizer, required

from .. import _mantissa as _m

__all__ = ["AdamW", "Adam", "SGD", "GradScaler", "deterministic", "functional", "nn"]

_LOW = (torch.float16, torch.bfloat16)
_ROUNDINGS = ("nearest", "kahan", "stochastic")
# state_dtype: None keeps the moments in the parameter's dtype (fp32 with master weights);
# the others are multi_tensor_adam_w_compact's formats: "fp32" and "bf16" moments for every
# parameter; "int8" (bitsandbytes' block-wise dynamic quantization, blocks of 256), "int4"
# (torchao's 4-bit state, blocks of 128) and "fp8" (E4M3 codes, blocks of 256) for parameters
# of at least MIN_QUANT_SIZE elements.
_STATE_DTYPES = (None, "fp32", "bf16", "bf16_sr", "int8", "int4", "fp8")
_QUANTIZED = {"int8": 256, "int4": 128, "fp8": 256}  # the block of each quantized format
# bitsandbytes' rule: parameters with fewer elements keep their moments unquantized (the
# scales and the quantization error would cost more than they save).
MIN_QUANT_SIZE = 4096
MIN_8BIT_SIZE = MIN_QUANT_SIZE


def _is_dense(t):
    """Non-overlapping and dense: the elements fill numel() consecutive slots in some order."""
    if t.is_contiguous():
        return True
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(t.shape, t.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _flat(t):
    """The tensor as the C++ API wants it: contiguous as is; a dense tensor in another memory
    order (e.g. channels_last) as a 1-D view of its memory. Element-wise steps only pair
    tensors of one memory order (see _param_layout)."""
    if t.is_contiguous():
        return t
    return t.as_strided((t.numel(),), (1,))


def _param_layout(p, others, name):
    if not _is_dense(p):
        raise _error(161002, f"{name}: parameter of shape {tuple(p.shape)} and strides "
                     f"{p.stride()} is not dense; mantissa optimizers need dense parameters")
    for t in others:
        if t is not None and t.stride() != p.stride():
            raise _error(161002, f"{name}: optimizer state of strides {t.stride()} does not "
                         f"match its parameter's {p.stride()}")


def _grad_for(p, name):
    g = p.grad
    if g.is_sparse:
        raise RuntimeError(f"{name} does not support sparse gradients")
    if g.stride() != p.stride() or not _is_dense(g):
        # Staged: a grad in another memory order than its parameter (read only, one copy).
        g = torch.empty_like(p, dtype=g.dtype).copy_(g)
    return g


def _error(code, message):
    e = _m.Error(message)
    e.code = code
    e.code_name = _m.status_code_name(code)
    return e


def _scalar_tensor(x, name):
    """grad_scale / found_inf as the fused contract's one-element FLOAT tensors."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        if x.dtype != torch.float32 or x.numel() != 1 or x.device.type != "cpu":
            raise _error(161002, f"{name}: expected a one-element float32 CPU tensor, got "
                         f"{x.dtype} of shape {tuple(x.shape)} on {x.device}")
        return x.detach()
    return torch.tensor([float(x)], dtype=torch.float32)


class _FusedOptimizer(Optimizer):
    """What the three optimizers share: the extra options, found_inf skipping, state access."""

    def __init__(self, params, defaults, master_weights, rounding, seed):
        if rounding not in _ROUNDINGS:
            raise ValueError(f"Invalid rounding: {rounding!r} (one of {_ROUNDINGS})")
        defaults = dict(defaults, master_weights=master_weights, rounding=rounding, seed=seed)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("master_weights", False)
            group.setdefault("rounding", "nearest")
            group.setdefault("seed", 0)

    def load_state_dict(self, state_dict):
        """torch's load_state_dict, except that the fp32 state of master-weight parameters
        (master_param and the moments or momentum buffer) stays fp32, quantized moments keep
        their uint8 codes and fp32 scales, and moments of a state_dtype keep that dtype: torch
        casts every state tensor to its parameter's dtype, which would round the masters to 16
        bits."""
        saved_groups = state_dict["param_groups"]
        saved_state = state_dict["state"]
        super().load_state_dict(state_dict)
        ids = [i for g in saved_groups for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        group_of = {id(p): g for g in self.param_groups for p in g["params"]}
        for old_id, p in zip(ids, params):
            saved = saved_state.get(old_id)
            if saved is None:
                continue
            for key, value in saved.items():
                if not torch.is_tensor(value) or key == "step":
                    continue
                # Quantized moments: the uint8 codes and their fp32 scales keep their dtypes;
                # so do moments kept in a state_dtype other than the parameter's.
                if value.dtype == torch.uint8 or (value.dtype == torch.float32 and (
                        key.endswith("_absmax") or key.endswith("_scale")
                        or "master_param" in saved)) or (
                        key in ("exp_avg", "exp_avg_sq") and group_of[id(p)].get("state_dtype")):
                    self.state[p][key] = value.clone()

    @staticmethod
    def _uses_master(group, p):
        return group["master_weights"] and p.dtype in _LOW

    def _master(self, group, p):
        """The fp32 master of a 16-bit parameter (created from it on first use)."""
        state = self.state[p]
        if "master_param" not in state:
            state["master_param"] = p.detach().float()
        return state["master_param"]

    def _compensation(self, group, p):
        if group["rounding"] != "kahan" or p.dtype != torch.bfloat16 or self._uses_master(group, p):
            return None
        state = self.state[p]
        if "compensation" not in state:
            state["compensation"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state["compensation"]

    def step(self, closure=None, *, grad_scale=None, found_inf=None):
        """One step of every param group. grad_scale (the loss scale the grads carry, divided
        out inside the pass) and found_inf (when non-zero the whole step is skipped and nothing
        is written) follow torch's fused-optimizer contract: one-element float32 tensors."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grad_scale = _scalar_tensor(grad_scale, "grad_scale")
        found_inf = _scalar_tensor(found_inf, "found_inf")
        if found_inf is not None and found_inf.item() != 0.0:
            return loss
        with torch.no_grad():
            # All or nothing: every group's calls are built and validated (the library's own
            # checks, nothing written) before the first one runs; a refusal anywhere undoes the
            # optimizer state this step created and leaves every parameter as it was.
            params = [p for group in self.param_groups for p in group["params"]]
            before = {id(p): (set(self.state[p]) if p in self.state else None) for p in params}
            rng_before = getattr(self, "_rng_step", None)
            calls = []
            try:
                for group in self.param_groups:
                    calls.extend(self._group_calls(group, grad_scale, found_inf))
                for fn, kwargs, _ in calls:
                    fn(**kwargs, validate_only=True)
            except BaseException:
                for p in params:
                    keys = before[id(p)]
                    if keys is None:
                        self.state.pop(p, None)
                    elif p in self.state:
                        for k in [k for k in self.state[p] if k not in keys]:
                            del self.state[p][k]
                if rng_before is not None:
                    self._rng_step = rng_before
                raise
            for fn, kwargs, after in calls:
                fn(**kwargs)
                if after is not None:
                    after()
        return loss


class AdamW(_FusedOptimizer):
    """torch.optim.AdamW on ApplyAdamWV2's math (torch's single-tensor element order).

    Extra keyword arguments: master_weights (fp32 master copies of fp16/bf16 parameters, kept
    in the state as ``master_param``, the parameter written from it in the same pass; the
    moments are fp32 then), rounding ('nearest', 'kahan' or 'stochastic': how bf16 parameters
    without a master are rounded), seed (the stochastic-rounding stream) and state_dtype (None:
    the moments in the parameter's dtype, fp32 with master weights; "fp32" or "bf16": moments of
    that dtype for every parameter; "bf16_sr": bf16 moments rounded stochastically (from seed and
    the step); "int8", "int4", "fp8": quantized moments for parameters of at
    least MIN_QUANT_SIZE elements, ``exp_avg`` and ``exp_avg_sq`` then uint8 codes (int8 and fp8:
    the parameter's shape; int4: two codes a byte, flat) with fp32 scales, one per block:
    ``exp_avg_absmax`` and ``exp_avg_sq_absmax`` for int8, ``exp_avg_scale`` and
    ``exp_avg_sq_scale`` for int4 and fp8; state_dtype other than None not with amsgrad).
    """

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None, master_weights=False, rounding="nearest",
                 seed=0, state_dtype=None):
        if state_dtype not in _STATE_DTYPES:
            raise ValueError(f"Invalid state_dtype: {state_dtype!r} (one of {_STATE_DTYPES})")
        if state_dtype is not None and amsgrad:
            raise ValueError(f"state_dtype={state_dtype!r} keeps no running maximum of v: not "
                             "with amsgrad")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if capturable or differentiable:
            raise ValueError("mantissa optimizers run on CPU tensors outside autograd: "
                             "capturable and differentiable are not supported")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=False, differentiable=False, fused=fused,
                        state_dtype=state_dtype)
        super().__init__(params, defaults, master_weights, rounding, seed)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("state_dtype", None)

    @staticmethod
    def _format(group, p):
        """The compact moment format of p (None: the moments in the parameter's dtype, which
        "fp32" and "bf16" are too where the weights the step updates have that dtype: the plain
        step gives the same bits, faster)."""
        f = group.get("state_dtype")
        if f in _QUANTIZED and p.numel() < MIN_QUANT_SIZE:
            return None
        weights = torch.float32 if group["master_weights"] and p.dtype in _LOW else p.dtype
        if (f, weights) in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            return None
        return f  # "bf16_sr" always runs the compact step (its moments are rounded stochastically)

    def _group_calls(self, group, grad_scale, found_inf):
        name = type(self).__name__
        wd = group["weight_decay"]
        maximize = group["maximize"]
        amsgrad = group["amsgrad"]
        l2 = not self._decoupled and wd != 0
        any_master = group["master_weights"]
        kahan = group["rounding"] == "kahan"
        buckets = defaultdict(lambda: defaultdict(list))  # by moment format
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if grad.is_sparse:  # before any state is created
                raise RuntimeError(f"{name} does not support sparse gradients")
            state = self.state[p]
            if "exp_avg" not in state:
                self._init_state(group, p, state)
            master = any_master and p.dtype in _LOW
            x = state["master_param"] if master else p
            ams = state["max_exp_avg_sq"] if amsgrad else None
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            q = self._format(group, p)
            if q is None and exp_avg.dtype == torch.uint8:
                q = "int8"  # a state_dict of 8-bit moments loaded into a group without a format
            if not (x.is_contiguous() and grad.is_contiguous()):
                # Dense tensors in another memory order (e.g. channels_last) go as 1-D views
                # of their memory; the C++ API refuses anything else (161002).
                _param_layout(x, [exp_avg, exp_avg_sq, ams] if q != "int4" else [], name)
                grad = _grad_for(p, name)
                x, grad = _flat(x), _flat(grad)
                if q != "int4":  # 4-bit codes are flat already
                    exp_avg, exp_avg_sq = _flat(exp_avg), _flat(exp_avg_sq)
                ams = _flat(ams) if ams is not None else None
                p_work = _flat(p)
            else:
                p_work = p
            if l2:
                # torch.optim.Adam's L2 decay: grad + wd * param, in torch's own arithmetic and
                # grouping (a staged gradient; maximize is applied first, as torch does).
                # With a loss scale the staged gradient is unscaled first (the fused pass's
                # own fp32 division, done here) and the pass gets no grad_scale: the decay
                # term must not be divided by the scale.
                if maximize:
                    grad = -grad
                grad = grad.to(x.dtype)
                if grad_scale is not None:
                    grad = grad / grad_scale
                grad = grad.add(x, alpha=wd)
            b = buckets[q]
            b["var"].append(x)
            b["m"].append(exp_avg)
            b["v"].append(exp_avg_sq)
            if q in _QUANTIZED:
                suffix = "_absmax" if q == "int8" else "_scale"
                b["scale_m"].append(state["exp_avg" + suffix])
                b["scale_v"].append(state["exp_avg_sq" + suffix])
            b["grad"].append(grad)
            b["max_grad_norm"].append(ams)
            b["working"].append(p_work if master else None)
            comp = self._compensation(group, p) if kahan else None
            b["compensation"].append(_flat(comp) if comp is not None else None)
            step_t = state["step"]
            if not torch.is_tensor(step_t):  # a state_dict from a torch that kept a number
                step_t = state["step"] = torch.tensor(float(step_t))
            b["steps"].append(step_t)
        calls = []
        for q, b in buckets.items():
            if b["var"]:
                calls += self._bucket_calls(group, b, q, grad_scale, found_inf, l2)
        return calls

    def _bucket_calls(self, group, b, q, grad_scale, found_inf, l2):
        """The calls of one moment format (q; None: the parameter's dtype), one per step
        count."""
        beta1, beta2 = group["betas"]
        wd = group["weight_decay"]
        maximize = group["maximize"]
        amsgrad = group["amsgrad"]
        any_master = group["master_weights"]
        kahan = group["rounding"] == "kahan"
        var, steps = b["var"], b["steps"]
        counts = torch.stack(steps).tolist() if len(steps) > 1 else [steps[0].item()]
        first = counts[0]
        if all(c == first for c in counts):
            batches = {first: range(len(var))}
        else:  # parameters with different step counts (e.g. added later): one call per count
            batches = defaultdict(list)
            for i, c in enumerate(counts):
                batches[c].append(i)

        def pick(lst, idx):
            return lst if len(idx) == len(lst) else [lst[i] for i in idx]

        calls = []
        for count, idx in batches.items():
            step = int(count)
            kwargs = dict(
                var=pick(var, idx), m=pick(b["m"], idx), v=pick(b["v"], idx),
                grad=pick(b["grad"], idx),
                working=pick(b["working"], idx) if any_master else None,
                compensation=pick(b["compensation"], idx) if kahan else None, step=step,
                lr=group["lr"], beta1=beta1, beta2=beta2,
                weight_decay=wd if self._decoupled else 0.0, eps=group["eps"],
                maximize=maximize and not l2, grad_scale=None if l2 else grad_scale,
                found_inf=found_inf, rounding=group["rounding"], seed=group["seed"],
                rng_step=step)
            if q is not None:
                kwargs.update(format="bf16" if q == "bf16_sr" else q,
                              stochastic_moments=q == "bf16_sr")
                if q in _QUANTIZED:
                    kwargs.update(scale_m=pick(b["scale_m"], idx), scale_v=pick(b["scale_v"], idx))
                fn = _m.multi_tensor_adam_w_compact
            else:
                kwargs.update(max_grad_norm=pick(b["max_grad_norm"], idx) if amsgrad else None,
                              amsgrad=amsgrad)
                fn = _m.multi_tensor_adam_w
            counters = pick(steps, idx)
            calls.append((fn, kwargs, lambda c=counters: torch._foreach_add_(c, 1)))
        return calls

    def _init_state(self, group, p, state):
        like = self._master(group, p) if self._uses_master(group, p) else p
        state["step"] = torch.tensor(0.0)
        f = self._format(group, p)
        if f in _QUANTIZED:
            # Fresh quantized state: codes 0 with scale 0 decode to 0.
            block = _QUANTIZED[f]
            suffix = "_absmax" if f == "int8" else "_scale"
            for key in ("exp_avg", "exp_avg_sq"):
                if f == "int4":
                    state[key] = torch.zeros((p.numel() + 1) // 2, dtype=torch.uint8)
                else:
                    state[key] = torch.zeros_like(like, dtype=torch.uint8,
                                                  memory_format=torch.preserve_format)
                state[key + suffix] = torch.zeros((p.numel() + block - 1) // block)
            return
        if f is not None:  # "fp32", "bf16" or "bf16_sr" moments
            dtype = torch.float32 if f == "fp32" else torch.bfloat16
            for key in ("exp_avg", "exp_avg_sq"):
                state[key] = torch.zeros_like(like, dtype=dtype,
                                              memory_format=torch.preserve_format)
            return
        state["exp_avg"] = torch.zeros_like(like, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(like, memory_format=torch.preserve_format)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = torch.zeros_like(like, memory_format=torch.preserve_format)


class Adam(AdamW):
    """torch.optim.Adam. torch's Adam is AdamW's element order with no decoupled decay, so it
    runs on the same kernel with weight_decay 0; torch's L2 weight_decay (grad + wd * param) is
    applied to a staged copy of the gradient before the fused pass (one extra pass, torch's own
    arithmetic). fused=True is accepted (this is the fused path)."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=False, master_weights=False, rounding="nearest",
                 seed=0, state_dtype=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         master_weights=master_weights, rounding=rounding, seed=seed,
                         state_dtype=state_dtype)


class SGD(_FusedOptimizer):
    """torch.optim.SGD on CANN's SGD (momentum with a first-step flag).

    torch's first step sets the momentum buffer to the gradient; CANN's first-step flag gives
    the same value (0 * momentum + grad). The flag tensors are scratch kept outside the state,
    so state_dict holds exactly torch's ``momentum_buffer``. maximize negates a staged copy of
    the gradient. Extra keyword arguments as AdamW's.
    """

    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 master_weights=False, rounding="nearest", seed=0):
        if lr is not required and lr < 0.0:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if momentum < 0.0:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if weight_decay < 0.0:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if differentiable:
            raise ValueError("mantissa optimizers run outside autograd: differentiable is not "
                             "supported")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=False)
        super().__init__(params, defaults, master_weights, rounding, seed)
        self._scratch = {}
        self._rng_step = 0

    def __setstate__(self, state):
        super().__setstate__(state)
        self._scratch = {}
        self._rng_step = getattr(self, "_rng_step", 0)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def _zeros(self, key, like_list):
        """Disjoint zero-filled views, one per tensor of like_list, carved from one cached
        buffer per dtype (the kernel writes +0.0 into the flags only where they are not +0.0
        already, so the buffer stays zero between steps). The views are cached too."""
        layout = tuple((t.dtype, t.shape) for t in like_list)
        cached = self._scratch.get(key)
        if cached is not None and cached[0] == layout:
            return list(cached[1])
        out = [None] * len(like_list)
        by_dtype = defaultdict(list)
        for i, t in enumerate(like_list):
            by_dtype[t.dtype].append(i)
        for dtype, idx in by_dtype.items():
            buf = torch.zeros(sum(like_list[i].numel() for i in idx), dtype=dtype)
            offset = 0
            for i in idx:
                n = like_list[i].numel()
                out[i] = buf[offset:offset + n].view(like_list[i].shape)
                offset += n
        self._scratch[key] = (layout, out)
        return list(out)

    def _group_calls(self, group, grad_scale, found_inf):
        momentum = group["momentum"]
        any_master = group["master_weights"]
        kahan = group["rounding"] == "kahan"
        params, grads, accums, working, comps = [], [], [], [], []
        fresh = []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if grad.is_sparse:  # before any state is created
                raise RuntimeError("SGD does not support sparse gradients")
            state = self.state[p]
            master = any_master and p.dtype in _LOW
            var = self._master(group, p) if master else p
            buf = state.get("momentum_buffer")
            if momentum != 0 and buf is None:
                buf = torch.zeros_like(var, memory_format=torch.preserve_format)
                state["momentum_buffer"] = buf
                fresh.append(len(params))
            if grad.is_sparse:
                raise RuntimeError("SGD does not support sparse gradients")
            p_work = p
            if not (var.is_contiguous() and grad.is_contiguous()):
                _param_layout(var, [buf], "SGD")
                grad = _flat(_grad_for(p, "SGD"))
                var, buf, p_work = _flat(var), _flat(buf) if buf is not None else None, _flat(p)
            if group["maximize"]:
                grad = -grad
            if momentum != 0:
                accums.append(buf)
            params.append(var)
            grads.append(grad)
            working.append(p_work if master else None)
            comp = self._compensation(group, p) if kahan else None
            comps.append(_flat(comp) if comp is not None else None)
        if not params:
            return []
        stats = self._zeros(("stat", id(group)), params)
        if momentum == 0:
            # Momentum 0: CANN's SGD reads accum (accum * 0) but writes neither accum nor stat.
            accums = self._zeros(("accum", id(group)), params)
        else:
            for i in fresh:  # torch's first step: buffer = grad, CANN's stat = 1
                stats[i] = torch.ones_like(params[i])
        self._rng_step += 1  # one stochastic-rounding step per group call (undone on refusal)
        rng_step = self._rng_step
        kwargs = dict(
            parameters=params, gradient=grads, accum=accums, stat=stats,
            working=working if any_master else None, compensation=comps if kahan else None,
            learning_rate=group["lr"], momentum=momentum, dampening=group["dampening"],
            weight_decay=group["weight_decay"], nesterov=group["nesterov"],
            grad_scale=grad_scale, found_inf=found_inf, rounding=group["rounding"],
            seed=group["seed"], rng_step=rng_step)
        return [(_m.multi_tensor_sgd, kwargs, None)]


class GradScaler:
    """torch.cuda.amp.GradScaler's interface for CPU training, on the library's
    ForeachNonFiniteCheckAndUnscale (one pass over every gradient of the optimizer, mixed
    dtypes, fp16 grads allowed) and AmpUpdateScale.

    With a mantissa optimizer, ``step()`` without a prior ``unscale_()`` does not rewrite the
    gradients: it checks them (read only) and hands the scale to the optimizer's fused pass
    (grad_scale/found_inf). Any other optimizer gets torch's path: unscale in place, then step
    unless a gradient held Inf or NaN.
    """

    _READY, _UNSCALED, _STEPPED = 0, 1, 2

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._enabled = enabled
        if enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._scale = torch.full((1,), float(init_scale), dtype=torch.float32)
        self._growth_tracker = torch.full((1,), 0, dtype=torch.int32)
        self._per_optimizer_states = defaultdict(self._fresh_state)

    @staticmethod
    def _fresh_state():
        return {"stage": GradScaler._READY, "found_inf": None}

    def scale(self, outputs):
        """outputs * scale (a tensor, or an iterable of tensors, nested)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, torch.Tensor):
            return outputs * self._scale.to(device=outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    @staticmethod
    def _grads(optimizer):
        grads = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise ValueError("GradScaler: sparse gradients are not supported")
                grads.append(p.grad)
        return grads

    def _unscale_grads(self, optimizer, inv_scale):
        found_inf = torch.zeros((1,), dtype=torch.float32)
        grads = self._grads(optimizer)
        staged = []
        for i, g in enumerate(grads):
            if not g.is_contiguous():
                staged.append((i, g))
                grads[i] = g.contiguous()
        _m.foreach_non_finite_check_and_unscale(grads, found_inf, inv_scale)
        for i, g in staged:
            g.copy_(grads[i])
        return found_inf

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale in place (multiplies by 1/scale,
        computed in double and rounded to fp32, as torch does) and records Inf/NaN."""
        if not self._enabled:
            return
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == self._UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] == self._STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf"] = self._unscale_grads(optimizer, inv_scale)
        state["stage"] = self._UNSCALED

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == self._STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        retval = None
        if state["stage"] == self._READY and isinstance(optimizer, _FusedOptimizer):
            # Read-only check (inverse scale 1: the grads are only read), then the fused step
            # divides by the scale inside its own pass.
            one = torch.ones((1,), dtype=torch.float32)
            state["found_inf"] = self._unscale_grads(optimizer, one)
            if state["found_inf"].item() == 0.0:
                retval = optimizer.step(*args, grad_scale=self._scale,
                                        found_inf=state["found_inf"], **kwargs)
        else:
            if state["stage"] == self._READY:
                self.unscale_(optimizer)
            if state["found_inf"].item() == 0.0:
                retval = optimizer.step(*args, **kwargs)
        state["stage"] = self._STEPPED
        return retval

    def update(self, new_scale=None):
        """The next step's scale: backoff when any checked gradient held Inf/NaN, growth after
        growth_interval clean steps (AmpUpdateScale)."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, torch.Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("new_scale should be a float or a 1-element tensor with "
                                     "requires_grad=False.")
                self._scale.copy_(new_scale.reshape(1))
            else:
                self._scale.fill_(float(new_scale))
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update.")
            combined = found[0].clone()
            for f in found[1:]:
                combined += f
            _m.amp_update_scale(self._scale, self._growth_tracker, combined,
                                growth_factor=self._growth_factor,
                                backoff_factor=self._backoff_factor,
                                growth_interval=self._growth_interval)
        self._per_optimizer_states = defaultdict(self._fresh_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        return self._scale.item() if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        return int(self._growth_tracker.item()) if self._enabled else 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """torch's five entries: scale, growth_factor, backoff_factor, growth_interval,
        _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._scale.fill_(float(state_dict["scale"]))
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        self._growth_tracker.fill_(int(state_dict["_growth_tracker"]))


# Layers and functions for torch models (imported last: they use nothing above).
from . import functional, nn  # noqa: E402
from .nn import deterministic  # noqa: E402
