# Writes cases/ascend_quant_v3/*.json. Run from the repository root.
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

OUT = {"int8": 2, "int4": 29, "int32": 3, "fp8_e4m3": 36, "fp8_e5m2": 35}
MODES = {"round": 0, "floor": 1, "ceil": 2, "trunc": 3}
# Scales that put x * scale around the output's range.
SCALE = {"int8": 30.0, "int4": 2.0, "int32": 2.0, "fp8_e4m3": 100.0, "fp8_e5m2": 1e4}

def aq(cid, dt, out, mode, shape, x, n, axis=-1, offset=True, sqrt=False, sdt=None, s=None):
    sd = sdt or "fp32"
    ins = [tensor("x", dt, shape, x), tensor("scale", sd, [n], s or uniform(0.5 * SCALE[out], SCALE[out]))]
    if offset: ins.append(tensor("offset", sd, [n], nd(0.0, 2.0)))
    ins += [attr("sqrt_mode", "bool", sqrt), attr("round_mode", "int32", MODES[mode]),
            attr("dst_type", "int32", OUT[out]), attr("axis", "int32", axis)]
    return case("AscendQuantV2", cid, ins)

rows = []
ties = [k / 4.0 for k in range(-64, 64)]
for dt in ["fp32", "fp16", "bf16"]:
    for out in OUT:
        modes = ["round"] if out.startswith("fp8") else list(MODES)
        for mode in modes:
            t = f"{dt}_{out}_{mode}"
            rows.append(aq(f"per_tensor_{t}", dt, out, mode, [8, 40], nd(0.0, 2.0), 1, offset=False))
            rows.append(aq(f"per_channel_{t}", dt, out, mode, [6, 48], nd(0.0, 2.0), 48))
            rows.append(aq(f"axis_minus2_{t}", dt, out, mode, [3, 5, 16], nd(0.0, 2.0), 5, axis=-2))
            rows.append(aq(f"sqrt_{t}", dt, out, mode, [4, 64], nd(0.0, 0.5), 64, sqrt=True,
                           s=uniform(1.0, 0.5 * SCALE[out] ** 0.5 + 1.0)))
            # Ties: x * 2 lands on every half-integer in [-32, 32).
            rows.append(aq(f"ties_{t}", dt, out, mode, [128], special(ties), 1, offset=False, s=const(2.0)))
            rows.append(aq(f"saturate_{t}", dt, out, mode, [4, 64], nd(0.0, 1e3), 1, offset=False, s=const(100.0)))
        rows.append(aq(f"specials_{dt}_{out}", dt, out, "round", [4, 8], special(
            [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0, 1.5]),
            1, offset=False, s=const(1.0)))
    if dt != "fp32":
        rows.append(aq(f"scale_{dt}_{dt}", dt, "int8", "round", [6, 48], nd(0.0, 2.0), 48, sdt=dt))
    rows.append(aq(f"empty_{dt}_int8", dt, "int8", "round", [0, 8], nd(0.0, 1.0), 8))
rows.append(aq("large_fp32_int8", "fp32", "int8", "round", [300, 1000], nd(0.0, 3.0), 1000))
rows.append(aq("large_fp16_int4", "fp16", "int4", "floor", [300, 1000], nd(0.0, 3.0), 300, axis=-2))
json.dump(rows, open("cases/ascend_quant_v3/bitwise_ascend_quant_v3.json", "w"), indent=1)
