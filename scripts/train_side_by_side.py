#!/usr/bin/python3
"""mantissa train and PyTorch side by side: the same MLP, data, split, batch size, optimizer and
thread count; time per epoch and final test accuracy, as a table and JSON.

    /usr/bin/python3 scripts/train_side_by_side.py [--build build] [--epochs 30] [--threads N]
        [--repeats 3] [--json FILE] [--markdown FILE]

The data is the digits set of python3-sklearn (or --data FILE.csv[.gz]). The split and the
standardisation are mantissa's own, recomputed here bit for bit (SplitMix64 streams, the
per-class Fisher-Yates shuffle, training-split statistics in fp64), so both sides train and test
on the same rows. The model: Linear -> LayerNorm -> ReLU per hidden width, then Linear and the
mean cross-entropy; AdamW (lr 1e-3, weight decay 0.01, betas 0.9/0.999, eps 1e-8). PyTorch runs
fp32, and bf16 through torch.autocast on CPU (fp32 weights: the analogue of mantissa's bf16-amp).
Initial weights and batch order come from each side's own generator, so accuracies agree within
run-to-run noise, not bit for bit. Time per epoch is the training loop alone (no evaluation),
the median over the epochs, as mantissa reports it.
"""
import argparse
import csv
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

MASK = (1 << 64) - 1
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n


def stream_seed(seed, purpose):
    return SplitMix64(seed ^ ((purpose * 0xD1B54A32D192ED03) & MASK)).next()


def load(path, seed, test_fraction=0.2):
    """mantissa's load_dataset: header skipped, stratified split, standardisation."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.reader(f) if r]
    try:
        [float(v) for v in rows[0]]
    except ValueError:
        rows = rows[1:]
    data = np.array(rows, dtype=np.float64)
    x, labels = data[:, :-1], data[:, -1].astype(np.int64)
    classes = sorted(set(labels.tolist()))
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[l] for l in labels], dtype=np.int64)
    rng = SplitMix64(stream_seed(seed, 2))
    train, test = [], []
    for c in range(len(classes)):
        members = [r for r in range(len(y)) if y[r] == c]
        for i in range(len(members) - 1, 0, -1):
            j = rng.below(i + 1)
            members[i], members[j] = members[j], members[i]
        n = len(members)
        n_test = min(max(int(np.floor(n * test_fraction + 0.5)), 1 if n else 0), n - 1 if n > 1 else n)
        test += members[:n_test]
        train += members[n_test:]
    train.sort()
    test.sort()
    mean = x[train].mean(axis=0)
    sd = np.sqrt(((x[train] - mean) ** 2).mean(axis=0))
    sd[sd == 0] = 1.0
    xs = ((x - mean) / sd).astype(np.float32)
    return (torch.from_numpy(xs[train]), torch.from_numpy(y[train]), torch.from_numpy(xs[test]),
            torch.from_numpy(y[test]), len(classes))


class LayerNorm32(torch.nn.LayerNorm):
    """LayerNorm on fp32 input: PyTorch 1.13's CPU autocast leaves layer_norm alone, which then
    rejects a bf16 input with fp32 weights; mantissa computes LayerNorm's statistics in fp32 too."""

    def forward(self, x):
        return super().forward(x.float())


def torch_run(data, hidden, epochs, batch, threads, bf16, seed):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    xtr, ytr, xte, yte, classes = data
    widths = [xtr.shape[1]] + hidden
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [torch.nn.Linear(a, b), LayerNorm32(b), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(widths[-1], classes))
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    seconds = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        order = torch.randperm(len(ytr))
        for b in range(0, len(ytr), batch):
            idx = order[b:b + batch]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        seconds.append(time.perf_counter() - t0)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(xte).float()
        acc = (logits.argmax(1) == yte).float().mean().item()
        loss = loss_fn(logits, yte).item()
    return {"test_accuracy": acc, "test_loss": loss, "seconds_per_epoch": statistics.median(seconds)}


def mantissa_run(tool, data_path, hidden, epochs, batch, threads, mode, seed):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "run.jsonl")
        env = dict(os.environ, MANTISSA_NUM_THREADS=str(threads))
        subprocess.run([tool, "train", "--data", data_path, "--precision", mode, "--epochs",
                        str(epochs), "--batch-size", str(batch), "--hidden",
                        ",".join(map(str, hidden)), "--optimizer", "adamw", "--lr", "1e-3",
                        "--seed", str(seed), "--log", log], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        records = [json.loads(l) for l in open(log)]
    epochs_s = [r["seconds"] for r in records if r["event"] == "epoch"]
    final = [r for r in records if r["event"] == "final"][0]
    return {"test_accuracy": final["test_accuracy"], "test_loss": final["test_loss"],
            "seconds_per_epoch": statistics.median(epochs_s), "digest": final["digest"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--data", default=DIGITS)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--hidden", default="256,256")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("MANTISSA_NUM_THREADS", os.cpu_count())))
    ap.add_argument("--repeats", type=int, default=3, help="seeds per side (accuracy noise)")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    tool = os.path.join(a.build, "mantissa")
    hidden = [int(w) for w in a.hidden.split(",")]
    rows = []
    for label, side, mode in [("fp32", "torch", False), ("fp32", "mantissa", "fp32"),
                              ("bf16 autocast / bf16-amp", "torch", True),
                              ("bf16 autocast / bf16-amp", "mantissa", "bf16-amp")]:
        runs = []
        for seed in range(a.repeats):
            if side == "torch":
                data = load(a.data, seed)
                runs.append(torch_run(data, hidden, a.epochs, a.batch_size, a.threads, mode, seed))
            else:
                runs.append(mantissa_run(tool, a.data, hidden, a.epochs, a.batch_size, a.threads, mode, seed))
        accs = [r["test_accuracy"] for r in runs]
        rows.append({"precision": label, "side": side, "threads": a.threads,
                     "seconds_per_epoch": statistics.median(r["seconds_per_epoch"] for r in runs),
                     "test_accuracy_mean": statistics.mean(accs),
                     "test_accuracy_min": min(accs), "test_accuracy_max": max(accs), "runs": runs})
    lines = [f"digits MLP {a.hidden}, batch {a.batch_size}, AdamW, {a.epochs} epochs, "
             f"{a.threads} threads, {a.repeats} seeds per row; torch {torch.__version__}", "",
             "| precision | side | s/epoch (median) | speed-up vs torch | test acc mean (min-max) |",
             "|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        ref = rows[i - 1] if r["side"] == "mantissa" else r
        speed = ref["seconds_per_epoch"] / r["seconds_per_epoch"]
        lines.append(f"| {r['precision']} | {r['side']} | {r['seconds_per_epoch'] * 1e3:.1f} ms | "
                     f"{speed:.2f}x | {100 * r['test_accuracy_mean']:.2f}% "
                     f"({100 * r['test_accuracy_min']:.2f}-{100 * r['test_accuracy_max']:.2f}) |")
    print("\n".join(lines))
    if a.markdown:
        open(a.markdown, "w").write("\n".join(lines) + "\n")
    if a.json:
        json.dump({"epochs": a.epochs, "batch_size": a.batch_size, "hidden": hidden,
                   "threads": a.threads, "torch": torch.__version__, "rows": rows},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
