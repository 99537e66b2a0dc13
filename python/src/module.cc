// The `mantissa._mantissa` extension: every operator of the C++ API, the fused multi-tensor
// optimizer steps, runtime settings and the precision kit's check, on numpy arrays and PyTorch
// CPU tensors without copying.
//
// Glossary
//   view      a mantissa::TensorView built over the caller's memory: numpy arrays (and anything
//             else with the buffer protocol) through the buffer protocol; torch tensors through
//             their data_ptr(), dtype, shape and stride(), so bf16 works and libtorch is not
//             linked. Strides are passed as they are; the C++ API refuses non-contiguous tensors
//             (161002), so nothing is staged and nothing is copied.
//   Error     mantissa.Error (a ValueError): .code is the CANN status code, .code_name its
//             symbol, str() the library's message. Raised before anything is written.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/mantissa.h"
#include "ops/all_ops.h"
#ifdef MANTISSA_HAVE_PRECISION_KIT
#include "precision/kit.h"
#endif

namespace py = pybind11;

namespace mantissa::python {
namespace {

// mantissa.Error, created at import (a module-lifetime reference, never released).
PyObject* g_error_type = nullptr;

[[noreturn]] void raise_error(StatusCode code, const std::string& message) {
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object error = type(message);
  error.attr("code") = static_cast<int32_t>(code);
  error.attr("code_name") = status_code_name(code);
  PyErr_SetObject(g_error_type, error.ptr());
  throw py::error_already_set();
}

void raise_if_failed(const Status& s) {
  if (!s.ok()) raise_error(s.code(), s.message());
}

// Runs `kernel` (returning a Status) with the GIL released, then raises on failure.
template <class Kernel>
void run(Kernel&& kernel) {
  Status s;
  {
    py::gil_scoped_release release;
    s = kernel();
  }
  raise_if_failed(s);
}

// Whether the tensor is written by the call: written tensors must be writable buffers.
enum class Access { kRead, kWrite };

// Keeps the Py_buffer of every numpy argument, and the storage of every torch argument, until
// the call has returned: a storage stays allocated while referenced, so another thread that
// set_()s or drops a tensor during the call (the GIL is released) leaves its memory in place.
// (A resize_() that grows a storage reallocates it all the same: python.md.)
struct Buffers {
  std::vector<std::unique_ptr<py::buffer_info>> held;
  std::vector<py::object> storages;
};

// torch's classes and dtypes, looked up once torch has been imported by the caller (the module
// never imports torch itself).
struct TorchTypes {
  bool ready = false;
  py::object tensor_type, strided;
  // The tensor method returning its storage without a copy or a warning: untyped_storage
  // (torch 2), _storage (1.13), else storage.
  py::object storage_method;
  std::vector<std::pair<py::object, DType>> dtypes;
};

TorchTypes& torch_types() {
  static TorchTypes* types = new TorchTypes();  // leaked: outlives interpreter teardown order
  if (!types->ready) {
    py::dict modules = py::module_::import("sys").attr("modules");
    if (!modules.contains("torch")) return *types;
    py::object torch = modules["torch"];
    if (!py::hasattr(torch, "Tensor") || !py::hasattr(torch, "bfloat16")) return *types;
    types->tensor_type = torch.attr("Tensor");
    types->strided = torch.attr("strided");
    for (const char* method : {"untyped_storage", "_storage", "storage"}) {
      if (py::hasattr(types->tensor_type, method)) {
        types->storage_method = py::str(method);
        break;
      }
    }
    const std::pair<const char*, DType> table[] = {
        {"float32", DType::kFloat32}, {"float16", DType::kFloat16}, {"bfloat16", DType::kBFloat16},
        {"float64", DType::kFloat64}, {"int32", DType::kInt32},     {"int64", DType::kInt64},
        {"int16", DType::kInt16},     {"int8", DType::kInt8},       {"uint8", DType::kUInt8},
        {"bool", DType::kBool}};
    for (const auto& [name, dtype] : table) types->dtypes.emplace_back(torch.attr(name), dtype);
    types->ready = true;
  }
  return *types;
}

void set_dims(TensorView& v, const std::vector<int64_t>& shape,
              const std::vector<int64_t>& strides) {
  // A rank above kMaxRank is recorded as such (first kMaxRank dims kept) so that the operator
  // rejects it with its own status and message.
  v.rank = static_cast<int>(shape.size());
  for (std::size_t i = 0; i < shape.size() && i < static_cast<std::size_t>(kMaxRank); ++i) {
    v.shape[i] = shape[i];
    v.strides[i] = strides[i];
  }
}

// An interned attribute name (looked up once; the optimizers pass hundreds of tensors a step).
py::handle interned(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (name == nullptr) throw py::error_already_set();
  return name;  // kept for the life of the process
}

// A tuple of ints (torch.Size or stride()'s tuple) as int64 values.
std::vector<int64_t> int_tuple(const py::object& tuple) {
  if (!PyTuple_Check(tuple.ptr())) return tuple.cast<std::vector<int64_t>>();
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple.ptr());
  std::vector<int64_t> out(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), i));
  }
  if (PyErr_Occurred()) throw py::error_already_set();
  return out;
}

TensorView torch_view(py::handle obj, const TorchTypes& torch, Buffers& buffers, const char* name) {
  static const py::handle kIsCpu = interned("is_cpu"), kLayout = interned("layout"),
                          kDtype = interned("dtype"), kDataPtr = interned("data_ptr"),
                          kShape = interned("shape"), kStride = interned("stride");
  if (!obj.attr(kIsCpu).cast<bool>()) {
    raise_error(StatusCode::kParamInvalid, std::string(name) + ": a torch tensor on device '" +
                                               py::str(obj.attr("device")).cast<std::string>() +
                                               "'; only CPU tensors are accepted");
  }
  const py::object layout = obj.attr(kLayout);
  if (!layout.is(torch.strided)) {
    raise_error(StatusCode::kParamInvalid, std::string(name) + ": a torch tensor with layout " +
                                               py::str(layout).cast<std::string>() +
                                               "; only strided (dense) tensors are accepted");
  }
  const py::object dtype = obj.attr(kDtype);
  DType type = DType::kUndefined;
  for (const auto& [object, d] : torch.dtypes) {
    if (dtype.is(object)) type = d;
  }
  if (type == DType::kUndefined) {
    raise_error(StatusCode::kParamInvalid, std::string(name) + ": torch dtype " +
                                               py::str(dtype).cast<std::string>() +
                                               " has no mantissa dtype");
  }
  TensorView v;
  v.dtype = type;
  if (torch.storage_method) buffers.storages.push_back(obj.attr(torch.storage_method)());
  const py::object ptr = obj.attr(kDataPtr)();
  v.data = PyLong_AsVoidPtr(ptr.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  set_dims(v, int_tuple(obj.attr(kShape)), int_tuple(obj.attr(kStride)()));
  return v;
}

DType buffer_dtype(const py::buffer_info& info) {
  // The struct-module format characters numpy exports; sizes checked against itemsize because
  // 'l' is 8 bytes here but the format alone does not say so.
  std::string f = info.format;
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f = f.substr(1);
  const auto size = info.itemsize;
  if (f == "f" && size == 4) return DType::kFloat32;
  if (f == "e" && size == 2) return DType::kFloat16;
  if (f == "d" && size == 8) return DType::kFloat64;
  if ((f == "i" || f == "l") && size == 4) return DType::kInt32;
  if ((f == "l" || f == "q") && size == 8) return DType::kInt64;
  if (f == "h" && size == 2) return DType::kInt16;
  if (f == "b" && size == 1) return DType::kInt8;
  if (f == "B" && size == 1) return DType::kUInt8;
  if (f == "?" && size == 1) return DType::kBool;
  return DType::kUndefined;
}

TensorView buffer_view(py::handle obj, Access access, Buffers& buffers, const char* name) {
  std::unique_ptr<py::buffer_info> info;
  try {
    info = std::make_unique<py::buffer_info>(
        py::reinterpret_borrow<py::buffer>(obj).request(access == Access::kWrite));
  } catch (py::error_already_set& e) {
    raise_error(StatusCode::kParamInvalid, std::string(name) + ": cannot " +
                                               (access == Access::kWrite ? "write to" : "read") +
                                               " this buffer (" + e.what() + ")");
  }
  const DType type = buffer_dtype(*info);
  if (type == DType::kUndefined) {
    raise_error(StatusCode::kParamInvalid,
                std::string(name) + ": buffer format '" + info->format + "' has no mantissa dtype");
  }
  std::vector<int64_t> strides;
  for (const py::ssize_t stride : info->strides) {
    if (stride % info->itemsize != 0) {
      raise_error(StatusCode::kParamInvalid,
                  std::string(name) +
                      ": a byte stride that is not a multiple of the element "
                      "size (" +
                      std::to_string(stride) + " bytes)");
    }
    strides.push_back(stride / info->itemsize);
  }
  TensorView v;
  v.dtype = type;
  v.data = info->ptr;
  set_dims(v, std::vector<int64_t>(info->shape.begin(), info->shape.end()), strides);
  buffers.held.push_back(std::move(info));
  return v;
}

// The view of one argument (numpy array, torch CPU tensor, or any buffer).
TensorView view_of(py::handle obj, Access access, Buffers& buffers, const char* name) {
  if (obj.is_none()) {
    raise_error(StatusCode::kParamNullptr, std::string(name) + " is None");
  }
  const TorchTypes& torch = torch_types();
  if (torch.ready && py::isinstance(obj, torch.tensor_type))
    return torch_view(obj, torch, buffers, name);
  if (PyObject_CheckBuffer(obj.ptr())) return buffer_view(obj, access, buffers, name);
  raise_error(StatusCode::kParamInvalid,
              std::string(name) + ": expected a numpy array or a torch CPU tensor, got " +
                  py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

std::optional<TensorView> optional_view(py::handle obj, Access access, Buffers& buffers,
                                        const char* name) {
  if (obj.is_none()) return std::nullopt;
  return view_of(obj, access, buffers, name);
}

std::vector<TensorView> list_views(py::handle seq, Access access, Buffers& buffers,
                                   const std::string& name) {
  std::vector<TensorView> views;
  const py::sequence s = py::reinterpret_borrow<py::sequence>(seq);
  views.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::string item = name + "[" + std::to_string(i) + "]";
    views.push_back(view_of(s[i], access, buffers, item.c_str()));
  }
  return views;
}

// An optional list (None, or a sequence whose items may be None).
std::vector<std::optional<TensorView>> optional_list(py::handle seq, std::size_t count,
                                                     Access access, Buffers& buffers,
                                                     const std::string& name) {
  std::vector<std::optional<TensorView>> views(count);
  if (seq.is_none()) return views;
  const py::sequence s = py::reinterpret_borrow<py::sequence>(seq);
  if (s.size() != count) {
    raise_error(StatusCode::kParamInvalid, name + ": " + std::to_string(s.size()) +
                                               " entries for " + std::to_string(count) +
                                               " parameters");
  }
  for (std::size_t i = 0; i < count; ++i) {
    const std::string item = name + "[" + std::to_string(i) + "]";
    views[i] = optional_view(s[i], access, buffers, item.c_str());
  }
  return views;
}

std::size_t checked_count(const std::vector<TensorView>& first,
                          const std::vector<TensorView>& other, const char* first_name,
                          const char* other_name) {
  if (first.size() != other.size()) {
    raise_error(StatusCode::kParamInvalid, std::string(other_name) + ": " +
                                               std::to_string(other.size()) + " tensors, but " +
                                               first_name + " has " + std::to_string(first.size()));
  }
  return first.size();
}

// One list argument of a fused step: a Python sequence with one tensor per parameter (an
// optional list: None, or a sequence whose items may be None), and the member of the
// per-parameter struct it fills.
template <class P>
struct ListArg {
  const char* name;
  py::handle seq;
  Access access;
  TensorView P::*member = nullptr;                   // a required list
  std::optional<TensorView> P::*optional = nullptr;  // an optional list
};

// The per-parameter tensors of a fused step from its list arguments: every required list as long
// as the first (161002 naming both otherwise), each optional one None or as long.
template <class P>
std::vector<P> parameter_list(std::initializer_list<ListArg<P>> args, Buffers& b) {
  const ListArg<P>& first = *args.begin();
  const std::vector<TensorView> anchor = list_views(first.seq, first.access, b, first.name);
  std::vector<P> list(anchor.size());
  for (const ListArg<P>& a : args) {
    if (a.member != nullptr) {
      const std::vector<TensorView> views =
          &a == &first ? anchor : list_views(a.seq, a.access, b, a.name);
      checked_count(anchor, views, first.name, a.name);
      for (std::size_t i = 0; i < list.size(); ++i) list[i].*a.member = views[i];
    } else {
      const auto views = optional_list(a.seq, list.size(), a.access, b, a.name);
      for (std::size_t i = 0; i < list.size(); ++i) list[i].*a.optional = views[i];
    }
  }
  return list;
}

WeightRounding rounding_from_name(const std::string& name) {
  if (name == "nearest") return WeightRounding::kNearest;
  if (name == "kahan") return WeightRounding::kKahan;
  if (name == "stochastic") return WeightRounding::kStochastic;
  raise_error(StatusCode::kParamInvalid,
              "rounding: '" + name + "' is not one of 'nearest', 'kahan', 'stochastic'");
}

FusedStepOptions fused_options(py::handle grad_scale, py::handle found_inf,
                               std::optional<float> clip_coef, const std::string& rounding,
                               uint64_t seed, uint64_t rng_step, Buffers& buffers) {
  FusedStepOptions o;
  o.grad_scale = optional_view(grad_scale, Access::kRead, buffers, "grad_scale");
  o.found_inf = optional_view(found_inf, Access::kRead, buffers, "found_inf");
  o.clip_coef = clip_coef;
  o.rounding = rounding_from_name(rounding);
  o.seed = seed;
  o.rng_step = rng_step;
  return o;
}

NormType norm_type_from(double p) {
  if (p == 2.0) return NormType::kL2;
  if (p == 1.0) return NormType::kL1;
  if (std::isinf(p) && p > 0) return NormType::kInf;
  raise_error(StatusCode::kParamInvalid,
              "norm_type: " + std::to_string(p) + " is not one of 2, 1, inf");
}

// ---- Operators --------------------------------------------------------------------------------

void bind_ops(py::module_& m) {
  m.def(
      "amp_update_scale",
      [](py::handle current_scale, py::handle growth_tracker, py::handle found_inf,
         py::handle updated_scale, py::handle updated_growth_tracker, double growth_factor,
         double backoff_factor, int64_t growth_interval) {
        Buffers b;
        AmpUpdateScaleTensors t;
        const bool scale_in_place = updated_scale.is_none();
        const bool tracker_in_place = updated_growth_tracker.is_none();
        t.current_scale = view_of(current_scale, scale_in_place ? Access::kWrite : Access::kRead, b,
                                  "current_scale");
        t.growth_tracker = view_of(
            growth_tracker, tracker_in_place ? Access::kWrite : Access::kRead, b, "growth_tracker");
        t.found_inf = view_of(found_inf, Access::kRead, b, "found_inf");
        t.updated_scale = scale_in_place
                              ? t.current_scale
                              : view_of(updated_scale, Access::kWrite, b, "updated_scale");
        t.updated_growth_tracker =
            tracker_in_place
                ? t.growth_tracker
                : view_of(updated_growth_tracker, Access::kWrite, b, "updated_growth_tracker");
        const AmpUpdateScaleParams p{.growth_factor = growth_factor,
                                     .backoff_factor = backoff_factor,
                                     .growth_interval = growth_interval};
        run([&] { return amp_update_scale(t, p); });
      },
      py::arg("current_scale"), py::arg("growth_tracker"), py::arg("found_inf"),
      py::arg("updated_scale") = py::none(), py::arg("updated_growth_tracker") = py::none(),
      py::kw_only(), py::arg("growth_factor") = 2.0, py::arg("backoff_factor") = 0.5,
      py::arg("growth_interval") = 2000,
      "AmpUpdateScale; updated_scale/updated_growth_tracker None: in place.");

  m.def(
      "apply_adam_d",
      [](py::handle var, py::handle m_, py::handle v, py::handle beta1_power,
         py::handle beta2_power, py::handle lr, py::handle beta1, py::handle beta2,
         py::handle epsilon, py::handle grad, py::handle var_out, py::handle m_out,
         py::handle v_out, bool use_locking, bool use_nesterov) {
        Buffers b;
        ApplyAdamDTensors t;
        t.var = view_of(var, var_out.is_none() ? Access::kWrite : Access::kRead, b, "var");
        t.m = view_of(m_, m_out.is_none() ? Access::kWrite : Access::kRead, b, "m");
        t.v = view_of(v, v_out.is_none() ? Access::kWrite : Access::kRead, b, "v");
        t.beta1_power = view_of(beta1_power, Access::kRead, b, "beta1_power");
        t.beta2_power = view_of(beta2_power, Access::kRead, b, "beta2_power");
        t.lr = view_of(lr, Access::kRead, b, "lr");
        t.beta1 = view_of(beta1, Access::kRead, b, "beta1");
        t.beta2 = view_of(beta2, Access::kRead, b, "beta2");
        t.epsilon = view_of(epsilon, Access::kRead, b, "epsilon");
        t.grad = view_of(grad, Access::kRead, b, "grad");
        t.var_out = optional_view(var_out, Access::kWrite, b, "var_out");
        t.m_out = optional_view(m_out, Access::kWrite, b, "m_out");
        t.v_out = optional_view(v_out, Access::kWrite, b, "v_out");
        const ApplyAdamDParams p{.use_locking = use_locking, .use_nesterov = use_nesterov};
        run([&] { return apply_adam_d(t, p); });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("beta1_power"), py::arg("beta2_power"),
      py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"), py::arg("grad"),
      py::kw_only(), py::arg("var_out") = py::none(), py::arg("m_out") = py::none(),
      py::arg("v_out") = py::none(), py::arg("use_locking") = false,
      py::arg("use_nesterov") = false, "ApplyAdamD (TensorFlow-form Adam); in place by default.");

  m.def(
      "apply_adam_w_v2",
      [](py::handle var, py::handle m_, py::handle v, py::handle grad, py::handle step,
         py::handle max_grad_norm, float lr, float beta1, float beta2, float weight_decay,
         float eps, bool amsgrad, bool maximize) {
        Buffers b;
        ApplyAdamWV2Tensors t;
        t.var = view_of(var, Access::kWrite, b, "var");
        t.m = view_of(m_, Access::kWrite, b, "m");
        t.v = view_of(v, Access::kWrite, b, "v");
        t.max_grad_norm = optional_view(max_grad_norm, Access::kWrite, b, "max_grad_norm");
        t.grad = view_of(grad, Access::kRead, b, "grad");
        t.step = view_of(step, Access::kRead, b, "step");
        const ApplyAdamWV2Params p{.lr = lr,
                                   .beta1 = beta1,
                                   .beta2 = beta2,
                                   .weight_decay = weight_decay,
                                   .eps = eps,
                                   .amsgrad = amsgrad,
                                   .maximize = maximize};
        run([&] { return apply_adam_w_v2(t, p); });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("grad"), py::arg("step"), py::kw_only(),
      py::arg("max_grad_norm") = py::none(), py::arg("lr") = 1e-3f, py::arg("beta1") = 0.9f,
      py::arg("beta2") = 0.999f, py::arg("weight_decay") = 1e-2f, py::arg("eps") = 1e-8f,
      py::arg("amsgrad") = false, py::arg("maximize") = false,
      "ApplyAdamWV2 (torch.optim.AdamW's step); var, m, v (and max_grad_norm) in place.");

  m.def(
      "foreach_non_finite_check_and_unscale",
      [](py::handle scaled_grads, py::handle found_inf, py::handle inv_scale) {
        Buffers b;
        const std::vector<TensorView> grads =
            list_views(scaled_grads, Access::kWrite, b, "scaled_grads");
        const ForeachNonFiniteCheckAndUnscaleTensors t{
            .scaled_grads = grads,
            .found_inf = view_of(found_inf, Access::kWrite, b, "found_inf"),
            .inv_scale = view_of(inv_scale, Access::kRead, b, "inv_scale")};
        run([&] { return foreach_non_finite_check_and_unscale(t); });
      },
      py::arg("scaled_grads"), py::arg("found_inf"), py::arg("inv_scale"),
      "ForeachNonFiniteCheckAndUnscale: grads *= inv_scale in place; found_inf = 1 on Inf/NaN.");

  m.def(
      "foreach_norm",
      [](py::handle x, py::handle out, double p) {
        Buffers b;
        const std::vector<TensorView> xs = list_views(x, Access::kRead, b, "x");
        const std::vector<TensorView> outs = list_views(out, Access::kWrite, b, "out");
        const ForeachNormTensors t{.x = xs, .out = outs};
        run([&] { return foreach_norm(t, {.p = p}); });
      },
      py::arg("x"), py::arg("out"), py::kw_only(), py::arg("p") = 2.0,
      "ForeachNorm: out[i] = ||x[i]||_p, p = 2, 1 or inf.");

  // Quantized outputs: numpy and torch have int8, uint8 and int32; FP8 results go into a uint8
  // array of the same shape (one byte per element) named by `dtype` ("fp8_e4m3", "fp8_e5m2").
  // Packed INT4 outputs are not offered here (two elements per byte do not map onto an array's
  // shape); use the C++ API or aclnn.
  const auto quantized_view = [](py::handle y, const char* dtype, Buffers& b) {
    TensorView v = view_of(y, Access::kWrite, b, "y");
    if (dtype != nullptr) {
      const DType d = dtype_from_name(dtype);
      if (d == DType::kUndefined || dtype_bits(d) != 8 || dtype_size(v.dtype) != 1) {
        raise_error(StatusCode::kParamInvalid,
                    std::string("y: dtype \"") + dtype +
                        "\" needs a one-byte dtype name and a one-byte array (int8, uint8, "
                        "fp8_e4m3, fp8_e5m2)");
      }
      v.dtype = d;
    }
    return v;
  };

  m.def(
      "quantize",
      [quantized_view](py::handle x, py::handle scales, py::handle y, py::handle zero_points,
                       std::optional<std::string> dtype, int32_t axis) {
        Buffers b;
        QuantizeTensors t;
        t.x = view_of(x, Access::kRead, b, "x");
        t.scales = view_of(scales, Access::kRead, b, "scales");
        t.zero_points = optional_view(zero_points, Access::kRead, b, "zero_points");
        t.y = quantized_view(y, dtype ? dtype->c_str() : nullptr, b);
        const QuantizeParams p{.dtype = t.y.dtype, .axis = axis};
        run([&] { return quantize(t, p); });
      },
      py::arg("x"), py::arg("scales"), py::arg("y"), py::kw_only(),
      py::arg("zero_points") = py::none(), py::arg("dtype") = py::none(), py::arg("axis") = 1,
      "Quantize: y = round_half_even(x / scales + zero_points), saturating, into y's dtype.");

  m.def(
      "quant_max",
      [quantized_view](py::handle x, py::handle scale, py::handle y, py::handle amax,
                       const std::string& dtype, const std::string& round_mode) {
        Buffers b;
        QuantMaxTensors t;
        t.x = view_of(x, Access::kRead, b, "x");
        t.scale = view_of(scale, Access::kRead, b, "scale");
        t.y = quantized_view(y, dtype.c_str(), b);
        t.amax = view_of(amax, Access::kWrite, b, "amax");
        QuantMaxParams p{.dst_type = t.y.dtype};
        if (!quant_max_round_mode_from_name(round_mode.c_str(), p.round_mode)) {
          raise_error(StatusCode::kParamInvalid,
                      "round_mode \"" + round_mode + "\" is not rint, round or hybrid");
        }
        run([&] { return quant_max(t, p); });
      },
      py::arg("x"), py::arg("scale"), py::arg("y"), py::arg("amax"), py::kw_only(),
      py::arg("dtype") = "fp8_e4m3", py::arg("round_mode") = "rint",
      "QuantMax: y = FP8(x * scale) (nearest even, saturated; y a uint8 array of FP8 codes "
      "named by dtype: 'fp8_e4m3' or 'fp8_e5m2') and amax = max |x| in one pass.");

  m.def(
      "dynamic_mx_quant",
      [quantized_view](py::handle x, py::handle y, py::handle mxscale, int64_t axis,
                       const std::string& dtype, int64_t blocksize, int64_t scale_alg,
                       float max_low_bound, const std::string& round_mode, float dst_type_max) {
        Buffers b;
        DynamicMxQuantTensors t;
        t.x = view_of(x, Access::kRead, b, "x");
        const DType yd = dtype_from_name(dtype.c_str());
        std::vector<int64_t> fp4_shape;
        if (yd == DType::kFloat4E2M1 || yd == DType::kFloat4E1M2) {
          // FLOAT4: a uint8 array of packed bytes (element 2i in the low nibble), x's shape with
          // the last dim halved; the view is x's shape in elements.
          TensorView v = view_of(y, Access::kWrite, b, "y");
          if (v.dtype != DType::kUInt8 || v.rank == 0) {
            raise_error(StatusCode::kParamInvalid,
                        "y: a FLOAT4 destination takes a uint8 array of packed bytes (x's shape "
                        "with the last dim halved)");
          }
          fp4_shape.assign(v.shape.begin(), v.shape.begin() + v.rank);
          fp4_shape.back() *= 2;
          t.y = TensorView(v.data, yd, std::span<const int64_t>(fp4_shape));
        } else {
          t.y = quantized_view(y, dtype.c_str(), b);
        }
        t.mxscale = quantized_view(mxscale, "e8m0", b);
        DynamicMxQuantParams p{.axis = axis,
                               .dst_type = t.y.dtype,
                               .blocksize = blocksize,
                               .scale_alg = scale_alg,
                               .dst_type_max = dst_type_max,
                               .max_low_bound = max_low_bound};
        if (!mx_round_mode_from_name(round_mode.c_str(), p.round_mode)) {
          raise_error(StatusCode::kParamInvalid,
                      "round_mode \"" + round_mode + "\" is not rint, floor or round");
        }
        run([&] { return dynamic_mx_quant(t, p); });
      },
      py::arg("x"), py::arg("y"), py::arg("mxscale"), py::kw_only(), py::arg("axis") = -1,
      py::arg("dtype") = "fp8_e4m3", py::arg("blocksize") = 32, py::arg("scale_alg") = 0,
      py::arg("max_low_bound") = 0.0f, py::arg("round_mode") = "rint",
      py::arg("dst_type_max") = 0.0f,
      "DynamicMxQuant: MX quantization along `axis` in blocks of `blocksize`; y a uint8 array of "
      "FP8 codes named by dtype (fp8_e4m3, fp8_e5m2), or of packed FP4 codes (fp4_e2m1, fp4_e1m2: "
      "x's shape with the last dim halved, element 2i in the low nibble), mxscale a uint8 array of "
      "E8M0 codes in CANN's pairs layout "
      "(x's shape, dim axis -> ceil(ceil(n / blocksize) / 2), and a last dim of 2).");

  m.def(
      "anti_mx_quant",
      [](py::handle x, py::handle mxscale, py::handle y, int64_t axis, const std::string& dtype) {
        Buffers b;
        AntiMxQuantTensors t;
        // Read-only one-byte arrays tagged with the codes' dtype.
        std::vector<int64_t> fp4_shape;
        const auto codes = [&](py::handle h, const char* name, const char* as) {
          TensorView v = view_of(h, Access::kRead, b, name);
          const DType d = dtype_from_name(as);
          if (d == DType::kUndefined || dtype_size(v.dtype) != 1) {
            raise_error(StatusCode::kParamInvalid,
                        std::string(name) + ": a one-byte array of " + as + " codes is needed");
          }
          if (dtype_bits(d) == 4 && v.rank > 0) {
            // Packed FLOAT4 bytes: the view is in elements, the last dim doubled.
            fp4_shape.assign(v.shape.begin(), v.shape.begin() + v.rank);
            fp4_shape.back() *= 2;
            return TensorView(v.data, d, std::span<const int64_t>(fp4_shape));
          }
          v.dtype = d;
          return v;
        };
        t.x = codes(x, "x", dtype.c_str());
        t.mxscale = codes(mxscale, "mxscale", "e8m0");
        t.y = view_of(y, Access::kWrite, b, "y");
        run([&] { return anti_mx_quant(t, {.axis = axis, .dst_type = t.y.dtype}); });
      },
      py::arg("x"), py::arg("mxscale"), py::arg("y"), py::kw_only(), py::arg("axis") = -1,
      py::arg("dtype") = "fp8_e4m3",
      "AntiMxQuant: y = x * 2^(code - 127), x a uint8 array of FP8 codes named by dtype (or of "
      "packed FP4 codes, fp4_e2m1 / fp4_e1m2, the last dim halved), "
      "mxscale DynamicMxQuant's E8M0 codes (blocks of 32); y float32, float16 or bfloat16.");

  // FP8 scaling recipes (mantissa/amp/fp8_scaling.h).
  const auto fp8_name = [](DType d) { return d == DType::kFloat8E5M2 ? "fp8_e5m2" : "fp8_e4m3"; };
  const auto fp8_from_name = [](const std::string& name) {
    if (name == "fp8_e4m3") return DType::kFloat8E4M3FN;
    if (name == "fp8_e5m2") return DType::kFloat8E5M2;
    raise_error(StatusCode::kParamInvalid,
                "dtype \"" + name + "\" is not \"fp8_e4m3\" or \"fp8_e5m2\"");
  };
  py::class_<amp::DelayedScaling>(
      m, "DelayedScaling",
      "One tensor's FP8 delayed scaling (Transformer Engine's DelayedScaling): quantize() casts "
      "with the scale of the earlier steps' amax history and records this one's; update() once "
      "per step. state() / load_state() round-trip it bit for bit.")
      .def(py::init([](int64_t amax_history_len, const std::string& amax_compute_algo,
                       int32_t margin, const std::string& fp8_format, const std::string& role) {
             amp::DelayedScalingRecipe r{.amax_history_len = amax_history_len, .margin = margin};
             if (amax_compute_algo == "max") {
               r.amax_compute_algo = amp::AmaxComputeAlgo::kMax;
             } else if (amax_compute_algo == "most_recent") {
               r.amax_compute_algo = amp::AmaxComputeAlgo::kMostRecent;
             } else {
               raise_error(StatusCode::kParamInvalid, "amax_compute_algo \"" + amax_compute_algo +
                                                          "\" is not \"max\" or \"most_recent\"");
             }
             if (fp8_format == "hybrid") {
               r.fp8_format = amp::Fp8Format::kHybrid;
             } else if (fp8_format == "e4m3") {
               r.fp8_format = amp::Fp8Format::kE4M3;
             } else {
               raise_error(StatusCode::kParamInvalid,
                           "fp8_format \"" + fp8_format + "\" is not \"hybrid\" or \"e4m3\"");
             }
             amp::Fp8Role fr = amp::Fp8Role::kForward;
             if (role == "gradient") {
               fr = amp::Fp8Role::kGradient;
             } else if (role != "forward") {
               raise_error(StatusCode::kParamInvalid,
                           "role \"" + role + "\" is not \"forward\" or \"gradient\"");
             }
             amp::DelayedScaling s;
             raise_if_failed(amp::DelayedScaling::create(r, fr, &s));
             return s;
           }),
           py::kw_only(), py::arg("amax_history_len") = 1024, py::arg("amax_compute_algo") = "max",
           py::arg("margin") = 0, py::arg("fp8_format") = "hybrid", py::arg("role") = "forward")
      .def_property_readonly("scale", &amp::DelayedScaling::scale)
      .def_property_readonly("scale_inv", &amp::DelayedScaling::scale_inv)
      .def_property_readonly(
          "dtype", [fp8_name](const amp::DelayedScaling& s) { return fp8_name(s.dtype()); })
      .def_property_readonly("amax_history",
                             [](const amp::DelayedScaling& s) {
                               const auto h = s.amax_history();
                               return std::vector<float>(h.begin(), h.end());
                             })
      .def_property_readonly("steps", &amp::DelayedScaling::steps)
      .def("record", &amp::DelayedScaling::record, py::arg("amax"))
      .def("update", &amp::DelayedScaling::update)
      .def(
          "quantize",
          [quantized_view, fp8_name](amp::DelayedScaling& s, py::handle x, py::handle y) {
            Buffers b;
            const TensorView xv = view_of(x, Access::kRead, b, "x");
            const TensorView yv = quantized_view(y, fp8_name(s.dtype()), b);
            run([&] { return s.quantize(xv, yv); });
          },
          py::arg("x"), py::arg("y"),
          "Casts x into y (a uint8 array of this tensor's FP8 codes) and records max |x|.")
      .def("state", &amp::DelayedScaling::state)
      .def("load_state", [](amp::DelayedScaling& s, const std::string& text) {
        raise_if_failed(s.load_state(text));
      });

  // Read-only one-byte arrays of codes, tagged with the codes' dtype.
  // A uint8 array of codes named by `as`; packed FLOAT4 (fp4_e2m1, fp4_e1m2): the array holds
  // bytes, the view elements (the last dim doubled).
  const auto code_view = [](py::handle h, const char* name, const std::string& as, Buffers& b,
                            Access access = Access::kRead) {
    TensorView v = view_of(h, access, b, name);
    const DType d = dtype_from_name(as.c_str());
    if (d == DType::kUndefined || dtype_size(v.dtype) != 1) {
      raise_error(StatusCode::kParamInvalid,
                  std::string(name) + ": a one-byte array of " + as + " codes is needed");
    }
    if (dtype_bits(d) == 4 && v.rank > 0) {
      std::vector<int64_t> dims(v.shape.begin(), v.shape.begin() + v.rank);
      dims.back() *= 2;
      return TensorView(v.data, d, std::span<const int64_t>(dims));
    }
    v.dtype = d;
    return v;
  };
  m.def(
      "fp8_matmul",
      [code_view](py::handle a, py::handle b, py::handle out, float scale_inv_a, float scale_inv_b,
                  const std::string& dtype_a, const std::string& dtype_b, bool transpose_b) {
        Buffers buf;
        const amp::Fp8Matrix ma{code_view(a, "a", dtype_a, buf), scale_inv_a};
        const amp::Fp8Matrix mb{code_view(b, "b", dtype_b, buf), scale_inv_b};
        const TensorView o = view_of(out, Access::kWrite, buf, "out");
        run([&] { return amp::fp8_matmul(ma, mb, o, transpose_b); });
      },
      py::arg("a"), py::arg("b"), py::arg("out"), py::kw_only(), py::arg("scale_inv_a") = 1.0f,
      py::arg("scale_inv_b") = 1.0f, py::arg("dtype_a") = "fp8_e4m3",
      py::arg("dtype_b") = "fp8_e4m3", py::arg("transpose_b") = false,
      "Emulated FP8 GEMM: out = (A @ B) * (scale_inv_a * scale_inv_b), A and B uint8 arrays of "
      "FP8 codes decoded exactly, the product by MatMul in fp32.");
  m.def(
      "mx_matmul",
      [code_view](py::handle a, py::handle a_scales, py::handle b, py::handle b_scales,
                  py::handle out, const std::string& dtype_a, const std::string& dtype_b) {
        Buffers buf;
        const amp::MxMatrix ma{code_view(a, "a", dtype_a, buf),
                               code_view(a_scales, "a_scales", "e8m0", buf)};
        const amp::MxMatrix mb{code_view(b, "b", dtype_b, buf),
                               code_view(b_scales, "b_scales", "e8m0", buf)};
        const TensorView o = view_of(out, Access::kWrite, buf, "out");
        run([&] { return amp::mx_matmul(ma, mb, o); });
      },
      py::arg("a"), py::arg("a_scales"), py::arg("b"), py::arg("b_scales"), py::arg("out"),
      py::kw_only(), py::arg("dtype_a") = "fp8_e4m3", py::arg("dtype_b") = "fp8_e4m3",
      "Emulated MX GEMM: out = A @ B^T for MX operands quantized along k (DynamicMxQuant's "
      "last-axis layout), dequantized exactly, the product by MatMul in fp32.");
  m.def(
      "mx_quantize_blocks",
      [code_view](py::handle x, py::handle codes, py::handle scales, const std::string& rule,
                  const std::string& dtype) {
        Buffers buf;
        const TensorView xv = view_of(x, Access::kRead, buf, "x");
        const amp::MxMatrix q{code_view(codes, "codes", dtype, buf, Access::kWrite),
                              code_view(scales, "scales", "e8m0", buf, Access::kWrite)};
        amp::MxScaleRule r = amp::MxScaleRule::kFloor;
        if (rule == "rceil") {
          r = amp::MxScaleRule::kRceil;
        } else if (rule == "even") {
          r = amp::MxScaleRule::kEven;
        } else if (rule != "floor") {
          raise_error(StatusCode::kParamInvalid,
                      "mx_quantize_blocks: rule '" + rule + "' is not floor, rceil or even");
        }
        run([&] { return amp::mx_quantize_blocks(xv, q, r); });
      },
      py::arg("x"), py::arg("codes"), py::arg("scales"), py::kw_only(), py::arg("rule") = "floor",
      py::arg("dtype") = "fp8_e4m3",
      "MX quantization of x [rows, k] along k with the block scale rule chosen: floor (OCP), "
      "rceil (amax / max rounded up to a power of two) or even (torchao's EVEN); codes uint8 "
      "[rows, k] (fp4_e2m1: [rows, k / 2]), scales uint8 [rows, ceil(ceil(k / 32) / 2), 2].");

  m.def(
      "nvfp4_quantize",
      [code_view](py::handle x, py::handle codes, py::handle scales, std::optional<float> amax,
                  bool stochastic, uint64_t seed, uint64_t step) {
        Buffers buf;
        const TensorView xv = view_of(x, Access::kRead, buf, "x");
        amp::Nvfp4Matrix q{code_view(codes, "codes", "fp4_e2m1", buf, Access::kWrite),
                           code_view(scales, "scales", "fp8_e4m3", buf, Access::kWrite)};
        run([&] {
          return amp::nvfp4_quantize(
              xv, q, {.amax = amax, .stochastic = stochastic, .seed = seed, .step = step});
        });
        return q.tensor_scale_inv;
      },
      py::arg("x"), py::arg("codes"), py::arg("scales"), py::kw_only(),
      py::arg("amax") = py::none(), py::arg("stochastic") = false, py::arg("seed") = 0,
      py::arg("step") = 0,
      "NVFP4: x [rows, k] (k a multiple of 16) into packed E2M1 codes (uint8 [rows, k / 2]) and "
      "E4M3 block scales (uint8 [rows, k / 16]); returns the tensor scale's inverse 1 / S.");
  m.def(
      "nvfp4_dequantize",
      [code_view](py::handle codes, py::handle scales, float tensor_scale_inv, py::handle out) {
        Buffers buf;
        const amp::Nvfp4Matrix q{code_view(codes, "codes", "fp4_e2m1", buf),
                                 code_view(scales, "scales", "fp8_e4m3", buf), tensor_scale_inv};
        const TensorView o = view_of(out, Access::kWrite, buf, "out");
        run([&] { return amp::nvfp4_dequantize(q, o); });
      },
      py::arg("codes"), py::arg("scales"), py::arg("tensor_scale_inv"), py::arg("out"),
      "NVFP4's values: (q * s) * tensor_scale_inv, rounded once to out's dtype.");
  m.def(
      "nvfp4_matmul",
      [code_view](py::handle a, py::handle a_scales, float a_scale_inv, py::handle b,
                  py::handle b_scales, float b_scale_inv, py::handle out) {
        Buffers buf;
        const amp::Nvfp4Matrix ma{code_view(a, "a", "fp4_e2m1", buf),
                                  code_view(a_scales, "a_scales", "fp8_e4m3", buf), a_scale_inv};
        const amp::Nvfp4Matrix mb{code_view(b, "b", "fp4_e2m1", buf),
                                  code_view(b_scales, "b_scales", "fp8_e4m3", buf), b_scale_inv};
        const TensorView o = view_of(out, Access::kWrite, buf, "out");
        run([&] { return amp::nvfp4_matmul(ma, mb, o); });
      },
      py::arg("a"), py::arg("a_scales"), py::arg("a_scale_inv"), py::arg("b"), py::arg("b_scales"),
      py::arg("b_scale_inv"), py::arg("out"),
      "Emulated NVFP4 GEMM: out = (A @ B^T) * (a_scale_inv * b_scale_inv), operands decoded "
      "exactly to q * s, MatMul in fp32.");

  m.def(
      "current_scale",
      [fp8_from_name](float amax, const std::string& dtype, bool power_of_two_scales,
                      float amax_epsilon) {
        return amp::current_scale(
            amax, fp8_from_name(dtype),
            {.power_of_two_scales = power_of_two_scales, .amax_epsilon = amax_epsilon});
      },
      py::arg("amax"), py::kw_only(), py::arg("dtype") = "fp8_e4m3",
      py::arg("power_of_two_scales") = false, py::arg("amax_epsilon") = 0.0f,
      "Current scaling's scale: fp8_max / max(amax, amax_epsilon) (1 for 0, inf, NaN; FLT_MAX "
      "where it overflows), optionally rounded down to a power of two.");
  m.def(
      "current_scaling_quantize",
      [quantized_view](py::handle x, py::handle y, const std::string& dtype,
                       bool power_of_two_scales, float amax_epsilon) {
        Buffers b;
        const TensorView xv = view_of(x, Access::kRead, b, "x");
        const TensorView yv = quantized_view(y, dtype.c_str(), b);
        float scale = 0.0f, amax = 0.0f;
        run([&] {
          return amp::current_scaling_quantize(
              xv, yv, {.power_of_two_scales = power_of_two_scales, .amax_epsilon = amax_epsilon},
              &scale, &amax);
        });
        return py::make_tuple(scale, amax);
      },
      py::arg("x"), py::arg("y"), py::kw_only(), py::arg("dtype") = "fp8_e4m3",
      py::arg("power_of_two_scales") = false, py::arg("amax_epsilon") = 0.0f,
      "Casts x into y (uint8 FP8 codes) with the scale of its own amax; returns (scale, amax).");

  m.def(
      "ascend_quant_v3",
      [quantized_view](py::handle x, py::handle scale, py::handle y, py::handle offset,
                       bool sqrt_mode, const std::string& round_mode,
                       std::optional<std::string> dtype, int32_t axis) {
        Buffers b;
        AscendQuantV3Tensors t;
        t.x = view_of(x, Access::kRead, b, "x");
        t.scale = view_of(scale, Access::kRead, b, "scale");
        t.offset = optional_view(offset, Access::kRead, b, "offset");
        t.y = quantized_view(y, dtype ? dtype->c_str() : nullptr, b);
        AscendQuantV3Params p{.sqrt_mode = sqrt_mode, .dst_type = t.y.dtype, .axis = axis};
        if (!quant_round_mode_from_name(round_mode.c_str(), p.round_mode)) {
          raise_error(StatusCode::kParamInvalid,
                      "round_mode \"" + round_mode + "\" is not round, floor, ceil or trunc");
        }
        run([&] { return ascend_quant_v3(t, p); });
      },
      py::arg("x"), py::arg("scale"), py::arg("y"), py::kw_only(), py::arg("offset") = py::none(),
      py::arg("sqrt_mode") = false, py::arg("round_mode") = "round", py::arg("dtype") = py::none(),
      py::arg("axis") = -1,
      "AscendQuantV3: y = round(x * scale (* scale) + offset), saturating, into y's dtype.");

  m.def(
      "dynamic_quant",
      [quantized_view](py::handle x, py::handle y, py::handle scale, py::handle smooth_scales,
                       std::optional<std::string> dtype) {
        Buffers b;
        DynamicQuantTensors t;
        t.x = view_of(x, Access::kRead, b, "x");
        t.smooth_scales = optional_view(smooth_scales, Access::kRead, b, "smooth_scales");
        t.y = quantized_view(y, dtype ? dtype->c_str() : nullptr, b);
        t.scale = view_of(scale, Access::kWrite, b, "scale");
        const DynamicQuantParams p{.dst_type = t.y.dtype};
        run([&] { return dynamic_quant(t, p); });
      },
      py::arg("x"), py::arg("y"), py::arg("scale"), py::kw_only(),
      py::arg("smooth_scales") = py::none(), py::arg("dtype") = py::none(),
      "DynamicQuant: per-row scale = max|x| / dtype max, y = round(x / scale).");

  m.def(
      "layer_norm",
      [](py::handle input, std::vector<int64_t> normalized_shape, py::handle out, py::handle weight,
         py::handle bias, py::handle mean, py::handle rstd, double eps) {
        Buffers b;
        LayerNormTensors t;
        t.input = view_of(input, Access::kRead, b, "input");
        t.out = view_of(out, Access::kWrite, b, "out");
        t.weight = optional_view(weight, Access::kRead, b, "weight");
        t.bias = optional_view(bias, Access::kRead, b, "bias");
        t.mean = optional_view(mean, Access::kWrite, b, "mean");
        t.rstd = optional_view(rstd, Access::kWrite, b, "rstd");
        const LayerNormParams p{.normalized_shape = Dims(normalized_shape), .eps = eps};
        run([&] { return layer_norm(t, p); });
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("out"), py::kw_only(),
      py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("mean") = py::none(),
      py::arg("rstd") = py::none(), py::arg("eps") = 1e-5,
      "LayerNorm over the trailing normalized_shape dims: out = (x - mean) * rstd * weight + "
      "bias; mean and rstd (one per row) written when given.");

  m.def(
      "layer_norm_grad",
      [](py::handle dy, py::handle input, std::vector<int64_t> normalized_shape, py::handle mean,
         py::handle rstd, py::handle weight, py::handle dx, py::handle dweight, py::handle dbias) {
        Buffers b;
        LayerNormGradTensors t;
        t.dy = view_of(dy, Access::kRead, b, "dy");
        t.input = view_of(input, Access::kRead, b, "input");
        t.mean = view_of(mean, Access::kRead, b, "mean");
        t.rstd = view_of(rstd, Access::kRead, b, "rstd");
        t.weight = optional_view(weight, Access::kRead, b, "weight");
        t.dx = optional_view(dx, Access::kWrite, b, "dx");
        t.dweight = optional_view(dweight, Access::kWrite, b, "dweight");
        t.dbias = optional_view(dbias, Access::kWrite, b, "dbias");
        // The outputs given are the ones computed (the output mask).
        const LayerNormGradParams p{
            .normalized_shape = Dims(normalized_shape),
            .output_mask = {t.dx.has_value(), t.dweight.has_value(), t.dbias.has_value()}};
        run([&] { return layer_norm_grad(t, p); });
      },
      py::arg("dy"), py::arg("input"), py::arg("normalized_shape"), py::arg("mean"),
      py::arg("rstd"), py::kw_only(), py::arg("weight") = py::none(), py::arg("dx") = py::none(),
      py::arg("dweight") = py::none(), py::arg("dbias") = py::none(),
      "LayerNormGrad: dx, dweight and dbias, each computed when given.");

  m.def(
      "rms_norm",
      [](py::handle x, py::handle gamma, py::handle y, py::handle rstd, double epsilon) {
        Buffers b;
        const RmsNormTensors t{.x = view_of(x, Access::kRead, b, "x"),
                               .gamma = view_of(gamma, Access::kRead, b, "gamma"),
                               .y = view_of(y, Access::kWrite, b, "y"),
                               .rstd = view_of(rstd, Access::kWrite, b, "rstd")};
        run([&] { return rms_norm(t, {.epsilon = epsilon}); });
      },
      py::arg("x"), py::arg("gamma"), py::arg("y"), py::arg("rstd"), py::kw_only(),
      py::arg("epsilon") = 1e-6, "RmsNorm: y = x * rstd * gamma.");

  m.def(
      "rms_norm_grad",
      [](py::handle dy, py::handle x, py::handle rstd, py::handle gamma, py::handle dx,
         py::handle dgamma) {
        Buffers b;
        const RmsNormGradTensors t{.dy = view_of(dy, Access::kRead, b, "dy"),
                                   .x = view_of(x, Access::kRead, b, "x"),
                                   .rstd = view_of(rstd, Access::kRead, b, "rstd"),
                                   .gamma = view_of(gamma, Access::kRead, b, "gamma"),
                                   .dx = view_of(dx, Access::kWrite, b, "dx"),
                                   .dgamma = view_of(dgamma, Access::kWrite, b, "dgamma")};
        run([&] { return rms_norm_grad(t, {}); });
      },
      py::arg("dy"), py::arg("x"), py::arg("rstd"), py::arg("gamma"), py::arg("dx"),
      py::arg("dgamma"), "RmsNormGrad: dx and dgamma.");

  m.def(
      "sgd",
      [](py::handle parameters, py::handle gradient, py::handle learning_rate, py::handle accum,
         py::handle momentum, py::handle stat, py::handle parameters_out, float dampening,
         float weight_decay, bool nesterov) {
        Buffers b;
        SgdTensors t;
        t.parameters = view_of(
            parameters, parameters_out.is_none() ? Access::kWrite : Access::kRead, b, "parameters");
        t.gradient = view_of(gradient, Access::kRead, b, "gradient");
        t.learning_rate = view_of(learning_rate, Access::kRead, b, "learning_rate");
        t.accum = view_of(accum, Access::kWrite, b, "accum");
        t.momentum = view_of(momentum, Access::kRead, b, "momentum");
        t.stat = view_of(stat, Access::kWrite, b, "stat");
        t.parameters_out = optional_view(parameters_out, Access::kWrite, b, "parameters_out");
        const SgdParams p{
            .dampening = dampening, .weight_decay = weight_decay, .nesterov = nesterov};
        run([&] { return sgd(t, p); });
      },
      py::arg("parameters"), py::arg("gradient"), py::arg("learning_rate"), py::arg("accum"),
      py::arg("momentum"), py::arg("stat"), py::kw_only(), py::arg("parameters_out") = py::none(),
      py::arg("dampening") = 0.0f, py::arg("weight_decay") = 0.0f, py::arg("nesterov") = false,
      "SGD (CANN momentum SGD with first-step flag); in place by default.");

  const auto bind_softmax = [&m](const char* name, auto op, auto params_of) {
    m.def(
        name,
        [op, params_of](py::handle self, py::handle out, int64_t dim) {
          Buffers b;
          const SoftmaxTensors t{.self = view_of(self, Access::kRead, b, "self"),
                                 .out = view_of(out, Access::kWrite, b, "out")};
          run([&] { return op(t, params_of(dim)); });
        },
        py::arg("self"), py::arg("out"), py::kw_only(), py::arg("dim") = -1);
  };
  bind_softmax(
      "softmax", [](const SoftmaxTensors& t, const SoftmaxParams& p) { return softmax(t, p); },
      [](int64_t dim) { return SoftmaxParams{.dim = dim}; });
  bind_softmax(
      "log_softmax",
      [](const SoftmaxTensors& t, const LogSoftmaxParams& p) { return log_softmax(t, p); },
      [](int64_t dim) { return LogSoftmaxParams{.dim = dim}; });

  const auto bind_softmax_grad = [&m](const char* name, auto op) {
    m.def(
        name,
        [op](py::handle grad_output, py::handle output, py::handle out, int64_t dim) {
          Buffers b;
          const SoftmaxGradTensors t{
              .grad_output = view_of(grad_output, Access::kRead, b, "grad_output"),
              .output = view_of(output, Access::kRead, b, "output"),
              .out = view_of(out, Access::kWrite, b, "out")};
          run([&] { return op(t, SoftmaxGradParams{.dim = dim}); });
        },
        py::arg("grad_output"), py::arg("output"), py::arg("out"), py::kw_only(),
        py::arg("dim") = -1);
  };
  bind_softmax_grad("softmax_grad", [](const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
    return softmax_grad(t, p);
  });
  bind_softmax_grad("log_softmax_grad",
                    [](const SoftmaxGradTensors& t, const SoftmaxGradParams& p) {
                      return log_softmax_grad(t, p);
                    });

  m.def(
      "softmax_cross_entropy_with_logits",
      [](py::handle features, py::handle labels, py::handle loss, py::handle backprop) {
        Buffers b;
        const SoftmaxCrossEntropyWithLogitsTensors t{
            .features = view_of(features, Access::kRead, b, "features"),
            .labels = view_of(labels, Access::kRead, b, "labels"),
            .loss = view_of(loss, Access::kWrite, b, "loss"),
            .backprop = view_of(backprop, Access::kWrite, b, "backprop")};
        run([&] { return softmax_cross_entropy_with_logits(t); });
      },
      py::arg("features"), py::arg("labels"), py::arg("loss"), py::arg("backprop"),
      "SoftmaxCrossEntropyWithLogits: per-row loss and softmax - labels.");
}

// ---- Fused multi-tensor steps, norm and clipping ------------------------------------------------

void bind_optim(py::module_& m) {
  m.def(
      "multi_tensor_sgd",
      [](py::handle parameters, py::handle gradient, py::handle accum, py::handle stat,
         py::handle working, py::handle compensation, float learning_rate, float momentum,
         float dampening, float weight_decay, bool nesterov, py::handle grad_scale,
         py::handle found_inf, std::optional<float> clip_coef, const std::string& rounding,
         uint64_t seed, uint64_t rng_step, bool validate_only) {
        Buffers b;
        using T = SgdParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"parameters", parameters, Access::kWrite, &T::parameters},
             {"gradient", gradient, Access::kRead, &T::gradient},
             {"accum", accum, Access::kWrite, &T::accum},
             {"stat", stat, Access::kWrite, &T::stat},
             {"working", working, Access::kWrite, nullptr, &T::working},
             {"compensation", compensation, Access::kWrite, nullptr, &T::compensation}},
            b);
        const MultiSgdParams hp{.learning_rate = learning_rate,
                                .momentum = momentum,
                                .dampening = dampening,
                                .weight_decay = weight_decay,
                                .nesterov = nesterov};
        const FusedStepOptions o =
            fused_options(grad_scale, found_inf, clip_coef, rounding, seed, rng_step, b);
        run([&] {
          return validate_only ? multi_tensor_sgd_validate(list, hp, o)
                               : multi_tensor_sgd(list, hp, o);
        });
      },
      py::arg("parameters"), py::arg("gradient"), py::arg("accum"), py::arg("stat"), py::kw_only(),
      py::arg("working") = py::none(), py::arg("compensation") = py::none(),
      py::arg("learning_rate"), py::arg("momentum") = 0.0f, py::arg("dampening") = 0.0f,
      py::arg("weight_decay") = 0.0f, py::arg("nesterov") = false,
      py::arg("grad_scale") = py::none(), py::arg("found_inf") = py::none(),
      py::arg("clip_coef") = py::none(), py::arg("rounding") = "nearest", py::arg("seed") = 0,
      py::arg("rng_step") = 0, py::arg("validate_only") = false,
      "Fused SGD over lists of tensors (one parallel region).");

  m.def(
      "multi_tensor_apply_adam_d",
      [](py::handle var, py::handle m_, py::handle v, py::handle grad, py::handle working,
         py::handle compensation, float beta1_power, float beta2_power, float lr, float beta1,
         float beta2, float epsilon, bool use_nesterov, py::handle grad_scale, py::handle found_inf,
         std::optional<float> clip_coef, const std::string& rounding, uint64_t seed,
         uint64_t rng_step, bool validate_only) {
        Buffers b;
        using T = AdamDParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"var", var, Access::kWrite, &T::var},
             {"m", m_, Access::kWrite, &T::m},
             {"v", v, Access::kWrite, &T::v},
             {"grad", grad, Access::kRead, &T::grad},
             {"working", working, Access::kWrite, nullptr, &T::working},
             {"compensation", compensation, Access::kWrite, nullptr, &T::compensation}},
            b);
        const MultiAdamDParams hp{.beta1_power = beta1_power,
                                  .beta2_power = beta2_power,
                                  .lr = lr,
                                  .beta1 = beta1,
                                  .beta2 = beta2,
                                  .epsilon = epsilon,
                                  .use_nesterov = use_nesterov};
        const FusedStepOptions o =
            fused_options(grad_scale, found_inf, clip_coef, rounding, seed, rng_step, b);
        run([&] {
          return validate_only ? multi_tensor_apply_adam_d_validate(list, hp, o)
                               : multi_tensor_apply_adam_d(list, hp, o);
        });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("grad"), py::kw_only(),
      py::arg("working") = py::none(), py::arg("compensation") = py::none(), py::arg("beta1_power"),
      py::arg("beta2_power"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"),
      py::arg("use_nesterov") = false, py::arg("grad_scale") = py::none(),
      py::arg("found_inf") = py::none(), py::arg("clip_coef") = py::none(),
      py::arg("rounding") = "nearest", py::arg("seed") = 0, py::arg("rng_step") = 0,
      py::arg("validate_only") = false, "Fused ApplyAdamD over lists of tensors.");

  m.def(
      "multi_tensor_adam_w",
      [](py::handle var, py::handle m_, py::handle v, py::handle grad, py::handle max_grad_norm,
         py::handle working, py::handle compensation, int64_t step, float lr, float beta1,
         float beta2, float weight_decay, float eps, bool amsgrad, bool maximize,
         py::handle grad_scale, py::handle found_inf, std::optional<float> clip_coef,
         const std::string& rounding, uint64_t seed, uint64_t rng_step, bool validate_only) {
        Buffers b;
        using T = AdamWParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"var", var, Access::kWrite, &T::var},
             {"m", m_, Access::kWrite, &T::m},
             {"v", v, Access::kWrite, &T::v},
             {"grad", grad, Access::kRead, &T::grad},
             {"max_grad_norm", max_grad_norm, Access::kWrite, nullptr, &T::max_grad_norm},
             {"working", working, Access::kWrite, nullptr, &T::working},
             {"compensation", compensation, Access::kWrite, nullptr, &T::compensation}},
            b);
        const MultiAdamWParams hp{.hyper = {.lr = lr,
                                            .beta1 = beta1,
                                            .beta2 = beta2,
                                            .weight_decay = weight_decay,
                                            .eps = eps,
                                            .amsgrad = amsgrad,
                                            .maximize = maximize},
                                  .step = step};
        const FusedStepOptions o =
            fused_options(grad_scale, found_inf, clip_coef, rounding, seed, rng_step, b);
        run([&] {
          return validate_only ? multi_tensor_adam_w_validate(list, hp, o)
                               : multi_tensor_adam_w(list, hp, o);
        });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("grad"), py::kw_only(),
      py::arg("max_grad_norm") = py::none(), py::arg("working") = py::none(),
      py::arg("compensation") = py::none(), py::arg("step"), py::arg("lr") = 1e-3f,
      py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f, py::arg("weight_decay") = 1e-2f,
      py::arg("eps") = 1e-8f, py::arg("amsgrad") = false, py::arg("maximize") = false,
      py::arg("grad_scale") = py::none(), py::arg("found_inf") = py::none(),
      py::arg("clip_coef") = py::none(), py::arg("rounding") = "nearest", py::arg("seed") = 0,
      py::arg("rng_step") = 0, py::arg("validate_only") = false,
      "Fused AdamW (ApplyAdamWV2's math) over lists; step = steps already taken.");

  m.def(
      "fused_adamw",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_avg_sqs,
         py::handle max_exp_avg_sqs, py::handle state_steps, py::handle grad_scale,
         py::handle found_inf, float lr, float beta1, float beta2, float weight_decay, float eps,
         bool amsgrad, bool maximize, bool validate_only) {
        Buffers b;
        using T = FusedAdamwParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"params", params, Access::kWrite, &T::param},
             {"grads", grads, Access::kRead, &T::grad},
             {"exp_avgs", exp_avgs, Access::kWrite, &T::exp_avg},
             {"exp_avg_sqs", exp_avg_sqs, Access::kWrite, &T::exp_avg_sq},
             {"state_steps", state_steps, Access::kRead, &T::state_step},
             {"max_exp_avg_sqs", max_exp_avg_sqs, Access::kWrite, nullptr, &T::max_exp_avg_sq}},
            b);
        const FusedAdamwParams p{
            .lr = lr,
            .beta1 = beta1,
            .beta2 = beta2,
            .weight_decay = weight_decay,
            .eps = eps,
            .amsgrad = amsgrad,
            .maximize = maximize,
            .grad_scale = optional_view(grad_scale, Access::kRead, b, "grad_scale"),
            .found_inf = optional_view(found_inf, Access::kRead, b, "found_inf")};
        run([&] { return validate_only ? fused_adamw_validate(list, p) : fused_adamw(list, p); });
      },
      py::arg("params"), py::arg("grads"), py::arg("exp_avgs"), py::arg("exp_avg_sqs"),
      py::kw_only(), py::arg("max_exp_avg_sqs") = py::none(), py::arg("state_steps"),
      py::arg("grad_scale") = py::none(), py::arg("found_inf") = py::none(), py::arg("lr") = 1e-3f,
      py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f, py::arg("weight_decay") = 1e-2f,
      py::arg("eps") = 1e-8f, py::arg("amsgrad") = false, py::arg("maximize") = false,
      py::arg("validate_only") = false,
      "FusedAdamw (CANN's aclnnFusedAdamw): AdamW over lists, one step tensor per parameter "
      "(t = state_steps[i] + 1), g * (1 / grad_scale), nothing written when found_inf == 1.");

  m.def(
      "fused_sgd",
      [](py::handle params, py::handle grads, py::handle momentum_buffers, py::handle grad_scale,
         float weight_decay, float momentum, float lr, float dampening, bool nesterov,
         bool maximize, bool is_first_step, bool validate_only) {
        Buffers b;
        using T = FusedSgdParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"params", params, Access::kWrite, &T::param},
             {"grads", grads, Access::kWrite, &T::grad},
             {"momentum_buffers", momentum_buffers, Access::kWrite, nullptr, &T::momentum_buffer}},
            b);
        const FusedSgdParams p{
            .weight_decay = weight_decay,
            .momentum = momentum,
            .lr = lr,
            .dampening = dampening,
            .nesterov = nesterov,
            .maximize = maximize,
            .is_first_step = is_first_step,
            .grad_scale = optional_view(grad_scale, Access::kRead, b, "grad_scale")};
        run([&] { return validate_only ? fused_sgd_validate(list, p) : fused_sgd(list, p); });
      },
      py::arg("params"), py::arg("grads"), py::kw_only(), py::arg("momentum_buffers") = py::none(),
      py::arg("grad_scale") = py::none(), py::arg("weight_decay") = 0.0f,
      py::arg("momentum") = 0.0f, py::arg("lr") = 1e-3f, py::arg("dampening") = 0.0f,
      py::arg("nesterov") = false, py::arg("maximize") = false, py::arg("is_first_step") = false,
      py::arg("validate_only") = false,
      "FusedSgd (CANN's aclnnFusedSgd): torch's SGD over lists as CANN computes it; the unscaled "
      "gradients are written back when grad_scale is given.");

  m.def(
      "multi_tensor_adam_w_8bit",
      [](py::handle var, py::handle m_, py::handle v, py::handle absmax_m, py::handle absmax_v,
         py::handle grad, py::handle working, py::handle compensation, int64_t step, float lr,
         float beta1, float beta2, float weight_decay, float eps, bool maximize,
         py::handle grad_scale, py::handle found_inf, std::optional<float> clip_coef,
         const std::string& rounding, uint64_t seed, uint64_t rng_step, bool validate_only) {
        Buffers b;
        using T = AdamW8bitParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"var", var, Access::kWrite, &T::var},
             {"m", m_, Access::kWrite, &T::m},
             {"v", v, Access::kWrite, &T::v},
             {"absmax_m", absmax_m, Access::kWrite, &T::absmax_m},
             {"absmax_v", absmax_v, Access::kWrite, &T::absmax_v},
             {"grad", grad, Access::kRead, &T::grad},
             {"working", working, Access::kWrite, nullptr, &T::working},
             {"compensation", compensation, Access::kWrite, nullptr, &T::compensation}},
            b);
        const MultiAdamWParams hp{.hyper = {.lr = lr,
                                            .beta1 = beta1,
                                            .beta2 = beta2,
                                            .weight_decay = weight_decay,
                                            .eps = eps,
                                            .amsgrad = false,
                                            .maximize = maximize},
                                  .step = step};
        const FusedStepOptions o =
            fused_options(grad_scale, found_inf, clip_coef, rounding, seed, rng_step, b);
        run([&] {
          return validate_only ? multi_tensor_adam_w_8bit_validate(list, hp, o)
                               : multi_tensor_adam_w_8bit(list, hp, o);
        });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("absmax_m"), py::arg("absmax_v"),
      py::arg("grad"), py::kw_only(), py::arg("working") = py::none(),
      py::arg("compensation") = py::none(), py::arg("step"), py::arg("lr") = 1e-3f,
      py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f, py::arg("weight_decay") = 1e-2f,
      py::arg("eps") = 1e-8f, py::arg("maximize") = false, py::arg("grad_scale") = py::none(),
      py::arg("found_inf") = py::none(), py::arg("clip_coef") = py::none(),
      py::arg("rounding") = "nearest", py::arg("seed") = 0, py::arg("rng_step") = 0,
      py::arg("validate_only") = false,
      "Fused AdamW with 8-bit block-wise moments (UINT8 codes, one FLOAT absmax per 256) over "
      "lists; step = steps already taken.");

  m.def(
      "multi_tensor_adam_w_compact",
      [](py::handle var, py::handle m_, py::handle v, py::handle grad, const std::string& format,
         py::handle scale_m, py::handle scale_v, py::handle working, py::handle compensation,
         int64_t step, float lr, float beta1, float beta2, float weight_decay, float eps,
         bool maximize, py::handle grad_scale, py::handle found_inf, std::optional<float> clip_coef,
         const std::string& rounding, uint64_t seed, uint64_t rng_step, bool stochastic_moments,
         bool validate_only) {
        static const std::pair<const char*, MomentFormat> kFormats[] = {
            {"fp32", MomentFormat::kFp32},
            {"bf16", MomentFormat::kBf16},
            {"int8", MomentFormat::kInt8},
            {"int4", MomentFormat::kInt4},
            {"fp8", MomentFormat::kFp8E4M3}};
        std::optional<MomentFormat> f;
        for (const auto& [name, value] : kFormats) {
          if (format == name) f = value;
        }
        if (!f) {
          throw py::value_error("multi_tensor_adam_w_compact: format is '" + format +
                                "', not one of fp32, bf16, int8, int4, fp8");
        }
        Buffers b;
        using T = CompactAdamWParamTensors;
        const std::vector<T> list = parameter_list<T>(
            {{"var", var, Access::kWrite, &T::var},
             {"m", m_, Access::kWrite, &T::m},
             {"v", v, Access::kWrite, &T::v},
             {"grad", grad, Access::kRead, &T::grad},
             {"scale_m", scale_m, Access::kWrite, nullptr, &T::scale_m},
             {"scale_v", scale_v, Access::kWrite, nullptr, &T::scale_v},
             {"working", working, Access::kWrite, nullptr, &T::working},
             {"compensation", compensation, Access::kWrite, nullptr, &T::compensation}},
            b);
        const MultiAdamWParams hp{.hyper = {.lr = lr,
                                            .beta1 = beta1,
                                            .beta2 = beta2,
                                            .weight_decay = weight_decay,
                                            .eps = eps,
                                            .amsgrad = false,
                                            .maximize = maximize},
                                  .step = step};
        FusedStepOptions o =
            fused_options(grad_scale, found_inf, clip_coef, rounding, seed, rng_step, b);
        o.stochastic_moments = stochastic_moments;
        run([&] {
          return validate_only ? multi_tensor_adam_w_compact_validate(list, hp, *f, o)
                               : multi_tensor_adam_w_compact(list, hp, *f, o);
        });
      },
      py::arg("var"), py::arg("m"), py::arg("v"), py::arg("grad"), py::kw_only(), py::arg("format"),
      py::arg("scale_m") = py::none(), py::arg("scale_v") = py::none(),
      py::arg("working") = py::none(), py::arg("compensation") = py::none(), py::arg("step"),
      py::arg("lr") = 1e-3f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
      py::arg("weight_decay") = 1e-2f, py::arg("eps") = 1e-8f, py::arg("maximize") = false,
      py::arg("grad_scale") = py::none(), py::arg("found_inf") = py::none(),
      py::arg("clip_coef") = py::none(), py::arg("rounding") = "nearest", py::arg("seed") = 0,
      py::arg("rng_step") = 0, py::arg("stochastic_moments") = false,
      py::arg("validate_only") = false,
      "Fused AdamW with compact moments over lists: format 'fp32', 'bf16', 'int8' (block 256), "
      "'int4' (two codes a byte, block 128) or 'fp8' (E4M3 codes as uint8, block 256), the "
      "quantized ones with one FLOAT scale per block; step = steps already taken; "
      "stochastic_moments: bf16 moments rounded stochastically.");

  m.def(
      "grad_norm",
      [](py::handle grads, double norm_type, py::handle grad_scale) {
        Buffers b;
        const auto gs = list_views(grads, Access::kRead, b, "grads");
        GradNormOptions o{.norm_type = norm_type_from(norm_type),
                          .grad_scale = optional_view(grad_scale, Access::kRead, b, "grad_scale")};
        double norm = 0.0;
        run([&] { return grad_norm(gs, &norm, o); });
        return norm;
      },
      py::arg("grads"), py::kw_only(), py::arg("norm_type") = 2.0,
      py::arg("grad_scale") = py::none(), "The total norm of a list of gradients (fp64).");

  m.def(
      "clip_grad_norm",
      [](py::handle grads, double max_norm, double norm_type, py::handle grad_scale,
         bool error_if_nonfinite) {
        Buffers b;
        const auto gs = list_views(grads, Access::kWrite, b, "grads");
        ClipGradNormOptions o;
        o.norm = {.norm_type = norm_type_from(norm_type),
                  .grad_scale = optional_view(grad_scale, Access::kRead, b, "grad_scale")};
        o.error_if_nonfinite = error_if_nonfinite;
        double total = 0.0;
        run([&] { return clip_grad_norm(gs, max_norm, &total, o); });
        return total;
      },
      py::arg("grads"), py::arg("max_norm"), py::kw_only(), py::arg("norm_type") = 2.0,
      py::arg("grad_scale") = py::none(), py::arg("error_if_nonfinite") = false,
      "torch.nn.utils.clip_grad_norm_'s rule in one pass; returns the total norm.");

  m.def("clip_coefficient", &clip_coefficient, py::arg("norm"), py::arg("max_norm"),
        "max_norm / (norm + 1e-6) as fp32 when below 1, else None.");

  m.def(
      "dynamic_quant_map",
      [](bool is_signed) {
        const std::array<float, 256> map = dynamic_quant_map(is_signed);
        return py::array_t<float>(256, map.data());
      },
      py::arg("signed") = true,
      "bitsandbytes' dynamic 8-bit code map (256 ascending fp32 entries): signed for Adam's m, "
      "unsigned for v (docs/ops/apply_adam_w_quant.md).");

  m.def(
      "int4_moment_map",
      [](bool is_signed) {
        const std::array<float, 16> map = int4_moment_map(is_signed);
        return py::array_t<float>(16, map.data());
      },
      py::arg("signed") = true,
      "The 4-bit moments' code map (16 ascending fp32 entries): signed for Adam's m, unsigned "
      "(k / 16, no zero) for v (docs/optim.md).");
}

// ---- Runtime, info, the precision kit ---------------------------------------------------------

void bind_runtime(py::module_& m) {
  m.def(
      "set_num_threads", [](int threads) { raise_if_failed(set_num_threads(threads)); },
      py::arg("threads"), "Worker threads for operators (>= 1); 0 restores the default.");
  m.def("num_threads", &num_threads);
  m.def(
      "set_simd_target", [](const std::string& name) { raise_if_failed(set_simd_target(name)); },
      py::arg("name"),
      "Force a SIMD target (one of available_simd_targets()); '' or 'auto' resets.");
  m.def("simd_target", &simd_target);
  m.def("available_simd_targets", &available_simd_targets);
  m.def("compiled_simd_targets", &compiled_simd_targets);
  m.def("version", [] { return std::string(version()); });
  m.def("status_code_name",
        [](int32_t code) { return std::string(status_code_name(static_cast<StatusCode>(code))); });
  m.def(
      "info",
      [] {
        py::dict d;
        d["version"] = std::string(version());
        d["simd_target"] = simd_target();
        d["available_simd_targets"] = available_simd_targets();
        d["compiled_simd_targets"] = compiled_simd_targets();
        d["num_threads"] = num_threads();
        d["cpu_features"] = cpu_features();
        d["conversion_paths"] = conversion_paths();
        d["environment_error"] = environment_error();
#ifdef MANTISSA_HAVE_PRECISION_KIT
        d["precision_kit"] = true;
#else
        d["precision_kit"] = false;
#endif
        return d;
      },
      "The library's version, SIMD targets, threads and conversion paths.");
  m.def("info_text", &info_text,
        "The report `mantissa info` prints (python3 -m mantissa info): version, CPU features, "
        "SIMD targets, threads, each available target's conversions. Visits each target and "
        "restores the chosen one: call it between operator calls.");

#ifdef MANTISSA_HAVE_PRECISION_KIT
  m.def(
      "check",
      [](const std::string& case_dir, const std::string& op, const std::string& case_id,
         const std::string& backend, uint64_t seed) {
        namespace pk = mantissa::precision;
        pk::CheckOptions opt;
        opt.case_dir = case_dir;
        opt.op = op;
        opt.case_id = case_id;
        opt.seed = seed;
        if (backend == "all") {
          opt.all_backends = true;
        } else {
          const auto b = pk::backend_from_name(backend);
          if (!b) {
            raise_error(StatusCode::kParamInvalid,
                        "backend: '" + backend + "' is not one of kernel, aclnn, aclop, all");
          }
          opt.backends = {*b};
        }
        std::string json;
        {
          py::gil_scoped_release release;
          json = pk::report_json(opt, pk::run_check(opt));
        }
        return py::module_::import("json").attr("loads")(json);
      },
      py::arg("case_dir"), py::kw_only(), py::arg("op") = "", py::arg("case_id") = "",
      py::arg("backend") = "kernel", py::arg("seed") = 0,
      "The precision kit on a case directory (as `mantissa check`); the JSON report as a dict.");
#endif
}

// ---- Every operator from its declaration -----------------------------------------------------

[[noreturn]] void raise_type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}

// The call of Op from Python: its tensor arguments in declaration order (positional or by
// name; an optional one may be None or left out), then its attributes (positional after the
// tensors or by name; left out: the declared default). Lists of tensors are not taken here.
template <class Op>
void call_declared(const std::string& name, const py::args& args, const py::kwargs& kwargs) {
  constexpr std::size_t nt = detail::kNumArgs<Op>, na = detail::kNumAttrs<Op>;
  if (args.size() > nt + na) {
    raise_type_error(
        fmt::format("{}() takes at most {} arguments ({} given)", name, nt + na, args.size()));
  }
  std::size_t used = 0;
  const auto argument = [&](std::size_t position, std::string_view key) -> py::object {
    const py::str k{std::string(key)};
    if (kwargs.contains(k)) {
      if (position < args.size()) {
        raise_type_error(fmt::format("{}() got multiple values for argument '{}'", name, key));
      }
      ++used;
      return kwargs[k];
    }
    return position < args.size() ? py::reinterpret_borrow<py::object>(args[position])
                                  : py::object(py::none());
  };
  Buffers b;
  typename Op::Tensors t{};
  typename Op::Params p{};
  for (std::size_t k = 0; k < nt; ++k) {
    const detail::ArgSpec& a = Op::kArgs[k];
    const py::object h = argument(k, a.name);
    if (h.is_none()) {
      if (!a.optional) raise_type_error(fmt::format("{}() missing argument '{}'", name, a.name));
      continue;
    }
    const Access access = a.role == detail::Role::kIn ? Access::kRead : Access::kWrite;
    detail::set_view<Op>(t, k, view_of(h, access, b, a.name.data()));
  }
  for (std::size_t i = 0; i < na; ++i) {
    const detail::AttrSpec& a = Op::kAttrs[i];
    const py::object h = argument(nt + i, a.name);
    if (h.is_none()) continue;
    switch (a.type) {
      case detail::AttrType::kBool: detail::set_attr<Op>(p, i, h.cast<bool>()); break;
      case detail::AttrType::kInt:
        // An enumerated attribute also takes its strings (CrossEntropyLoss's reduction="sum").
        if (!a.graph_strings.empty() && py::isinstance<py::str>(h)) {
          const std::string text = h.cast<std::string>();
          const auto it =
              std::find_if(a.graph_strings.begin(), a.graph_strings.end(),
                           [&](const detail::GraphString& g) { return g.name == text; });
          if (it == a.graph_strings.end()) {
            std::string known;
            for (const detail::GraphString& g : a.graph_strings) {
              known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", g.name);
            }
            raise_error(StatusCode::kParamInvalid,
                        fmt::format("{}: {} \"{}\" is not one of {}", name, a.name, text, known));
          }
          detail::set_attr<Op>(p, i, it->value);
        } else {
          detail::set_attr<Op>(p, i, h.cast<int64_t>());
        }
        break;
      case detail::AttrType::kFloat:
      case detail::AttrType::kScalar: detail::set_attr<Op>(p, i, h.cast<double>()); break;
      case detail::AttrType::kIntList:
      case detail::AttrType::kBoolList: {
        const std::vector<int64_t> values = h.cast<std::vector<int64_t>>();
        raise_if_failed(detail::set_list_attr<Op>(p, i, values));
        break;
      }
    }
  }
  if (used != kwargs.size()) {
    for (const auto& [key, value] : kwargs) {
      bool known = false;
      for (const auto& a : Op::kArgs) known |= py::str(key).cast<std::string>() == a.name;
      for (const auto& a : Op::kAttrs) known |= py::str(key).cast<std::string>() == a.name;
      if (!known) {
        raise_type_error(fmt::format("{}() got an unexpected keyword argument '{}'", name,
                                     py::str(key).cast<std::string>()));
      }
    }
  }
  run([&] { return Op::run(t, p); });
}

// The signature and roles, for help().
template <class Op>
std::string declared_doc(const std::string& name) {
  std::string sig = name + "(";
  std::string roles;
  for (std::size_t k = 0; k < detail::kNumArgs<Op>; ++k) {
    const detail::ArgSpec& a = Op::kArgs[k];
    sig += fmt::format("{}{}{}", k ? ", " : "", a.name, a.optional ? "=None" : "");
    roles += fmt::format("\n  {}: {}{}", a.name,
                         a.role == detail::Role::kIn    ? "read"
                         : a.role == detail::Role::kOut ? "written"
                                                        : "read and written",
                         a.optional ? " (optional)" : "");
  }
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    const detail::AttrSpec& a = Op::kAttrs[i];
    sig += fmt::format(", {}={}", a.name, a.default_value);
  }
  return fmt::format(
      "{})\n\nCANN's {}{}{}: numpy arrays or torch CPU tensors, contiguous; see "
      "docs/ops/.{}",
      sig, Op::kType, Op::kAclnn.empty() ? "" : " (", Op::kAclnn, Op::kAclnn.empty() ? "" : ")",
      roles);
}

// mantissa.ops.<name> for every declared operator without a tensor list, under its C++ API's
// name (Op::kFunction), generated from the declaration; also mantissa.<name> where the
// hand-written bindings above have no function of that name (mantissa.gelu).
void bind_declared_ops(py::module_& m) {
  py::module_ ops = m.def_submodule(
      "ops",
      "Every operator under CANN's op type in snake_case, generated from its declaration: "
      "tensors in CANN's order, then attributes (by position or name).");
  detail::AllOps::for_each([&](auto op) {
    using Op = typename decltype(op)::type;
    bool has_list = false;
    for (const auto& a : Op::kArgs) has_list |= a.is_list;
    if (has_list) return;
    const std::string name(Op::kFunction);
    ops.def(
        name.c_str(),
        [name](const py::args& args, const py::kwargs& kwargs) {
          call_declared<Op>(name, args, kwargs);
        },
        declared_doc<Op>(name).c_str());
    if (!py::hasattr(m, name.c_str())) m.attr(name.c_str()) = ops.attr(name.c_str());
  });
}

}  // namespace
}  // namespace mantissa::python

PYBIND11_MODULE(_mantissa, m) {
  m.doc() = "mantissa: CANN training operators on CPUs, bit-reproducible (C++ API bindings)";
  using namespace mantissa::python;
  g_error_type = PyErr_NewExceptionWithDoc(
      "mantissa.Error",
      "A failed mantissa call: .code is the CANN status code (e.g. 161002), .code_name its "
      "symbol; nothing was written.",
      PyExc_ValueError, nullptr);
  if (g_error_type == nullptr) throw py::error_already_set();
  // Class-level defaults, so an Error raised by Python code without them still has both.
  py::handle error_class(g_error_type);
  error_class.attr("code") = py::none();
  error_class.attr("code_name") = py::none();
  m.add_object("Error", py::reinterpret_borrow<py::object>(g_error_type));
  bind_ops(m);
  bind_optim(m);
  bind_runtime(m);
  bind_declared_ops(m);
}
