# Writes cases/quantize/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def uniform(lo, hi): return {"name": "uniform", "range": [lo, hi]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}
def case(op, cid, inputs):
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid, "standard": {"acc": {"bitwise": {}}}, "inputs": inputs}

# aclDataType values of the outputs.
OUT = {"int8": 2, "uint8": 4, "int32": 3, "fp8_e4m3": 36, "fp8_e5m2": 35}
ZP = {"int8": ("int8", uniform(-20, 20)), "uint8": ("uint8", uniform(100, 150)),
      "int32": ("int32", uniform(-1000, 1000)), "fp8_e4m3": ("fp32", nd(0.0, 2.0)),
      "fp8_e5m2": ("fp32", nd(0.0, 2.0))}

def quantize(cid, dt, out, shape, x, scales, axis=1, zp=True, sdt=None, zdt=None, zvals=None):
    n = scales[0]
    ins = [tensor("x", dt, shape, x), tensor("scales", sdt or "fp32", [n], scales[1])]
    if zp:
        zd, zv = ZP[out]
        ins.append(tensor("zero_points", zdt or zd, [n], zvals or zv))
    ins += [attr("dtype", "int32", OUT[out], True), attr("axis", "int32", axis)]
    return case("Quantize", cid, ins)

rows = []
for dt in ["fp32", "fp16", "bf16"]:
    for out in OUT:
        sdt = "fp32"
        big = {"int8": 0.05, "uint8": 0.05, "int32": 1e-3, "fp8_e4m3": 0.01, "fp8_e5m2": 0.001}[out]
        rows.append(quantize(f"per_tensor_{dt}_{out}", dt, out, [8, 40], nd(0.0, 2.0), (1, uniform(big, 4 * big)), zp=False))
        rows.append(quantize(f"per_tensor_zp_{dt}_{out}", dt, out, [5, 3, 37], nd(0.0, 2.0), (1, uniform(big, 4 * big))))
        rows.append(quantize(f"per_channel_{dt}_{out}", dt, out, [6, 33], nd(0.0, 2.0), (33, uniform(big, 4 * big)), axis=1))
        rows.append(quantize(f"per_channel_axis0_{dt}_{out}", dt, out, [7, 70], nd(0.0, 2.0), (7, uniform(big, 4 * big)), axis=0))
        rows.append(quantize(f"per_channel_mid_{dt}_{out}", dt, out, [3, 5, 19], nd(0.0, 2.0), (5, uniform(big, 4 * big)), axis=-2))
        # Saturation: values far beyond the output's range, both signs.
        rows.append(quantize(f"saturate_{dt}_{out}", dt, out, [4, 64], nd(0.0, 1e4 if dt != "fp16" else 6e4), (1, const(0.5)), zp=False))
        # Ties: x / 0.5 lands on every half-integer in [-64, 64) (ties to even).
        ties = [k / 4.0 for k in range(-128, 128)]
        rows.append(quantize(f"ties_{dt}_{out}", dt, out, [256], special(ties), (1, const(0.5)), zp=False))
    if dt != "fp32":
        rows.append(quantize(f"scales_{dt}_{dt}", dt, "int8", [6, 33], nd(0.0, 2.0), (33, uniform(0.01, 0.05)), sdt=dt))
    rows.append(quantize(f"specials_{dt}_int8", dt, "int8", [6, 5], special(
        [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0]),
        (1, const(0.25)), zp=False))
    rows.append(quantize(f"specials_{dt}_fp8_e4m3", dt, "fp8_e4m3", [6, 5], special(
        [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0]),
        (1, const(0.25)), zp=False))
    rows.append(quantize(f"specials_{dt}_fp8_e5m2", dt, "fp8_e5m2", [6, 5], special(
        [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0]),
        (1, const(0.25)), zp=False))
    rows.append(quantize(f"empty_{dt}_int8", dt, "int8", [0, 8], nd(0.0, 1.0), (8, uniform(0.1, 0.2))))
rows.append(quantize("bf16_zero_points", "bf16", "int8", [6, 33], nd(0.0, 2.0), (33, uniform(0.01, 0.05)), sdt="bf16", zdt="bf16", zvals=nd(0.0, 3.0)))
rows.append(quantize("int32_large_zero_points", "fp32", "int32", [4, 50], nd(0.0, 1e5), (1, const(0.001)), zvals=uniform(-2.1e9, 2.1e9)))
rows.append(quantize("large_fp32_int8", "fp32", "int8", [300, 1000], nd(0.0, 3.0), (1000, uniform(0.01, 0.05)), axis=-1))
json.dump(rows, open("cases/quantize/bitwise_quantize.json", "w"), indent=1)
