#!/usr/bin/python3
"""A small GPT written with torch's own modules, trained on real text twice: as torch runs it,
and after mantissa.torch.deterministic(model) with mantissa.torch.AdamW. Each is trained at
several thread counts and SIMD widths, each run in its own process; the script prints whether
the final weights are the same bits across them, the two loss curves side by side, and writes a
JSON file and an SVG chart.

    /usr/bin/python3 scripts/torch_reproducibility.py [--build build] [--steps 100]
        [--threads 1,2,7] [--json FILE] [--svg FILE] [--markdown FILE]

The model (torch modules only): byte tokens, nn.Embedding for tokens and positions, --layers
nn.TransformerEncoderLayer (pre-norm, GELU, no dropout, causal mask), nn.LayerNorm, an
nn.Linear head, nn.CrossEntropyLoss. The text is the GPT trainer's default corpus (Debian's
fortunes). Both runs start from the same weights (torch.manual_seed) and see the same batches.

SIMD widths: torch's through ATEN_CPU_CAPABILITY (default, avx2, avx512: what its ATen kernels
use; its GEMMs go through libblas.so.3, named in the output), mantissa's through
MANTISSA_SIMD_TARGET (every target this CPU has). torch's thread count also goes to OpenBLAS.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(a):
    """One training run (in its own process: ATEN_CPU_CAPABILITY is read at torch's import)."""
    import torch
    from torch import nn

    sys.path.insert(0, HERE)
    from train_side_by_side import blas_info, load_text, set_threads

    torch.manual_seed(a.seed)
    d, T = a.d_model, a.context

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(256, d)
            self.pos = nn.Embedding(T, d)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(d, a.heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
                for _ in range(a.layers))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, 256)
            self.loss = nn.CrossEntropyLoss()

        def forward(self, x, y):
            h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
            mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)
            for block in self.blocks:
                h = block(h, src_mask=mask)
            logits = self.head(self.norm(h))
            return self.loss(logits.reshape(-1, 256), y.reshape(-1))

    model = GPT()
    if a.impl == "mantissa":
        import mantissa
        import mantissa.torch as mt

        mt.deterministic(model, strict=True)
        opt = mt.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)
        mantissa.set_num_threads(a.run_threads)
        simd = mantissa.dispatched_simd_target() if hasattr(mantissa, "dispatched_simd_target") \
            else mantissa.simd_target()
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)
        # torch 1.13 cannot say which kernels ATen chose: "auto" unless forced.
        simd = os.environ.get("ATEN_CPU_CAPABILITY", "auto")
    set_threads(a.run_threads)

    train, _, _ = load_text(None, T)
    g = torch.Generator().manual_seed(a.seed + 1)
    train_t = torch.from_numpy(train.astype("int64"))
    losses, seconds = [], []
    for step in range(a.steps):
        starts = torch.randint(0, len(train_t) - T - 1, (a.batch,), generator=g)
        batch = torch.stack([train_t[s:s + T + 1] for s in starts.tolist()])
        t0 = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - t0)
        losses.append(loss.item())
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().view(torch.uint8).numpy().tobytes())
    seconds.sort()
    print(json.dumps({"impl": a.impl, "threads": a.run_threads, "simd": simd,
                      "digest": h.hexdigest(), "losses": losses,
                      "ms_per_step": 1e3 * seconds[len(seconds) // 2],
                      "blas": blas_info()["blas"] if a.impl == "torch" else None}))


def run(a, impl, threads, env_extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(a.build), "python"),
               PYTHONDONTWRITEBYTECODE="1", **env_extra)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--impl", impl,
           "--run-threads", str(threads)] + a.pass_through
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{impl} threads={threads} {env_extra}: failed\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory (its python/)")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", default="1,2,7")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bf16", action="store_true", help="train under torch.autocast(bfloat16)")
    ap.add_argument("--json"), ap.add_argument("--svg"), ap.add_argument("--markdown")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", help=argparse.SUPPRESS)
    ap.add_argument("--run-threads", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    a.pass_through = ["--steps", str(a.steps), "--layers", str(a.layers), "--d-model",
                      str(a.d_model), "--heads", str(a.heads), "--context", str(a.context),
                      "--batch", str(a.batch), "--lr", str(a.lr), "--seed", str(a.seed)] + (
                          ["--bf16"] if a.bf16 else [])
    threads = [int(t) for t in a.threads.split(",")]
    sys.path.insert(0, os.path.join(os.path.abspath(a.build), "python"))
    import mantissa

    targets = mantissa.available_simd_targets()
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    capabilities = ["default"] + (["avx2"] if "avx2" in flags else []) + (
        ["avx512"] if "avx512f" in flags else [])
    plan = [("torch", t, {}) for t in threads]
    plan += [("torch", 2, {"ATEN_CPU_CAPABILITY": c}) for c in capabilities]
    plan += [("mantissa", t, {}) for t in threads]
    plan += [("mantissa", 2, {"MANTISSA_SIMD_TARGET": t}) for t in targets]
    runs = []
    for i, (impl, t, env) in enumerate(plan):
        print(f"[{i + 1}/{len(plan)}] {impl}, {t} threads {' '.join(f'{k}={v}' for k, v in env.items())}",
              file=sys.stderr, flush=True)
        r = run(a, impl, t, env)
        r["env"] = env
        runs.append(r)

    lines = [f"{a.layers} x TransformerEncoderLayer(d={a.d_model}, heads={a.heads}), context "
             f"{a.context}, batch {a.batch}, {a.steps} steps of AdamW, "
             f"{'bf16 autocast' if a.bf16 else 'fp32'}; torch's BLAS: "
             f"{next(r['blas'] for r in runs if r['impl'] == 'torch')}", "",
             "| modules | threads | SIMD | final loss | ms/step | weights' digest | same bits as 1 thread |",
             "|---|---|---|---|---|---|---|"]
    base = {impl: next(r["digest"] for r in runs if r["impl"] == impl and r["threads"] == threads[0]
                       and not r["env"]) for impl in ("torch", "mantissa")}
    for r in runs:
        simd = r["simd"] + (" (forced)" if r["env"] else "")
        lines.append(f"| {'torch' if r['impl'] == 'torch' else 'mantissa (deterministic)'} | "
                     f"{r['threads']} | {simd} | {r['losses'][-1]:.6f} | {r['ms_per_step']:.1f} | "
                     f"`{r['digest'][:12]}` | {'yes' if r['digest'] == base[r['impl']] else '**no**'} |")
    tl = next(r for r in runs if r["impl"] == "torch" and not r["env"])["losses"]
    ml = next(r for r in runs if r["impl"] == "mantissa" and not r["env"])["losses"]
    diff = max(abs(x - y) for x, y in zip(tl, ml))
    first = next((i for i, (x, y) in enumerate(zip(tl, ml)) if x != y), None)
    lines += ["", f"Loss curves, torch's modules against mantissa's (1 thread each): largest "
              f"difference {diff:.3g} over {a.steps} steps; first step that differs: "
              f"{first if first is not None else 'none'}; final {tl[-1]:.6f} against {ml[-1]:.6f}."]
    distinct = {impl: len({r["digest"] for r in runs if r["impl"] == impl})
                for impl in ("torch", "mantissa")}
    lines.append(f"Distinct final weights: torch {distinct['torch']} of "
                 f"{sum(r['impl'] == 'torch' for r in runs)} runs, mantissa {distinct['mantissa']} "
                 f"of {sum(r['impl'] == 'mantissa' for r in runs)}.")
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": vars(a), "runs": runs}, f, indent=1, default=str)
    if a.svg:
        write_svg(a.svg, tl, ml, a)


def write_svg(path, torch_losses, mantissa_losses, a):
    """Two panels: both loss curves, and their difference per step (log scale)."""
    import math

    w, h, left, top, gap, h2 = 640, 250, 60, 30, 50, 130
    lo = min(torch_losses + mantissa_losses)
    hi = max(torch_losses + mantissa_losses)
    n = len(torch_losses)

    def x(i):
        return left + (w - left - 20) * i / max(1, n - 1)

    def y1(v):
        return top + (h - top - 20) * (hi - v) / (hi - lo or 1)

    d_lo, d_hi = -9, -5  # log10 of |difference|; 0 is drawn at the bottom
    y0 = h + gap

    def y2(d):
        e = d_lo if d == 0 else max(d_lo, min(d_hi, math.log10(d)))
        return y0 + h2 * (d_hi - e) / (d_hi - d_lo)

    total = y0 + h2 + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{total}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="18" font-size="13">Training loss: torch\'s modules and '
           f'mantissa\'s ({escape("bf16 autocast" if a.bf16 else "fp32")}), 1 thread each</text>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f'<line x1="{left}" y1="{y1(v):.1f}" x2="{w - 20}" y2="{y1(v):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 5}" y="{y1(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.2f}</text>')
    for ys, colour, dash in ((torch_losses, "#d62728", ""),
                             (mantissa_losses, "#1f77b4", ' stroke-dasharray="4 3"')):
        pts = " ".join(f"{x(i):.1f},{y1(v):.1f}" for i, v in enumerate(ys))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} '
                   f'points="{pts}"/>')
    out.append(f'<text x="{w - 260}" y="{top + 14}" fill="#d62728">torch</text>'
               f'<text x="{w - 200}" y="{top + 14}" fill="#1f77b4">mantissa (dashed)</text>')
    out.append(f'<text x="{left}" y="{y0 - 10}" font-size="12">|torch - mantissa| per step '
               '(0 drawn at the bottom)</text>')
    for e in range(d_lo, d_hi + 1):
        yy = y2(10.0**e)
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{w - 20}" y2="{yy:.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 5}" y="{yy + 4:.1f}" text-anchor="end">1e{e}</text>')
    for i, (t, m) in enumerate(zip(torch_losses, mantissa_losses)):
        out.append(f'<circle cx="{x(i):.1f}" cy="{y2(abs(t - m)):.1f}" r="1.8" fill="#444">'
                   f'<title>step {i}: {abs(t - m):.3g}</title></circle>')
    out.append(f'<text x="{left}" y="{total - 8}">step 0 .. {n - 1}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
