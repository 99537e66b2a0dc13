#!/usr/bin/env python3
"""Runs torch.optim.AdamW on cases written by test_apply_adam_w_v2_torch and writes the results.

Usage: adamw_torch_reference.py CASE_DIR [CASE_DIR ...]

Each CASE_DIR holds:
  config.txt  one line: n steps lr beta1 beta2 weight_decay eps amsgrad(0|1) maximize(0|1)
  p.bin       n float32 initial parameters (little-endian)
  grads.bin   steps*n float32 gradients, one step after the other
and receives p_out.bin, m.bin, v.bin and max.bin (n float32 each; max is zeros without amsgrad).
"""
import os
import sys

import torch


def read_f32(path, count):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    t = torch.frombuffer(data, dtype=torch.float32)
    if t.numel() != count:
        raise SystemExit(f"{path}: expected {count} floats, got {t.numel()}")
    return t.clone()


def write_f32(path, t):
    with open(path, "wb") as f:
        f.write(t.detach().contiguous().numpy().tobytes())


def run_case(case_dir):
    with open(os.path.join(case_dir, "config.txt")) as f:
        fields = f.read().split()
    n, steps = int(fields[0]), int(fields[1])
    lr, beta1, beta2, weight_decay, eps = (float(x) for x in fields[2:7])
    amsgrad, maximize = fields[7] == "1", fields[8] == "1"

    param = torch.nn.Parameter(read_f32(os.path.join(case_dir, "p.bin"), n))
    grads = read_f32(os.path.join(case_dir, "grads.bin"), steps * n).reshape(steps, n)
    opt = torch.optim.AdamW([param], lr=lr, betas=(beta1, beta2), eps=eps,
                            weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                            foreach=False)
    for k in range(steps):
        param.grad = grads[k].clone()
        opt.step()

    state = opt.state[param]
    write_f32(os.path.join(case_dir, "p_out.bin"), param)
    write_f32(os.path.join(case_dir, "m.bin"), state["exp_avg"])
    write_f32(os.path.join(case_dir, "v.bin"), state["exp_avg_sq"])
    write_f32(os.path.join(case_dir, "max.bin"),
              state["max_exp_avg_sq"] if amsgrad else torch.zeros(n, dtype=torch.float32))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    for case_dir in sys.argv[1:]:
        run_case(case_dir)


if __name__ == "__main__":
    main()
