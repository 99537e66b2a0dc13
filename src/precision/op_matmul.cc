// MatMul, BatchMatMul and Addmm in the kit. Both goldens index the operands on their own (shapes
// by torch.matmul's rules written out again here, not the library's planner):
//   golden    the exact products summed in long double (64-bit significand), the operands first
//             rounded as the cube math type asks; Addmm: beta * self + alpha * sum in long double
//   golden32  the normative order (ops/matmul/gemm.h): acc = fmaf(a, b, acc) over k from +0, the
//             Addmm epilogue (beta * self) + (alpha * acc) in fp32 with the NPU's scalar rules,
//             rounded once to out's dtype: compared bit for bit
#include <cfloat>
#include <cmath>
#include <vector>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

// The operand rounding of a cube math type: 0 none, 2 fp16, 3 HFLOAT32.
int operand_rounding(int64_t cube, DType a, DType b) {
  const bool bf16 = a == DType::kBFloat16 || b == DType::kBFloat16;
  const bool fp32 = a == DType::kFloat32 || b == DType::kFloat32;
  if (cube == 1 || cube == 3) return fp32 && !bf16 ? 3 : 0;
  if (cube == 2) {
    if (a == DType::kBFloat16 && b == DType::kBFloat16) return 0;
    return 2;
  }
  return 0;
}

// HFLOAT32: 11 explicit significand bits, nearest with ties away from zero, fp32's exponent
// range (below 2^-126 the unit stays 2^-137, as in fp32's subnormals).
float round_hf32(float x) {
  if (!std::isfinite(x) || x == 0.0f) return std::isnan(x) ? std::nanf("") : x;
  const int e = std::max(std::ilogb(x), -126);
  const double unit = std::ldexp(1.0, e - 11);
  const double r = std::floor(std::fabs(static_cast<double>(x)) / unit + 0.5) * unit;
  return static_cast<float>(std::copysign(r, static_cast<double>(x)));  // r fits fp32 or is inf
}

float round_operand(float x, int rounding) {
  switch (rounding) {
    case 2: return widen_to_float(narrow_float(x, DType::kFloat16), DType::kFloat16);
    case 3: return round_hf32(x);
    default: return x;
  }
}

// One product's index arithmetic: out's dims, and for each out element the flat offsets of the
// rows of a and columns of b it uses.
struct Product {
  std::vector<int64_t> out_shape;
  int64_t m = 1, n = 1, k = 0, items = 1;
  std::vector<int64_t> a_item, b_item;         // element offset of each batch item's matrix
  int64_t a_i = 0, a_q = 0, b_q = 0, b_j = 0;  // strides of i and q in a, of q and j in b
};

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

Product product_of(const HostTensor& a, const HostTensor& b, bool ta, bool tb) {
  Product p;
  const auto ra = static_cast<int>(a.shape.size()), rb = static_cast<int>(b.shape.size());
  const std::vector<int64_t> sa = strides_of(a.shape), sb = strides_of(b.shape);
  if (ra == 1) {
    p.k = a.shape[0], p.a_q = 1;
  } else {
    p.m = a.shape[ra - 2], p.k = a.shape[ra - 1], p.a_i = sa[ra - 2], p.a_q = 1;
    if (ta) std::swap(p.m, p.k), std::swap(p.a_i, p.a_q);
  }
  if (rb == 1) {
    p.b_q = 1;
  } else {
    int64_t kb = b.shape[rb - 2];
    p.n = b.shape[rb - 1], p.b_q = sb[rb - 2], p.b_j = 1;
    if (tb) std::swap(kb, p.n), std::swap(p.b_q, p.b_j);
  }
  const int ba = std::max(ra - 2, 0), bb = std::max(rb - 2, 0), batch = std::max(ba, bb);
  std::vector<int64_t> shape(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    const int ia = i - (batch - ba), ib = i - (batch - bb);
    const int64_t da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
    shape[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  for (const int64_t d : shape) p.items *= d;
  for (int64_t item = 0; item < p.items; ++item) {
    int64_t rest = item, oa = 0, ob = 0;
    for (int i = batch; i-- > 0;) {
      const int64_t idx = rest % shape[static_cast<std::size_t>(i)];
      rest /= shape[static_cast<std::size_t>(i)];
      const int ia = i - (batch - ba), ib = i - (batch - bb);
      if (ia >= 0 && a.shape[ia] != 1) oa += idx * sa[ia];
      if (ib >= 0 && b.shape[ib] != 1) ob += idx * sb[ib];
    }
    p.a_item.push_back(oa);
    p.b_item.push_back(ob);
  }
  p.out_shape = shape;
  if (ra != 1) p.out_shape.push_back(p.m);
  if (rb != 1) p.out_shape.push_back(p.n);
  return p;
}

// Output element e's batch item, row and column.
void locate(const Product& p, int64_t e, int64_t& item, int64_t& i, int64_t& j) {
  j = e % p.n;
  i = e / p.n % p.m;
  item = e / p.n / p.m;
}

// Operands and their rounding for each operator: (a, b, rounding, product).
struct Call {
  const HostTensor* a = nullptr;
  const HostTensor* b = nullptr;
  const HostTensor* self = nullptr;  // Addmm
  double beta = 0.0, alpha = 1.0;
  int rounding = 0;
  Product product;
};

Call matmul_call(const OpInputs& in) {
  Call c;
  c.a = &in.tensors[0], c.b = &in.tensors[1];
  const bool ta = in.attrs[1].b, tb = in.attrs[2].b;
  c.product = product_of(*c.a, *c.b, ta, tb);
  const bool dot = c.a->shape.size() == 1 && c.b->shape.size() == 1;
  c.rounding = dot ? 0 : operand_rounding(in.attrs[0].i, c.a->dtype, c.b->dtype);
  return c;
}

Call addmm_call(const OpInputs& in) {
  Call c;
  c.a = &in.tensors[1], c.b = &in.tensors[2], c.self = &in.tensors[0];
  c.beta = in.attrs[0].as_double(), c.alpha = in.attrs[1].as_double();
  c.product = product_of(*c.a, *c.b, false, false);
  c.rounding = operand_rounding(in.attrs[2].i, c.a->dtype, c.b->dtype);
  return c;
}

// self's element broadcast to (i, j) of [m, n].
int64_t self_index(const HostTensor& self, int64_t i, int64_t j) {
  if (self.shape.size() == 1) return self.shape[0] == 1 ? 0 : j;
  const int64_t rows = self.shape[0], cols = self.shape[1];
  return (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j);
}

float operand(const HostTensor& t, int64_t index, int rounding) {
  return round_operand(in_f32(t, index), rounding);
}

std::vector<std::vector<double>> golden_of(const Call& c) {
  const Product& p = c.product;
  const int64_t total = p.items * p.m * p.n;
  std::vector<double> out(static_cast<std::size_t>(total));
  for (int64_t e = 0; e < total; ++e) {
    int64_t item, i, j;
    locate(p, e, item, i, j);
    long double sum = 0.0L;
    for (int64_t q = 0; q < p.k; ++q) {
      const long double x = operand(*c.a, p.a_item[item] + i * p.a_i + q * p.a_q, c.rounding);
      const long double y = operand(*c.b, p.b_item[item] + q * p.b_q + j * p.b_j, c.rounding);
      sum += x * y;  // exact in long double; the sum rounds to 64 bits
    }
    if (c.self != nullptr) {
      sum = static_cast<long double>(c.alpha) * sum;
      if (c.beta != 0.0)
        sum += c.beta * static_cast<long double>(in_f64(*c.self, self_index(*c.self, i, j)));
    }
    out[static_cast<std::size_t>(e)] = static_cast<double>(sum);
  }
  return {out};
}

// The NPU's fp32 scalar: exactly 1 within FLT_EPSILON of 1.
float npu_scalar(double value) {
  // Beyond fp32's range (FLT_MAX plus half its ulp) the value rounds to inf (a cast would be
  // undefined there).
  const float f = std::fabs(value) >= 0x1.ffffffp+127 ? (value > 0 ? HUGE_VALF : -HUGE_VALF)
                                                      : static_cast<float>(value);
  return std::fabs(f - 1.0f) <= FLT_EPSILON ? 1.0f : f;
}

std::vector<HostTensor> golden32_of(const Call& c, DType out_dtype) {
  const Product& p = c.product;
  HostTensor out(out_dtype, p.out_shape);
  const int64_t total = p.items * p.m * p.n;
  const float beta = npu_scalar(c.beta), alpha = npu_scalar(c.alpha);
  const bool use_self = c.self != nullptr && std::fabs(beta) > FLT_EPSILON;
  const bool use_product = c.self == nullptr || std::fabs(alpha) > FLT_EPSILON;
  for (int64_t e = 0; e < total; ++e) {
    int64_t item, i, j;
    locate(p, e, item, i, j);
    float acc = 0.0f;
    for (int64_t q = 0; use_product && q < p.k; ++q) {
      acc = std::fmaf(operand(*c.a, p.a_item[item] + i * p.a_i + q * p.a_q, c.rounding),
                      operand(*c.b, p.b_item[item] + q * p.b_q + j * p.b_j, c.rounding), acc);
    }
    float y = acc;
    if (c.self != nullptr) {
      // It's necessary to keep the grouping: (beta * self) + (alpha * acc).
      const float scaled = alpha == 1.0f ? acc : alpha * acc;
      const float s = use_self ? beta * in_f32(*c.self, self_index(*c.self, i, j)) : 0.0f;
      y = !use_product ? (use_self ? s : 0.0f) : (use_self ? s + scaled : scaled);
    }
    out.set_bits(e, narrow_result(y, out_dtype));
  }
  return {out};
}

DType promoted(DType a, DType b) { return a == b ? a : DType::kFloat32; }

}  // namespace

template <>
Goldens goldens<detail::MatmulOp>() {
  return {[](const OpInputs& in) { return golden_of(matmul_call(in)); },
          [](const OpInputs& in) {
            return golden32_of(matmul_call(in), promoted(in.tensors[0].dtype, in.tensors[1].dtype));
          },
          StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::BatchMatMulOp>() {
  return {[](const OpInputs& in) { return golden_of(matmul_call(in)); },
          [](const OpInputs& in) {
            return golden32_of(matmul_call(in), promoted(in.tensors[0].dtype, in.tensors[1].dtype));
          },
          StandardKind::kBitwise};
}

template <>
Goldens goldens<detail::AddmmOp>() {
  return {[](const OpInputs& in) { return golden_of(addmm_call(in)); },
          [](const OpInputs& in) {
            const DType out =
                promoted(promoted(in.tensors[1].dtype, in.tensors[2].dtype), in.tensors[0].dtype);
            return golden32_of(addmm_call(in), out);
          },
          StandardKind::kBitwise};
}

}  // namespace mantissa::precision
