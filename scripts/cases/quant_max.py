# Writes cases/quant_max/*.json. Run from the repository root.
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

# aclDataType values of the outputs; round_mode 0 is "rint".
OUT = {"fp8_e4m3": 36, "fp8_e5m2": 35}
# A scale that puts |x * scale| up to about the format's largest value (448, 57344).
SCALE = {"fp8_e4m3": 40.0, "fp8_e5m2": 5000.0}

def qm(cid, dt, out, shape, x, scale):
    ins = [tensor("x", dt, shape, x), tensor("scale", "fp32", [1], const(scale)),
           attr("round_mode", "int32", 0), attr("dst_type", "int32", OUT[out], True)]
    return case("QuantMax", cid, ins)

rows = []
specials = [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0]
for dt in ["fp32", "fp16", "bf16"]:
    for out in OUT:
        rows.append(qm(f"random_{dt}_{out}", dt, out, [8, 40], nd(0.0, 3.0), SCALE[out]))
        rows.append(qm(f"pieces_{dt}_{out}", dt, out, [3, 70001], nd(0.0, 3.0), SCALE[out]))
        rows.append(qm(f"saturate_{dt}_{out}", dt, out, [4, 64], nd(0.0, 60.0), SCALE[out]))
        # Ties: x * 0.5 lands on every quarter in [-16, 16): the midpoints of E4M3's and E5M2's
        # neighbours there (ties to the even code).
        rows.append(qm(f"ties_{dt}_{out}", dt, out, [256], special([k / 8.0 for k in range(-128, 128)]), 0.5))
        rows.append(qm(f"specials_{dt}_{out}", dt, out, [3, 5], special(specials), 0.25))
        rows.append(qm(f"no_nan_{dt}_{out}", dt, out, [2, 6], special([1.0, "-inf", 2.0, 0.0, "-0.0", 7.5, "max", "-max", "denorm", "-denorm", 3.0, -250.0]), 1.0))
    rows.append(qm(f"empty_{dt}", dt, "fp8_e4m3", [0, 8], nd(0.0, 1.0), 1.0))
json.dump(rows, open("cases/quant_max/bitwise_quant_max.json", "w"), indent=1)
