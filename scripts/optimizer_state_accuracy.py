#!/usr/bin/python3
"""Adam's moments in each compact format against fp32 moments: the same models, data, initial
weights and batch order, trained with each state format; validation loss and accuracy side by
side.

    /usr/bin/python3 scripts/optimizer_state_accuracy.py [--build build] [--out DIR]
        [--epochs 30] [--seeds 3] [--steps 300] [--threads 2] [--skip-gpt]

Optimizers (all AdamW, PyTorch's defaults but lr and weight decay):
  torch      torch.optim.AdamW (foreach), fp32 moments: the peer
  fp32       mantissa.torch.AdamW, fp32 moments (multi_tensor_adam_w)
  bf16       mantissa.torch.AdamW(state_dtype="bf16"): bf16 moments (multi_tensor_adam_w_compact)
  int8       state_dtype="int8": 8-bit block-wise dynamic moments (blocks of 256)
  int4       state_dtype="int4": torchao's 4-bit moments (blocks of 128)
  fp8        state_dtype="fp8": E4M3 moments with a per-block scale (blocks of 256)
             (the quantized formats for parameters of at least 4096 elements)

Models (the ones of scripts/train_side_by_side.py, whose helpers this script uses):
  digits MLP  python3-sklearn's digits, mantissa's split and standardisation, Linear-LayerNorm-
              ReLU x 2 (256 wide) and a classifier: AdamW lr 1e-3, wd 0.01, batch 64; each seed
              gives every optimizer the same initial weights and batch order
  GPT         `mantissa train --model gpt --optimizer-state FORMAT` itself (the built tool), in
              the fp32 and bf16-amp precision modes: the fortunes corpus, warmup + cosine lr
              1e-3, betas 0.9/0.95, weight decay 0.1 on matrices, clipping at 1; the same initial
              weights and batches for every format (torch's AdamW is not in this part)

Writes state_accuracy.md (the tables), state_accuracy.json (every run) and state_accuracy.svg
(the fp32-mode GPT's validation loss against steps for each format) into --out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_side_by_side as sbs  # noqa: E402

import mantissa  # noqa: E402
import mantissa.torch  # noqa: E402

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
FORMATS = ("torch", "fp32", "bf16", "int8", "int4", "fp8")
GPT_FORMATS = FORMATS[1:]
GPT_MODES = ("fp32", "bf16-amp")


def make_optimizer(fmt, groups, **kw):
    if fmt == "torch":
        return torch.optim.AdamW(groups, foreach=True, **kw)
    return mantissa.torch.AdamW(groups, state_dtype=None if fmt == "fp32" else fmt, **kw)


def state_bytes(opt):
    return sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items()
               if torch.is_tensor(t) and k != "step")


def mlp_run(data, fmt, seed, epochs, batch=64, hidden=(256, 256)):
    torch.manual_seed(seed)
    xtr, ytr, xte, yte, classes = data
    widths = [xtr.shape[1]] + list(hidden)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.LayerNorm(b), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(widths[-1], classes))
    model = torch.nn.Sequential(*layers)
    opt = make_optimizer(fmt, model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(ytr), generator=gen)
        for b in range(0, len(ytr), batch):
            idx = order[b:b + batch]
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        logits = model(xte)
        return {"test_loss": loss_fn(logits, yte).item(),
                "test_accuracy": (logits.argmax(1) == yte).float().mean().item(),
                "state_bytes": state_bytes(opt),
                "params": sum(p.numel() for p in model.parameters())}


def gpt_run(tool, fmt, mode, steps, threads):
    """`mantissa train --model gpt` in one precision mode with the moments in `fmt` (fp32: the
    default, the weights' optimizer dtype); its evaluations, final loss and state bytes."""
    with tempfile.TemporaryDirectory() as work:
        log = os.path.join(work, "gpt.jsonl")
        cmd = [tool, "train", "--model", "gpt", "--precision", mode, "--steps", str(steps),
               "--eval-every", "50", "--log", log]
        if fmt != "fp32":
            cmd += ["--optimizer-state", fmt]
        env = dict(os.environ, MANTISSA_NUM_THREADS=str(threads))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        records = [json.loads(line) for line in open(log)]
    evals = [(0, None)] + [(r["step"], r["val_loss"]) for r in records if r["event"] == "eval"]
    final = next(r for r in records if r["event"] == "final")
    print(f"  gpt {mode} {fmt}: validation loss {final['val_loss']:.4f}", flush=True)
    return {"evals": evals[1:], "final_val_loss": final["val_loss"],
            "state_bytes": final["state_bytes"], "params": final["params"],
            "step_time_s": final["step_time_s"]}


def svg(gpt, path):
    """The validation loss from the first evaluation after step 0 (step 0's loss, the same for
    every format, would flatten the rest), one line per format, the legend with final losses."""
    w, h, pad = 640, 360, 60
    curves = {f: [(s, v) for s, v in r["evals"] if s > 0] for f, r in gpt.items()}
    pts = [v for c in curves.values() for _, v in c]
    lo, hi = min(pts), max(pts)
    first = min(s for c in curves.values() for s, _ in c)
    last = max(s for c in curves.values() for s, _ in c)
    colors = {"torch": "#888888", "fp32": "#1f77b4", "bf16": "#2ca02c", "int8": "#d62728",
              "int4": "#9467bd", "fp8": "#ff7f0e"}
    dashes = {f: "" for f in colors}
    dashes["fp32"] = ' stroke-dasharray="6,4"'
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="20">GPT validation loss, Adam\'s moments in each format</text>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
           f'<text x="{pad}" y="{h - pad + 18}">step {first}</text>',
           f'<text x="{w - pad - 50}" y="{h - pad + 18}">step {last}</text>',
           f'<text x="5" y="{pad + 4}">{hi:.3f}</text>',
           f'<text x="5" y="{h - pad}">{lo:.3f}</text>']
    for k, (fmt, c) in enumerate(curves.items()):
        xy = [(pad + (w - 2 * pad) * (s - first) / max(1, last - first),
               h - pad - (h - 2 * pad) * (v - lo) / max(1e-12, hi - lo)) for s, v in c]
        out.append(f'<polyline fill="none" stroke="{colors[fmt]}" stroke-width="2"{dashes[fmt]} '
                   'points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy) + '"/>')
        out.append(f'<text x="{w - pad - 170}" y="{pad + 16 * k}" fill="{colors[fmt]}">{fmt}: '
                   f'final {gpt[fmt]["final_val_loss"]:.4f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--out", default="state-accuracy")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--skip-gpt", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sbs.set_threads(a.threads)
    mantissa.set_num_threads(a.threads)
    lines = [f"{mantissa.version()}, torch {torch.__version__}, {a.threads} threads", ""]

    data = sbs.load(DIGITS, 0)
    mlp = {f: [] for f in FORMATS}
    for seed in range(a.seeds):
        for f in FORMATS:
            mlp[f].append(mlp_run(data, f, seed, a.epochs))
            r = mlp[f][-1]
            print(f"digits seed {seed} {f}: test loss {r['test_loss']:.4f}, accuracy "
                  f"{r['test_accuracy']:.4f}", flush=True)
    base = statistics.mean(r["test_loss"] for r in mlp["fp32"])
    lines += [f"digits MLP 64-256-256-10, AdamW lr 1e-3 wd 0.01, batch 64, {a.epochs} epochs, "
              f"{a.seeds} seeds (the same initial weights and batches for every format)", "",
              "| moments | state bytes | test loss (mean of seeds) | vs fp32 moments | "
              "test accuracy |", "|---|---|---|---|---|"]
    for f in FORMATS:
        loss = statistics.mean(r["test_loss"] for r in mlp[f])
        acc = statistics.mean(r["test_accuracy"] for r in mlp[f])
        lines.append(f"| {f} | {mlp[f][0]['state_bytes']} | {loss:.4f} | "
                     f"{(loss / base - 1) * 100:+.2f}% | {acc:.4f} |")
    lines.append("")

    gpt = {}
    if not a.skip_gpt:
        tool = os.path.join(a.build, "mantissa")
        for mode in GPT_MODES:
            gpt[mode] = {f: gpt_run(tool, f, mode, a.steps, a.threads) for f in GPT_FORMATS}
        for mode in GPT_MODES:
            runs = gpt[mode]
            base = runs["fp32"]["final_val_loss"]
            lines += [f"GPT of `mantissa train --model gpt` (4 layers, d 128, context 128, "
                      f"{runs['fp32']['params']} parameters), fortunes corpus, {a.steps} steps of "
                      f"16 x 128 bytes, precision mode {mode}", "",
                      "| moments | state bytes (weights and moments) | validation loss | "
                      "vs fp32 moments |", "|---|---|---|---|"]
            for f in GPT_FORMATS:
                r = runs[f]
                lines.append(f"| {f} | {r['state_bytes']} | {r['final_val_loss']:.4f} | "
                             f"{(r['final_val_loss'] / base - 1) * 100:+.2f}% |")
            lines.append("")
        svg(gpt[GPT_MODES[0]], os.path.join(a.out, "state_accuracy.svg"))
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(a.out, "state_accuracy.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(a.out, "state_accuracy.json"), "w") as fh:
        json.dump({"threads": a.threads, "epochs": a.epochs, "seeds": a.seeds, "steps": a.steps,
                   "mlp": mlp, "gpt": gpt}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
