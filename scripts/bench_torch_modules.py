#!/usr/bin/python3
"""mantissa's torch modules against torch's own, forward + backward, on a transformer's shapes:
a markdown table, a JSON file and an SVG chart.

    /usr/bin/python3 scripts/bench_torch_modules.py [--build build] [--threads 1,2]
        [--dtypes fp32,bf16] [--tokens 2048] [--d-model 512] [--heads 8] [--context 256]
        [--vocab 8192] [--min-time 0.5] [--json FILE] [--svg FILE] [--markdown FILE]

Per layer, one call is ``out = module(x); out.backward(g)`` with fresh parameter gradients,
for torch's module and for the same module after mantissa.torch.deterministic() (the same
weights). bf16 rows convert the module and its input to bfloat16 (``module.bfloat16()``), as a
bf16 model runs. torch 1.13 has no RMSNorm or SwiGLU module: their torch rows are the
LLaMA-style compositions ``x * rsqrt(mean(x^2) + eps) * w`` and ``silu(a) * b``. Times are
medians of calls in blocks interleaved peer by peer (each block's first call untimed: the
other peer's thread pool spins for a while after its last call); ratio = torch's time / mantissa's (above 1:
mantissa is faster). torch's GEMMs go through libblas.so.3 (named in the output; OpenBLAS when
`scripts/install-deps.sh bench` installed it), its other kernels are ATen's.
"""

import argparse
import json
import os
import sys
import time
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))


def layers(a, torch, nn, mnn):
    d, N, H, T, V = a.d_model, a.tokens, a.heads, a.context, a.vocab
    B = N // T

    class RMSNormRef(nn.Module):  # torch 1.13 has no nn.RMSNorm
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) \
                * self.weight

    class SwiGLURef(nn.Module):
        def forward(self, x):
            a_, b_ = x.chunk(2, -1)
            return nn.functional.silu(a_) * b_

    class CausalMHA(nn.Module):  # need_weights=False and a causal mask, as a GPT calls it
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(d, H, batch_first=True)

        def forward(self, x):
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]

    def rms_pair():
        ours = mnn.RMSNorm(d, eps=1e-6)
        ref = RMSNormRef(d)
        return ref, ours

    def swiglu_pair():
        return SwiGLURef(), mnn.SwiGLU()

    return [
        # name, shape label, make(torch module), input shape, the mantissa module or None (swap)
        ("Linear d->4d", f"{N}x{d}->{4 * d}", lambda: nn.Linear(d, 4 * d), (N, d), None),
        ("Linear 4d->d", f"{N}x{4 * d}->{d}", lambda: nn.Linear(4 * d, d), (N, 4 * d), None),
        ("LayerNorm", f"{N}x{d}", lambda: nn.LayerNorm(d), (N, d), None),
        ("RMSNorm", f"{N}x{d}", rms_pair, (N, d), "pair"),
        ("GELU", f"{N}x{4 * d}", lambda: nn.GELU(), (N, 4 * d), None),
        ("GELU tanh", f"{N}x{4 * d}", lambda: nn.GELU("tanh"), (N, 4 * d), None),
        ("SwiGLU", f"{N}x{8 * d}->{4 * d}", swiglu_pair, (N, 8 * d), "pair"),
        ("Softmax", f"{B * H}x{T}x{T}", lambda: nn.Softmax(-1), (B * H, T, T), None),
        ("LogSoftmax", f"{N}x{V}", lambda: nn.LogSoftmax(-1), (N, V), None),
        ("CrossEntropyLoss", f"{N}x{V}", lambda: nn.CrossEntropyLoss(), (N, V), "loss"),
        ("MultiheadAttention causal", f"{B}x{T}x{d}, {H} heads", CausalMHA, (B, T, d), None),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds of calls per peer and row (at least 3 calls)")
    ap.add_argument("--only", help="a substring of the layer names to keep")
    ap.add_argument("--json"), ap.add_argument("--svg"), ap.add_argument("--markdown")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.build), "python"))
    sys.path.insert(0, HERE)
    import torch
    from torch import nn

    import mantissa
    import mantissa.torch as mt
    from mantissa.torch import nn as mnn
    from train_side_by_side import blas_info, set_threads

    blas = blas_info()
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    specs = [s for s in layers(a, torch, nn, mnn) if not a.only or a.only in s[0]]
    total = len(specs) * len(a.dtypes.split(",")) * len(a.threads.split(","))
    done = 0
    for threads in [int(t) for t in a.threads.split(",")]:
        set_threads(threads)
        mantissa.set_num_threads(threads)
        for dname in a.dtypes.split(","):
            dtype = dtypes[dname]
            for name, label, make, shape, kind in specs:
                done += 1
                print(f"[{done}/{total}] {name} {dname} t{threads}", file=sys.stderr, flush=True)
                torch.manual_seed(0)
                if kind == "pair":
                    theirs, ours = make()
                    ours.load_state_dict(theirs.state_dict())
                else:
                    theirs = make()
                    ours = make()
                    ours.load_state_dict(theirs.state_dict())
                    mt.deterministic(ours, strict=True)
                theirs.to(dtype)
                ours.to(dtype)
                x = torch.randn(*shape).to(dtype)
                if kind == "loss":
                    target = torch.randint(0, shape[-1], shape[:1])
                    mods = {"t": theirs, "o": ours}
                    fns = {k: (lambda mod=mods[k]: mod(x_req(x), target)) for k in mods}
                else:
                    mods = {"t": theirs, "o": ours}
                    fns = {k: (lambda mod=mods[k]: mod(x_req(x))) for k in mods}
                g = None

                def call(k):
                    nonlocal g
                    for p in mods[k].parameters():
                        p.grad = None
                    out = fns[k]()
                    if g is None or g.shape != out.shape or g.dtype != out.dtype:
                        g = torch.randn(out.shape).to(out.dtype) if out.dim() else torch.ones(
                            (), dtype=out.dtype)
                    out.backward(g)

                times = {"t": [], "o": []}
                for k in ("t", "o"):
                    call(k)  # warm up
                start = time.perf_counter()
                while min(len(v) for v in times.values()) < 3 or \
                        time.perf_counter() - start < 2 * a.min_time:
                    for k in ("t", "o"):
                        # Blocks of calls, the first untimed: the other peer's thread pool
                        # (OpenMP, OpenBLAS) keeps spinning for a while after its last call.
                        call(k)
                        for _ in range(2):
                            t0 = time.perf_counter()
                            call(k)
                            times[k].append(time.perf_counter() - t0)
                med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
                rows.append({"layer": name, "shape": label, "dtype": dname, "threads": threads,
                             "torch_ms": 1e3 * med["t"], "mantissa_ms": 1e3 * med["o"],
                             "ratio": med["t"] / med["o"], "calls": len(times["t"])})
    mantissa.set_num_threads(0)
    head = (f"torch {torch.__version__} (BLAS: {blas['blas']}"
            f"{', core ' + blas['openblas_core'] if blas.get('openblas_core') else ''}); "
            f"mantissa {mantissa.__version__} on {mantissa.simd_target()}")
    lines = [head, "", "| layer | shape | dtype | threads | torch ms | mantissa ms | torch / mantissa |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['layer']} | {r['shape']} | {r['dtype']} | {r['threads']} | "
                     f"{r['torch_ms']:.3f} | {r['mantissa_ms']:.3f} | "
                     f"{'**' if r['ratio'] < 1 else ''}{r['ratio']:.2f}x"
                     f"{'**' if r['ratio'] < 1 else ''} |")
    slower = [r for r in rows if r["ratio"] < 1]
    lines += ["", f"{len(slower)} of {len(rows)} rows slower than torch (bold)."]
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"context": {"torch": torch.__version__, "blas": blas,
                                   "simd_target": mantissa.simd_target(), "args": vars(a)},
                       "rows": rows}, f, indent=1, default=str)
    if a.svg:
        write_svg(a.svg, rows)


def x_req(x):
    return x.detach().requires_grad_()


def write_svg(path, rows):
    """Bars of torch's time over mantissa's per layer (log scale; 1 = as fast as torch), one
    colour per (dtype, thread count)."""
    import math

    keys = sorted({(r["dtype"], r["threads"]) for r in rows})
    colours = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a"]
    layers_ = list(dict.fromkeys(r["layer"] for r in rows))
    bar, gap, left, top, height = 9, 14, 60, 40, 260
    w = left + len(layers_) * (len(keys) * bar + gap) + 40
    lo, hi = -2.0, 3.0  # log2 of the ratio
    total_h = top + height + 170

    def ypos(v):
        return top + height * (hi - max(lo, min(hi, math.log2(v)))) / (hi - lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{total_h}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="18" font-size="13">torch\'s modules against mantissa\'s, forward '
           '+ backward: torch time / mantissa time (log scale; above 1 mantissa is faster)</text>']
    for e in range(int(lo), int(hi) + 1):
        y = ypos(2.0**e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - 20}" y2="{y:.1f}" '
                   f'stroke="{"#888" if e == 0 else "#ddd"}"/><text x="{left - 5}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{2.0**e:g}x</text>')
    for li, layer in enumerate(layers_):
        x0 = left + 5 + li * (len(keys) * bar + gap)
        for ki, key in enumerate(keys):
            r = next((r for r in rows if r["layer"] == layer and (r["dtype"], r["threads"]) == key),
                     None)
            if r is None:
                continue
            y1, y0 = ypos(r["ratio"]), ypos(1.0)
            out.append(f'<rect x="{x0 + ki * bar}" y="{min(y0, y1):.1f}" width="{bar - 1}" '
                       f'height="{abs(y0 - y1):.1f}" fill="{colours[ki % len(colours)]}">'
                       f'<title>{escape(layer)} {key[0]} t{key[1]}: {r["ratio"]:.2f}x</title></rect>')
        lx, ly = x0, top + height + 8
        out.append(f'<text x="{lx}" y="{ly}" transform="rotate(40 {lx} {ly})">{escape(layer)}</text>')
    for ki, key in enumerate(keys):
        out.append(f'<rect x="{left + 110 * ki}" y="{total_h - 16}" width="10" height="10" '
                   f'fill="{colours[ki % len(colours)]}"/><text x="{left + 110 * ki + 14}" '
                   f'y="{total_h - 7}">{key[0]}, {key[1]} thread{"s" if key[1] > 1 else ""}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
