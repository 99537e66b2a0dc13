# Writes cases/dynamic_quant/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}
def case(op, cid, inputs):
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid, "standard": {"acc": {"bitwise": {}}}, "inputs": inputs}

# aclDataType values of y.
OUT = {"int8": 2, "int4": 29, "int32": 3, "fp8_e4m3": 36, "fp8_e5m2": 35}

def dq(cid, dt, out, shape, x, smooth=True, s=None):
    ins = [tensor("x", dt, shape, x)]
    if smooth: ins.append(tensor("smooth_scales", dt, [shape[-1]], s or nd(1.0, 0.2)))
    ins.append(attr("dst_type", "int32", OUT[out]))
    return case("DynamicQuant", cid, ins)

rows = []
for dt in ["fp16", "bf16"]:
    for out in OUT:
        rows.append(dq(f"small_{dt}_{out}", dt, out, [4, 32], nd(0.0, 1.0)))
        rows.append(dq(f"no_smooth_{dt}_{out}", dt, out, [5, 40], nd(0.0, 2.0), smooth=False))
        rows.append(dq(f"rank3_{dt}_{out}", dt, out, [2, 3, 72], nd(0.5, 3.0)))
        rows.append(dq(f"tokens_{dt}_{out}", dt, out, [300, 264], nd(0.0, 1.0)))
        rows.append(dq(f"zero_rows_{dt}_{out}", dt, out, [3, 16], const(0.0)))
        rows.append(dq(f"specials_{dt}_{out}", dt, out, [6, 8], special(
            [1.0, 2.0, -3.0, 0.5, 0.25, -0.125, 4.0, 8.0,      # plain
             1.0, "nan", 2.0, 3.0, 4.0, 5.0, 6.0, 7.0,         # a NaN
             1.0, "inf", 2.0, -3.0, 4.0, 5.0, 6.0, 7.0,        # an infinity
             "-0.0", 0.0, "-0.0", 0.0, 0.0, 0.0, 0.0, 0.0,     # zeros
             "denorm", "-denorm", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
             "max", "-max", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), smooth=False))
    rows.append(dq(f"empty_{dt}_int8", dt, "int8", [0, 16], nd(0.0, 1.0)))
rows.append(dq("hidden_fp16_int8", "fp16", "int8", [64, 4096], nd(0.0, 1.0)))
json.dump(rows, open("cases/dynamic_quant/bitwise_dynamic_quant.json", "w"), indent=1)
