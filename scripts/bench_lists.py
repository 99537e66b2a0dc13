#!/usr/bin/python3
"""The multi-tensor passes over whole parameter lists, mantissa and PyTorch side by side in one run.

    /usr/bin/python3 scripts/bench_lists.py [--build build] [--lists bench/lists/resnet50.txt,...]
        [--ops unscale,check-only,...] [--dtypes fp32,bf16] [--threads 1,2] [--out DIR]
    /usr/bin/python3 scripts/bench_lists.py --write-lists     # regenerate bench/lists/*.txt

The lists (one tensor shape per line):
  resnet50   the 161 parameters of torchvision's resnet50 (25.6M elements)
  small300   300 tensors of 1K..64K elements, log-uniform (fixed seed)
  mixed200   200 tensors of 4K..4M elements, log-uniform (fixed seed)

The library side is `mantissa bench-list --json`, which times each pass against a bandwidth
probe with the same streams over the same bytes. The PyTorch side runs on tensors of the same
shapes and dtype, with the same thread count:
  unscale     torch 1.13 has no CPU kernel for torch._amp_foreach_non_finite_check_and_unscale_
              (it is CUDA only), so the peer is what a CPU user writes: torch._foreach_mul_ by
              inv_scale and a non-finite test per tensor (torch.isfinite(g).all()).
  check-only  the non-finite test alone.
  adamw, adam, sgd (when mantissa's build has them): optimizer.step() of torch.optim.AdamW /
              Adam / SGD(momentum=0.9), single-tensor and foreach.
Writes lists.md (table), lists.json (records) and lists.svg (speed-up over the best PyTorch
form, and % of the probe) into --out.
"""
import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys
import time

import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def write_lists(directory):
    import torchvision  # only needed to regenerate resnet50.txt

    os.makedirs(directory, exist_ok=True)
    model = torchvision.models.resnet50()
    lists = {"resnet50": [tuple(p.shape) for p in model.parameters()]}
    rng = random.Random(20261130)
    lists["small300"] = [(int(round(math.exp(rng.uniform(math.log(1024), math.log(65536))))),)
                         for _ in range(300)]
    lists["mixed200"] = [(int(round(math.exp(rng.uniform(math.log(4096), math.log(4 << 20))))),)
                         for _ in range(200)]
    notes = {"resnet50": "torchvision resnet50 parameters, in model.parameters() order",
             "small300": "300 tensors of 1K..64K elements, log-uniform (seed 20261130)",
             "mixed200": "200 tensors of 4K..4M elements, log-uniform (seed 20261130)"}
    for name, shapes in lists.items():
        with open(os.path.join(directory, name + ".txt"), "w") as f:
            total = sum(math.prod(s) for s in shapes)
            f.write(f"# {notes[name]}: {len(shapes)} tensors, {total} elements "
                    f"(scripts/bench_lists.py --write-lists)\n")
            for s in shapes:
                f.write(",".join(str(d) for d in s) + "\n")
        print(f"wrote {name}: {len(shapes)} tensors", file=sys.stderr)


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                shapes.append(tuple(int(d) for d in line.replace("x", ",").split(",")))
    return shapes


def time_per_call(fn, min_seconds):
    fn()
    samples, total, batch = [], 0.0, 1
    while len(samples) < 5 or total < min_seconds:
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        s = time.perf_counter() - t0
        samples.append(s / batch)
        total += s
        if s < 1e-3:
            batch *= 4
        if len(samples) >= 200:
            break
    samples.sort()
    return samples[len(samples) // 2]


def make_tensors(shapes, dtype, center, spread, gen):
    return [((torch.rand(s, generator=gen) - 0.5) * spread + center).to(TORCH_DTYPES[dtype])
            for s in shapes]


def torch_peers(op, shapes, dtype, min_seconds):
    """(peer name, seconds per call) for each PyTorch form of the pass."""
    gen = torch.Generator().manual_seed(0)
    out = []
    if op in ("unscale", "check-only"):
        grads = make_tensors(shapes, dtype, 0.0, 2000.0, gen)
        state = {"up": True}

        def check():
            return any(not bool(torch.isfinite(g).all()) for g in grads)

        def unscale():
            state["up"] = not state["up"]
            torch._foreach_mul_(grads, 1024.0 if state["up"] else 1.0 / 1024.0)
            return check()

        with torch.no_grad():
            fn = check if op == "check-only" else unscale
            name = ("isfinite().all() per tensor" if op == "check-only"
                    else "_foreach_mul_ + isfinite().all() per tensor")
            out.append((name, time_per_call(fn, min_seconds)))
        return out
    ctor = {"adamw": lambda ps, fe: torch.optim.AdamW(ps, lr=1e-3, foreach=fe),
            "adam": lambda ps, fe: torch.optim.Adam(ps, lr=1e-3, eps=1e-7, foreach=fe),
            "sgd": lambda ps, fe: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=fe)}.get(op)
    if ctor is None:
        return out
    for foreach in (False, True):
        params = [torch.nn.Parameter(t) for t in make_tensors(shapes, dtype, 0.0, 2.0, gen)]
        for p in params:
            p.grad = ((torch.rand(p.shape, generator=gen) - 0.5) * 0.04).to(p.dtype)
        opt = ctor(params, foreach)
        with torch.no_grad():
            seconds = time_per_call(opt.step, min_seconds)
        name = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD"}[op]
        out.append((f"torch.optim.{name}{' foreach' if foreach else ''}", seconds))
        del opt, params
    return out


def svg(rows, path):
    """Horizontal bars: speed-up over the fastest PyTorch form, one bar per row."""
    rows = [r for r in rows if r["speedup"] == r["speedup"]]
    bar_h, left, width = 18, 330, 420
    height = 60 + bar_h * len(rows)
    top = max([r["speedup"] for r in rows] + [3.0]) * 1.1
    x = lambda v: left + width * v / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="10" y="18" font-size="13">mantissa speed-up over the fastest PyTorch '
             f'form (dashed: 3x)</text>']
    for i, r in enumerate(rows):
        y = 34 + i * bar_h
        label = f"{r['list']} {r['op']} {r['dtype']} {r['threads']}t"
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{label}</text>')
        color = "#2a7" if r["speedup"] >= 3 else "#d73"
        parts.append(f'<rect x="{left}" y="{y}" width="{x(r["speedup"]) - left:.1f}" '
                     f'height="{bar_h - 4}" fill="{color}"/>')
        parts.append(f'<text x="{x(r["speedup"]) + 4:.1f}" y="{y + 12}">{r["speedup"]:.1f}x, '
                     f'{r["pct_probe"]:.0f}% probe</text>')
    parts.append(f'<line x1="{x(3):.1f}" y1="26" x2="{x(3):.1f}" y2="{height - 10}" '
                 f'stroke="#555" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--lists", default=",".join(
        os.path.join(ROOT, "bench", "lists", n + ".txt") for n in ("resnet50", "small300",
                                                                   "mixed200")))
    ap.add_argument("--ops", default="")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--out", default="bench-lists")
    ap.add_argument("--write-lists", action="store_true")
    args = ap.parse_args()
    if args.write_lists:
        write_lists(os.path.join(ROOT, "bench", "lists"))
        return

    os.makedirs(args.out, exist_ok=True)
    tool_json = os.path.join(args.out, "mantissa-bench-list.json")
    cmd = [os.path.join(args.build, "mantissa"), "bench-list", *args.lists.split(","),
           "--dtypes", args.dtypes, "--threads", args.threads,
           "--min-seconds", str(args.min_seconds), "--json", tool_json]
    if args.ops:
        cmd += ["--ops", args.ops]
    print("==", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    with open(tool_json) as f:
        doc = json.load(f)

    shapes = {os.path.basename(p).split(".")[0]: read_shapes(p) for p in args.lists.split(",")}
    rows = []
    for i, r in enumerate(doc["records"]):
        torch.set_num_threads(r["threads"])
        peers = torch_peers(r["op"], shapes[r["list"]], r["dtype"], args.min_seconds)
        best = min(peers, key=lambda p: p[1]) if peers else ("-", float("nan"))
        row = dict(list=r["list"], op=r["op"], dtype=r["dtype"], tensors=r["tensors"],
                   elements=r["elements"], threads=r["threads"], mantissa_ms=r["seconds"] * 1e3,
                   gbps=r["gbps"], probe_gbps=r["probe_gbps"],
                   pct_probe=100 * r["gbps"] / r["probe_gbps"],
                   peers={name: s * 1e3 for name, s in peers}, best_peer=best[0],
                   best_peer_ms=best[1] * 1e3, speedup=best[1] / r["seconds"])
        rows.append(row)
        print(f"[{i + 1}/{len(doc['records'])}] {row['list']} {row['op']} {row['dtype']} "
              f"{row['threads']}t: mantissa {row['mantissa_ms']:.3f} ms "
              f"({row['pct_probe']:.0f}% probe), {best[0]} {row['best_peer_ms']:.3f} ms",
              file=sys.stderr)

    lines = [f"{doc['version']}, SIMD target {doc['simd_target']}; torch "
             f"{torch.__version__}; {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} hardware threads", "",
             "| list | pass | dtype | tensors | elements | threads | mantissa ms | GB/s | "
             "probe GB/s | % of probe | fastest PyTorch form | its ms | speed-up | "
             "all PyTorch forms (ms) |", "|" + "---|" * 14]
    for w in rows:
        forms = "; ".join(f"{k} {v:.3f}" for k, v in w["peers"].items()) or "-"
        lines.append(f"| {w['list']} | {w['op']} | {w['dtype']} | {w['tensors']} | "
                     f"{w['elements']} | {w['threads']} | {w['mantissa_ms']:.3f} | "
                     f"{w['gbps']:.1f} | {w['probe_gbps']:.1f} | {w['pct_probe']:.0f}% | "
                     f"{w['best_peer']} | {w['best_peer_ms']:.3f} | {w['speedup']:.2f}x | "
                     f"{forms} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "lists.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "lists.json"), "w") as f:
        json.dump({"mantissa": doc["version"], "simd_target": doc["simd_target"],
                   "torch": torch.__version__, "rows": rows}, f, indent=1)
    svg(rows, os.path.join(args.out, "lists.svg"))
    print(f"wrote {args.out}/lists.md, lists.json, lists.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
