# Writes cases/foreach_non_finite_check_and_unscale/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def grads(shapes, dtypes, gens):
    return [{"name": f"scaled_grads[{i}]", "type": "tensor", "dtype": dtypes[i % len(dtypes)],
             "shape": s, "range_values": gens[i % len(gens)], "required": True}
            for i, s in enumerate(shapes)]
def scalars(found, inv):
    return [{"name": "found_inf", "type": "tensor", "dtype": "fp32", "shape": [1], "range_values": const(found), "required": True},
            {"name": "inv_scale", "type": "tensor", "dtype": "fp32", "shape": [1], "range_values": const(inv), "required": True}]
def case(cid, std, inputs):
    return {"id": cid, "name": f"ForeachNonFiniteCheckAndUnscale {cid}", "op": "ForeachNonFiniteCheckAndUnscale",
            "version": cid, "standard": {"acc": std}, "inputs": inputs}
bitwise, single = {"bitwise": {}}, {"single_bm": {}}
shapes3 = [[4, 16], [7], [3, 5, 2]]
out_bit, out_bm = [], []
for dt in ["fp32", "fp16", "bf16"]:
    g = [nd(0.0, 1000.0)]
    out_bit.append(case(f"unscale_{dt}_3", bitwise, grads(shapes3, [dt], g) + scalars(0.0, 1.0 / 65536)))
    out_bit.append(case(f"unscale_{dt}_odd_scale", bitwise, grads(shapes3, [dt], g) + scalars(0.0, 0.3)))
    out_bit.append(case(f"check_only_{dt}", bitwise, grads(shapes3, [dt], [special(["nan", "-nan", 1.5, "-0.0"])]) + scalars(0.0, 1.0)))
    out_bit.append(case(f"found_inf_{dt}", bitwise, grads(shapes3, [dt], [nd(0.0, 1.0), special(["inf", 2.0, -3.0])]) + scalars(0.0, 0.5)))
    out_bit.append(case(f"found_nan_kept_{dt}", bitwise, grads(shapes3, [dt], [special(["nan", 1.0, "-inf", "denorm", "max"])]) + scalars(0.0, 0.25)))
    out_bit.append(case(f"overflow_not_found_{dt}", bitwise, grads([[8]], [dt], [special(["max", "-max", 1.0])]) + scalars(0.0, 4.0)))
    out_bit.append(case(f"found_stays_{dt}", bitwise, grads(shapes3, [dt], [nd(0.0, 1.0)]) + scalars(1.0, 0.5)))
    out_bm.append(case(f"single_bm_{dt}", single, grads(shapes3 + [[1000], [1]], [dt], [nd(0.0, 100.0)]) + scalars(0.0, 1.0 / 1024)))
# Mixed dtypes and empty tensors are the C++ API's (aclnn takes one dtype, none empty): see the gtests.
out_bit.append(case("rank0_and_ones", bitwise, grads([[4, 4], [1], [], [9]], ["bf16"], [nd(0.0, 10.0)]) + scalars(0.0, 0.125)))
out_bit.append(case("empty_list", bitwise, scalars(0.0, 0.5)))
out_bit.append(case("many_tensors_256", bitwise, grads([[1 + (i * 37) % 200] for i in range(256)], ["fp32"], [nd(0.0, 5.0), special([1.0, "nan"]) ]) + scalars(0.0, 0.5)))
d = "cases/foreach_non_finite_check_and_unscale"
json.dump(out_bit, open(f"{d}/bitwise_foreach_non_finite_check_and_unscale.json", "w"), indent=1)
json.dump(out_bm, open(f"{d}/single_bm_foreach_non_finite_check_and_unscale.json", "w"), indent=1)
