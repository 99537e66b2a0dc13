// The layer graph (graph.h).
#include "trainer/graph.h"

#include <algorithm>
#include <cstring>

namespace mantissa::trainer {

const float* Parameter::weights_f32(Tensor* scratch) const {
  if (var.dtype() == DType::kFloat32) return var.f32();
  scratch->ensure(DType::kFloat32, var.shape());
  widen(var.data(), var.dtype(), scratch->f32(), var.numel());
  return scratch->f32();
}

void Parameter::add_grad(const float* g, UnderflowCount* count) {
  const int64_t n = var.numel();
  if (grad32 == nullptr) {
    narrow(g, grad.dtype(), grad.data(), n, count);
    return;
  }
  if (seen_++ == 0) {
    std::memcpy(grad32, g, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    accumulate(g, DType::kFloat32, grad32, n);
  }
}

void Layer::give_grad(Value& v, const Tensor& g) {
  if (!v.has_grad) {
    v.grad.ensure(g.dtype(), g.shape());
    std::memcpy(v.grad.data(), g.data(), static_cast<std::size_t>(g.bytes()));
    v.has_grad = true;
    return;
  }
  const int64_t n = v.grad.numel();
  if (v.grad.dtype() == DType::kFloat32) {
    accumulate(g.data(), g.dtype(), v.grad.f32(), n);
    return;
  }
  std::vector<float> sum(static_cast<std::size_t>(n));
  widen(v.grad.data(), v.grad.dtype(), sum.data(), n);
  accumulate(g.data(), g.dtype(), sum.data(), n);
  narrow(sum.data(), v.grad.dtype(), v.grad.data(), n);
}

Tensor* Layer::grad_target(Value& v, Tensor* scratch, DType dtype, std::vector<int64_t> shape) {
  Tensor* t = v.has_grad ? scratch : &v.grad;
  t->ensure(dtype, std::move(shape));
  return t;
}

void Layer::give_grad_from(Value& v, Tensor* target) {
  if (target == &v.grad) {
    v.has_grad = true;
  } else {
    give_grad(v, *target);
  }
}

int Graph::add_input(std::string name) {
  values_.push_back(std::make_unique<Value>());
  values_.back()->name = std::move(name);
  return static_cast<int>(values_.size() - 1);
}

std::vector<int> Graph::add(std::unique_ptr<Layer> layer, std::vector<int> inputs,
                            std::vector<std::string> outputs) {
  Node node;
  node.layer = std::move(layer);
  for (int id : inputs) node.in.push_back(&value(id));
  std::vector<int> ids;
  for (std::string& name : outputs) {
    ids.push_back(add_input(std::move(name)));
    node.out.push_back(&value(ids.back()));
  }
  nodes_.push_back(std::move(node));
  return ids;
}

int Graph::find(const std::string& name) const {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (values_[i]->name == name) return static_cast<int>(i);
  }
  return -1;
}

Status Graph::forward(const Context& ctx) { return forward(ctx, 0, nodes_.size()); }

Status Graph::forward(const Context& ctx, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < std::min(last, nodes_.size()); ++i) {
    Node& n = nodes_[i];
    Status st = n.layer->forward(ctx, n.in, n.out);
    if (!st.ok()) return st;
  }
  return {};
}

void Graph::shadow(const Context& ctx) {
  std::vector<Shadow> widened;
  for (Node& n : nodes_) {
    std::vector<const Shadow*> in;
    std::vector<Shadow*> out;
    for (Value* v : n.in) in.push_back(&v->shadow);
    for (Value* v : n.out) out.push_back(&v->shadow);
    n.layer->shadow(ctx, in, out);
    // The same layer on the mode's own inputs.
    widened.assign(n.in.size(), {});
    in.clear();
    for (std::size_t i = 0; i < n.in.size(); ++i) {
      const Tensor& t = n.in[i]->data;
      widened[i].resize(static_cast<std::size_t>(t.numel()));
      for (int64_t k = 0; k < t.numel(); ++k) widened[i][k] = load_as_float(t.dtype(), t.data(), k);
      in.push_back(&widened[i]);
    }
    out.clear();
    for (Value* v : n.out) out.push_back(&v->local);
    n.layer->shadow(ctx, in, out);
  }
}

namespace {

Shadow widen64(const Tensor& t) {
  Shadow v(static_cast<std::size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) v[k] = load_as_float(t.dtype(), t.data(), k);
  return v;
}

}  // namespace

void Graph::shadow_backward(const Context& ctx, ShadowGrads* params, ShadowGrads* params_local) {
  for (auto& v : values_) {
    v->grad_shadow.clear();
    v->grad_local.clear();
  }
  if (nodes_.empty()) return;
  const Shadow seed{static_cast<double>(ctx.loss_scale)};
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node& n = *it;
    const bool last = it == nodes_.rbegin();
    // From the shadows.
    std::vector<const Shadow*> in, dout;
    std::vector<Shadow*> din;
    for (Value* v : n.in) {
      in.push_back(&v->shadow);
      if (v->grad_shadow.empty()) v->grad_shadow.assign(v->shadow.size(), 0.0);
      din.push_back(&v->grad_shadow);
    }
    for (Value* v : n.out) dout.push_back(last ? &seed : &v->grad_shadow);
    n.layer->shadow_backward(ctx, in, dout, din, params);
    // From the mode's own inputs and output gradients.
    std::vector<Shadow> wide_in(n.in.size()), wide_dout(n.out.size()), local(n.in.size());
    in.clear();
    dout.clear();
    din.clear();
    for (std::size_t i = 0; i < n.in.size(); ++i) {
      wide_in[i] = widen64(n.in[i]->data);
      local[i].assign(wide_in[i].size(), 0.0);
      in.push_back(&wide_in[i]);
      din.push_back(&local[i]);
    }
    for (std::size_t i = 0; i < n.out.size(); ++i) {
      if (last) {
        wide_dout[i] = seed;
      } else if (n.out[i]->has_grad) {
        wide_dout[i] = widen64(n.out[i]->grad);
      }
      dout.push_back(&wide_dout[i]);
    }
    n.layer->shadow_backward(ctx, in, dout, din, params_local);
    for (std::size_t i = 0; i < n.in.size(); ++i) {
      Shadow& acc = n.in[i]->grad_local;
      if (acc.empty()) acc.assign(local[i].size(), 0.0);
      for (std::size_t k = 0; k < acc.size(); ++k) acc[k] += local[i][k];
    }
  }
}

int Graph::producer(int value) const {
  const Value* v = values_[static_cast<std::size_t>(value)].get();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    for (const Value* o : nodes_[i].out) {
      if (o == v) return static_cast<int>(i);
    }
  }
  return -1;
}

std::vector<int> Graph::outputs(std::size_t layer) const {
  std::vector<int> ids;
  for (const Value* o : nodes_[layer].out) {
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (values_[i].get() == o) ids.push_back(static_cast<int>(i));
    }
  }
  return ids;
}

Status Graph::backward(const Context& ctx) {
  for (auto& v : values_) v->has_grad = false;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Status st = it->layer->backward(ctx, it->in, it->out);
    if (!st.ok()) return st;
  }
  return {};
}

}  // namespace mantissa::trainer
