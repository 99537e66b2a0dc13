# Writes cases/softmax_cross_entropy_with_logits/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def uniform(lo, hi): return {"name": "uniform", "range": [lo, hi]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def one_hot(classes):
    # Cycled over the rows: one 1 per row except where the cycle wraps (an all-zero row).
    return special([1.0] + [0.0] * classes)
def tensors(shape, dt, features, labels):
    return [{"name": "features", "type": "tensor", "dtype": dt, "shape": shape, "range_values": features, "required": True},
            {"name": "labels", "type": "tensor", "dtype": dt, "shape": shape, "range_values": labels, "required": True}]
def case(cid, std, inputs):
    return {"id": cid, "name": f"SoftmaxCrossEntropyWithLogits {cid}", "op": "SoftmaxCrossEntropyWithLogits",
            "version": cid, "standard": {"acc": std}, "inputs": inputs}
bitwise, single = {"bitwise": {}}, {"single_bm": {}}
out_bit, out_bm = [], []
for dt in ["fp32", "fp16", "bf16"]:
    offset = [15, 20] if dt == "fp16" else [90, 100]
    out_bit.append(case(f"one_hot_{dt}", bitwise, tensors([4, 10], dt, nd(0.0, 2.0), one_hot(10))))
    out_bit.append(case(f"soft_labels_{dt}", bitwise, tensors([33, 1000], dt, nd(-1.0, 3.0), uniform(0.0, 0.002))))
    out_bit.append(case(f"large_offset_{dt}", bitwise, tensors([16, 100], dt, uniform(*offset), one_hot(100))))
    out_bit.append(case(f"long_row_{dt}", bitwise, tensors([2, 5000], dt, nd(0.0, 4.0), const(0.0002))))
    out_bit.append(case(f"specials_{dt}", bitwise, tensors([6, 5], dt, special([1.0, "-inf", 2.0, "-inf", 0.5, "-inf", "-inf", "-inf", "-inf", "-inf", "nan", 1.0, 2.0, 3.0, 4.0, "inf", 0.0, 1.0, 2.0, 3.0, "max", "-max", 0.0, 1.0, 2.0, "denorm", 0.0, "-0.0", 1.0, 1.0]), one_hot(5))))
    out_bit.append(case(f"empty_rows_{dt}", bitwise, tensors([0, 7], dt, nd(0.0, 1.0), one_hot(7))))
    out_bit.append(case(f"no_classes_{dt}", bitwise, tensors([3, 0], dt, nd(0.0, 1.0), one_hot(1))))
    out_bm.append(case(f"classifier_{dt}", single, tensors([64, 10], dt, nd(0.0, 3.0), one_hot(10))))
    out_bm.append(case(f"smoothed_{dt}", single, tensors([8, 1000], dt, nd(0.0, 2.0), const(0.001))))
d = "cases/softmax_cross_entropy_with_logits"
json.dump(out_bit, open(f"{d}/bitwise_softmax_cross_entropy_with_logits.json", "w"), indent=1)
json.dump(out_bm, open(f"{d}/single_bm_softmax_cross_entropy_with_logits.json", "w"), indent=1)
