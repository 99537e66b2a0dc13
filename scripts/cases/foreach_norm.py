# Writes cases/foreach_norm/*.json. Run from the repository root.
import json
def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def special(vals): return {"name": "special", "values": vals}
def xs(shapes, dtype, gens):
    return [{"name": f"x[{i}]", "type": "tensor", "dtype": dtype, "shape": s,
             "range_values": gens[i % len(gens)], "required": True}
            for i, s in enumerate(shapes)]
def p_attr(p): return [{"name": "p", "type": "attr", "dtype": "fp64", "range_values": p, "required": True}]
def case(cid, std, inputs):
    return {"id": cid, "name": f"ForeachNorm {cid}", "op": "ForeachNorm", "version": cid,
            "standard": {"acc": std}, "inputs": inputs}
bitwise, single = {"bitwise": {}}, {"single_bm": {}}
shapes3 = [[4, 16], [7], [3, 5, 2]]
ps = [(2.0, "p2"), (1.0, "p1"), ("inf", "pinf")]
out_bit, out_bm = [], []
for dt in ["fp32", "fp16", "bf16"]:
    for p, pn in ps:
        out_bit.append(case(f"{pn}_{dt}_3", bitwise, xs(shapes3, dt, [nd(0.0, 2.0)]) + p_attr(p)))
        # Empty, rank 0 and one-element tensors; several reduction blocks (4096 elements each).
        out_bit.append(case(f"{pn}_{dt}_empty_rank0_blocks", bitwise,
                            xs([[0], [], [1, 1], [70001], [2, 0, 3]], dt, [nd(0.5, 1.0)]) + p_attr(p)))
        out_bit.append(case(f"{pn}_{dt}_special", bitwise,
                            xs(shapes3 + [[5]], dt, [special(["nan", 1.5, "-0.0"]), special(["inf", -2.0]),
                                                     special(["denorm", "-max", 3.0]), special(["-inf", "nan"])])
                            + p_attr(p)))
        out_bm.append(case(f"single_bm_{pn}_{dt}", single,
                           xs(shapes3 + [[1000], [1], [20000]], dt, [nd(0.0, 10.0), nd(3.0, 1.0)]) + p_attr(p)))
    out_bit.append(case(f"p2_{dt}_large_values", bitwise, xs([[64], [300]], dt, [special(["max", "-max", 1.0])]) + p_attr(2.0)))
# Mixed dtypes are the C++ API's (aclnn takes one dtype per list): see the gtests.
out_bit.append(case("empty_list", bitwise, p_attr(2.0)))
out_bit.append(case("many_tensors_300", bitwise,
                    xs([[(i * 37) % 200] for i in range(300)], "fp32", [nd(0.0, 5.0), special([1.0, "nan"])]) + p_attr(2.0)))
d = "cases/foreach_norm"
json.dump(out_bit, open(f"{d}/bitwise_foreach_norm.json", "w"), indent=1)
json.dump(out_bm, open(f"{d}/single_bm_foreach_norm.json", "w"), indent=1)
