# Writes cases/fused_adamw/*.json. Run from the repository root.
import json

def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def uniform(lo, hi): return {"name": "uniform", "range": [lo, hi]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": False}

SPECIAL_G = special(["nan", "-nan", "inf", "-inf", "-0.0", "0.0", 1.0, -0.5, "denorm", "max", "min_normal"])
SPECIAL_M = special(["nan", "inf", "-0.0", "0.0", 0.5, -0.25, "-denorm", "-max"])
SPECIAL_V = special(["nan", "inf", "0.0", 0.25, "denorm", "max", 1e-30])

def params(dt, shapes, steps, amsgrad, step_dt="fp32", g=None, m=None, v=None):
    ins = []
    for name, gen in [("params", nd(0.0, 1.0)), ("grads", g or nd(0.0, 0.5)),
                      ("exp_avgs", m or nd(0.0, 0.1)), ("exp_avg_sqs", v or uniform(0.0, 0.01))]:
        ins += [tensor(f"{name}[{i}]", dt, s, gen) for i, s in enumerate(shapes)]
    if amsgrad:
        ins += [tensor(f"max_exp_avg_sqs[{i}]", dt, s, v or uniform(0.0, 0.012)) for i, s in enumerate(shapes)]
    ins += [tensor(f"state_steps[{i}]", step_dt, [1], const(steps[i % len(steps)])) for i in range(len(shapes))]
    return ins

def attrs(lr=1e-3, wd=0.01, amsgrad=False, maximize=False, beta2=0.999):
    return [attr("lr", "fp32", lr), attr("beta1", "fp32", 0.9), attr("beta2", "fp32", beta2),
            attr("weight_decay", "fp32", wd), attr("eps", "fp32", 1e-8),
            attr("amsgrad", "bool", amsgrad), attr("maximize", "bool", maximize)]

def case(cid, std, inputs):
    return {"id": cid, "name": f"FusedAdamw {cid}", "op": "FusedAdamw", "version": cid,
            "standard": {"acc": std}, "inputs": inputs}

bitwise, single = {"bitwise": {}}, {"single_bm": {}}
shapes = [[4, 16], [7], [3, 5, 2], [1], [300]]
steps = [0, 9, 99, 3, 12345]
out_bit, out_bm = [], []
for dt in ["fp32", "fp16", "bf16"]:
    out_bit.append(case(f"plain_{dt}", bitwise, params(dt, shapes, steps, False) + attrs()))
    out_bit.append(case(f"amsgrad_maximize_scaled_{dt}", bitwise,
                        params(dt, shapes, steps, True) +
                        [tensor("grad_scale", "bf16", [1], const(96.0)), tensor("found_inf", "fp32", [1], const(0.0))] +
                        attrs(lr=2e-3, wd=0.1, amsgrad=True, maximize=True, beta2=0.99)))
    out_bit.append(case(f"special_{dt}", bitwise,
                        params(dt, [[97], [33]], [4], True, g=SPECIAL_G, m=SPECIAL_M, v=SPECIAL_V) + attrs(amsgrad=True)))
    out_bit.append(case(f"found_inf_skips_{dt}", bitwise,
                        params(dt, shapes, steps, False) + [tensor("found_inf", "fp32", [1], const(1.0))] + attrs()))
    out_bit.append(case(f"found_inf_two_runs_{dt}", bitwise,
                        params(dt, shapes, steps, False) + [tensor("found_inf", "fp32", [1], const(2.0))] + attrs()))
    out_bit.append(case(f"int64_steps_{dt}", bitwise, params(dt, shapes, [1, 16777217], False, step_dt="int64") + attrs()))
    out_bm.append(case(f"single_bm_{dt}", single, params(dt, shapes + [[2000]], steps, True) + attrs(amsgrad=True)))
out_bit.append(case("odd_grad_scale_fp32", bitwise,
                    params("fp32", shapes, steps, False) + [tensor("grad_scale", "fp32", [1], const(3.0))] + attrs()))
out_bit.append(case("many_tensors_64", bitwise,
                    params("bf16", [[1 + (i * 37) % 500] for i in range(64)], steps, False) + attrs()))
# An empty params list: the C++ API steps nothing; aclnn refuses it with 161002 as CANN's op_api
# does (tests/test_fused_optim.cc has both).
d = "cases/fused_adamw"
json.dump(out_bit, open(f"{d}/bitwise_fused_adamw.json", "w"), indent=1)
json.dump(out_bm, open(f"{d}/single_bm_fused_adamw.json", "w"), indent=1)
