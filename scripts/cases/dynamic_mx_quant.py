# Writes cases/dynamic_mx_quant/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value, required=False):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": required}
def case(op, cid, inputs):
    return {"id": cid, "name": f"{op} {cid}", "op": op, "version": cid, "standard": {"acc": {"bitwise": {}}}, "inputs": inputs}

# aclDataType values of the outputs; round_mode 0 "rint", 1 "floor", 2 "round".
OUT = {"fp8_e4m3": 36, "fp8_e5m2": 35}
FP4 = {"fp4_e2m1": 40, "fp4_e1m2": 41}

def mx(cid, dt, out, shape, x, axis=-1, bs=32, alg=0, mlb=0.0, rm=0, dtm=0.0):
    ins = [tensor("x", dt, shape, x),
           attr("axis", "int64", axis), attr("round_mode", "int32", rm),
           attr("dst_type", "int32", {**OUT, **FP4}[out]), attr("blocksize", "int64", bs),
           attr("scale_alg", "int64", alg), attr("dst_type_max", "fp32", dtm),
           attr("max_low_bound", "fp32", mlb)]
    return case("DynamicMxQuant", cid, ins)

rows = []
specials = [1.0, "-inf", 2.0, 0.0, 0.5, "nan", 1.0, "inf", "-nan", "-0.0", "max", "-max", "denorm", "-denorm", 3.0, 448.0]
for dt in ["fp32", "fp16", "bf16"]:
    for out in OUT:
        for alg in [0, 1]:
            mlb = 0.125 if alg == 1 else 0.0
            t = f"{dt}_{out}_alg{alg}"
            rows.append(mx(f"last_axis_{t}", dt, out, [8, 96], nd(0.0, 3.0), alg=alg, mlb=mlb))
            rows.append(mx(f"partial_block_{t}", dt, out, [3, 100], nd(0.0, 30.0), alg=alg, mlb=mlb))
            rows.append(mx(f"earlier_axis_{t}", dt, out, [2, 70, 19], nd(0.0, 3.0), axis=1, alg=alg, mlb=mlb))
            rows.append(mx(f"first_axis_b64_{t}", dt, out, [130, 6], nd(0.0, 3.0), axis=0, bs=64, alg=alg, mlb=mlb))
            rows.append(mx(f"specials_{t}", dt, out, [2, 64], special(specials), alg=alg, mlb=mlb))
    rows.append(mx(f"pieces_{dt}", dt, "fp8_e4m3", [600, 130], nd(0.0, 3.0)))
    rows.append(mx(f"blocksize_1024_{dt}", dt, "fp8_e5m2", [3, 2048], nd(0.0, 3.0), bs=1024, alg=1))
    rows.append(mx(f"empty_{dt}", dt, "fp8_e4m3", [0, 64], nd(0.0, 1.0)))
# FLOAT4: both formats, every round mode; scale_alg 2 (E2M1, blocksize 32) with the dtype-range
# rule (dst_type_max 0, 7) and cuBLAS's (10).
for dt in ["fp32", "fp16", "bf16"]:
    for out in FP4:
        for rm, name in [(0, "rint"), (1, "floor"), (2, "round")]:
            t = f"{dt}_{out}_{name}"
            rows.append(mx(f"last_axis_{t}", dt, out, [8, 96], nd(0.0, 3.0), rm=rm))
            rows.append(mx(f"specials_{t}", dt, out, [2, 64], special(specials), rm=rm))
        rows.append(mx(f"earlier_axis_{dt}_{out}", dt, out, [2, 70, 18], nd(0.0, 3.0), axis=1))
    for dtm in [0.0, 7.0, 10.0]:
        rows.append(mx(f"alg2_dtm{int(dtm)}_{dt}", dt, "fp4_e2m1", [4, 64], nd(0.0, 3.0), alg=2, dtm=dtm))
json.dump(rows, open("cases/dynamic_mx_quant/bitwise_dynamic_mx_quant.json", "w"), indent=1)
