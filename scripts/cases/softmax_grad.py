# Writes cases/softmax_grad/*.json and cases/log_softmax_grad/*.json (SoftmaxGrad and
# LogSoftmaxGrad: accuracy against fp64 and bitwise against golden32). Run from the repository
# root with any Python 3 (no third-party modules).
#
# `output` is the forward's output: realistic inputs give it as explicit values (a softmax or
# log-softmax of seeded random logits, computed here in double; the kit rounds them to the
# dtype), larger ones as a uniform range of the right magnitude. The gradients include a large
# common offset (dy = 1000 + N(0, 1)), where dy - sum(dy * y) cancels, and constant rows.
import json
import math
import os
import random


def nd(mean, std):
    return {"name": "nd", "mean": [mean, mean], "std": [std, std]}


def nd_range(mean, std):
    return {"name": "nd", "mean": mean, "std": std}


def uniform(lo, hi):
    return {"name": "uniform", "range": [lo, hi]}


def const(v):
    return {"name": "const", "value": v}


def values(vals):
    return {"name": "special", "values": vals}


def forward_rows(shape, dim, log, seed, scale=2.0):
    """The softmax (or log-softmax) over dim of seeded N(0, scale) logits, row-major."""
    rng = random.Random(seed)
    n = 1
    for s in shape:
        n *= s
    logits = [rng.gauss(0.0, scale) for _ in range(n)]
    rank = len(shape)
    d = dim % rank if rank else 0
    outer = 1
    for s in shape[:d]:
        outer *= s
    axis = shape[d] if rank else 1
    inner = 1
    for s in shape[d + 1:]:
        inner *= s
    y = [0.0] * n
    for o in range(outer):
        for i in range(inner):
            idx = [o * axis * inner + a * inner + i for a in range(axis)]
            m = max(logits[k] for k in idx)
            s = sum(math.exp(logits[k] - m) for k in idx)
            for k in idx:
                y[k] = (logits[k] - m) - math.log(s) if log else math.exp(logits[k] - m) / s
    return [float("%.9g" % v) for v in y]


def case(op, cid, std, shape, dtype, dy, y, dim):
    inputs = [
        {"name": "grad_output", "type": "tensor", "dtype": dtype, "shape": shape,
         "range_values": dy, "required": True},
        {"name": "output", "type": "tensor", "dtype": dtype, "shape": shape,
         "range_values": y, "required": True},
        {"name": "dim", "type": "attr", "dtype": "int64", "range_values": dim,
         "required": False},
    ]
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid,
            "standard": {"acc": std}, "inputs": inputs}


def cases_for(op, log):
    single, bitwise = {"single_bm": {}}, {"bitwise": {}}
    bm, bit = [], []

    def y_uniform(n):  # the magnitude of a softmax (or log-softmax) over n elements
        if log:
            return uniform(-math.log(n) - 4.0, -math.log(n) + 1.0)
        return uniform(0.0, 2.0 / n)

    for dt in ["fp32", "fp16", "bf16"]:
        # Realistic: the forward's output of random logits, dy ~ N(mean, std).
        for cid, shape, dim in [("last", [16, 128], -1), ("dim1", [4, 64, 8], 1),
                                ("dim0", [40, 3, 17], 0)]:
            y = values(forward_rows(shape, dim, log, seed=len(cid) * 7 + len(shape)))
            bm.append(case(op, f"{cid}_{dt}", single, shape, dt,
                           nd_range([-1, 1], [0.5, 2]), y, dim))
        # Large offsets: dy = 1000 + N(0, 1) (softmax: dy - sum(dy * y) cancels to ~1e-3 of dy).
        y = values(forward_rows([8, 256], -1, log, seed=3))
        bm.append(case(op, f"offset_{dt}", single, [8, 256], dt, nd(1000.0, 1.0), y, -1))
        y = values(forward_rows([64, 4, 8], 0, log, seed=5))
        bm.append(case(op, f"offset_dim0_{dt}", single, [64, 4, 8], dt, nd(-300.0, 0.5), y, 0))
        # Larger shapes with output of the right magnitude.
        for cid, shape, dim in [("wide", [8, 1000], -1), ("dim0_wide", [300, 5, 70], 0),
                                ("dim1_rank4", [3, 257, 4, 33], 1)]:
            bm.append(case(op, f"{cid}_{dt}", single, shape, dt, nd_range([-1, 1], [0.5, 2]),
                           y_uniform(shape[dim]), dim))
    bm.append(case(op, "long_row_fp32", single, [2, 70000], "fp32", nd(0.0, 1.0),
                   y_uniform(70000), -1))
    bm.append(case(op, "long_col_fp32", single, [9000, 3], "fp32", nd(0.0, 1.0),
                   y_uniform(9000), -2))

    for dt in ["fp32", "fp16", "bf16"]:
        # Bitwise against golden32: row lengths around the vector widths, the 32 lanes and a
        # 4096 block, every dim of a rank-4 tensor, and special rows.
        for n in [1, 3, 31, 33, 4097]:
            bit.append(case(op, f"len{n}_{dt}", bitwise, [3, n], dt, nd(0.0, 1.0),
                            y_uniform(n), -1))
        for dim in range(-4, 4):
            bit.append(case(op, f"rank4_dim{dim}_{dt}", bitwise, [5, 7, 3, 70], dt,
                            nd(0.0, 1.0), y_uniform([5, 7, 3, 70][dim]), dim))
        bit.append(case(op, f"long_axis0_{dt}", bitwise, [5000, 3], dt, nd(0.0, 1.0),
                        y_uniform(5000), 0))
        bit.append(case(op, f"offset_{dt}", bitwise, [8, 256], dt, nd(1000.0, 1.0),
                        values(forward_rows([8, 256], -1, log, seed=3)), -1))
        # Rows of equal values: uniform output (1/n, -log n), constant dy.
        eq = -math.log(8.0) if log else 0.125
        bit.append(case(op, f"equal_rows_{dt}", bitwise, [4, 8], dt, const(0.75), const(eq), -1))
        bit.append(case(op, f"equal_rows_dim0_{dt}", bitwise, [8, 5], dt, const(-2.5),
                        const(eq), 0))
        # Special rows (length 5): the forward's output of an all -inf row (NaN), of a row with
        # -inf among finite values (0, or -inf for log-softmax), inf and NaN gradients, zeros.
        zero = "-inf" if log else 0.0
        rows_y = [["nan"] * 5,
                  [0.1, zero, 0.2, zero, 0.7] if not log else [-2.3, "-inf", -1.6, "-inf", -0.36],
                  [0.2] * 5 if not log else [-1.6094] * 5,
                  [0.5, 0.5, 0.0, 0.0, 0.0] if not log else [-0.69, -0.69, "-inf", "-inf", "-inf"],
                  [0.2] * 5 if not log else [-1.6094] * 5]
        rows_dy = [[1.0, 2.0, 3.0, 4.0, 5.0],
                   [1.0, 2.0, 3.0, 4.0, 5.0],
                   [1.0, "inf", 3.0, 4.0, 5.0],
                   ["nan", 1.0, 2.0, 3.0, 4.0],
                   ["-0.0", "0.0", "-0.0", "0.0", "-0.0"]]
        flat_y = [v for r in rows_y for v in r]
        flat_dy = [v for r in rows_dy for v in r]
        bit.append(case(op, f"special_{dt}", bitwise, [5, 5], dt, values(flat_dy),
                        values(flat_y), -1))
        tr = lambda flat: [flat[j * 5 + i] for i in range(5) for j in range(5)]
        bit.append(case(op, f"special_dim0_{dt}", bitwise, [5, 5], dt, values(tr(flat_dy)),
                        values(tr(flat_y)), 0))
        bit.append(case(op, f"rank1_{dt}", bitwise, [37], dt, nd(0.0, 1.0), y_uniform(37), 0))
        if not log:
            bit.append(case(op, f"rank0_{dt}", bitwise, [], dt, nd(0.0, 1.0), const(1.0), 0))
        bit.append(case(op, f"empty_{dt}", bitwise, [0, 7], dt, nd(0.0, 1.0), y_uniform(7), -1))
    return bm, bit


for op, name, log in [("SoftmaxGrad", "softmax_grad", False),
                      ("LogSoftmaxGrad", "log_softmax_grad", True)]:
    bm, bit = cases_for(op, log)
    os.makedirs(f"cases/{name}", exist_ok=True)
    for kind, cases in [("single_bm", bm), ("bitwise", bit)]:
        with open(f"cases/{name}/{kind}_{name}.json", "w") as f:  # one case per line
            f.write("[\n" + ",\n".join("  " + json.dumps(c) for c in cases) + "\n]\n")
