#!/usr/bin/python3
"""Runs mantissa and PyTorch on the same optimizer steps in one go and prints a table of times,
bytes/s and ratios.

    /usr/bin/python3 scripts/bench_side_by_side.py [--build build] [--threads 1,2]
        [--sizes 4096,65536,1048576,16777216,0] [--dtypes fp32,bf16] [--markdown FILE]

Size 0 means "out of cache": the element count mantissa picks so one call moves >= 1 GB.
The library side is `mantissa bench --json`; the PyTorch side times optimizer.step() of
torch.optim.SGD / torch.optim.Adam / torch.optim.AdamW (single-tensor and foreach) on tensors of the same size and
dtype, with the same thread count (torch.set_num_threads).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# mantissa variant -> torch optimizer constructor for "the same kind of step".
SGD_PEERS = {
    "momentum": dict(momentum=0.9),
    "momentum+dampening+wd": dict(momentum=0.9, dampening=0.1, weight_decay=1e-4),
    "nesterov+wd": dict(momentum=0.9, nesterov=True, weight_decay=1e-4),
    "no-momentum": dict(momentum=0.0),
}


def time_per_call(fn, min_seconds):
    fn()
    samples, total, batch = [], 0.0, 1
    while len(samples) < 3 or total < min_seconds:
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        s = time.perf_counter() - t0
        samples.append(s / batch)
        total += s
        if s < 1e-3:
            batch *= 4
        if len(samples) >= 100:
            break
    samples.sort()
    return samples[len(samples) // 2]


def torch_step_seconds(op, variant, dtype, n, threads, foreach, min_seconds):
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    p = torch.nn.Parameter((torch.rand(n, generator=gen) * 2 - 1).to(TORCH_DTYPES[dtype]))
    p.grad = ((torch.rand(n, generator=gen) - 0.5) * 0.04).to(TORCH_DTYPES[dtype])
    if op == "SGD":
        opt = torch.optim.SGD([p], lr=0.01, foreach=foreach, **SGD_PEERS[variant])
    elif op == "ApplyAdamWV2":
        opt = torch.optim.AdamW([p], lr=1e-3, amsgrad=variant == "amsgrad", foreach=foreach)
    else:
        opt = torch.optim.Adam([p], lr=1e-3, eps=1e-7, foreach=foreach)
    with torch.no_grad():
        seconds = time_per_call(opt.step, min_seconds)
    del opt, p
    return seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default="4096,65536,1048576,16777216,0")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = ap.parse_args()

    tool = os.path.join(args.build, "mantissa")
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes.split(","):
            out = os.path.join(tmp, f"{dtype}.json")
            subprocess.run([tool, "bench", "--threads", args.threads, "--sizes", args.sizes,
                            "--dtype", dtype, "--min-seconds", str(args.min_seconds),
                            "--json", out], check=True, stdout=sys.stderr)
            with open(out) as f:
                doc = json.load(f)
            records += doc["records"]
            simd = doc["simd_target"]

    rows = []
    for r in records:
        if "variant" not in r:
            continue
        op, variant, dtype, n, threads = r["op"], r["variant"], r["dtype"], r["elements"], r["threads"]
        peers = []
        if op == "SGD":
            peers.append(("torch.optim.SGD", False))
            peers.append(("torch.optim.SGD foreach", True))
        elif op == "ApplyAdamWV2":
            peers.append(("torch.optim.AdamW", False))
            peers.append(("torch.optim.AdamW foreach", True))
        elif variant == "default":
            peers.append(("torch.optim.Adam", False))
            peers.append(("torch.optim.Adam foreach", True))
        for name, foreach in peers:
            t = torch_step_seconds(op, variant, dtype, n, threads, foreach, args.min_seconds)
            rows.append(dict(op=op, variant=variant, dtype=dtype, n=n, threads=threads,
                             mantissa_ms=r["seconds"] * 1e3, gbps=r["gbps"],
                             probe_gbps=r["probe_gbps"], peer=name, peer_ms=t * 1e3,
                             speedup=t / r["seconds"]))
            print(f"  {op} {variant} {dtype} n={n} t={threads}: mantissa "
                  f"{r['seconds']*1e3:.3f} ms, {name} {t*1e3:.3f} ms", file=sys.stderr)
        if not peers:
            rows.append(dict(op=op, variant=variant, dtype=dtype, n=n, threads=threads,
                             mantissa_ms=r["seconds"] * 1e3, gbps=r["gbps"],
                             probe_gbps=r["probe_gbps"], peer="-", peer_ms=float("nan"),
                             speedup=float("nan")))

    header = ("| op | variant | dtype | elements | threads | mantissa ms | GB/s | probe GB/s | "
              "% of probe | peer | peer ms | speed-up |")
    lines = [f"mantissa SIMD target {simd}; torch {torch.__version__}; "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} hardware threads", "",
             header, "|" + "---|" * 12]
    for w in rows:
        lines.append(f"| {w['op']} | {w['variant']} | {w['dtype']} | {w['n']} | {w['threads']} | "
                     f"{w['mantissa_ms']:.3f} | {w['gbps']:.1f} | {w['probe_gbps']:.1f} | "
                     f"{100 * w['gbps'] / w['probe_gbps']:.0f}% | {w['peer']} | "
                     f"{w['peer_ms']:.3f} | {w['speedup']:.2f}x |")
    overhead = [r for r in records if "variant" not in r]
    lines += ["", "| per-call overhead | ns |", "|---|---|"]
    seen = set()
    for r in overhead:
        if r["op"] in seen:
            continue
        seen.add(r["op"])
        lines.append(f"| {r['op']} | {r['seconds'] * 1e9:.0f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
