#!/usr/bin/env python3
"""Runs torch.optim.SGD on cases written by test_sgd_torch and writes the results back.

Usage: sgd_torch_reference.py CASE_DIR [CASE_DIR ...]

Each CASE_DIR holds:
  config.txt  one line: n steps lr momentum dampening weight_decay nesterov(0|1)
  p.bin       n float32 initial parameters (little-endian)
  grads.bin   steps*n float32 gradients, one step after the other
and receives:
  p_out.bin   n float32 parameters after the steps
  buf.bin     n float32 momentum buffer (zeros when momentum == 0: torch keeps none)
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


def run_case(case_dir):
    with open(os.path.join(case_dir, "config.txt")) as f:
        fields = f.read().split()
    n, steps = int(fields[0]), int(fields[1])
    lr, momentum, dampening, weight_decay = (float(x) for x in fields[2:6])
    nesterov = fields[6] == "1"

    param = torch.nn.Parameter(read_f32(os.path.join(case_dir, "p.bin"), n))
    grads = read_f32(os.path.join(case_dir, "grads.bin"), steps * n).reshape(steps, n)
    opt = torch.optim.SGD([param], lr=lr, momentum=momentum, dampening=dampening,
                          weight_decay=weight_decay, nesterov=nesterov, foreach=False)
    for k in range(steps):
        param.grad = grads[k].clone()
        opt.step()

    buf = opt.state[param].get("momentum_buffer")
    if buf is None:
        buf = torch.zeros(n, dtype=torch.float32)
    with open(os.path.join(case_dir, "p_out.bin"), "wb") as f:
        f.write(param.detach().contiguous().numpy().tobytes())
    with open(os.path.join(case_dir, "buf.bin"), "wb") as f:
        f.write(buf.detach().contiguous().numpy().tobytes())


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    for case_dir in sys.argv[1:]:
        run_case(case_dir)


if __name__ == "__main__":
    main()
