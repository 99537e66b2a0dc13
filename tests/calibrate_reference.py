#!/usr/bin/python3
"""Checks `mantissa calibrate` against numpy and against transcriptions of two published entropy
calibrators, on the histograms mantissa reports (--histogram).

    calibrate_reference.py MANTISSA_TOOL WORK_DIR

max: the threshold is np.abs(x).max() exactly. percentile: within one bin width of
np.percentile(np.abs(x), P). entropy: the candidate chosen equals the one MXNet's
_get_optimal_threshold (quantization.py, transcribed below for an |x| histogram: one-sided fold,
128 levels) chooses on the same counts after the zero-bin step; NVIDIA pytorch-quantization's
_compute_amax_entropy is transcribed too and its choice printed next to ours (it groups bins with
linspace/digitize, does not smooth, and takes the last minimum, so it may differ by a few bins).
"""
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np


def entropy(p, q):
    """scipy.stats.entropy(p, q): both normalised, sum p log(p / q)."""
    p = np.asarray(p, np.float64) / np.sum(p)
    q = np.asarray(q, np.float64) / np.sum(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / q), 0.0)
    return float(np.sum(terms))


def smooth_distribution(p, eps=0.0001):
    """MXNet's _smooth_distribution (kept in float64 here; MXNet casts to float32)."""
    is_zeros = (p == 0).astype(np.float64)
    is_nonzeros = (p != 0).astype(np.float64)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError("all zeros")
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    return p.astype(np.float64) + eps * is_zeros + (-eps1) * is_nonzeros


def mxnet_entropy(hist, num_quantized_bins=128):
    """MXNet's search, one-sided: candidates i in [128, len(hist)], P = hist[:i] with the
    outliers folded into its last bin, Q = hist[:i] merged into 128 levels and spread over P's
    nonzero bins. Returns (i, divergence)."""
    hist = np.asarray(hist, np.float64)
    best_i, best_d = None, np.inf
    for i in range(num_quantized_bins, len(hist) + 1):
        sliced = hist[:i]
        p = sliced.copy()
        p[-1] += hist[i:].sum()
        is_nonzeros = (p != 0).astype(np.int64)
        merged = sliced.size // num_quantized_bins
        quantized = np.zeros(num_quantized_bins)
        for j in range(num_quantized_bins):
            quantized[j] = sliced[j * merged:(j + 1) * merged].sum()
        quantized[-1] += sliced[num_quantized_bins * merged:].sum()
        q = np.zeros(sliced.size)
        for j in range(num_quantized_bins):
            start = j * merged
            stop = len(is_nonzeros) if j == num_quantized_bins - 1 else start + merged
            norm = is_nonzeros[start:stop].sum()
            if norm != 0:
                q[start:stop] = quantized[j] / norm
        q[p == 0] = 0
        try:
            p = smooth_distribution(p)
        except ValueError:
            continue
        try:
            q = smooth_distribution(q)
            d = entropy(p, q)
        except ValueError:
            d = np.inf
        if d < best_d:
            best_i, best_d = i, d
    return best_i, best_d


def pytorch_quantization_entropy(hist, nbins=128, start_bin=128):
    """NVIDIA pytorch-quantization's _compute_amax_entropy (signed 8 bits: 128 levels); returns
    the chosen i (its threshold is the bin edge i * width)."""
    bins = np.asarray(hist, np.float64).copy()
    bins[0] = bins[1]
    divergences, arguments = [], []
    for i in range(start_bin, len(bins) + 1):
        space = np.linspace(0, i, num=nbins + 1)
        digitized = np.digitize(range(i), space) - 1
        digitized[bins[:i] == 0] = -1
        counts = np.zeros(nbins)
        for idx, dg in enumerate(digitized):
            if dg != -1:
                counts[dg] += bins[idx]
        for key, val in Counter(digitized).items():
            if key != -1:
                counts[key] = counts[key] / val
        new = np.zeros(i)
        for idx, dg in enumerate(digitized):
            if dg != -1:
                new[idx] = counts[dg]
        ref = np.array(bins[:i])
        ref[-1] += np.sum(bins[i:])
        divergences.append(entropy(ref, new) if new.sum() > 0 else np.inf)
        arguments.append(i)
    divergences = np.array(divergences)
    last = len(divergences) - 1 - int(np.argmin(divergences[::-1]))
    return arguments[last]


def main():
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261130)
    data = {
        "normal": rng.standard_normal((512, 64)).astype(np.float32),
        "heavy": rng.standard_t(3, 60000).astype(np.float32),
        "outliers": np.concatenate([rng.standard_normal(50000), [80.0, -120.0, 95.0]]).astype(np.float32),
    }
    os.makedirs(os.path.join(work, "relu"), exist_ok=True)
    relu = []
    for b in range(4):
        x = (np.maximum(rng.standard_normal((128, 96)), 0) * (1 + b)).astype(np.float32)
        np.save(os.path.join(work, "relu", f"b{b}.npy"), x)
        relu.append(x)
    data["relu"] = np.concatenate([r.ravel() for r in relu])
    files = []
    for name in ("normal", "heavy", "outliers"):
        np.save(os.path.join(work, name + ".npy"), data[name])
        files.append(os.path.join(work, name + ".npy"))
    files.append(os.path.join(work, "relu"))

    failures = 0
    reports = {}
    for method in ("max", "percentile", "entropy"):
        out = os.path.join(work, method + ".json")
        subprocess.run([tool, "calibrate", *files, "--method", method, "--percentile", "99.9",
                        "--histogram", "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            reports[method] = {t["name"]: t for t in json.load(f)["tensors"]}

    for name, x in data.items():
        a = np.abs(x.astype(np.float64))
        mx = reports["max"][name]
        if mx["threshold"] != float(a.max()):
            print(f"FAIL {name} max: {mx['threshold']} != {a.max()}")
            failures += 1
        pc = reports["percentile"][name]
        want = float(np.percentile(a, 99.9))
        width = pc["histogram"]["bin_width"]
        if abs(pc["threshold"] - want) > width:
            print(f"FAIL {name} percentile: {pc['threshold']} vs numpy {want} (bin width {width})")
            failures += 1
        en = reports["entropy"][name]
        counts = np.array(en["histogram"]["counts"], np.float64)
        counts[0] = counts[1]  # the zero-bin step (documented), applied to both
        ref_i, ref_d = mxnet_entropy(counts)
        ptq_i = pytorch_quantization_entropy(np.array(en["histogram"]["counts"], np.float64))
        ok = en["bin"] == ref_i or abs(en["divergence"] - ref_d) <= 1e-9 * max(ref_d, 1e-300)
        print(f"{name:9s} entropy: mantissa bin {en['bin']} (KL {en['divergence']:.6g}), "
              f"MXNet transcription bin {ref_i} (KL {ref_d:.6g}), pytorch-quantization bin "
              f"{ptq_i}; max {mx['threshold']:.6g}, percentile(99.9) {pc['threshold']:.6g} "
              f"vs numpy {want:.6g}")
        if not ok:
            print(f"FAIL {name} entropy: mantissa chose {en['bin']}, MXNet's method {ref_i}")
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
