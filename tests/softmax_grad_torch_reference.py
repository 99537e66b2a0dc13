#!/usr/bin/env python3
"""Runs PyTorch's softmax / log_softmax forward and autograd backward on cases written by
test_softmax_grad_torch, and the backward formula in float64 on PyTorch's forward output.

Usage: softmax_grad_torch_reference.py CASE_DIR [CASE_DIR ...]

Each CASE_DIR holds:
  config.txt  one line: log(0|1) dim rank d0 d1 ...
  x.bin       float32 logits (little-endian, row-major)
  dy.bin      float32 gradient of the loss with respect to the forward's output
and receives:
  y.bin       float32 forward output (torch.softmax or torch.log_softmax over dim)
  grad.bin    float32 x.grad from autograd (PyTorch's backward)
  ref.bin     float64 backward formula on y and dy (y * (dy - sum(dy * y)), or
              dy - exp(y) * sum(dy)), sums over dim
"""
import os
import sys

import numpy as np
import torch


def run_case(case_dir):
    with open(os.path.join(case_dir, "config.txt")) as f:
        fields = [int(v) for v in f.read().split()]
    log, dim, rank = fields[0], fields[1], fields[2]
    shape = fields[3:3 + rank]
    x = np.fromfile(os.path.join(case_dir, "x.bin"), dtype="<f4").reshape(shape)
    dy = np.fromfile(os.path.join(case_dir, "dy.bin"), dtype="<f4").reshape(shape)
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.log_softmax(xt, dim=dim) if log else torch.softmax(xt, dim=dim)
    yt.backward(torch.tensor(dy))
    y = yt.detach().numpy().astype("<f4")
    y.tofile(os.path.join(case_dir, "y.bin"))
    xt.grad.numpy().astype("<f4").tofile(os.path.join(case_dir, "grad.bin"))
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    if log:
        ref = dy64 - np.exp(y64) * dy64.sum(axis=dim, keepdims=True)
    else:
        ref = y64 * (dy64 - (dy64 * y64).sum(axis=dim, keepdims=True))
    ref.astype("<f8").tofile(os.path.join(case_dir, "ref.bin"))


for d in sys.argv[1:]:
    run_case(d)
