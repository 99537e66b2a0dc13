# Writes cases/anti_mx_quant/*.json. Run from the repository root.
import json
def uniform(lo, hi): return {"name": "uniform", "range": [lo, hi]}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}
def case(op, cid, inputs):
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid, "standard": {"acc": {"bitwise": {}}}, "inputs": inputs}

# aclDataType values of y.
OUT = {"fp32": 0, "fp16": 1, "bf16": 27}

def scale_shape(shape, axis):
    s = list(shape)
    blocks = (s[axis] + 31) // 32
    s[axis] = (blocks + 1) // 2
    return s + [2]

def amq(cid, xdt, out, shape, x, codes, axis=-1):
    ins = [tensor("x", xdt, shape, x), tensor("mxscale", "fp8_e8m0", scale_shape(shape, axis), codes),
           attr("axis", "int64", axis), attr("dst_type", "int32", OUT[out])]
    return case("AntiMxQuant", cid, ins)

rows = []
for xdt in ["fp8_e4m3", "fp8_e5m2"]:
    for out in OUT:
        t = f"{xdt}_{out}"
        # Scale codes near 1 (127 +- 20), then across the whole range 0..255 (subnormal factors,
        # overflow, NaN).
        rows.append(amq(f"last_axis_{t}", xdt, out, [8, 96], uniform(-400, 400), uniform(107, 147)))
        rows.append(amq(f"earlier_axis_{t}", xdt, out, [2, 70, 19], uniform(-400, 400), uniform(107, 147), axis=1))
        rows.append(amq(f"first_axis_{t}", xdt, out, [130, 6], uniform(-400, 400), uniform(107, 147), axis=0))
        rows.append(amq(f"all_codes_{t}", xdt, out, [64, 64], uniform(-400, 400), uniform(0, 255)))
        rows.append(amq(f"specials_{t}", xdt, out, [2, 16], special([1.0, "nan", 448.0, -448.0, 0.0, "-0.0", 0.001, "inf"]), uniform(120, 130)))
    rows.append(amq(f"empty_{xdt}", xdt, "bf16", [0, 64], uniform(-1, 1), uniform(120, 130)))
# FLOAT4 x (packed two per byte): both formats, every y dtype, last and earlier axes, every code.
for xdt in ["fp4_e2m1", "fp4_e1m2"]:
    for out in OUT:
        t = f"{xdt}_{out}"
        rows.append(amq(f"last_axis_{t}", xdt, out, [8, 96], uniform(-7, 7), uniform(107, 147)))
        rows.append(amq(f"earlier_axis_{t}", xdt, out, [2, 70, 18], uniform(-7, 7), uniform(107, 147), axis=1))
        rows.append(amq(f"all_codes_{t}", xdt, out, [64, 64], uniform(-7, 7), uniform(0, 255)))
json.dump(rows, open("cases/anti_mx_quant/bitwise_anti_mx_quant.json", "w"), indent=1)
