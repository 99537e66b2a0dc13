#!/usr/bin/python3
"""The stable kernels side by side, in one run: mantissa, PyTorch (Debian's 1.13) and oneDNN
(Debian's libdnnl 2.6) on the same inputs -- softmax, log-softmax, LayerNorm and RMSNorm, forward
and backward, fp32 and bf16, 1 and 2 threads -- with speed (time per call, GB/s of the minimal
traffic, against a bandwidth probe with the same streams) and accuracy against an fp64
reference computed here (max ulp in the output dtype, MERE, MARE).

    /usr/bin/python3 scripts/bench_stable_kernels.py [--build build-test] [--threads 1,2]
        [--shapes 4096x4096,32x1048576,1048576x64] [--dtypes fp32,bf16] [--quick]
        [--json FILE] [--markdown FILE] [--svg FILE]

mantissa and oneDNN run in `bench_stable_kernels` (built with the benchmarks; oneDNN when
libdnnl-dev is installed), on inputs this script writes; PyTorch runs here with
torch.set_num_threads. oneDNN has no RMSNorm and PyTorch 1.13 none either (its row is the usual
composite x * rsqrt(mean(x^2) + eps) * g, with autograd for the backward pass). PyTorch's
LayerNorm takes weight and bias in the input's dtype (it has no fp32 weight with bf16 input), so
its bf16 rows use bf16 weight and bias; mantissa's and oneDNN's are fp32 holding the same values.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

OPS = ["softmax", "log_softmax", "layer_norm", "rms_norm"]
EPS_LN, EPS_RMS = 1e-5, 1e-6


def bf16_round(a64):
    """float64 -> the nearest bf16 (ties to even), returned as float32 values."""
    f = a64.astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def to_dtype(a64, dtype):
    return bf16_round(a64) if dtype == "bf16" else a64.astype(np.float32)


def raw(a32, dtype):
    """float32 values (already representable) -> the dtype's raw bytes."""
    if dtype == "bf16":
        return (a32.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return a32.astype(np.float32).tobytes()


def from_raw(path, dtype, shape):
    if dtype == "bf16":
        u = np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16
        return u.view(np.float32).reshape(shape)
    return np.fromfile(path, dtype=np.float32).reshape(shape)


def tt(a32, dtype):
    t = torch.from_numpy(np.ascontiguousarray(a32))
    return t.to(torch.bfloat16) if dtype == "bf16" else t


def softmax64(x, dim, log):
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=dim, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


def make_inputs(op, shape, dim, dtype, seed=0):
    """Inputs (float32 arrays holding dtype values) and the fp64 references of both passes."""
    rng = np.random.default_rng(seed)
    x = to_dtype(rng.standard_normal(shape) * 2.0, dtype)
    dy = to_dtype(rng.standard_normal(shape), dtype)
    n = shape[-1]
    inp = {"x": x, "dy": dy}
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    if op in ("softmax", "log_softmax"):
        log = op == "log_softmax"
        y64 = softmax64(x64, dim, log)
        y = to_dtype(y64, dtype)
        inp["y"] = y
        y_in = y.astype(np.float64)
        if log:
            dx64 = dy64 - np.exp(y_in) * dy64.sum(axis=dim, keepdims=True)
        else:
            dx64 = y_in * (dy64 - (dy64 * y_in).sum(axis=dim, keepdims=True))
        return inp, {"forward": y64, "backward": dx64}
    g = (1.0 + 0.25 * rng.standard_normal(n)).astype(np.float32)
    b = (0.5 * rng.standard_normal(n)).astype(np.float32)
    # bf16 values held in fp32 for a bf16 run, so that PyTorch's bf16 weight and bias (it takes
    # no other) hold the same values as mantissa's and oneDNN's fp32 ones.
    if dtype == "bf16":
        g, b = bf16_round(g.astype(np.float64)), bf16_round(b.astype(np.float64))
    inp["g"], inp["b"] = g, b
    if op == "layer_norm":
        m = x64.mean(axis=-1, keepdims=True)
        r = 1.0 / np.sqrt(((x64 - m) ** 2).mean(axis=-1, keepdims=True) + EPS_LN)
        out64 = (x64 - m) * r * g + b
        inp["mean"], inp["rstd"] = m.astype(np.float32), r.astype(np.float32)
        mi, ri = inp["mean"].astype(np.float64), inp["rstd"].astype(np.float64)
        xhat = (x64 - mi) * ri
        gg = dy64 * g
        dx64 = (gg - (gg.mean(axis=-1, keepdims=True) +
                      xhat * (gg * xhat).mean(axis=-1, keepdims=True))) * ri
        return inp, {"forward": out64, "backward": dx64}
    r = 1.0 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + EPS_RMS)
    out64 = x64 * r * g
    inp["rstd"] = r.astype(np.float32)
    ri = inp["rstd"].astype(np.float64)
    gg = dy64 * g
    dx64 = (gg - x64 * ri * (gg * x64 * ri).mean(axis=-1, keepdims=True)) * ri
    return inp, {"forward": out64, "backward": dx64}


def error_stats(got32, ref64, dtype):
    """max ulp (in the dtype, at the reference's magnitude), MERE and MARE."""
    got = got32.astype(np.float64).ravel()
    ref = ref64.ravel()
    finite = np.isfinite(ref)
    got, ref = got[finite], ref[finite]
    mant = 7 if dtype == "bf16" else 23
    mag = np.maximum(np.abs(ref), np.finfo(np.float32).tiny)
    ulp = np.ldexp(1.0, np.frexp(mag)[1] - 1 - mant)
    err = np.abs(got - ref)
    rel = err / np.maximum(np.abs(ref), 1e-30)
    # Normwise: the largest error against the largest value (outputs that cancel to near 0,
    # as backward passes have, make elementwise ulp and relative errors explode for everyone).
    norm = float(err.max() / max(np.abs(ref).max(), 1e-300))
    return {"max_ulp": float((err / ulp).max()), "mere": float(rel.mean()), "mare": float(rel.max()),
            "normwise": norm}


def time_call(fn, min_seconds):
    fn()
    samples, total = [], 0.0
    while len(samples) < 3 or (total < min_seconds and len(samples) < 200):
        t0 = time.perf_counter()
        fn()
        s = time.perf_counter() - t0
        samples.append(s)
        total += s
    samples.sort()
    return samples[len(samples) // 2]


def torch_call(op, passname, inp, dim, dtype):
    """A no-argument function running PyTorch's kernel, and the place its result lands."""
    x, dy = tt(inp["x"], dtype), tt(inp["dy"], dtype)
    n = x.shape[-1]
    res = {}
    if op in ("softmax", "log_softmax"):
        if passname == "forward":
            f = torch.softmax if op == "softmax" else torch.log_softmax
            return (lambda: res.__setitem__("out", f(x, dim))), res
        y = tt(inp["y"], dtype)
        bw = (torch.ops.aten._softmax_backward_data if op == "softmax"
              else torch.ops.aten._log_softmax_backward_data)
        return (lambda: res.__setitem__("out", bw(dy, y, dim, x.dtype))), res
    g, b = tt(inp["g"], dtype), tt(inp["b"], dtype)
    if op == "layer_norm":
        if passname == "forward":
            return (lambda: res.__setitem__(
                "out", torch.nn.functional.layer_norm(x, (n,), g, b, EPS_LN))), res
        _, mean, rstd = torch.native_layer_norm(x, [n], g, b, EPS_LN)
        mean = torch.from_numpy(inp["mean"]).to(mean.dtype).reshape(mean.shape)
        rstd = torch.from_numpy(inp["rstd"]).to(rstd.dtype).reshape(rstd.shape)
        return (lambda: res.__setitem__("out", torch.ops.aten.native_layer_norm_backward(
            dy, x, [n], mean, rstd, g, b, [True, True, True])[0])), res

    def rms(xx):
        return xx * torch.rsqrt(xx.pow(2).mean(-1, keepdim=True) + EPS_RMS) * g
    if passname == "forward":
        return (lambda: res.__setitem__("out", rms(x))), res
    xr = x.clone().requires_grad_(True)
    y = rms(xr)

    def back():
        xr.grad = None
        y.backward(dy, retain_graph=True)
        res["out"] = xr.grad
    return back, res


def probe_call(inp, passname, dtype):
    """The streams of the kernel at memory speed: forward reads x and writes out (a copy);
    backward reads dy and y (or x) and writes dx (an addition)."""
    x, dy = tt(inp["x"], dtype), tt(inp["dy"], dtype)
    out = torch.empty_like(x)
    if passname == "forward":
        return lambda: out.copy_(x)
    return lambda: torch.add(dy, x, out=out)


def run_native(exe, impl, op, passname, dtype, shape, dim, threads, indir, outdir, min_seconds):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MANTISSA_NUM_THREADS=str(threads))
    cmd = [exe, "--impl", impl, "--op", op, "--pass", passname, "--dtype", dtype, "--shape",
           "x".join(map(str, shape)), "--dim", str(dim), "--threads", str(threads), "--inputs",
           indir, "--min-seconds", str(min_seconds)]
    if outdir:
        cmd += ["--outputs", outdir]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout)["seconds"], ""


def svg_chart(rows, path):
    """GB/s per case of each implementation (fp32 and bf16, one thread), as grouped bars."""
    sel = [r for r in rows if r["threads"] == min(x["threads"] for x in rows)]
    impls = ["mantissa", "torch", "onednn", "probe"]
    colors = {"mantissa": "#1b7837", "torch": "#c2410c", "onednn": "#2563eb", "probe": "#9ca3af"}
    bar_h, gap = 7, 8
    top = 40
    height = top + len(sel) * (len(impls) * bar_h + gap) + 30
    vmax = max([r[i]["gbps"] for r in sel for i in impls if r.get(i) and r[i].get("gbps")] + [1])
    width, left = 980, 330
    scale = (width - left - 80) / vmax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="20" font-size="14">Stable kernels: GB/s of the minimal traffic, '
           f'{sel[0]["threads"] if sel else 1} thread (longer is faster)</text>']
    for j, i in enumerate(impls):
        out.append(f'<rect x="{left + j * 120}" y="26" width="10" height="10" fill="{colors[i]}"/>'
                   f'<text x="{left + j * 120 + 14}" y="35">{i}</text>')
    y = top
    for r in sel:
        label = f'{r["op"]} {r["pass"][:3]} {r["dtype"]} {r["shape"]}'
        out.append(f'<text x="10" y="{y + 2 * bar_h}">{label}</text>')
        for i in impls:
            v = r.get(i, {}).get("gbps") if r.get(i) else None
            if v:
                out.append(f'<rect x="{left}" y="{y}" width="{v * scale:.1f}" height="{bar_h - 1}" '
                           f'fill="{colors[i]}"/><text x="{left + v * scale + 3:.1f}" '
                           f'y="{y + bar_h - 1}" font-size="8">{v:.1f}</text>')
            y += bar_h
        y += gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-test")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shapes", default="4096x4096,32x1048576,1048576x64")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    ap.add_argument("--json", default="stable_kernels.json")
    ap.add_argument("--markdown", default="")
    ap.add_argument("--svg", default="stable_kernels.svg")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "bench_stable_kernels")
    if not os.path.exists(exe):
        sys.exit(f"{exe} is not built (build with the benchmarks)")
    shapes = [tuple(int(d) for d in s.split("x")) for s in a.shapes.split(",")]
    if a.quick:
        shapes, a.min_seconds = [(64, 1024), (256, 64)], 0.05
    # Softmax over a non-last dim as well (inner-contiguous tiles).
    cases = []
    for op in a.ops.split(","):
        for shape in shapes:
            cases.append((op, shape, -1))
        if op in ("softmax", "log_softmax"):
            cases.append((op, (32, 1024, 64) if a.quick else (64, 1024, 128), 1))
    threads = [int(t) for t in a.threads.split(",")]
    rows = []
    total = len(cases) * len(a.dtypes.split(",")) * 2 * len(threads)
    done = 0
    t_start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for op, shape, dim in cases:
            for dtype in a.dtypes.split(","):
                inp, ref = make_inputs(op, shape, dim, dtype)
                indir = os.path.join(tmp, "in")
                os.makedirs(indir, exist_ok=True)
                for k, v in inp.items():
                    with open(os.path.join(indir, k), "wb") as f:
                        f.write(raw(v, dtype) if k in ("x", "dy", "y") else v.tobytes())
                elems = int(np.prod(shape))
                esize = 2 if dtype == "bf16" else 4
                for passname in ("forward", "backward"):
                    streams = 2 if passname == "forward" else 3
                    nbytes = streams * elems * esize
                    for th in threads:
                        done += 1
                        row = {"op": op, "pass": passname, "dtype": dtype,
                               "shape": "x".join(map(str, shape)), "dim": dim, "threads": th,
                               "bytes": nbytes}
                        accuracy = th == threads[0]
                        for impl in ("mantissa", "onednn"):
                            if impl == "onednn" and op == "rms_norm":
                                row[impl] = None
                                continue
                            outdir = os.path.join(tmp, impl) if accuracy else ""
                            if outdir:
                                os.makedirs(outdir, exist_ok=True)
                            sec, err = run_native(exe, impl, op, passname, dtype, shape, dim,
                                                  th, indir, outdir, a.min_seconds)
                            if sec is None:
                                row[impl] = {"error": err}
                                continue
                            row[impl] = {"seconds": sec, "gbps": nbytes / sec / 1e9}
                            if accuracy:
                                name = "out" if passname == "forward" else "dx"
                                got = from_raw(os.path.join(outdir, name), dtype, shape)
                                row[impl].update(error_stats(got, ref[passname], dtype))
                        torch.set_num_threads(th)
                        fn, res = torch_call(op, passname, inp, dim, dtype)
                        sec = time_call(fn, a.min_seconds)
                        row["torch"] = {"seconds": sec, "gbps": nbytes / sec / 1e9}
                        if accuracy:
                            got = res["out"].float().numpy()
                            row["torch"].update(error_stats(got, ref[passname], dtype))
                        sec = time_call(probe_call(inp, passname, dtype), a.min_seconds)
                        row["probe"] = {"seconds": sec, "gbps": nbytes / sec / 1e9}
                        rows.append(row)
                        el = time.time() - t_start
                        print(f"[{done}/{total}] {op} {passname} {dtype} {row['shape']} dim {dim} "
                              f"{th}T: mantissa {fmt_ms(row['mantissa'])}, torch "
                              f"{fmt_ms(row['torch'])}, oneDNN {fmt_ms(row.get('onednn'))} "
                              f"({el:.0f} s)", file=sys.stderr, flush=True)
    meta = {"torch": torch.__version__, "numpy": np.__version__, "cpu": cpu_name(),
            "threads": threads}
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    table = markdown(rows)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table)
    if a.svg:
        svg_chart(rows, a.svg)
    print(f"wrote {a.json}" + (f", {a.svg}" if a.svg else ""), file=sys.stderr)


def fmt_ms(cell):
    if not cell:
        return "-"
    if "error" in cell:
        return "error"
    return f"{cell['seconds'] * 1e3:.2f} ms"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def markdown(rows):
    out = ["| op | pass | dtype | shape | dim | threads | mantissa ms | GB/s | % probe | torch ms "
           "| oneDNN ms | vs torch | vs oneDNN |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, t, o, p = r["mantissa"], r["torch"], r.get("onednn"), r["probe"]
        ok = lambda c: c and "seconds" in c  # noqa: E731
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["op"], r["pass"][:3], r["dtype"], r["shape"], r["dim"], r["threads"],
            f"{m['seconds'] * 1e3:.2f}" if ok(m) else "error",
            f"{m['gbps']:.1f}" if ok(m) else "-",
            f"{100 * m['gbps'] / p['gbps']:.0f}%" if ok(m) else "-",
            f"{t['seconds'] * 1e3:.2f}",
            f"{o['seconds'] * 1e3:.2f}" if ok(o) else "n/a",
            f"{t['seconds'] / m['seconds']:.2f}x" if ok(m) else "-",
            f"{o['seconds'] / m['seconds']:.2f}x" if ok(o) and ok(m) else "n/a"))
    out += ["", "Accuracy against fp64 (first thread count): max ulp in the output dtype, MARE, "
            "and normwise (max error / max |reference|).", "",
            "| op | pass | dtype | shape | dim | mantissa max ulp | MARE | normwise | torch max ulp "
            "| MARE | normwise | oneDNN max ulp | MARE | normwise |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for r in rows:
        key = (r["op"], r["pass"], r["dtype"], r["shape"], r["dim"])
        if key in seen or "max_ulp" not in (r["mantissa"] or {}):
            continue
        seen.add(key)
        cells = []
        for impl in ("mantissa", "torch", "onednn"):
            c = r.get(impl)
            if c and "max_ulp" in c:
                cells += [f"{c['max_ulp']:.1f}", f"{c['mare']:.1e}", f"{c['normwise']:.1e}"]
            else:
                cells += ["n/a", "n/a", "n/a"]
        out.append(f"| {r['op']} | {r['pass'][:3]} | {r['dtype']} | {r['shape']} | {r['dim']} | "
                   + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
