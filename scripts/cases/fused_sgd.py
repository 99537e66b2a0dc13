# Writes cases/fused_sgd/*.json. Run from the repository root.
import json

def nd(mean, std): return {"name": "nd", "mean": [mean, mean], "std": [std, std]}
def const(v): return {"name": "const", "value": v}
def special(vals): return {"name": "special", "values": vals}
def tensor(name, dt, shape, values):
    return {"name": name, "type": "tensor", "dtype": dt, "shape": shape, "range_values": values, "required": True}
def attr(name, dt, value):
    return {"name": name, "type": "attr", "dtype": dt, "range_values": value, "required": False}

SPECIAL = special(["nan", "-nan", "inf", "-inf", "-0.0", "0.0", 1.0, -0.5, "denorm", "max", "min_normal"])

def params(dt, shapes, buffers, g=None, b=None):
    ins = [tensor(f"params[{i}]", dt, s, nd(0.0, 1.0)) for i, s in enumerate(shapes)]
    ins += [tensor(f"grads[{i}]", dt, s, g or nd(0.0, 0.5)) for i, s in enumerate(shapes)]
    if buffers:
        ins += [tensor(f"momentum_buffers[{i}]", dt, s, b or nd(0.0, 0.3)) for i, s in enumerate(shapes)]
    return ins

def attrs(wd=0.0, momentum=0.0, lr=0.05, dampening=0.0, nesterov=False, maximize=False, first=False):
    return [attr("weight_decay", "fp32", wd), attr("momentum", "fp32", momentum), attr("lr", "fp32", lr),
            attr("dampening", "fp32", dampening), attr("nesterov", "bool", nesterov),
            attr("maximize", "bool", maximize), attr("is_first_step", "bool", first)]

def case(cid, std, inputs):
    return {"id": cid, "name": f"FusedSgd {cid}", "op": "FusedSgd", "version": cid,
            "standard": {"acc": std}, "inputs": inputs}

bitwise, single = {"bitwise": {}}, {"single_bm": {}}
shapes = [[4, 16], [7], [3, 5, 2], [1], [300]]
scale = lambda dt, v: [tensor("grad_scale", dt, [1], const(v))]
out_bit, out_bm = [], []
for dt in ["fp32", "fp16", "bf16"]:
    out_bit.append(case(f"no_momentum_{dt}", bitwise, params(dt, shapes, False) + attrs()))
    out_bit.append(case(f"momentum_dampening_wd_{dt}", bitwise,
                        params(dt, shapes, True) + attrs(wd=0.01, momentum=0.9, dampening=0.25)))
    out_bit.append(case(f"first_step_maximize_scaled_{dt}", bitwise,
                        params(dt, shapes, True) + scale("fp16", 10.0) +
                        attrs(wd=0.01, momentum=0.9, dampening=0.1, maximize=True, first=True)))
    out_bit.append(case(f"nesterov_{dt}", bitwise, params(dt, shapes, True) + attrs(wd=0.05, momentum=0.8, nesterov=True)))
    out_bit.append(case(f"special_scaled_{dt}", bitwise,
                        params(dt, [[97], [33]], True, g=SPECIAL, b=SPECIAL) + scale("fp32", 8.0) +
                        attrs(wd=0.01, momentum=0.9, nesterov=True)))
    out_bm.append(case(f"single_bm_{dt}", single, params(dt, shapes + [[2000]], True) + attrs(wd=0.01, momentum=0.9)))
out_bit.append(case("many_tensors_64", bitwise,
                    params("bf16", [[1 + (i * 37) % 500] for i in range(64)], True) + attrs(momentum=0.9)))
out_bit.append(case("empty_list", bitwise, attrs()))
d = "cases/fused_sgd"
json.dump(out_bit, open(f"{d}/bitwise_fused_sgd.json", "w"), indent=1)
json.dump(out_bm, open(f"{d}/single_bm_fused_sgd.json", "w"), indent=1)
