#!/usr/bin/python3
"""Matrix products side by side: mantissa, OpenBLAS and oneDNN on the same shapes, operands and
thread counts, against the FMA peak of the SIMD target mantissa runs -- GFLOP/s per (shape, dtype,
peer, threads), as a markdown table, a JSON file and an SVG bar chart.

    /usr/bin/python3 scripts/bench_matmul.py [--build build-test] [--threads 1,2] [--large]
        [--filter REGEX] [--min-time SECONDS] [--repetitions N]
        [--openblas-coretype auto|none|NAME] [--json FILE] [--svg FILE] [--markdown FILE]

The table goes to stdout, progress to stderr; --json (every number, the runs' contexts and
Google Benchmark's raw output), --svg (grouped bars per shape, one colour per peer, an fp32 and a
bf16 panel) and --markdown are written only where asked.

It builds nothing: it runs DIR/bench/bench_matmul (bench/bench_matmul.cc, built with the
benchmarks) once per thread count, as `bench_matmul --threads=N --benchmark_format=json ...` with
OMP_NUM_THREADS=N and OPENBLAS_NUM_THREADS=N in its environment (oneDNN runs on OpenMP; OpenBLAS
starts its pthreads from that). --filter is a Google Benchmark regex over the names
(matmul/<fp32|bf16>/<peer>/<shape>, e.g. '256x|attention'); the FMA probe (peak/...) always runs.

OpenBLAS 0.3.21 (Debian's, DYNAMIC_ARCH) picks its kernels from the CPU model, and falls back to
its oldest x86-64 kernels (Prescott, SSE3) on a model it does not know, e.g. Emerald Rapids.
--openblas-coretype auto (the default) asks the binary which kernels OpenBLAS chose and, where
that is not the best family for the CPU's features, runs OpenBLAS with OPENBLAS_CORETYPE set to
it (Cooperlake for AVX-512 with BF16, SkylakeX for AVX-512, Haswell for AVX2); the table says so.
'none' keeps OpenBLAS's own choice; a NAME forces that one. An OPENBLAS_CORETYPE already in the
environment is kept.

% of peak is mantissa's GFLOP/s over the fp32 FMA probe's at the same thread count (the bf16
rows too: mantissa widens bf16 operands to fp32 and multiplies with fp32 FMAs). oneDNN's bf16
kernels may use AMX, which this peak does not bound.
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

PEERS = ["mantissa", "openblas", "onednn"]
PEER_TITLES = {"mantissa": "mantissa", "openblas": "OpenBLAS", "onednn": "oneDNN"}
PEER_COLOURS = {"mantissa": "#1f77b4", "openblas": "#ff7f0e", "onednn": "#2ca02c"}
DTYPES = ["fp32", "bf16"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-test", help="build directory (default build-test)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--large", action="store_true", help="add the 4096^3 square")
    ap.add_argument("--filter", default="", help="Google Benchmark regex over the benchmark names")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="--benchmark_min_time per benchmark, seconds (default 0.5)")
    ap.add_argument("--repetitions", type=int, default=1,
                    help="repetitions per benchmark; the median is reported (default 1)")
    ap.add_argument("--openblas-coretype", default="auto",
                    help="auto (default), none, or an OPENBLAS_CORETYPE name such as SkylakeX")
    ap.add_argument("--json", default="", help="write all numbers and the context here")
    ap.add_argument("--svg", default="", help="write the bar chart here")
    ap.add_argument("--markdown", default="", help="also write the table to this file")
    a = ap.parse_args()
    try:
        a.thread_list = sorted({int(t) for t in a.threads.split(",") if t.strip()})
    except ValueError:
        ap.error(f"--threads: not a list of counts: {a.threads!r}")
    if not a.thread_list or min(a.thread_list) < 1:
        ap.error("--threads: counts must be >= 1")
    return a


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_env(threads, coretype):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def print_context(exe, threads, coretype):
    """The binary's context (which BLAS kernels, which SIMD target), running nothing."""
    out = subprocess.run([exe, f"--threads={threads}", "--print-context"], check=True,
                         env=run_env(threads, coretype), stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout)


def pick_coretype(exe, option, threads):
    """(OPENBLAS_CORETYPE to run with or None, the corename OpenBLAS detected, a sentence)."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        core = os.environ["OPENBLAS_CORETYPE"]
        return core, None, f"OPENBLAS_CORETYPE={core} from the environment"
    ctx = print_context(exe, threads, None)
    detected = ctx.get("openblas_corename")
    if detected is None:
        return None, None, "OpenBLAS not built into bench_matmul"
    if option == "none":
        return None, detected, "OpenBLAS's own choice"
    if option != "auto":
        return option, detected, f"OPENBLAS_CORETYPE={option} (--openblas-coretype; OpenBLAS " \
                                 f"detected {detected})"
    features = set(ctx.get("mantissa_cpu_features", "").split())
    if "avx512f" in features:
        good = {"SkylakeX", "Cooperlake", "SapphireRapids"}
        want = "Cooperlake" if "avx512bf16" in features else "SkylakeX"
    elif "avx2" in features and "fma" in features:
        good = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}
        want = "Haswell"
    else:
        return None, detected, "OpenBLAS's own choice"
    if detected in good:
        return None, detected, "OpenBLAS's own choice"
    return want, detected, (f"OpenBLAS chose {detected} kernels on this CPU, "
                            f"forced OPENBLAS_CORETYPE={want}")


def run_bench(exe, threads, a, coretype):
    cmd = [exe, f"--threads={threads}", "--benchmark_format=json",
           f"--benchmark_min_time={a.min_time}"]
    if a.large:
        cmd.append("--large")
    if a.filter:
        cmd.append(f"--benchmark_filter=peak|({a.filter})")
    if a.repetitions > 1:
        cmd += [f"--benchmark_repetitions={a.repetitions}",
                "--benchmark_report_aggregates_only=true"]
    env = run_env(threads, coretype)
    shown = " ".join(f"{k}={env[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                "OPENBLAS_CORETYPE") if k in env)
    log(f"run: {shown} {' '.join(cmd)}")
    t0 = time.time()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_matmul exited with {out.returncode}")
    data = json.loads(out.stdout)
    n = len(data.get("benchmarks", []))
    errors = sum(1 for b in data.get("benchmarks", []) if b.get("error_occurred"))
    log(f"  threads={threads}: {n} results in {time.time() - t0:.1f} s"
        + (f", {errors} with errors" if errors else ""))
    return data


def results_of(data):
    """The benchmark entries to use: the medians where there are repetitions."""
    entries = data.get("benchmarks", [])
    medians = {b["run_name"]: b for b in entries
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    errors = {b.get("run_name", b["name"]): b for b in entries if b.get("error_occurred")}
    chosen = {}
    for b in entries:
        run_name = b.get("run_name", b["name"])
        if run_name in chosen:
            continue
        if run_name in errors:
            chosen[run_name] = errors[run_name]
        elif run_name in medians:
            chosen[run_name] = medians[run_name]
        elif b.get("run_type", "iteration") == "iteration":
            chosen[run_name] = b
    return list(chosen.values())


def shape_title(name):
    m = re.fullmatch(r"attention(\d+)x(\d+)x(\d+)x(\d+)", name)
    if m:
        b, mm, k, n = m.groups()
        return f"{b} x ({mm}x{k} @ {k}x{n})"
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)(_trans[AB])?", name)
    if m:
        mm, k, n, t = m.groups()
        text = f"{mm}x{k} @ {k}x{n}"
        if t == "_transA":
            text += " (A^T view)"
        elif t == "_transB":
            text += " (B^T view)"
        return text
    return name


def collect(runs):
    """rows keyed by (shape, dtype, threads), peaks by thread count, shape order."""
    rows, peaks, order = {}, {}, []
    for threads, data in runs:
        for b in results_of(data):
            parts = b.get("run_name", b["name"]).split("/")
            if parts[0] == "peak":
                if not b.get("error_occurred") and "flops" in b:
                    t = int(b.get("threads", 0)) or int(re.match(r"\d+", parts[3]).group())
                    peaks[t] = max(peaks.get(t, 0.0), b["flops"] / 1e9)
                continue
            if parts[0] != "matmul" or len(parts) < 4:
                continue
            dtype, peer, shape = parts[1], parts[2], parts[3]
            if shape not in order:
                order.append(shape)
            row = rows.setdefault((shape, dtype, threads), {"shape": shape, "dtype": dtype,
                                                            "threads": threads, "gflops": {},
                                                            "labels": {}, "errors": {}})
            if b.get("error_occurred"):
                row["errors"][peer] = b.get("error_message", "error")
            else:
                row["gflops"][peer] = b["flops"] / 1e9
                row["labels"][peer] = b.get("label", peer)
    return rows, peaks, order


def ordered_rows(rows, order):
    out = []
    for dtype in DTYPES:
        for shape in order:
            for (s, d, t) in sorted(k for k in rows if k[0] == shape and k[1] == dtype):
                out.append(rows[(s, d, t)])
    for row in out:
        g = row["gflops"]
        peak = row.get("peak")
        row["pct_peak"] = 100.0 * g["mantissa"] / peak if peak and "mantissa" in g else None
        for peer in ("openblas", "onednn"):
            row[f"mantissa_over_{peer}"] = (g["mantissa"] / g[peer]
                                            if "mantissa" in g and g.get(peer) else None)
    return out


def cell(row, peer):
    if peer in row["gflops"]:
        return f"{row['gflops'][peer]:.1f}"
    if peer in row["errors"]:
        return "error"
    return "n/a"


def ratio(x):
    return f"{x:.2f}x" if x is not None else "n/a"


def markdown(rows, peaks, meta):
    lines = ["| shape | dtype | threads | mantissa GFLOP/s | % of peak | OpenBLAS GFLOP/s | "
             "mantissa/OpenBLAS | oneDNN GFLOP/s | mantissa/oneDNN |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        pct = f"{r['pct_peak']:.0f}%" if r["pct_peak"] is not None else "n/a"
        lines.append(f"| {shape_title(r['shape'])} | {r['dtype']} | {r['threads']} | "
                     f"{cell(r, 'mantissa')} | {pct} | {cell(r, 'openblas')} | "
                     f"{ratio(r['mantissa_over_openblas'])} | {cell(r, 'onednn')} | "
                     f"{ratio(r['mantissa_over_onednn'])} |")
    lines.append("")
    lines += meta_lines(rows, peaks, meta)
    errors = [(r, p, e) for r in rows for p, e in r["errors"].items()]
    for r, p, e in errors:
        lines.append(f"- error: {p} {r['dtype']} {r['shape']} threads={r['threads']}: {e}")
    return "\n".join(lines) + "\n"


def meta_lines(rows, peaks, meta):
    ctx = meta["context"]
    lines = []
    if "openblas_config" in ctx:
        sb = "cblas_sbgemm present" if ctx.get("openblas_sbgemm") == "yes" else \
            "no cblas_sbgemm in this build: no OpenBLAS bf16 rows"
        lines.append(f"- OpenBLAS: `{ctx['openblas_config'].strip()}`, kernels "
                     f"{ctx.get('openblas_corename', '?')} ({meta['openblas_choice']}); "
                     f"{ctx.get('openblas_parallel', '?')}; {sb}; "
                     f"{ctx.get('openblas_library', '')}")
    else:
        lines.append("- OpenBLAS: not built into bench_matmul")
    if "onednn_version" in ctx:
        impls = sorted({f"{r['dtype']}: {r['labels']['onednn'].split(' ', 1)[-1]}"
                        for r in rows if "onednn" in r["labels"]})
        lines.append(f"- oneDNN {ctx['onednn_version']}, CPU runtime "
                     f"{ctx.get('onednn_cpu_runtime', '?')} "
                     f"({ctx.get('onednn_omp_library', 'no OpenMP library found')}), ISA "
                     f"{ctx.get('onednn_effective_isa', '?')}; kernels: "
                     f"{', '.join(impls) if impls else 'none ran'}")
    else:
        lines.append("- oneDNN: not built into bench_matmul")
    lines.append(f"- SIMD target: mantissa {ctx.get('mantissa_simd_target', '?')}, FMA probe "
                 f"{ctx.get('fma_probe_target', '?')} ({ctx.get('fma_probe_lanes', '?')} fp32 "
                 f"lanes, {ctx.get('fma_probe_accumulators', '?')} accumulators); CPU "
                 f"{meta['cpu']}")
    peak_text = ", ".join(f"{t} thread{'s' if t > 1 else ''}: {g:.1f} GFLOP/s"
                          for t, g in sorted(peaks.items()))
    lines.append(f"- fp32 FMA peak (register-only probe): {peak_text or 'not measured'}")
    over = [r for r in rows if r["pct_peak"] is not None and r["pct_peak"] > 105]
    if over:
        lines.append(f"- warning: {len(over)} row(s) above 105% of the measured peak: the probe "
                     f"was disturbed (a busy machine?) or ran too briefly (--min-time)")
    return lines


def nice_step(vmax, ticks=4):
    """A round step (1, 2 or 5 times a power of ten) giving about `ticks` gridlines to vmax."""
    raw = max(vmax, 1e-9) / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def svg_chart(rows, peaks, path, title):
    """Grouped bars per (shape, threads), one colour per peer; an fp32 and a bf16 panel. A dashed
    line over each group marks the fp32 FMA peak at its thread count."""
    bar_w, gap, top, panel_h, char_w = 11, 14, 50, 260, 6.2
    panels = [(d, [r for r in rows if r["dtype"] == d]) for d in DTYPES]
    panels = [(d, rs) for d, rs in panels if rs]
    groups = max((len(rs) for _, rs in panels), default=1)
    group_w = bar_w * len(PEERS) + gap
    labels = {id(r): f"{shape_title(r['shape'])} | {r['threads']}t" for _, rs in panels
              for r in rs}
    longest = max((len(t) for t in labels.values()), default=10) * char_w
    # Labels run down and to the left at 40 degrees from under their group.
    left = max(70, int(longest * math.cos(math.radians(40)) - group_w / 2 + 20))
    label_h = int(longest * math.sin(math.radians(40)) + 24)
    width = max(left + groups * group_w + 30, 760)
    height = top + len(panels) * (panel_h + label_h + 48) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    lx = 10
    for peer in PEERS:
        out.append(f'<rect x="{lx}" y="29" width="12" height="12" fill="{PEER_COLOURS[peer]}"/>')
        out.append(f'<text x="{lx + 16}" y="39">{escape(PEER_TITLES[peer])}</text>')
        lx += 100
    out.append(f'<line x1="{lx}" y1="35" x2="{lx + 16}" y2="35" stroke="black" '
               f'stroke-dasharray="3,2"/>')
    out.append(f'<text x="{lx + 20}" y="39">fp32 FMA peak, same thread count</text>')
    y0 = top
    for dtype, rs in panels:
        vmax = max([v for r in rs for v in r["gflops"].values()] +
                   [peaks.get(r["threads"], 0.0) for r in rs] + [1.0])
        step = nice_step(vmax)
        top_value = step * math.ceil(vmax / step)
        scale = panel_h / top_value
        base = y0 + 28 + panel_h
        out.append(f'<text x="10" y="{y0 + 12}" font-weight="bold">'
                   f'{escape(dtype)} operands, fp32 out: GFLOP/s</text>')
        v = 0.0
        while v <= top_value + step / 2:
            y = base - v * scale
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" '
                       f'stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
            v += step
        for gi, r in enumerate(rs):
            gx = left + gi * group_w + gap / 2
            for pi, peer in enumerate(PEERS):
                x = gx + pi * bar_w
                if peer in r["gflops"]:
                    value = r["gflops"][peer]
                    h = value * scale
                    tip = (f"{PEER_TITLES[peer]} {dtype} {shape_title(r['shape'])}, "
                           f"{r['threads']} thread(s): {value:.1f} GFLOP/s")
                    out.append(f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar_w - 1}" '
                               f'height="{h:.1f}" fill="{PEER_COLOURS[peer]}">'
                               f'<title>{escape(tip)}</title></rect>')
            peak = peaks.get(r["threads"])
            if peak:
                y = base - peak * scale
                out.append(f'<line x1="{gx - 2:.1f}" y1="{y:.1f}" '
                           f'x2="{gx + bar_w * len(PEERS) + 1:.1f}" y2="{y:.1f}" stroke="black" '
                           f'stroke-dasharray="3,2"/>')
            cx = gx + bar_w * len(PEERS) / 2
            out.append(f'<text x="{cx:.1f}" y="{base + 12}" text-anchor="end" '
                       f'transform="rotate(-40 {cx:.1f} {base + 12})">'
                       f'{escape(labels[id(r)])}</text>')
        out.append(f'<line x1="{left}" y1="{base}" x2="{width - 20}" y2="{base}" '
                   f'stroke="black"/>')
        y0 = base + label_h + 20
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def cpu_name():
    """"Intel(R) Xeon(R) Processor, family 6 model 207, 2 CPUs" (the model number names the
    core where a VM masks the name)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += f", family {fields['cpu family']} model {fields['model']}"
    return f"{name}, {os.cpu_count()} CPUs"


def main():
    a = parse_args()
    exe = os.path.join(a.build, "bench", "bench_matmul")
    if not os.access(exe, os.X_OK):
        sys.exit(f"{exe} not found: build it first (ninja -C {a.build} bench/bench_matmul)")
    coretype, detected, choice = pick_coretype(exe, a.openblas_coretype, a.thread_list[0])
    log(f"OpenBLAS: {choice}")
    runs, contexts = [], {}
    for i, threads in enumerate(a.thread_list, 1):
        log(f"[{i}/{len(a.thread_list)}] threads={threads}")
        data = run_bench(exe, threads, a, coretype)
        runs.append((threads, data))
        contexts[threads] = data.get("context", {})
        core = contexts[threads].get("openblas_corename")
        if coretype and core and core != coretype:
            log(f"  warning: OPENBLAS_CORETYPE={coretype} asked, OpenBLAS ran {core}")
    rows, peaks, order = collect(runs)
    for r in rows.values():
        r["peak"] = peaks.get(r["threads"])
    table = ordered_rows(rows, order)
    ctx = contexts[a.thread_list[0]]
    meta = {"context": ctx, "openblas_choice": choice, "cpu": cpu_name()}
    text = markdown(table, peaks, meta)
    print(text, end="")
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    if a.json:
        doc = {
            "args": {k: v for k, v in vars(a).items()},
            "cpu": meta["cpu"],
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "openblas_coretype": coretype,
            "openblas_detected": detected,
            "openblas_choice": choice,
            "peak_gflops": {str(t): g for t, g in sorted(peaks.items())},
            "rows": [{"shape": r["shape"], "shape_title": shape_title(r["shape"]),
                      "dtype": r["dtype"], "threads": r["threads"], "gflops": r["gflops"],
                      "labels": r["labels"], "errors": r["errors"], "peak_gflops": r["peak"],
                      "pct_peak": r["pct_peak"],
                      "mantissa_over_openblas": r["mantissa_over_openblas"],
                      "mantissa_over_onednn": r["mantissa_over_onednn"]} for r in table],
            "contexts": {str(t): c for t, c in contexts.items()},
            "raw": {str(t): d for t, d in runs},
        }
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if a.svg:
        svg_chart(table, peaks, a.svg, f"Matrix products, GFLOP/s ({meta['cpu']})")
    wrote = [p for p in (a.json, a.svg, a.markdown) if p]
    if wrote:
        log(f"wrote {', '.join(wrote)}")


if __name__ == "__main__":
    main()
