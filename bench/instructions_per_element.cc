// Runs one operator 10 times on 64K elements, for instruction counting under callgrind
// (scripts/instructions_per_element.sh). Usage: instructions_per_element fp32|fp16|bf16
// adam|list-adamw|sgd|sgd-nesterov|sgd-dampening|sgd-plain [--markers] (sgd: momentum 0.9;
// nesterov adds the nesterov step, dampening 0.5, plain has momentum 0; list-adamw is the
// multi-tensor AdamW on a list of four 16K-element tensors). With --markers, the last call is
// bracketed by SIGUSR1 and SIGUSR2 for count_instructions (which single-steps it, for the AVX-512
// targets valgrind cannot run).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mantissa/mantissa.h"

int main(int argc, char** argv) {
  using namespace mantissa;
  const bool markers = argc == 4 && std::strcmp(argv[3], "--markers") == 0;
  if (argc != 3 && !markers) {
    std::fprintf(
        stderr,
        "usage: %s fp32|fp16|bf16 adam|list-adamw|sgd|sgd-nesterov|sgd-dampening|sgd-plain "
        "[--markers]\n",
        argv[0]);
    return 2;
  }
  const DType dt = dtype_from_name(argv[1]);
  const std::string op = argv[2];
  const bool adam = op == "adam";
  const bool list_adamw = op == "list-adamw";
  SgdParams sgd_params;
  sgd_params.nesterov = op == "sgd-nesterov";
  sgd_params.dampening = op == "sgd-dampening" ? 0.5f : 0.0f;
  const float momentum = op == "sgd-plain" ? 0.0f : 0.9f;
  if (!is_training_float(dt) || (!adam && !list_adamw && op != "sgd" && op != "sgd-nesterov" &&
                                 op != "sgd-dampening" && op != "sgd-plain")) {
    return 2;
  }
  constexpr int64_t n = int64_t{1} << 16;
  std::vector<uint32_t> a(n), b(n), c(n), g(n), s(6);
  for (int64_t i = 0; i < n; ++i) {
    store_from_float(dt, a.data(), i, 1.0f);
    store_from_float(dt, b.data(), i, 0.1f);
    store_from_float(dt, c.data(), i, 0.5f);
    store_from_float(dt, g.data(), i, 0.2f);
  }
  for (int k = 0; k < 6; ++k) store_from_float(dt, s.data(), k, k == 2 ? 0.001f : 0.9f);
  std::vector<uint32_t> sgd_momentum(1);
  store_from_float(dt, sgd_momentum.data(), 0, momentum);
  auto tensor = [&](void* p) { return TensorView(p, dt, {n}); };
  auto scalar = [&](int k) {
    return TensorView(reinterpret_cast<char*>(s.data()) + k * dtype_size(dt), dt, {1});
  };
  constexpr int kCalls = 10;
  for (int r = 0; r < kCalls; ++r) {
    if (markers && r == kCalls - 1) std::raise(SIGUSR1);
    Status st;
    if (list_adamw) {
      std::vector<AdamWParamTensors> list;
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t at = k * (n / 4) * static_cast<int64_t>(dtype_size(dt));
        auto part = [&](std::vector<uint32_t>& v) {
          return TensorView(reinterpret_cast<char*>(v.data()) + at, dt, {n / 4});
        };
        AdamWParamTensors t;
        t.var = part(a);
        t.m = part(b);
        t.v = part(c);
        t.grad = part(g);
        list.push_back(t);
      }
      MultiAdamWParams mp;
      mp.step = r;
      st = multi_tensor_adam_w(list, mp);
    } else if (adam) {
      ApplyAdamDTensors t;
      t.var = tensor(a.data());
      t.m = tensor(b.data());
      t.v = tensor(c.data());
      t.grad = tensor(g.data());
      t.beta1_power = scalar(0);
      t.beta2_power = scalar(1);
      t.lr = scalar(2);
      t.beta1 = scalar(3);
      t.beta2 = scalar(4);
      t.epsilon = scalar(5);
      st = apply_adam_d(t, {});
    } else {
      st = sgd({tensor(a.data()), tensor(g.data()), scalar(2), tensor(b.data()),
                TensorView(sgd_momentum.data(), dt, {1}), tensor(c.data()), std::nullopt},
               sgd_params);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
  }
  if (markers) std::raise(SIGUSR2);
  return 0;
}
