# Writes cases/apply_adam_w_quant/*.json. Run from the repository root.
import json
import numpy as np

def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def uniform(lo, hi): return {"name": "uniform", "range": [lo, hi]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}

# bitsandbytes' dynamic maps by the documented rule (as mantissa::dynamic_quant_map): for
# e = -6..0, the midpoints of 2^k equal parts of [0.1, 1] (k = e + 6, one more unsigned) times
# 10^e, their negatives when signed, 0 and 1; each computed in double, rounded once to fp32.
def dynamic_map(signed):
    scale = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    out = [0.0, 1.0]
    for e in range(7):
        items = (1 << e) if signed else (2 << e)
        for j in range(items):
            mid = 0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * items)
            out.append(float(np.float32(scale[e] * mid)))
            if signed:
                out.append(float(np.float32(-(scale[e] * mid))))
    assert len(out) == 256
    return sorted(out)

QM, QV = dynamic_map(True), dynamic_map(False)

def case(cid, dt, shape, block=256, step=9, wd=0.01, gnorm=1.0, grad=None, absmax_m=None,
         absmax_v=None, lr=1e-3, qm=None, qv=None):
    n = int(np.prod(shape))
    blocks = (n + block - 1) // block
    ins = [tensor("var", dt, shape, nd(0.0, 1.0)),
           tensor("grad", dt, shape, grad or nd(0.0, 0.05)),
           tensor("m", "uint8", shape, uniform(0, 255)),
           tensor("v", "uint8", shape, uniform(128, 255)),
           tensor("qmap_m", "fp32", [256], special(qm or QM)),
           tensor("qmap_v", "fp32", [256], special(qv or QV)),
           tensor("absmax_m", "fp32", [blocks], absmax_m or uniform(0.005, 0.05)),
           tensor("absmax_v", "fp32", [blocks], absmax_v or uniform(1e-5, 1e-3)),
           tensor("step", "int64", [1], const(step)),
           attr("lr", "fp32", lr), attr("beta1", "fp32", 0.9), attr("beta2", "fp32", 0.999),
           attr("weight_decay", "fp32", wd), attr("eps", "fp32", 1e-8),
           attr("gnorm_scale", "fp32", gnorm), attr("quant_mode", "int32", 0),
           attr("block_size", "int32", block)]
    return {"id": cid, "name": f"ApplyAdamWQuant {cid}", "op": "ApplyAdamWQuant", "version": cid,
            "standard": {"acc": {"bitwise": {}}}, "inputs": ins}

rows = []
for dt in ["fp32", "fp16", "bf16"]:
    rows.append(case(f"blocks_{dt}", dt, [4, 256]))
    rows.append(case(f"partial_block_{dt}", dt, [3, 100]))
    rows.append(case(f"first_step_{dt}", dt, [1000], step=0, wd=0.0))
    rows.append(case(f"block128_{dt}", dt, [7, 61], block=128, gnorm=0.5))
    rows.append(case(f"small_{dt}", dt, [5], block=256))
    # NaN, inf, zero and huge gradients: the block's absmax turns NaN, others stay finite.
    rows.append(case(f"specials_{dt}", dt, [2, 300], grad=special(
        [0.01, "nan", -0.02, 0.0, "inf", 0.03, "-inf", "-0.0", 1e4, -1e4, 0.005] + [0.01] * 40)))
rows.append(case("block64_large", "fp32", [256, 129], block=64, step=100, lr=1e-2))
rows.append(case("zero_absmax", "fp32", [2, 256], absmax_m=const(0.0), absmax_v=const(0.0),
                 grad=const(0.0)))
rows.append(case("zero_grad", "bf16", [3, 256], grad=const(0.0)))
rows.append(case("no_decay_negative_wd", "fp32", [513], wd=-0.5))
json.dump(rows, open("cases/apply_adam_w_quant/bitwise_apply_adam_w_quant.json", "w"), indent=1)
