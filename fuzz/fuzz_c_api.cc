// The C entry points on calls described by arbitrary bytes: aclnn (two phases, strided views,
// null and repeated handles, list and array handles) and op-by-name (descriptors, buffers of any
// stated size, attributes of any type). The memory each call describes exists (a buffer covering
// every element a view can address), so a crash or a sanitizer report is the library's fault.
// Every call must return a status; rejected calls are fine.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_add_rms_norm.h"
#include "aclnnop/aclnn_addmm.h"
#include "aclnnop/aclnn_amp_update_scale.h"
#include "aclnnop/aclnn_anti_mx_quant.h"
#include "aclnnop/aclnn_batch_matmul.h"
#include "aclnnop/aclnn_cross_entropy_loss.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_dynamic_mx_quant.h"
#include "aclnnop/aclnn_dynamic_mx_quant_v3.h"
#include "aclnnop/aclnn_foreach_norm.h"
#include "aclnnop/aclnn_fused_adamw.h"
#include "aclnnop/aclnn_fused_sgd.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_gelu_backward_v2.h"
#include "aclnnop/aclnn_layer_norm.h"
#include "aclnnop/aclnn_layer_norm_backward.h"
#include "aclnnop/aclnn_matmul.h"
#include "aclnnop/aclnn_quant_max.h"
#include "aclnnop/aclnn_rms_norm.h"
#include "aclnnop/aclnn_softmax.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "fuzz_input.h"

namespace {

using mantissa::fuzz::Input;

constexpr int64_t kMaxBytes = 1 << 20;

// dtypes the operators take, a few they refuse, and one no enum names.
constexpr int32_t kDtypes[] = {0, 1, 27, 3, 9, 11, 12, 2, 29, 35, 36, 37, 40, 41, -1, 77};

int32_t pick_dtype(Input& in) {
  return kDtypes[in.range(0, sizeof(kDtypes) / sizeof(kDtypes[0]) - 1)];
}

std::size_t elem_bytes(int32_t dtype) {
  switch (dtype) {
    case 0:
    case 3: return 4;
    case 1:
    case 27: return 2;
    case 9:
    case 11: return 8;
    default: return 1;
  }
}

// Owns the memory and handles of one call.
struct Arena {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  std::vector<aclTensor*> tensors;
  ~Arena() {
    for (aclTensor* t : tensors) aclDestroyTensor(t);
  }
  void* alloc(std::size_t bytes, std::size_t misalign) {
    blocks.emplace_back(new uint8_t[bytes + 16]());
    return blocks.back().get() + 8 + misalign;
  }
};

// A tensor with shape, strides, dtype and offset from the stream, over memory that covers every
// element its view can address; null for an absent or unrepresentable one.
aclTensor* make_tensor(Input& in, Arena& a, int max_rank = 4) {
  if (in.range(0, 15) == 0) return nullptr;
  const int rank = static_cast<int>(in.range(0, max_rank));
  const int32_t dtype = pick_dtype(in);
  std::vector<int64_t> dims(rank), strides(rank);
  const bool contiguous = in.range(0, 3) != 0;
  int64_t stride = 1;
  for (int i = rank; i-- > 0;) {
    dims[i] = in.range(0, 7);
    strides[i] = contiguous ? stride : in.range(-8, 40);
    stride *= std::max<int64_t>(dims[i], 1);
  }
  // The elements the view can address, relative to its start.
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 0) empty = true;
    const int64_t reach = (dims[i] - 1) * strides[i];
    (reach < 0 ? lo : hi) += reach;
  }
  if (empty) lo = hi = 0;
  const std::size_t eb = elem_bytes(dtype);
  const int64_t count = hi - lo + 1;
  if (count * static_cast<int64_t>(eb) > kMaxBytes) return nullptr;
  auto* base = static_cast<uint8_t*>(
      a.alloc(static_cast<std::size_t>(count) * eb, in.range(0, 7) == 0 ? 1 : 0));
  for (int64_t i = 0; i < count * static_cast<int64_t>(eb); ++i) base[i] = in.byte();
  const int64_t storage = count;
  // The data pointer is the storage start; the view starts -lo elements in.
  aclTensor* t = aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(dtype),
                                 strides.data(), -lo, ACL_FORMAT_ND, &storage, 1, base);
  if (t != nullptr) a.tensors.push_back(t);
  return t;
}

void run_executor(uint64_t size, aclOpExecutor* e,
                  aclnnStatus (*two)(void*, uint64_t, aclOpExecutor*, aclrtStream), Arena& a) {
  if (size > static_cast<uint64_t>(kMaxBytes) * 8) return;  // an executor is run once or leaks
  void* ws = size ? a.alloc(static_cast<std::size_t>(size), 0) : nullptr;
  (void)two(ws, size, e, nullptr);
}

void fuzz_aclnn(Input& in) {
  Arena a;
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  // A handle may be any earlier one again (aliasing).
  auto tensor = [&](int max_rank = 4) -> aclTensor* {
    if (!a.tensors.empty() && in.range(0, 7) == 0) {
      return a.tensors[static_cast<std::size_t>(in.range(0, a.tensors.size() - 1))];
    }
    return make_tensor(in, a, max_rank);
  };
  switch (const int op = static_cast<int>(in.range(0, 16)); op) {
    case 0: {
      aclTensor* x = tensor();
      const int64_t dim = in.range(-6, 6);
      aclTensor* out = tensor();
      if (aclnnSoftmaxGetWorkspaceSize(x, dim, out, &size, &e) == 0) {
        run_executor(size, e, aclnnSoftmax, a);
      }
      break;
    }
    case 1: {
      aclTensor* dy = tensor();
      aclTensor* y = tensor();
      const int64_t dim = in.range(-6, 6);
      aclTensor* out = tensor();
      if (aclnnSoftmaxBackwardGetWorkspaceSize(dy, y, dim, out, &size, &e) == 0) {
        run_executor(size, e, aclnnSoftmaxBackward, a);
      }
      break;
    }
    case 2: {
      aclTensor* x = tensor();
      aclTensor* g = tensor();
      aclTensor* y = tensor();
      aclTensor* r = tensor();
      if (aclnnRmsNormGetWorkspaceSize(x, g, 1e-6, y, r, &size, &e) == 0) {
        run_executor(size, e, aclnnRmsNorm, a);
      }
      break;
    }
    case 3: {
      aclTensor* x = tensor();
      std::vector<int64_t> ns(static_cast<std::size_t>(in.range(0, 9)));
      for (int64_t& d : ns) d = in.range(-1, 7);
      aclIntArray* shape = in.range(0, 15) ? aclCreateIntArray(ns.data(), ns.size()) : nullptr;
      aclTensor* w = tensor();
      aclTensor* b = tensor();
      aclTensor* out = tensor();
      aclTensor* m = tensor();
      aclTensor* r = tensor();
      if (aclnnLayerNormGetWorkspaceSize(x, shape, w, b, 1e-5, out, m, r, &size, &e) == 0) {
        run_executor(size, e, aclnnLayerNorm, a);
      }
      if (shape) aclDestroyIntArray(shape);
      break;
    }
    case 4: {
      aclTensor* dy = tensor();
      aclTensor* x = tensor();
      std::vector<int64_t> ns(static_cast<std::size_t>(in.range(0, 3)));
      for (int64_t& d : ns) d = in.range(0, 7);
      aclIntArray* shape = aclCreateIntArray(ns.data(), ns.size());
      aclTensor* m = tensor();
      aclTensor* r = tensor();
      aclTensor* w = tensor();
      bool mask[4] = {in.flag(), in.flag(), in.flag(), in.flag()};
      aclBoolArray* om = aclCreateBoolArray(mask, static_cast<uint64_t>(in.range(0, 4)));
      aclTensor* dx = tensor();
      aclTensor* dw = tensor();
      aclTensor* db = tensor();
      if (aclnnLayerNormBackwardGetWorkspaceSize(dy, x, shape, m, r, w, nullptr, om, dx, dw, db,
                                                 &size, &e) == 0) {
        run_executor(size, e, aclnnLayerNormBackward, a);
      }
      aclDestroyIntArray(shape);
      aclDestroyBoolArray(om);
      break;
    }
    case 5: {
      aclTensor* s = tensor();
      aclTensor* f = tensor();
      aclTensor* t = tensor();
      if (aclnnAmpUpdateScaleGetWorkspaceSize(s, f, t, 2.0, 0.5, in.range(-2, 3), s, t, &size,
                                              &e) == 0) {
        run_executor(size, e, aclnnAmpUpdateScale, a);
      }
      break;
    }
    default: {
      std::vector<aclTensor*> xs, outs;
      const int64_t n = in.range(0, 4);
      for (int64_t i = 0; i < n; ++i) xs.push_back(tensor());
      for (int64_t i = 0, m = in.range(0, 4); i < m; ++i) outs.push_back(tensor());
      // A list owns (destroys) its tensors: build lists from fresh handles only.
      std::vector<aclTensor*> own_x, own_o;
      for (aclTensor* t : xs) {
        if (t != nullptr) own_x.push_back(t);
      }
      for (aclTensor* t : outs) {
        if (t != nullptr) own_o.push_back(t);
      }
      std::sort(own_x.begin(), own_x.end());
      std::sort(own_o.begin(), own_o.end());
      if (std::unique(own_x.begin(), own_x.end()) != own_x.end() ||
          std::unique(own_o.begin(), own_o.end()) != own_o.end()) {
        break;
      }
      for (aclTensor* t : own_o) {
        if (std::find(own_x.begin(), own_x.end(), t) != own_x.end()) return;
      }
      for (auto* list : {&own_x, &own_o}) {
        for (aclTensor* t : *list) std::erase(a.tensors, t);  // the lists own them now
      }
      aclTensorList* lx = aclCreateTensorList(own_x.data(), own_x.size());
      aclTensorList* lo = aclCreateTensorList(own_o.data(), own_o.size());
      const float p = static_cast<float>(in.range(-1, 3));
      aclScalar* sp = aclCreateScalar(const_cast<float*>(&p), ACL_FLOAT);
      if (aclnnForeachNormGetWorkspaceSize(lx, sp, lo, &size, &e) == 0) {
        run_executor(size, e, aclnnForeachNorm, a);
      }
      aclDestroyTensorList(lx);
      aclDestroyTensorList(lo);
      aclDestroyScalar(sp);
      break;
    }
    // The matrix products: strided and broadcast (stride 0) operands read where they are,
    // cubeMathType out of range included.
    case 7: {
      aclTensor* x = tensor();
      aclTensor* y = tensor();
      aclTensor* out = tensor();
      const auto cube = static_cast<int8_t>(in.range(-2, 5));
      if (aclnnMatmulGetWorkspaceSize(x, y, out, cube, &size, &e) == 0) {
        run_executor(size, e, aclnnMatmul, a);
      }
      break;
    }
    case 8: {
      aclTensor* x = tensor();
      aclTensor* y = tensor();
      aclTensor* out = tensor();
      const auto cube = static_cast<int8_t>(in.range(-2, 5));
      if (aclnnBatchMatMulGetWorkspaceSize(x, y, out, cube, &size, &e) == 0) {
        run_executor(size, e, aclnnBatchMatMul, a);
      }
      break;
    }
    case 9: {
      aclTensor* self = tensor();
      aclTensor* x = tensor();
      aclTensor* y = tensor();
      aclTensor* out = tensor();
      const float beta = static_cast<float>(in.range(-2, 2)) / 2, alpha = 1.0f;
      aclScalar* sb = aclCreateScalar(const_cast<float*>(&beta), ACL_FLOAT);
      aclScalar* sa = aclCreateScalar(const_cast<float*>(&alpha), ACL_FLOAT);
      if (aclnnAddmmGetWorkspaceSize(self, x, y, sb, sa, out, 0, &size, &e) == 0) {
        run_executor(size, e, aclnnAddmm, a);
      }
      aclDestroyScalar(sb);
      aclDestroyScalar(sa);
      break;
    }
    // The GELU derivatives: broadcasting, mixed dtypes, overlapping outputs, approximate strings.
    case 10: {
      aclTensor* dy = tensor();
      aclTensor* x = tensor();
      aclTensor* out = tensor();
      if (in.range(0, 1) == 0) {
        if (aclnnGeluBackwardGetWorkspaceSize(dy, x, out, &size, &e) == 0) {
          run_executor(size, e, aclnnGeluBackward, a);
        }
      } else {
        char none[] = "none", tanh[] = "tanh", other[] = "erf";
        char* const modes[] = {none, tanh, other, nullptr};
        if (aclnnGeluBackwardV2GetWorkspaceSize(dy, x, modes[in.range(0, 3)], out, &size, &e) ==
            0) {
          run_executor(size, e, aclnnGeluBackwardV2, a);
        }
      }
      break;
    }
    // AddRmsNorm: outputs that may be any earlier handle (in place on x1 or x2, overlapping an
    // input, or another output), rstdOut and xOut null or not.
    case 11: {
      aclTensor* x1 = tensor();
      aclTensor* x2 = tensor();
      aclTensor* g = tensor();
      aclTensor* y = tensor();
      aclTensor* r = tensor();
      aclTensor* x = tensor();
      const double eps = in.range(0, 3) == 0 ? 0.0 : 1e-6;
      if (aclnnAddRmsNormGetWorkspaceSize(x1, x2, g, eps, y, r, x, &size, &e) == 0) {
        run_executor(size, e, aclnnAddRmsNorm, a);
      }
      break;
    }
    // SwiGlu and SwiGluGrad: any dim (out of range included), odd split sizes, in place.
    case 14: {
      aclTensor* g = tensor();
      aclTensor* x = tensor();
      aclTensor* out = tensor();
      const int64_t dim = in.range(-9, 8);
      if (in.range(0, 1) == 0) {
        if (aclnnSwiGluGetWorkspaceSize(x, dim, out, &size, &e) == 0) {
          run_executor(size, e, aclnnSwiGlu, a);
        }
      } else if (aclnnSwiGluGradGetWorkspaceSize(g, x, dim, out, &size, &e) == 0) {
        run_executor(size, e, aclnnSwiGluGrad, a);
      }
      break;
    }
    // FusedAdamw and FusedSgd: lists of any lengths and elements (strided, self-overlapping,
    // misaligned, of mixed dtypes and shapes), step tensors of any dtype, optional lists null or
    // empty, grad scale and found_inf of any dtype, attributes negative or not.
    case 15: {
      // A list of fresh tensors (a list owns and destroys its elements); null when none.
      std::vector<aclTensorList*> lists;
      auto list = [&](int64_t n) -> aclTensorList* {
        if (in.range(0, 15) == 0) return nullptr;
        std::vector<aclTensor*> own;
        for (int64_t i = 0; i < n; ++i) {
          aclTensor* t = make_tensor(in, a);
          if (t == nullptr) continue;
          std::erase(a.tensors, t);
          own.push_back(t);
        }
        lists.push_back(aclCreateTensorList(own.data(), own.size()));
        return lists.back();
      };
      const int64_t n = in.range(0, 3);
      const auto count = [&] { return in.range(0, 5) == 0 ? in.range(0, 4) : n; };
      const bool amsgrad = in.byte() & 1, maximize = in.byte() & 1;
      const double lr = static_cast<double>(in.range(-1, 3)) * 0.01;
      if (in.range(0, 1) == 0) {
        aclTensorList* p = list(count());
        aclTensorList* g = list(count());
        aclTensorList* m = list(count());
        aclTensorList* v = list(count());
        aclTensorList* x = list(count());
        aclTensorList* st = list(count());
        aclTensor* scale = tensor();
        aclTensor* found = tensor();
        if (aclnnFusedAdamwGetWorkspaceSize(p, g, m, v, x, st, scale, found, lr, 0.9, 0.999, 0.01,
                                            1e-8, amsgrad, maximize, &size, &e) == 0) {
          run_executor(size, e, aclnnFusedAdamw, a);
        }
      } else {
        aclTensorList* p = list(count());
        aclTensorList* g = list(count());
        aclTensorList* b = list(count());
        aclTensor* scale = tensor();
        const float momentum = static_cast<float>(in.range(-1, 2)) * 0.45f;
        if (aclnnFusedSgdGetWorkspaceSize(p, g, b, scale, 0.01f, momentum, static_cast<float>(lr),
                                          0.0f, in.byte() & 1, maximize, in.byte() & 1, &size,
                                          &e) == 0) {
          run_executor(size, e, aclnnFusedSgd, a);
        }
      }
      for (aclTensorList* l : lists) aclDestroyTensorList(l);
      break;
    }
    // The FP8/MX operators: QuantMax, DynamicMxQuant (V3 and V1) and AntiMxQuant with any
    // tensors (packed FP4 ones included), destination types, round-mode strings, block sizes,
    // scale rules and bounds.
    case 16: {
      const char* const modes[] = {"rint", "floor", "round", "hybrid", "", nullptr};
      char* mode = const_cast<char*>(modes[in.range(0, 5)]);
      const int64_t dst_types[] = {35, 36, 40, 41, 34, 0, 27, 99};
      const int64_t dst = dst_types[in.range(0, 7)];
      const int64_t axis = in.range(-3, 3);
      aclTensor* x = tensor();
      aclTensor* t1 = tensor(5);
      aclTensor* t2 = tensor(5);
      switch (in.range(0, 3)) {
        case 0:
          if (aclnnQuantMaxGetWorkspaceSize(x, t1, mode, dst, t2, tensor(), &size, &e) == 0) {
            run_executor(size, e, aclnnQuantMax, a);
          }
          break;
        case 1: {
          const int64_t bs = in.range(0, 3) == 0 ? in.range(-1, 70) : 32 * in.range(1, 3);
          const int64_t alg = in.range(-1, 3);
          const double dtm = static_cast<double>(in.range(-1, 13));
          const double mlb = in.range(0, 3) == 0 ? 0.5 : 0.0;
          if (aclnnDynamicMxQuantV3GetWorkspaceSize(x, axis, mode, dst, bs, alg, dtm, mlb, t1, t2,
                                                    &size, &e) == 0) {
            run_executor(size, e, aclnnDynamicMxQuantV3, a);
          }
          break;
        }
        case 2:
          if (aclnnDynamicMxQuantGetWorkspaceSize(x, axis, mode, dst, 32, in.range(0, 2), t1, t2,
                                                  &size, &e) == 0) {
            run_executor(size, e, aclnnDynamicMxQuant, a);
          }
          break;
        default:
          if (aclnnAntiMxQuantGetWorkspaceSize(x, t1, axis, dst, t2, &size, &e) == 0) {
            run_executor(size, e, aclnnAntiMxQuant, a);
          }
          break;
      }
      break;
    }
    // CrossEntropyLoss and its gradient: targets of any dtype and value (out of range, the
    // ignore index), optional weights and z-loss tensors, reduction strings good and bad.
    case 12:
    case 13: {
      const char* const reductions[] = {"mean", "sum", "none", "avg", nullptr};
      const char* reduction = reductions[in.range(0, 4)];
      const int64_t ignore = in.range(-101, 3);
      const double smoothing = static_cast<double>(in.range(-1, 4)) / 3;
      const double zscale = in.range(0, 3) == 0 ? 1e-4 : 0.0;
      if (op == 12) {
        aclTensor* x = tensor();
        aclTensor* t = tensor();
        aclTensor* w = tensor();
        aclTensor* loss = tensor();
        aclTensor* lp = tensor();
        aclTensor* z = tensor();
        aclTensor* lse = tensor();
        if (aclnnCrossEntropyLossGetWorkspaceSize(x, t, w, reduction, ignore, smoothing, zscale,
                                                  in.range(0, 1) == 1, loss, lp, z, lse, &size,
                                                  &e) == 0) {
          run_executor(size, e, aclnnCrossEntropyLoss, a);
        }
      } else {
        aclTensor* g = tensor();
        aclTensor* lp = tensor();
        aclTensor* t = tensor();
        aclTensor* w = tensor();
        aclTensor* gz = tensor();
        aclTensor* lse = tensor();
        aclTensor* out = tensor();
        if (aclnnCrossEntropyLossGradGetWorkspaceSize(g, lp, t, w, gz, lse, reduction, ignore,
                                                      smoothing, zscale, out, &size, &e) == 0) {
          run_executor(size, e, aclnnCrossEntropyLossGrad, a);
        }
      }
      break;
    }
  }
}

const char* const kOpTypes[] = {"AmpUpdateScale",
                                "SGD",
                                "ApplyAdamD",
                                "ApplyAdamWV2",
                                "SoftmaxV2",
                                "LogSoftmaxV2",
                                "SoftmaxGrad",
                                "LogSoftmaxGrad",
                                "RmsNorm",
                                "RmsNormGrad",
                                "AddRmsNorm",
                                "CrossEntropyLoss",
                                "CrossEntropyLossGrad",
                                "SwiGlu",
                                "SwiGluGrad",
                                "ForeachNonFiniteCheckAndUnscale",
                                "ForeachNorm",
                                "SoftmaxCrossEntropyWithLogits",
                                "LayerNormV4",
                                "LayerNormGradV3",
                                "MatMulV2",
                                "BatchMatMulV2",
                                "Addmm",
                                "Gelu",
                                "GeluV2",
                                "GeluGrad",
                                "GeluGradV2",
                                "NoSuchOp"};
const char* const kAttrNames[] = {"axes",
                                  "axis",
                                  "epsilon",
                                  "output_mask",
                                  "growth_factor",
                                  "backoff_factor",
                                  "growth_interval",
                                  "use_nesterov",
                                  "nesterov",
                                  "dampening",
                                  "weight_decay",
                                  "lr",
                                  "amsgrad",
                                  "maximize",
                                  "half_to_float",
                                  "use_locking",
                                  "transpose_x1",
                                  "transpose_x2",
                                  "adj_x1",
                                  "cube_math_type",
                                  "approximate",
                                  "dim",
                                  "reduction",
                                  "ignore_index",
                                  "label_smoothing",
                                  "x"};

void fuzz_aclop(Input& in) {
  Arena a;
  const char* type = kOpTypes[in.range(0, sizeof(kOpTypes) / sizeof(kOpTypes[0]) - 1)];
  std::vector<aclTensorDesc*> desc[2];
  std::vector<aclDataBuffer*> buf[2];
  for (int side = 0; side < 2; ++side) {
    for (int64_t i = 0, n = in.range(0, 7); i < n; ++i) {
      std::vector<int64_t> dims(static_cast<std::size_t>(in.range(0, 9)));
      for (int64_t& d : dims) d = in.range(0, 6);
      const int32_t dtype = pick_dtype(in);
      const int32_t format = static_cast<int32_t>(in.range(0, 3) == 0 ? in.range(-1, 50) : 2);
      desc[side].push_back(aclCreateTensorDesc(static_cast<aclDataType>(dtype),
                                               static_cast<int>(dims.size()), dims.data(),
                                               static_cast<aclFormat>(format)));
      const auto bytes = static_cast<std::size_t>(in.range(0, 2048));
      void* data = in.range(0, 15) ? a.alloc(bytes, in.range(0, 7) == 0 ? 1 : 0) : nullptr;
      if (data) {
        for (std::size_t k = 0; k < bytes; ++k) static_cast<uint8_t*>(data)[k] = in.byte();
      }
      buf[side].push_back(aclCreateDataBuffer(data, bytes));
    }
  }
  aclopAttr* attr = in.range(0, 7) ? aclopCreateAttr() : nullptr;
  for (int64_t i = 0, n = in.range(0, 5); attr && i < n; ++i) {
    const char* name = kAttrNames[in.range(0, sizeof(kAttrNames) / sizeof(kAttrNames[0]) - 1)];
    int64_t ints[9];
    uint8_t bools[9];
    const int count = static_cast<int>(in.range(0, 9));
    for (int k = 0; k < count; ++k) ints[k] = in.range(-3, 3), bools[k] = in.byte();
    switch (in.range(0, 4)) {
      case 0: aclopSetAttrBool(attr, name, in.byte()); break;
      case 1: aclopSetAttrInt(attr, name, in.range(-5, 5000)); break;
      case 2: aclopSetAttrFloat(attr, name, static_cast<float>(in.range(-4, 4)) * 0.5f); break;
      case 3: aclopSetAttrListInt(attr, name, count, ints); break;
      default: aclopSetAttrListBool(attr, name, count, bools); break;
    }
  }
  (void)aclopCompileAndExecuteV2(type, static_cast<int>(desc[0].size()), desc[0].data(),
                                 buf[0].data(), static_cast<int>(desc[1].size()), desc[1].data(),
                                 buf[1].data(), attr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr,
                                 nullptr);
  for (int side = 0; side < 2; ++side) {
    for (aclTensorDesc* d : desc[side]) aclDestroyTensorDesc(d);
    for (aclDataBuffer* b : buf[side]) aclDestroyDataBuffer(b);
  }
  if (attr) aclopDestroyAttr(attr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Input in(data, size);
  if (in.flag()) {
    fuzz_aclnn(in);
  } else {
    fuzz_aclop(in);
  }
  return 0;
}
