#!/usr/bin/python3
"""mantissa train and PyTorch side by side, on the same model, data and optimizer.

    /usr/bin/python3 scripts/train_side_by_side.py [--model mlp] [--build build] [--epochs 30]
        [--threads N[,N...]] [--repeats 3] [--json FILE] [--markdown FILE]
    /usr/bin/python3 scripts/train_side_by_side.py --model gpt [--build build] [--steps 300]
        [--eval-every 50] [--threads 1,2] [--layers 4 --d-model 128 --heads 4 --context 128 ...]
        [--data text:FILE] [--precisions fp32,bf16] [--openblas-coretype ''] [--json FILE]
        [--markdown FILE]

Run it with /usr/bin/python3 (Debian's, which has torch 1.13 and numpy). PyTorch runs fp32, and
bf16 through torch.autocast("cpu", dtype=torch.bfloat16) with fp32 weights: the analogue of
mantissa's bf16-amp. --threads takes a list; each count sets torch.set_num_threads, the BLAS
library's own thread count (OpenBLAS keeps a pool of its own) and MANTISSA_NUM_THREADS for the
tool. The BLAS library torch's fp32 matmul goes through (libblas.so.3: the reference BLAS unless
OpenBLAS is installed, as scripts/install-deps.sh bench does) is printed and put in the JSON, with
OpenBLAS's kernel set: Debian 12's OpenBLAS 0.3.21 does not know some recent CPUs (Emerald Rapids)
and then runs its SSE3 ("Prescott") kernels, several times slower; --openblas-coretype '' reruns
the script with OPENBLAS_CORETYPE set, which makes it choose by the CPU's features instead.

--model mlp (the default): the digits set of python3-sklearn (or --data FILE.csv[.gz]). The split
and the standardisation are mantissa's own, recomputed here bit for bit (SplitMix64 streams, the
per-class Fisher-Yates shuffle, training-split statistics in fp64), so both sides train and test
on the same rows. The model: Linear -> LayerNorm -> ReLU per hidden width, then Linear and the
mean cross-entropy; AdamW (lr 1e-3, weight decay 0.01, betas 0.9/0.999, eps 1e-8). Initial
weights and batch order come from each side's own generator, so accuracies agree within
run-to-run noise, not bit for bit. Time per epoch is the training loop alone (no evaluation),
the median over the epochs, as mantissa reports it.

--model gpt: the GPT of `mantissa train --model gpt` (docs/training_gpt.md) rebuilt in PyTorch with
mantissa's initial weights (`mantissa train --model gpt --steps 0 --export-init DIR`, the same
shape flags and seed) and the same batches (the byte corpus, its 90/10 split, the SplitMix64 window
positions of every step and the evenly spaced validation windows, recomputed here), AdamW (betas
0.9/0.95, eps 1e-8, weight decay on the matrices only), the warmup + cosine learning rate and
global-norm clipping. Since weights and batches agree, the first step's fp32 loss must agree to
about 1e-5 relative (checked: an error and exit status 1 if not); later steps drift apart by
rounding only (different summation orders), which the table of max |loss difference| over steps
1..K shows (a loss spike amplifies them, so it also lists torch against itself at another thread
count, where its sums change order: the size of rounding's own effect). Time per step is the
training step alone (forward, backward, clip, optimizer step; not the batch's assembly, not
evaluation), the median over the steps, as mantissa reports it (mantissa's step also holds its
anomaly detector's pass over the gradients and the copy of the weights it counts unchanged updates
with). The load average is recorded: on a busy machine the multi-threaded times (OpenMP's spinning
barriers most) are not clean. Under autocast the norms, the attention softmax and the loss take
fp32 inputs (as mantissa's bf16-amp computes them in fp32); the GEMMs run on bf16 operands.
"""
import argparse
import csv
import ctypes
import gzip
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

MASK = (1 << 64) - 1
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
FORTUNES = "/usr/share/games/fortunes"


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


# ---- BLAS and threads ------------------------------------------------------------------------


def blas_info():
    """Which BLAS torch's fp32 matmul loaded: the libraries mapped into this process after a
    matmul, and the system's libblas.so.3 alternative."""
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and re.search(r"openblas|libblas|libmkl|libdnnl|libcblas",
                                             os.path.basename(parts[-1])):
                libs.add(parts[-1])
    libs = sorted(libs)
    if any("libmkl" in os.path.basename(l) for l in libs):
        kind = "MKL"
    elif any("openblas" in l for l in libs):
        kind = "OpenBLAS"
    elif any(os.path.basename(l).startswith("libblas") for l in libs):
        kind = "reference BLAS (netlib)"
    else:
        kind = "none found (torch's own GEMM?)"
    info = {"blas": kind, "libraries": libs, "alternative": None,
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    openblas = [l for l in libs if re.search(r"libopenblas.*\.so", os.path.basename(l))]
    if openblas:
        try:
            lib = ctypes.CDLL(openblas[0])
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            info["openblas_config"] = lib.openblas_get_config().decode()
            info["openblas_core"] = core = lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            core = None
        # OpenBLAS (0.3.21, Debian 12) falls back to its SSE3 kernels on CPUs it does not know
        # (Emerald Rapids, model 207, for one); any OPENBLAS_CORETYPE, even an empty one, makes
        # it choose by the CPU's features instead.
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
        if core and core.lower() in ("prescott", "katmai", "core2") and (
                "avx2" in flags or "avx512f" in flags):
            info["warning"] = (f"OpenBLAS runs its {core} (SSE) kernels on a CPU with "
                               f"{'AVX-512' if 'avx512f' in flags else 'AVX2'}: torch's fp32 "
                               "GEMMs are several times slower than they could be; "
                               "--openblas-coretype '' (or e.g. Cooperlake, SkylakeX, Haswell) "
                               "picks the kernels by the CPU's features")
    if shutil.which("update-alternatives"):
        q = subprocess.run(["update-alternatives", "--query", "libblas.so.3-x86_64-linux-gnu"],
                           capture_output=True, text=True)
        value = [l.split(":", 1)[1].strip() for l in q.stdout.splitlines()
                 if l.startswith("Value:")]
        info["alternative"] = value[0] if value else (q.stderr.strip() or None)
    return info


def set_threads(n):
    """torch's intra-op threads (OpenMP, oneDNN) and OpenBLAS's own pthread pool, which
    torch.set_num_threads does not reach in Debian's build."""
    torch.set_num_threads(n)
    with open("/proc/self/maps") as f:
        paths = {l.split()[-1] for l in f if "openblas" in l and l.split()[-1].startswith("/")}
    for p in sorted(paths):
        try:
            fn = getattr(ctypes.CDLL(p), "openblas_set_num_threads", None)
        except OSError:
            continue
        if fn is not None:
            fn(ctypes.c_int(n))


def thread_list(text):
    return [int(t) for t in str(text).split(",") if t.strip()]


def markdown_out(lines, path):
    print("\n".join(lines))
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


# ---- The MLP ---------------------------------------------------------------------------------


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
    set_threads(threads)
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
    return {"test_accuracy": acc, "test_loss": loss,
            "seconds_per_epoch": statistics.median(seconds)}


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


def main_mlp(a, tool):
    data_path = a.data or DIGITS
    epochs = a.epochs
    batch = a.batch_size or 64
    hidden = [int(w) for w in a.hidden.split(",")]
    threads_list = thread_list(a.threads)
    rows = []
    for threads in threads_list:
        for label, side, mode in [("fp32", "torch", False), ("fp32", "mantissa", "fp32"),
                                  ("bf16 autocast / bf16-amp", "torch", True),
                                  ("bf16 autocast / bf16-amp", "mantissa", "bf16-amp")]:
            runs = []
            for seed in range(a.repeats):
                if side == "torch":
                    data = load(data_path, seed)
                    runs.append(torch_run(data, hidden, epochs, batch, threads, mode, seed))
                else:
                    runs.append(mantissa_run(tool, data_path, hidden, epochs, batch, threads,
                                             mode, seed))
            accs = [r["test_accuracy"] for r in runs]
            rows.append({"precision": label, "side": side, "threads": threads,
                         "seconds_per_epoch": statistics.median(r["seconds_per_epoch"]
                                                                for r in runs),
                         "test_accuracy_mean": statistics.mean(accs),
                         "test_accuracy_min": min(accs), "test_accuracy_max": max(accs),
                         "runs": runs})
    blas = blas_info()
    lines = [f"digits MLP {a.hidden}, batch {batch}, AdamW, {epochs} epochs, "
             f"{a.repeats} seeds per row; torch {torch.__version__}, BLAS {blas['blas']} "
             f"(core {blas.get('openblas_core')})", "",
             "| threads | precision | side | s/epoch (median) | speed-up vs torch | "
             "test acc mean (min-max) |",
             "|---|---|---|---|---|---|"]
    for i, r in enumerate(rows):
        ref = rows[i - 1] if r["side"] == "mantissa" else r
        speed = ref["seconds_per_epoch"] / r["seconds_per_epoch"]
        lines.append(f"| {r['threads']} | {r['precision']} | {r['side']} | "
                     f"{r['seconds_per_epoch'] * 1e3:.1f} ms | {speed:.2f}x | "
                     f"{100 * r['test_accuracy_mean']:.2f}% "
                     f"({100 * r['test_accuracy_min']:.2f}-{100 * r['test_accuracy_max']:.2f}) |")
    if blas.get("warning"):
        lines += ["", f"warning: {blas['warning']}"]
    markdown_out(lines, a.markdown)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": "mlp", "epochs": epochs, "batch_size": batch, "hidden": hidden,
                       "threads": threads_list, "torch": torch.__version__, "blas": blas,
                       "rows": rows}, f, indent=1)
    return 0


# ---- The GPT ---------------------------------------------------------------------------------


def load_text(data, context):
    """mantissa's load_text: --data text:FILE, or the default corpus (the fortunes files without
    an extension, regular files only, in name order, concatenated); 90% train, 10% validation."""
    if data:
        if not data.startswith("text:"):
            sys.exit(f"--model gpt: --data takes text:FILE, got {data!r}")
        paths = [data[5:]]
    else:
        paths = []
        for name in sorted(os.listdir(FORTUNES)):
            p = os.path.join(FORTUNES, name)
            if os.path.islink(p) or not os.path.isfile(p) or os.path.splitext(name)[1]:
                continue
            paths.append(p)
    raw = b"".join(open(p, "rb").read() for p in paths)
    n = len(raw)
    if n // 10 < context + 1:
        sys.exit(f"--model gpt: {n} bytes of text: the validation split needs context + 1")
    split = n - n // 10
    all_bytes = np.frombuffer(raw, dtype=np.uint8)
    return all_bytes[:split], all_bytes[split:], len(paths)


def windows(data, starts, context):
    idx = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(context + 1)
    w = data[idx].astype(np.int64)
    return torch.from_numpy(w[:, :-1].copy()), torch.from_numpy(w[:, 1:].copy())


def training_batch(train, context, batch, seed, step):
    """mantissa's training_batch: window positions from SplitMix64 keyed by seed and step."""
    rng = SplitMix64(stream_seed(seed, 1_000_000 + step))
    positions = len(train) - context
    return windows(train, [rng.below(positions) for _ in range(batch)], context)


def validation_batches(val, context, count, batch):
    """mantissa's validation windows: window k of count starts at floor(k * positions / count),
    evaluated in batches of `batch`."""
    positions = len(val) - context
    starts = [k * positions // count for k in range(count)]
    return [windows(val, starts[i:i + batch], context) for i in range(0, count, batch)]


def param_specs(c):
    """The parameters of trainer::Gpt in its order: (name, shape, weight decay)."""
    V, T, d = c["vocab"], c["context"], c["d_model"]
    hidden = 4 * d if c["mlp"] == "gelu" else (8 * d // 3 + 31) // 32 * 32
    up = 2 * hidden if c["mlp"] == "swiglu" else hidden
    ln = c["norm"] == "layernorm"
    specs = [("wte", (V, d), False), ("wpe", (T, d), False)]
    for l in range(c["layers"]):
        b = f"block{l}."
        specs.append((b + "norm1.weight", (d,), False))
        if ln:
            specs.append((b + "norm1.bias", (d,), False))
        specs += [(b + "attn.qkv", (d, 3 * d), True), (b + "attn.proj", (d, d), True),
                  (b + "norm2.weight", (d,), False)]
        if ln:
            specs.append((b + "norm2.bias", (d,), False))
        specs += [(b + "mlp.up", (d, up), True), (b + "mlp.down", (hidden, d), True)]
    specs.append(("norm_f.weight", (d,), False))
    if ln:
        specs.append(("norm_f.bias", (d,), False))
    if not c["tied"]:
        specs.append(("head", (V, d), True))
    return specs


def gpt_flags(c, a, steps):
    flags = ["--model", "gpt", "--layers", c["layers"], "--d-model", c["d_model"], "--heads",
             c["heads"], "--context", c["context"], "--vocab", c["vocab"], "--mlp", c["mlp"],
             "--norm", c["norm"], "--batch-size", c["batch_size"], "--steps", steps,
             "--eval-every", c["eval_every"], "--eval-windows", c["eval_windows"], "--lr",
             repr(a.lr), "--weight-decay", repr(a.weight_decay), "--clip", repr(a.clip),
             "--seed", c["seed"]]
    if not c["tied"]:
        flags.append("--untie")
    if a.warmup is not None:
        flags += ["--warmup", a.warmup]
    if a.data:
        flags += ["--data", a.data]
    return [str(f) for f in flags]


def mantissa_gpt(tool, flags, mode, threads, export=None):
    """One `mantissa train --model gpt` run: its JSONL records."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "run.jsonl")
        cmd = [tool, "train"] + flags + ["--precision", mode, "--log", log]
        if export:
            cmd += ["--export-init", export]
        env = dict(os.environ, MANTISSA_NUM_THREADS=str(threads))
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(log) as f:
            records = [json.loads(l) for l in f]
    steps_r = [r for r in records if r["event"] == "step"]
    final = [r for r in records if r["event"] == "final"][0]
    return {"losses": [r["loss"] for r in steps_r], "lrs": [r["lr"] for r in steps_r],
            "evals": [(r["step"], r["val_loss"]) for r in records if r["event"] == "eval"],
            "final_val_loss": final["val_loss"], "step_time_s": final["step_time_s"],
            "digest": final["digest"], "skipped_steps": final.get("skipped_steps", 0)}


def load_init(directory, c):
    """mantissa's initial weights (the .npy files of --export-init) as fp32 leaf tensors."""
    specs = param_specs(c)
    found = sorted(f[:-4] for f in os.listdir(directory) if f.endswith(".npy"))
    if found != sorted(s[0] for s in specs):
        sys.exit(f"--export-init wrote {found}, expected {[s[0] for s in specs]}")
    params, decay = {}, {}
    for name, shape, dec in specs:
        w = np.load(os.path.join(directory, name + ".npy"))
        if w.dtype != np.float32 or tuple(w.shape) != shape:
            sys.exit(f"{name}.npy: {w.dtype} {w.shape}, expected float32 {shape}")
        params[name] = torch.from_numpy(w.copy()).requires_grad_(True)
        decay[name] = dec
    return params, decay


def gpt_loss(p, c, tokens, targets, mask):
    """The forward pass of trainer::Gpt (apps/trainer/gpt.cc): weights y = x @ W ([in, out])."""
    B, T = tokens.shape
    d, H = c["d_model"], c["heads"]
    dh = d // H
    scale = float(np.float32(1.0 / math.sqrt(dh)))  # fp32(1/sqrt(dh)), as the C++
    ln = c["norm"] == "layernorm"

    def norm(x, name):
        x = x.float()  # statistics in fp32 (CPU autocast leaves the norms alone)
        if ln:
            return F.layer_norm(x, (d,), p[name + ".weight"], p[name + ".bias"], 1e-5)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * p[name + ".weight"]

    x = p["wte"][tokens] + p["wpe"][:T]
    for l in range(c["layers"]):
        b = f"block{l}."
        qkv = norm(x, b + "norm1") @ p[b + "attn.qkv"]
        q, k, v = (t.reshape(B, T, H, dh).transpose(1, 2) for t in qkv.split(d, dim=-1))
        att = (q @ k.transpose(-2, -1)).float() * scale
        att = torch.softmax(att.masked_fill(mask[:T, :T], float("-inf")), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(B, T, d)
        x = x + o @ p[b + "attn.proj"]
        u = norm(x, b + "norm2") @ p[b + "mlp.up"]
        if c["mlp"] == "gelu":
            act = F.gelu(u, approximate="tanh")
        else:
            h = u.shape[-1] // 2
            act = F.silu(u[..., :h]) * u[..., h:]
        x = x + act @ p[b + "mlp.down"]
    head = p["wte"] if c["tied"] else p["head"]
    logits = norm(x, "norm_f") @ head.t()
    return F.cross_entropy(logits.float().reshape(B * T, -1), targets.reshape(B * T))


def lr_at(t, a, steps):
    """GptTrainOptions::lr_at: linear warmup, then cosine to 0.1 lr; double, rounded to fp32."""
    w = a.warmup if a.warmup is not None else max(1, steps // 20)
    peak = float(np.float32(a.lr))
    if t < w:
        return float(np.float32(peak * (t + 1) / w))
    progress = min(1.0, (t - w) / max(1, steps - w))
    low = peak * 0.1
    return float(np.float32(low + 0.5 * (peak - low) * (1.0 + math.cos(math.pi * progress))))


def torch_gpt(init_dir, c, a, train, val_batches, threads, bf16):
    """The same training in PyTorch: losses per step, evaluations, median time per step."""
    set_threads(threads)
    p, decay = load_init(init_dir, c)
    mask = torch.triu(torch.ones(c["context"], c["context"], dtype=torch.bool), diagonal=1)
    opt = torch.optim.AdamW(
        [{"params": [t for n, t in p.items() if decay[n]], "weight_decay": a.weight_decay},
         {"params": [t for n, t in p.items() if not decay[n]], "weight_decay": 0.0}],
        lr=a.lr, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    params = list(p.values())

    def evaluate():
        total, count = 0.0, 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for tok, tgt in val_batches:
                total += gpt_loss(p, c, tok, tgt, mask).item() * len(tok)
                count += len(tok)
        return total / count

    steps = c["steps"]
    losses, lrs, seconds, evals = [], [], [], []
    for step in range(steps):
        tok, tgt = training_batch(train, c["context"], c["batch_size"], c["seed"], step)
        lr = lr_at(step, a, steps)
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = gpt_loss(p, c, tok, tgt, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.clip)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        seconds.append(time.perf_counter() - t0)
        losses.append(loss.item())
        lrs.append(lr)
        if (step + 1) % c["eval_every"] == 0 or step + 1 == steps:
            evals.append((step + 1, evaluate()))
    final = evals[-1][1] if evals else evaluate()
    return {"losses": losses, "lrs": lrs, "evals": evals, "final_val_loss": final,
            "step_time_s": statistics.median(seconds) if seconds else 0.0}


def max_diffs(x, y, ks):
    d = np.abs(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64))
    return {k: float(d[:k].max()) for k in ks if k <= len(d)}


def gpt_report(a, c, blas, load_before, corpus, init, runs, pairs, threads_list):
    """Checks and tables: (lines of Markdown, the comparisons, the first-step check, errors)."""
    train, val, files = corpus

    def run(side, prec, threads):
        return next(r for r in runs
                    if r["side"] == side and r["precision"] == prec and r["threads"] == threads)

    steps = c["steps"]
    ks = sorted({k for k in (1, 10, 50, 100) if k <= steps} | ({steps} if steps else set()))
    errors, comparisons = [], []
    for threads in threads_list:
        for prec, _, _ in pairs:
            m, t = run("mantissa", prec, threads), run("torch", prec, threads)
            lr_diff = max((abs(x - y) for x, y in zip(m["lrs"], t["lrs"])), default=0.0)
            if lr_diff > 0:
                errors.append(f"{threads} threads, {prec}: the learning rates differ "
                              f"(max {lr_diff:g})")
            evals = [(s, vm, vt) for (s, vm), (_, vt) in zip(m["evals"], t["evals"])]
            comparisons.append({"compared": f"mantissa vs torch, threads {threads}",
                                "threads": threads, "precision": prec,
                                "max_abs_loss_diff": max_diffs(m["losses"], t["losses"], ks),
                                "first_step": [m["losses"][0], t["losses"][0]] if steps else None,
                                "evals": evals})
    # The yardstick: torch against itself at another thread count (its sums change order), and
    # mantissa against itself (the same bits at every thread count).
    for side in ("torch", "mantissa"):
        for threads in threads_list[1:]:
            for prec, _, _ in pairs:
                x, y = run(side, prec, threads_list[0]), run(side, prec, threads)
                comparisons.append({"compared": f"{side} {threads_list[0]} vs {threads} threads",
                                    "threads": threads, "precision": prec,
                                    "max_abs_loss_diff": max_diffs(x["losses"], y["losses"], ks)})
    # The proof that model, weights and batches agree: the first fp32 step (the worst thread count).
    first = None
    if steps and "fp32" in [p[0] for p in pairs]:
        for threads in threads_list:
            lm = run("mantissa", "fp32", threads)["losses"][0]
            lt = run("torch", "fp32", threads)["losses"][0]
            rel = abs(lt - lm) / abs(lm)
            if first is None or rel > first["relative_diff"]:
                first = {"threads": threads, "mantissa": lm, "torch": lt, "relative_diff": rel,
                         "tolerance": a.first_step_tol, "ok": rel <= a.first_step_tol}
            if rel > a.first_step_tol:
                errors.append(f"first-step fp32 loss at {threads} threads: mantissa {lm!r}, torch "
                              f"{lt!r}, relative difference {rel:.3g} > {a.first_step_tol:g}: the "
                              "model, the weights or the batches disagree")
    im, it = init["mantissa_val_loss"], init["torch_val_loss"]
    init["relative_diff"] = abs(it - im) / abs(im)
    if init["relative_diff"] > a.first_step_tol:
        errors.append(f"validation loss of the initial weights: mantissa {im!r}, torch {it!r} "
                      f"(relative {init['relative_diff']:.3g}): the validation windows or the "
                      "model disagree")

    where = blas["alternative"] or ", ".join(blas["libraries"])
    if blas.get("openblas_core"):
        where += f", core {blas['openblas_core']}"
    lines = [f"GPT {c['layers']} layers, d {c['d_model']}, {c['heads']} heads, context "
             f"{c['context']}, vocab {c['vocab']}, {c['mlp']}, {c['norm']}, "
             f"{'tied' if c['tied'] else 'untied'} head ({init['params']} parameters); "
             f"{a.data or FORTUNES} ({files} files, {len(train)} train / {len(val)} validation "
             f"bytes); batch {c['batch_size']} x {c['context']}, {steps} steps, AdamW lr {a.lr:g} "
             f"wd {a.weight_decay:g} clip {a.clip:g}, seed {c['seed']}; torch {torch.__version__}, "
             f"BLAS {blas['blas']} ({where}); {os.cpu_count()} CPUs, load average "
             f"{load_before:.2f} before the runs", ""]
    if first:
        lines += [f"First step, fp32, same weights and batch ({first['threads']} threads): "
                  f"mantissa loss {first['mantissa']:.8f}, torch {first['torch']:.8f}, relative "
                  f"difference {first['relative_diff']:.2e} "
                  f"({'OK' if first['ok'] else 'MISMATCH'}, tolerance {a.first_step_tol:g}). "
                  f"Validation loss of the initial weights: mantissa {im:.8f}, torch {it:.8f}.",
                  ""]
    lines += ["Time per training step (median; forward, backward, clip, optimizer step; mantissa's "
              "also holds its anomaly detector's pass over the gradients and a copy of the "
              "weights) and final validation loss (nats/byte):", "",
              "| threads | precision | mantissa ms/step | torch ms/step | torch / mantissa | "
              "mantissa val loss | torch val loss |", "|---|---|---|---|---|---|---|"]
    for threads in threads_list:
        for prec, _, _ in pairs:
            m, t = run("mantissa", prec, threads), run("torch", prec, threads)
            ratio = t["step_time_s"] / m["step_time_s"] if m["step_time_s"] > 0 else float("nan")
            label = "fp32" if prec == "fp32" else "bf16-amp / autocast bf16"
            lines.append(f"| {threads} | {label} | {m['step_time_s'] * 1e3:.1f} | "
                         f"{t['step_time_s'] * 1e3:.1f} | {ratio:.2f}x | "
                         f"{m['final_val_loss']:.4f} | {t['final_val_loss']:.4f} |")
    if ks:
        lines += ["", "Training loss, mantissa vs torch (same initial weights and batches): "
                  "max |difference| over steps 1..K (the rows of one side at two thread counts "
                  "show how far rounding alone moves the curve):", "",
                  "| compared | precision | " + " | ".join(f"K={k}" for k in ks) + " |",
                  "|---|---|" + "---|" * len(ks)]
        for cmp in comparisons:
            lines.append(f"| {cmp['compared']} | {cmp['precision']} | " +
                         " | ".join(f"{cmp['max_abs_loss_diff'][k]:.2e}" for k in ks) + " |")
        columns = [(side, prec) for prec, _, _ in pairs for side in ("mantissa", "torch")]
        for threads in threads_list:
            evs = [run(side, prec, threads)["evals"] for side, prec in columns]
            lines += ["", f"Validation loss at each evaluation ({threads} threads):", "",
                      "| step | " + " | ".join(f"{s} {p}" for s, p in columns) + " |",
                      "|---|" + "---|" * len(columns)]
            for i, (s, _) in enumerate(evs[0]):
                lines.append(f"| {s} | " + " | ".join(f"{e[i][1]:.4f}" for e in evs) + " |")
    digests = {r["digest"] for r in runs if r["side"] == "mantissa" and r["precision"] == "fp32"}
    if blas.get("warning"):
        lines += ["", f"warning: {blas['warning']}"]
    if len(digests) > 1:
        lines += ["", "note: mantissa's fp32 digests differ between thread counts: "
                  f"{sorted(digests)}"]
    return lines, comparisons, first, ks, errors


def main_gpt(a, tool):
    c = {"layers": a.layers, "d_model": a.d_model, "heads": a.heads, "context": a.context,
         "vocab": a.vocab, "mlp": a.mlp, "norm": a.norm, "tied": not a.untie,
         "batch_size": a.batch_size or 16, "steps": a.steps, "eval_every": a.eval_every,
         "eval_windows": a.eval_windows, "seed": a.seed}
    if c["d_model"] % c["heads"]:
        sys.exit("--heads must divide --d-model")
    threads_list = thread_list(a.threads)
    pairs = [p for p in [("fp32", "fp32", False), ("bf16", "bf16-amp", True)]
             if p[0] in a.precisions.split(",")]
    blas = blas_info()
    print(f"torch {torch.__version__}: BLAS {blas['blas']} ({blas.get('openblas_config', '')}, "
          f"core {blas.get('openblas_core')}, OPENBLAS_CORETYPE {blas['OPENBLAS_CORETYPE']!r}); "
          f"mapped {', '.join(blas['libraries'])}; libblas.so.3 alternative: {blas['alternative']}",
          flush=True)
    if blas.get("warning"):
        print(f"warning: {blas['warning']}", flush=True)
    load_before = os.getloadavg()[0]
    if load_before > 0.5:
        print(f"warning: load average {load_before:.2f} before the runs: other processes share the "
              f"{os.cpu_count()} CPUs, so the times (multi-threaded ones most) are not clean",
              flush=True)
    corpus = load_text(a.data, c["context"])
    train, val, _ = corpus
    count = min(c["eval_windows"], len(val) - c["context"])
    val_batches = validation_batches(val, c["context"], count, c["batch_size"])
    runs = []
    with tempfile.TemporaryDirectory() as init_dir:
        # mantissa's initial weights, and the validation loss of them on both sides.
        m0 = mantissa_gpt(tool, gpt_flags(c, a, 0), "fp32", threads_list[0], export=init_dir)
        set_threads(threads_list[0])
        p, _ = load_init(init_dir, c)
        mask = torch.triu(torch.ones(c["context"], c["context"], dtype=torch.bool), diagonal=1)
        with torch.no_grad():
            total = sum(gpt_loss(p, c, tok, tgt, mask).item() * len(tok)
                        for tok, tgt in val_batches)
        init = {"mantissa_val_loss": m0["final_val_loss"], "torch_val_loss": total / count,
                "params": sum(t.numel() for t in p.values())}
        del p
        print(f"initial weights: {init['params']} parameters; validation loss at step 0: mantissa "
              f"{init['mantissa_val_loss']:.7f}, torch {init['torch_val_loss']:.7f}", flush=True)
        for threads in threads_list:
            for prec, mode, bf16 in pairs:
                t0 = time.perf_counter()
                m = mantissa_gpt(tool, gpt_flags(c, a, c["steps"]), mode, threads)
                m.update(side="mantissa", precision=prec, mode=mode, threads=threads)
                t1 = time.perf_counter()
                t = torch_gpt(init_dir, c, a, train, val_batches, threads, bf16)
                t.update(side="torch", precision=prec, mode="autocast bf16" if bf16 else "fp32",
                         threads=threads)
                t2 = time.perf_counter()
                m["load_average"] = t["load_average"] = os.getloadavg()[0]
                print(f"{threads} threads, {prec}: mantissa {m['step_time_s'] * 1e3:.1f} ms/step, "
                      f"val {m['final_val_loss']:.4f} ({t1 - t0:.0f} s); torch "
                      f"{t['step_time_s'] * 1e3:.1f} ms/step, val {t['final_val_loss']:.4f} "
                      f"({t2 - t1:.0f} s)", flush=True)
                runs += [m, t]
    lines, comparisons, first, ks, errors = gpt_report(a, c, blas, load_before, corpus, init, runs,
                                                       pairs, threads_list)
    markdown_out(lines, a.markdown)
    for e in errors:
        print(f"ERROR: {e}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": "gpt", "config": c, "lr": a.lr, "weight_decay": a.weight_decay,
                       "clip": a.clip, "warmup": a.warmup, "data": a.data or FORTUNES,
                       "train_bytes": len(train), "validation_bytes": len(val),
                       "threads": threads_list, "torch": torch.__version__, "blas": blas,
                       "load_average_before": load_before, "initial": init,
                       "first_step": first, "loss_diff_ks": ks, "comparisons": comparisons,
                       "runs": runs, "errors": errors}, f, indent=1)
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "gpt"], default="mlp")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"),
                    help="the directory of the mantissa binary")
    ap.add_argument("--data", help="mlp: FILE.csv[.gz] (default: digits); gpt: text:FILE "
                    "(default: the fortunes corpus)")
    ap.add_argument("--batch-size", type=int, help="default 64 (mlp), 16 (gpt)")
    ap.add_argument("--threads",
                    default=os.environ.get("MANTISSA_NUM_THREADS", str(os.cpu_count())),
                    help="thread counts, comma-separated (e.g. 1,2)")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    mlp = ap.add_argument_group("--model mlp")
    mlp.add_argument("--epochs", type=int, default=30)
    mlp.add_argument("--hidden", default="256,256")
    mlp.add_argument("--repeats", type=int, default=3, help="seeds per side (accuracy noise)")
    gpt = ap.add_argument_group("--model gpt (defaults: mantissa's)")
    gpt.add_argument("--layers", type=int, default=4)
    gpt.add_argument("--d-model", type=int, default=128)
    gpt.add_argument("--heads", type=int, default=4)
    gpt.add_argument("--context", type=int, default=128)
    gpt.add_argument("--vocab", type=int, default=256)
    gpt.add_argument("--mlp", choices=["gelu", "swiglu"], default="gelu")
    gpt.add_argument("--norm", choices=["layernorm", "rmsnorm"], default="layernorm")
    gpt.add_argument("--untie", action="store_true")
    gpt.add_argument("--steps", type=int, default=300)
    gpt.add_argument("--eval-every", type=int, default=50)
    gpt.add_argument("--eval-windows", type=int, default=128)
    gpt.add_argument("--lr", type=float, default=1e-3)
    gpt.add_argument("--weight-decay", type=float, default=0.1)
    gpt.add_argument("--clip", type=float, default=1.0)
    gpt.add_argument("--warmup", type=int, help="default steps / 20 (at least 1)")
    gpt.add_argument("--seed", type=int, default=0)
    gpt.add_argument("--precisions", default="fp32,bf16", help="fp32, bf16 or both")
    gpt.add_argument("--first-step-tol", type=float, default=1e-5,
                     help="relative tolerance of the first-step fp32 loss check")
    ap.add_argument("--openblas-coretype", metavar="CORE",
                    help="rerun with OPENBLAS_CORETYPE=CORE (read when OpenBLAS loads); '' lets "
                    "OpenBLAS choose its kernels by the CPU's features")
    a = ap.parse_args()
    coretype = a.openblas_coretype
    if coretype is not None and os.environ.get("OPENBLAS_CORETYPE") != coretype:
        env = dict(os.environ, OPENBLAS_CORETYPE=coretype)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    tool = os.path.join(a.build, "mantissa")
    return main_gpt(a, tool) if a.model == "gpt" else main_mlp(a, tool)


if __name__ == "__main__":
    sys.exit(main())
