# Writes cases/layer_norm/*.json and cases/layer_norm_grad/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}
def case(op, cid, std, inputs):
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid, "standard": {"acc": std}, "inputs": inputs}
bitwise, single = {"bitwise": {}}, {"single_bm": {}}

# eps is a double in aclnn but a Float attribute by name: the cases use fp32's nearest value to
# 1e-5, so that every backend computes with the same eps.
EPS = 9.999999747378752e-06
def forward(cid, dt, pdt, shape, ns, x, affine=True, bias=True, eps=EPS, std=bitwise):
    ins = [tensor("input", dt, shape, x)]
    if affine: ins.append(tensor("weight", pdt, ns, nd(1.0, 0.25)))
    if bias: ins.append(tensor("bias", pdt, ns, nd(0.0, 0.5)))
    ins += [attr("normalized_shape", "int64", ns, True), attr("eps", "fp64", eps)]
    return case("LayerNormV4", cid, std, ins)

def stats_shape(shape, ns):
    return shape[:len(shape) - len(ns)] + [1] * len(ns)

def backward(cid, dt, pdt, sdt, shape, ns, mask=(True, True, True), affine=True, std=bitwise, x=None):
    ss = stats_shape(shape, ns)
    ins = [tensor("dy", dt, shape, nd(0.0, 1.0)), tensor("input", dt, shape, x or nd(0.5, 2.0)),
           tensor("mean", sdt, ss, nd(0.5, 0.1)), tensor("rstd", sdt, ss, nd(0.5, 0.05))]
    if affine: ins.append(tensor("weight", pdt, ns, nd(1.0, 0.25)))
    ins += [attr("normalized_shape", "int64", ns, True), attr("output_mask", "bool", list(mask))]
    return case("LayerNormGradV3", cid, std, ins)

fw_bit, fw_bm, bw_bit, bw_bm = [], [], [], []
for dt in ["fp32", "fp16", "bf16"]:
    for pdt in ([dt] if dt == "fp32" else [dt, "fp32"]):
        t = f"{dt}_w{pdt}"
        fw_bit.append(forward(f"small_{t}", dt, pdt, [4, 16], [16], nd(0.0, 1.0)))
        fw_bit.append(forward(f"tail_{t}", dt, pdt, [5, 33], [33], nd(1.0, 2.0)))
        fw_bit.append(forward(f"rank3_{t}", dt, pdt, [3, 4, 24], [4, 24], nd(-0.5, 1.0)))
        fw_bit.append(forward(f"block_{t}", dt, pdt, [300, 130], [130], nd(0.0, 1.0)))
        fw_bm.append(forward(f"hidden_{t}", dt, pdt, [64, 768], [768], nd(0.0, 1.0), std=single))
        bw_bit.append(backward(f"small_{t}", dt, pdt, "fp32", [4, 16], [16]))
        bw_bit.append(backward(f"rank3_{t}", dt, pdt, "fp32", [3, 4, 24], [4, 24]))
        bw_bit.append(backward(f"block_{t}", dt, pdt, "fp32", [300, 130], [130]))
        bw_bm.append(backward(f"hidden_{t}", dt, pdt, "fp32", [64, 768], [768], std=single))
    big = {"fp32": 1e4, "fp16": 100.0, "bf16": 100.0}[dt]
    fw_bit.append(forward(f"large_mean_{dt}", dt, dt, [8, 1000], [1000], nd(big, 1.0)))
    fw_bm.append(forward(f"large_mean_{dt}", dt, dt, [8, 1000], [1000], nd(big, 1.0), std=single))
    fw_bit.append(forward(f"constant_rows_{dt}", dt, dt, [4, 77], [77], const(3.0)))
    fw_bit.append(forward(f"no_affine_{dt}", dt, dt, [6, 40], [40], nd(0.0, 1.0), affine=False, bias=False))
    fw_bit.append(forward(f"weight_only_{dt}", dt, dt, [6, 40], [40], nd(0.0, 1.0), bias=False))
    fw_bit.append(forward(f"specials_{dt}", dt, dt, [6, 5], [5], special(
        [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, 2.0, 3.0, 4.0, "inf", 0.0, 1.0, 2.0, 3.0,
         "max", "-max", 0.0, 1.0, 2.0, "denorm", 0.0, "-0.0", 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 5.0])))
    fw_bit.append(forward(f"empty_rows_{dt}", dt, dt, [0, 8], [8], nd(0.0, 1.0)))
    bw_bit.append(backward(f"stats_{dt}", dt, dt, dt, [5, 33], [33]))
    bw_bit.append(backward(f"mask_dx_only_{dt}", dt, dt, "fp32", [6, 40], [40], mask=(True, False, False)))
    bw_bit.append(backward(f"mask_params_only_{dt}", dt, dt, "fp32", [6, 40], [40], mask=(False, True, True)))
fw_bit.append(forward("long_row_fp32", "fp32", "fp32", [1, 1 << 20], [1 << 20], nd(3.0, 1.0)))
bw_bit.append(backward("long_row_fp32", "fp32", "fp32", "fp32", [1, 1 << 20], [1 << 20]))
bw_bit.append(backward("many_rows_fp32", "fp32", "fp32", "fp32", [20000, 16], [16]))
for d, name, rows in [("cases/layer_norm", "layer_norm", (fw_bit, fw_bm)),
                      ("cases/layer_norm_grad", "layer_norm_grad", (bw_bit, bw_bm))]:
    json.dump(rows[0], open(f"{d}/bitwise_{name}.json", "w"), indent=1)
    json.dump(rows[1], open(f"{d}/single_bm_{name}.json", "w"), indent=1)
