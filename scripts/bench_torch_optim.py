#!/usr/bin/python3
"""mantissa.torch's optimizers against torch.optim on real models' parameters, in one run; and
short training loops whose loss curves are compared.

    /usr/bin/python3 scripts/bench_torch_optim.py [--build build]
        [--what step,bits,train] [--models resnet50,transformer] [--dtypes fp32,bf16] [--threads 1,2]
        [--optims adamw,sgd] [--reps 5] [--out DIR]

step   optimizer.step() time on the parameter list of torchvision's resnet50 (161 tensors,
       25.6M parameters; built with torchvision.models.resnet50(), no weights) and of a
       torch.nn.TransformerEncoder (6 layers, d_model 512, 8 heads, feed-forward 2048: 18.9M
       parameters): torch.optim default (single-tensor), torch.optim foreach=True and
       mantissa.torch, the same gradients, the same thread count (torch.set_num_threads and
       mantissa.set_num_threads). Best of --reps steps after one warm-up step (the median is
       in the JSON too).
train  an MLP (64-128-128-10) on scikit-learn's digits (1797 images, 8x8) with full-batch
       steps: torch.optim.AdamW vs mantissa.torch.AdamW from the same initial weights (fp32),
       the largest loss difference over the run next to torch default vs torch foreach (the
       rounding-level spread of two torch forms); then the same with bf16 autocast and
       mantissa.torch.GradScaler, and with bf16 parameters and fp32 master weights.
bits   where the bits differ from torch.optim: each configuration run 10 steps from the same
       parameters with the same gradients (independent of the parameters) on 200K elements:
       the share of parameter elements that differ, the largest difference in ulp of the
       parameter, and the largest difference in units of the bound the tests check,
       T * ulp(p) + 2^-24 * sum_t |p_t - p_(t-1)| (docs/python.md).
Writes torch_optim.md (tables) and torch_optim.json (records) into --out.
"""
import argparse
import copy
import gzip
import json
import os
import platform
import statistics
import sys
import time

import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def import_mantissa(build):
    sys.path.insert(0, os.path.join(build if os.path.isabs(build) else os.path.join(ROOT, build),
                                    "python"))
    import mantissa
    import mantissa.torch  # noqa: F401

    return mantissa


def model_params(name):
    if name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50()
    elif name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048)
        model = torch.nn.TransformerEncoder(layer, num_layers=6)
    else:
        raise SystemExit(f"unknown model {name}")
    return [p.detach() for p in model.parameters()]


def make_optimizer(kind, impl, params, mantissa):
    if kind == "adamw":
        kw = dict(lr=1e-3, weight_decay=1e-2)
        if impl == "mantissa":
            return mantissa.torch.AdamW(params, **kw)
        return torch.optim.AdamW(params, foreach=(impl == "torch foreach"), **kw)
    if kind == "sgd":
        kw = dict(lr=1e-2, momentum=0.9)
        if impl == "mantissa":
            return mantissa.torch.SGD(params, **kw)
        return torch.optim.SGD(params, foreach=(impl == "torch foreach"), **kw)
    raise SystemExit(f"unknown optimizer {kind}")


def bench_step(args, mantissa):
    records = []
    impls = ["torch default", "torch foreach", "mantissa"]
    for model in args.models:
        base = model_params(model)
        numel = sum(p.numel() for p in base)
        for dtype_name in args.dtypes:
            dtype = DTYPES[dtype_name]
            gen = torch.Generator().manual_seed(0)
            grads = [torch.randn(p.shape, generator=gen).mul_(1e-2).to(dtype) for p in base]
            for threads in args.threads:
                torch.set_num_threads(threads)
                mantissa.set_num_threads(threads)
                for kind in args.optims:
                    row = {"model": model, "tensors": len(base), "params": numel,
                           "dtype": dtype_name, "threads": threads, "optimizer": kind}
                    for impl in impls:
                        params = [torch.nn.Parameter(p.to(dtype).clone()) for p in base]
                        for p, g in zip(params, grads):
                            p.grad = g
                        opt = make_optimizer(kind, impl, params, mantissa)
                        opt.step()  # warm-up: state allocation
                        times = []
                        for _ in range(args.reps):
                            t0 = time.perf_counter()
                            opt.step()
                            times.append(time.perf_counter() - t0)
                        # Best of --reps in the table (the machine may be shared: other jobs
                        # only add time); the median is kept in the JSON.
                        row[impl] = min(times) * 1e3
                        row[impl + " median"] = statistics.median(times) * 1e3
                        del opt, params
                    row["speedup vs default"] = row["torch default"] / row["mantissa"]
                    row["speedup vs foreach"] = row["torch foreach"] / row["mantissa"]
                    records.append(row)
                    print(f"{model:12s} {dtype_name} {threads}t {kind:5s} "
                          f"default {row['torch default']:8.1f} ms  foreach "
                          f"{row['torch foreach']:8.1f} ms  mantissa {row['mantissa']:7.1f} ms  "
                          f"x{row['speedup vs default']:.1f} / x{row['speedup vs foreach']:.1f}",
                          flush=True)
    return records


BIT_CASES = {
    "AdamW": ("AdamW", dict(lr=1e-3, weight_decay=1e-2)),
    "AdamW amsgrad maximize": ("AdamW", dict(lr=1e-3, amsgrad=True, maximize=True)),
    "Adam": ("Adam", dict(lr=1e-3)),
    "Adam L2": ("Adam", dict(lr=1e-3, weight_decay=1e-2)),
    "SGD": ("SGD", dict(lr=1e-2)),
    "SGD momentum": ("SGD", dict(lr=1e-2, momentum=0.9)),
    "SGD momentum wd": ("SGD", dict(lr=1e-2, momentum=0.9, weight_decay=1e-4)),
    "SGD nesterov": ("SGD", dict(lr=1e-2, momentum=0.9, nesterov=True)),
    "SGD dampening": ("SGD", dict(lr=1e-2, momentum=0.9, dampening=0.5)),
}


def bench_bits(args, mantissa):
    import numpy as np

    records = []
    n, steps = 200_000, 10
    for name, (cls, kw) in BIT_CASES.items():
        gen = torch.Generator().manual_seed(0)
        p_t = torch.nn.Parameter(torch.randn(n, generator=gen))
        p_m = torch.nn.Parameter(p_t.detach().clone())
        o_t = getattr(torch.optim, cls)([p_t], **kw)
        o_m = getattr(mantissa.torch, cls)([p_m], **kw)
        path = torch.zeros(n, dtype=torch.float64)
        for step in range(steps):
            g = torch.randn(n, generator=gen) * 10.0**-(step % 3)
            p_t.grad, p_m.grad = g.clone(), g.clone()
            before = p_t.detach().double()
            o_t.step()
            o_m.step()
            path += (p_t.detach().double() - before).abs()
        a, b = p_t.detach(), p_m.detach()
        ulp = torch.from_numpy(np.spacing(np.abs(a.numpy()))).double()
        diff = (a.double() - b.double()).abs()
        rec = {"case": name, "differ": (diff > 0).double().mean().item(),
               "max_ulp": (diff / ulp).max().item(),
               "max_in_bound_units": (diff / (steps * ulp + 2.0**-24 * path)).max().item(),
               "max_rel": (diff / a.double().abs()).max().item()}
        records.append(rec)
        print(f"{name:24s} differ {rec['differ']:6.1%}  max {rec['max_ulp']:9.1f} ulp  "
              f"max {rec['max_in_bound_units']:.3f} bound units  max rel {rec['max_rel']:.1e}",
              flush=True)
    return records


def digits():
    path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
    with gzip.open(path, "rt") as f:
        rows = [[float(x) for x in line.split(",")] for line in f if line.strip()]
    data = torch.tensor(rows)
    return data[:, :64] / 16.0, data[:, 64].long()


def mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def train(model, opt, x, y, steps, scaler=None, autocast=False):
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        losses.append(loss.item())
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return losses


def bench_train(args, mantissa):
    torch.set_num_threads(max(args.threads))
    mantissa.set_num_threads(max(args.threads))
    x, y = digits()
    steps = args.train_steps
    kw = dict(lr=3e-3, weight_decay=1e-2)
    base = mlp(0)
    runs = {}
    m = copy.deepcopy(base)
    runs["torch AdamW"] = train(m, torch.optim.AdamW(m.parameters(), **kw), x, y, steps)
    m = copy.deepcopy(base)
    runs["torch AdamW foreach"] = train(
        m, torch.optim.AdamW(m.parameters(), foreach=True, **kw), x, y, steps)
    m = copy.deepcopy(base)
    runs["mantissa AdamW"] = train(m, mantissa.torch.AdamW(m.parameters(), **kw), x, y, steps)
    m = copy.deepcopy(base)
    runs["torch AdamW, bf16 autocast"] = train(
        m, torch.optim.AdamW(m.parameters(), **kw), x, y, steps, autocast=True)
    m = copy.deepcopy(base)
    scaler = mantissa.torch.GradScaler(init_scale=2.0**16, growth_interval=50)
    runs["mantissa AdamW + GradScaler, bf16 autocast"] = train(
        m, mantissa.torch.AdamW(m.parameters(), **kw), x, y, steps, scaler=scaler,
        autocast=True)
    scale_after = scaler.get_scale()
    m = copy.deepcopy(base).to(torch.bfloat16)
    bf16_losses = []
    opt = mantissa.torch.AdamW(m.parameters(), master_weights=True, **kw)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(m(x.to(torch.bfloat16)).float(), y)
        bf16_losses.append(loss.item())
        loss.backward()
        opt.step()
    runs["mantissa AdamW, bf16 params + fp32 master"] = bf16_losses

    ref = runs["torch AdamW"]

    def max_rel(a, b):
        return max(abs(p - q) / abs(p) for p, q in zip(a, b))

    summary = {
        "steps": steps, "samples": int(x.shape[0]),
        "final_loss": {k: v[-1] for k, v in runs.items()},
        "max_rel_diff_vs_torch": {k: max_rel(ref, v) for k, v in runs.items()},
        # The autocast run with the scaler against torch's own autocast run (no scaler: with
        # bf16 autocast the grads are fp32, so the scaler must not change the trajectory
        # beyond rounding).
        "max_rel_diff_autocast_scaler_vs_torch_autocast": max_rel(
            runs["torch AdamW, bf16 autocast"],
            runs["mantissa AdamW + GradScaler, bf16 autocast"]),
        "max_rel_diff_mantissa_vs_torch_at_steps": {
            str(n): max_rel(ref[:n], runs["mantissa AdamW"][:n]) for n in (10, 50, steps)},
        "max_rel_diff_torch_foreach_vs_default_at_steps": {
            str(n): max_rel(ref[:n], runs["torch AdamW foreach"][:n]) for n in (10, 50, steps)},
        "grad_scaler_final_scale": scale_after,
        "losses": runs,
    }
    print("mantissa AdamW + GradScaler (bf16 autocast) vs torch AdamW (bf16 autocast): max rel "
          f"loss diff {summary['max_rel_diff_autocast_scaler_vs_torch_autocast']:.2e}; "
          f"final scale {scale_after}")
    for k, v in runs.items():
        print(f"{k:44s} loss {v[0]:.4f} -> {v[-1]:.4f}  max rel diff vs torch AdamW "
              f"{summary['max_rel_diff_vs_torch'][k]:.2e}")
    return summary


def write_report(args, step_records, train_summary, mantissa, bit_records=None):
    os.makedirs(args.out, exist_ok=True)
    info = mantissa.info()
    meta = {"cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
            "mantissa": info["version"], "simd_target": info["simd_target"],
            "cpu_features": info["cpu_features"]}
    with open(os.path.join(args.out, "torch_optim.json"), "w") as f:
        json.dump({"meta": meta, "step": step_records, "train": train_summary,
                   "bits": bit_records}, f, indent=1)
    lines = [f"mantissa.torch vs torch.optim ({meta['mantissa']}, torch {meta['torch']}, "
             f"{meta['simd_target']}); step times in ms, best of {args.reps}", ""]
    if step_records:
        lines += ["| model | dtype | threads | optimizer | torch default | torch foreach | "
                  "mantissa | speed-up vs default | vs foreach |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in step_records:
            lines.append(f"| {r['model']} ({r['tensors']} tensors, {r['params'] / 1e6:.1f}M) | "
                         f"{r['dtype']} | {r['threads']} | {r['optimizer']} | "
                         f"{r['torch default']:.1f} | {r['torch foreach']:.1f} | "
                         f"{r['mantissa']:.1f} | {r['speedup vs default']:.1f}x | "
                         f"{r['speedup vs foreach']:.1f}x |")
        lines.append("")
    if bit_records:
        lines += ["Bits against torch.optim after 10 steps, same start and gradients (200K "
                  "elements)", "",
                  "| case | elements differing | max diff (ulp of p) | max diff / bound | "
                  "max rel. diff |", "|---|---|---|---|---|"]
        for r in bit_records:
            lines.append(f"| {r['case']} | {r['differ']:.1%} | {r['max_ulp']:.0f} | "
                         f"{r['max_in_bound_units']:.3f} | {r['max_rel']:.1e} |")
        lines.append("")
    if train_summary:
        lines += [f"Training: MLP on digits, {train_summary['steps']} full-batch steps",
                  "", "| run | final loss | max rel. loss diff vs torch AdamW |", "|---|---|---|"]
        for k, v in train_summary["final_loss"].items():
            lines.append(f"| {k} | {v:.5f} | {train_summary['max_rel_diff_vs_torch'][k]:.2e} |")
        lines.append(f"mantissa AdamW + GradScaler vs torch AdamW, both bf16 autocast: max rel. "
                     "loss diff "
                     f"{train_summary['max_rel_diff_autocast_scaler_vs_torch_autocast']:.2e}; "
                     f"final loss scale {train_summary['grad_scaler_final_scale']:g}")
        lines.append("")
    with open(os.path.join(args.out, "torch_optim.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--what", default="step,bits,train")
    ap.add_argument("--models", default="resnet50,transformer")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--optims", default="adamw,sgd")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--train-steps", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench_torch_optim"))
    args = ap.parse_args()
    args.models = args.models.split(",")
    args.dtypes = args.dtypes.split(",")
    args.threads = [int(t) for t in args.threads.split(",")]
    args.optims = args.optims.split(",")
    what = args.what.split(",")
    mantissa = import_mantissa(args.build)
    step_records = bench_step(args, mantissa) if "step" in what else []
    train_summary = bench_train(args, mantissa) if "train" in what else None
    bit_records = bench_bits(args, mantissa) if "bits" in what else None
    write_report(args, step_records, train_summary, mantissa, bit_records)


if __name__ == "__main__":
    main()
