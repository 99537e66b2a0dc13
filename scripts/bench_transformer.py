#!/usr/bin/python3
"""The transformer's operators side by side: mantissa, PyTorch and oneDNN on the same tensors,
shapes, dtypes and thread counts, against a bandwidth probe with each call's access pattern -- a
markdown table, a JSON file and an SVG chart.

    /usr/bin/python3 scripts/bench_transformer.py [--build build-test] [--threads 1,2]
        [--dtypes fp32,bf16] [--ops REGEX] [--quick] [--min-time SECONDS]
        [--json FILE] [--svg FILE] [--markdown FILE]

What runs, per (operator, shape, dtype, thread count), each as its users call it:

  gelu tanh / erf         mantissa.gelu_v2           torch F.gelu(x, approximate=...)
                                                     oneDNN eltwise GELU (torch's mkldnn tensors)
  gelu backward           mantissa.gelu_backward_v2  torch.ops.aten.gelu_backward
  swiglu                  mantissa.swi_glu           a, b = x.chunk(2, -1); F.silu(a) * b
  add_rms_norm            mantissa.add_rms_norm      x = x1 + x2; x * torch.rsqrt(x.pow(2).mean(-1,
                                                     keepdim=True) + eps) * gamma (in fp32 for
                                                     16-bit inputs, as LLaMA-style code does)
  cross_entropy fwd+bwd   mantissa.cross_entropy_loss torch F.cross_entropy(logits, target) then
                          + _grad                    .backward() (mean, ignore_index -100)

Shapes: activations 4096 x 256 and 4096 x 4096 (SwiGLU: x is 4096 x 2h), cross-entropy over
4096 x 256, 4096 x 32000 and 512 x 128256 (--quick: the smaller ones). Times are medians of
calls interleaved peer by peer. The probe (`mantissa bench --probe`) streams the same bytes with
the same number of read and read-modify-write streams, out of cache: %probe = the call's bytes
per second over the probe's. PyTorch uses its own kernels (ATen, AVX2 on Debian's build) and
libblas.so.3 for nothing here; oneDNN is the one inside torch (torch.__config__ names its
version).

Progress goes to stderr; the table to stdout (and --markdown); --json every number and the
context; --svg one panel per dtype, bars of speed relative to PyTorch per case.
"""
import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from xml.sax.saxutils import escape

import torch
import torch.nn.functional as F

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
PEERS = ["mantissa", "torch", "onednn"]
PEER_TITLES = {"mantissa": "mantissa", "torch": "PyTorch", "onednn": "oneDNN"}
PEER_COLOURS = {"mantissa": "#1f77b4", "torch": "#ff7f0e", "onednn": "#2ca02c"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-test", help="build directory (default build-test)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--dtypes", default="fp32,bf16", help="dtypes (default fp32,bf16)")
    ap.add_argument("--ops", default="", help="regex over case names (op/shape)")
    ap.add_argument("--quick", action="store_true", help="only the smaller shapes")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--json", default="")
    ap.add_argument("--svg", default="")
    ap.add_argument("--markdown", default="")
    a = ap.parse_args()
    a.thread_list = sorted({int(t) for t in a.threads.split(",") if t.strip()})
    a.dtype_list = [d for d in a.dtypes.split(",") if d]
    for d in a.dtype_list:
        if d not in TORCH_DTYPES:
            ap.error(f"--dtypes: unknown dtype {d}")
    return a


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def time_interleaved(fns, min_seconds):
    """Median seconds per call of each fn, sampled in rounds (one sample of each per round)."""
    batches = []
    for fn in fns:
        fn()
        batch = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            if time.perf_counter() - t0 >= 2e-3 or batch >= 1 << 16:
                break
            batch *= 4
        batches.append(batch)
    samples = [[] for _ in fns]
    total = 0.0
    while len(samples[0]) < 5 or (total < min_seconds * len(fns) and len(samples[0]) < 200):
        for k, fn in enumerate(fns):
            fn()
            t0 = time.perf_counter()
            for _ in range(batches[k]):
                fn()
            s = time.perf_counter() - t0
            samples[k].append(s / batches[k])
            total += s
    out = []
    for s in samples:
        s.sort()
        out.append(s[len(s) // 2])
    return out


def contiguous(t):
    return t.contiguous()


class Case:
    """One benchmark: callables per peer, the bytes one call streams and its probe pattern."""

    def __init__(self, op, shape, dtype, peers, nbytes, rmw, ro, note=""):
        self.op, self.shape, self.dtype = op, shape, dtype
        self.peers = peers  # name -> callable
        self.nbytes = nbytes  # bytes read + written once each (writes counted twice: RFO)
        self.rmw, self.ro = rmw, ro  # probe streams
        self.note = note

    @property
    def name(self):
        return f"{self.op}/{'x'.join(str(s) for s in self.shape)}"


def esize(dtype):
    return torch.tensor([], dtype=TORCH_DTYPES[dtype]).element_size()


def gelu_cases(m, dtype, shape, gen):
    td = TORCH_DTYPES[dtype]
    x = (torch.randn(shape, generator=gen) * 2).to(td)
    y = torch.empty_like(x)
    n = x.numel() * esize(dtype)
    out = []
    for approx in ("tanh", "none"):
        peers = {
            "mantissa": lambda a=approx: m.gelu_v2(x, y, approximate=a),
            "torch": lambda a=approx: F.gelu(x, approximate=a),
        }
        if torch.backends.mkldnn.is_available():
            try:
                xm = x.to_mkldnn()
                F.gelu(xm, approximate=approx)
                peers["onednn"] = lambda a=approx, xm=xm: F.gelu(xm, approximate=a)
            except RuntimeError:
                pass
        out.append(Case(f"gelu_{approx}", shape, dtype, peers, 3 * n, 1, 1))
    dy = torch.randn(shape, generator=gen).to(td)
    g = torch.empty_like(x)
    out.append(Case("gelu_backward_none", shape, dtype, {
        "mantissa": lambda: m.gelu_backward_v2(dy, x, g, approximate="none"),
        "torch": lambda: torch.ops.aten.gelu_backward(dy, x, approximate="none"),
    }, 4 * n, 1, 2))
    return out


def swiglu_cases(m, dtype, shape, gen):
    td = TORCH_DTYPES[dtype]
    rows, h = shape
    x = torch.randn((rows, 2 * h), generator=gen).to(td)
    out = torch.empty((rows, h), dtype=td)
    n = rows * h * esize(dtype)

    def torch_swiglu():
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b

    dy = torch.randn((rows, h), generator=gen).to(td)
    dx = torch.empty_like(x)
    xr = x.clone().requires_grad_(True)

    def torch_swiglu_grad():
        a, b = x.chunk(2, dim=-1)
        a = a.detach().requires_grad_(True)
        b = b.detach().requires_grad_(True)
        y = F.silu(a) * b
        return torch.autograd.grad(y, (a, b), dy)

    del xr
    return [
        Case("swiglu", (rows, 2 * h), dtype, {
            "mantissa": lambda: m.swi_glu(x, out, dim=-1),
            "torch": torch_swiglu,
        }, 2 * n + 2 * n, 1, 2),
        Case("swiglu_grad", (rows, 2 * h), dtype, {
            "mantissa": lambda: m.swi_glu_grad(dy, x, dx, dim=-1),
            "torch": torch_swiglu_grad,
        }, n + 2 * n + 2 * 2 * n, 2, 3),
    ]


def add_rms_norm_cases(m, dtype, shape, gen):
    td = TORCH_DTYPES[dtype]
    rows, h = shape
    x1 = torch.randn(shape, generator=gen).to(td)
    x2 = torch.randn(shape, generator=gen).to(td)
    gamma = (1 + 0.1 * torch.randn(h, generator=gen)).to(td)
    y = torch.empty_like(x1)
    xo = torch.empty_like(x1)
    rstd = torch.empty((rows, 1), dtype=torch.float32)
    eps = 1e-6
    n = x1.numel() * esize(dtype)

    def torch_add_rms_norm():
        x = x1 + x2
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return (xf * r).to(td) * gamma, x

    return [Case("add_rms_norm", shape, dtype, {
        "mantissa": lambda: m.add_rms_norm(x1, x2, gamma, y, rstd, xo, epsilon=eps),
        "torch": torch_add_rms_norm,
    }, 2 * n + 2 * 2 * n, 2, 2)]


def cross_entropy_cases(m, dtype, shape, gen):
    td = TORCH_DTYPES[dtype]
    rows, classes = shape
    logits = (torch.randn(shape, generator=gen) * 3).to(td)
    target = torch.randint(0, classes, (rows,), generator=gen)
    loss = torch.empty((1,), dtype=td)
    zloss = torch.empty((1,), dtype=td)
    lse = torch.empty((rows,), dtype=td)
    log_prob = torch.empty(shape, dtype=td)
    grad = torch.empty(shape, dtype=td)
    grad_loss = torch.ones((), dtype=td)
    n = logits.numel() * esize(dtype)

    def mantissa_fwd_bwd():
        m.cross_entropy_loss(logits, target, None, loss, log_prob, zloss, lse)
        m.cross_entropy_loss_grad(grad_loss, log_prob, target, None, None, None, grad)

    lr = logits.clone().requires_grad_(True)

    def torch_fwd_bwd():
        lr.grad = None
        F.cross_entropy(lr, target).backward()

    # Forward: logits read, log-probabilities written; backward: read, gradient written.
    return [Case("cross_entropy_fwd_bwd", shape, dtype, {
        "mantissa": mantissa_fwd_bwd,
        "torch": torch_fwd_bwd,
    }, 2 * (n + 2 * n), 1, 1, note="probe: two passes of 1 rmw + 1 ro")]


ACTIVATION_SHAPES = [(4096, 256), (4096, 4096)]
CE_SHAPES = [(4096, 256), (4096, 32000), (512, 128256)]
QUICK_ACTIVATION_SHAPES = [(4096, 256)]
QUICK_CE_SHAPES = [(4096, 256), (512, 32000)]


def build_cases(m, a):
    gen = torch.Generator().manual_seed(0)
    act = QUICK_ACTIVATION_SHAPES if a.quick else ACTIVATION_SHAPES
    ce = QUICK_CE_SHAPES if a.quick else CE_SHAPES
    for dtype in a.dtype_list:
        for shape in act:
            yield from gelu_cases(m, dtype, shape, gen)
            yield from swiglu_cases(m, dtype, shape, gen)
            yield from add_rms_norm_cases(m, dtype, shape, gen)
        for shape in ce:
            yield from cross_entropy_cases(m, dtype, shape, gen)


def probe_gbps(tool, rmw, ro, nbytes_per_stream, threads, cache):
    """The probe's GB/s for this pattern (mantissa bench --probe), out of cache: at least the
    call's own bytes per stream and at least 256 MB in all."""
    key = (rmw, ro, nbytes_per_stream, threads)
    if key not in cache:
        size = max(nbytes_per_stream, (256 << 20) // (rmw + ro))
        out = subprocess.run([tool, "bench", "--probe", f"{rmw},{ro}", "--sizes", str(size),
                              "--threads", str(threads), "--min-seconds", "0.5", "--json",
                              "/dev/stdout"], check=True, capture_output=True, text=True).stdout
        records = json.loads(out[out.index("{"):])["records"]
        cache[key] = records[0]["probe_gbps"]
    return cache[key]


def main():
    a = parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.build), "python"))
    import mantissa as m  # noqa: E402 (the build's module)
    tool = os.path.join(os.path.abspath(a.build), "mantissa")
    pattern = re.compile(a.ops) if a.ops else None
    rows, probes = [], {}
    cases = [c for c in build_cases(m, a) if not pattern or pattern.search(c.name)]
    for i, c in enumerate(cases):
        for threads in a.thread_list:
            log(f"[{i + 1}/{len(cases)}] {c.name} {c.dtype} threads {threads}")
            torch.set_num_threads(threads)
            m.set_num_threads(threads)
            names = [p for p in PEERS if p in c.peers]
            secs = time_interleaved([c.peers[p] for p in names], a.min_time)
            streams = c.rmw + c.ro
            probe = probe_gbps(tool, c.rmw, c.ro, c.nbytes // (c.rmw + streams), threads, probes)
            row = {"op": c.op, "shape": list(c.shape), "dtype": c.dtype, "threads": threads,
                   "bytes": c.nbytes, "probe_gbps": probe, "note": c.note, "seconds": {}}
            for p, s in zip(names, secs):
                row["seconds"][p] = s
            rows.append(row)
    m.set_num_threads(0)

    header = ("| op | shape | dtype | thr | mantissa ms | PyTorch ms | oneDNN ms | vs PyTorch "
              "| mantissa GB/s | probe GB/s | %probe |")
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        s = r["seconds"]
        mant = s["mantissa"]
        gbps = r["bytes"] / mant / 1e9
        fmt = lambda p: f"{s[p] * 1e3:.3f}" if p in s else "-"  # noqa: E731
        lines.append(f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {r['dtype']} | "
                     f"{r['threads']} | {fmt('mantissa')} | {fmt('torch')} | {fmt('onednn')} | "
                     f"{s['torch'] / mant:.2f}x | {gbps:.1f} | {r['probe_gbps']:.1f} | "
                     f"{100 * gbps / r['probe_gbps']:.0f}% |")
    table = "\n".join(lines)
    print(table)
    context = {"mantissa": m.__version__ if hasattr(m, "__version__") else "",
               "simd_target": m.simd_target() if hasattr(m, "simd_target") else "",
               "torch": torch.__version__, "torch_capability": torch.backends.cpu.get_cpu_capability()
               if hasattr(torch.backends, "cpu") else "",
               "onednn": re.findall(r"MKL-DNN v[0-9.]+", torch.__config__.show()),
               "cpu": platform.processor() or platform.machine(), "threads": a.thread_list}
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"context": context, "rows": rows}, f, indent=1)
    if a.svg:
        write_svg(a.svg, rows)


def write_svg(path, rows):
    """One panel per dtype: per case and thread count, bars of speed relative to PyTorch (1 =
    PyTorch's speed, higher is faster), one colour per peer."""
    dtypes = sorted({r["dtype"] for r in rows}, key=["fp32", "bf16", "fp16"].index)
    bar, gap, left, top, height = 7, 8, 230, 40, 260
    panels = []
    width = 0
    for d in dtypes:
        rs = [r for r in rows if r["dtype"] == d]
        groups = len(rs)
        w = left + groups * (3 * bar + gap) + 160  # room for the last rotated labels
        width = max(width, w)
        panels.append((d, rs))
    total_h = top + len(panels) * (height + 170) + 10
    vmax = 0.0
    for r in rows:
        for p, s in r["seconds"].items():
            vmax = max(vmax, r["seconds"]["torch"] / s)
    vmax = max(2.0, math.ceil(vmax))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="18" font-size="14">Transformer operators: speed relative to '
           f'PyTorch (higher is faster; 1 = PyTorch)</text>']
    for pi, (d, rs) in enumerate(panels):
        y0 = top + pi * (height + 170)
        out.append(f'<text x="10" y="{y0 + 12}" font-size="13">{escape(d)}</text>')
        for tick in range(0, int(vmax) + 1):
            ty = y0 + height - height * tick / vmax
            out.append(f'<line x1="{left - 5}" y1="{ty:.1f}" x2="{width - 10}" y2="{ty:.1f}" '
                       f'stroke="#ddd"/><text x="{left - 10}" y="{ty + 4:.1f}" '
                       f'text-anchor="end">{tick}x</text>')
        for gi, r in enumerate(rs):
            x0 = left + gi * (3 * bar + gap)
            for k, p in enumerate(PEERS):
                if p not in r["seconds"]:
                    continue
                v = r["seconds"]["torch"] / r["seconds"][p]
                h = height * v / vmax
                out.append(f'<rect x="{x0 + k * bar}" y="{y0 + height - h:.1f}" width="{bar - 1}" '
                           f'height="{h:.1f}" fill="{PEER_COLOURS[p]}"><title>{escape(p)} '
                           f'{v:.2f}x</title></rect>')
            label = f"{r['op']} {'x'.join(map(str, r['shape']))} t{r['threads']}"
            lx, ly = x0 + bar, y0 + height + 6
            out.append(f'<text x="{lx}" y="{ly}" transform="rotate(60 {lx} {ly})" '
                       f'font-size="9">{escape(label)}</text>')
    for k, p in enumerate(PEERS):
        out.append(f'<rect x="{left + 160 * k}" y="{total_h - 16}" width="10" height="10" '
                   f'fill="{PEER_COLOURS[p]}"/><text x="{left + 160 * k + 14}" '
                   f'y="{total_h - 7}">{escape(PEER_TITLES[p])}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
