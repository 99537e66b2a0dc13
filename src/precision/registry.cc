// The kit's operator registry and small name tables. The registry holds every operator of the
// library's list (ops/all_ops.h): its schema and backends derived from the declaration, its
// goldens from op_<name>.cc.
#include <fmt/format.h>

#include "precision/op_defs.h"
#include "precision/op_schema.h"

namespace mantissa::precision {

const std::map<std::string, OpEntry>& registry() {
  static const std::map<std::string, OpEntry> ops = [] {
    std::map<std::string, OpEntry> m;
    detail::AllOps::for_each([&](auto op) {
      OpEntry e = Schema<typename decltype(op)::type>::entry();
      m.emplace(e.name, std::move(e));
    });
    add_fused_optim_ops(m);
    add_compat_backends(m);
    return m;
  }();
  return ops;
}

const OpEntry* find_op(const std::string& name) {
  const auto& r = registry();
  const auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

int OpEntry::input_index(const std::string& n) const noexcept {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

bool OpEntry::has_lists() const noexcept {
  for (const TensorSlot& t : inputs) {
    if (t.list) return true;
  }
  return false;
}

OpEntry OpEntry::instantiate(const CaseSpec& c, std::vector<int64_t>& list_sizes) const {
  list_sizes.clear();
  if (!has_lists()) return *this;
  OpEntry e = *this;
  e.inputs.clear();
  e.outputs.clear();
  std::vector<int> first(inputs.size()), count(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const TensorSlot& slot = inputs[k];
    first[k] = static_cast<int>(e.inputs.size());
    if (!slot.list) {
      count[k] = 1;
      e.inputs.push_back(slot);
      continue;
    }
    int64_t n = 0;
    while (c.find_input(fmt::format("{}[{}]", slot.name, n)) != nullptr) ++n;
    list_sizes.push_back(n);
    count[k] = static_cast<int>(n);
    for (int64_t i = 0; i < n; ++i) {
      TensorSlot element = slot;
      element.name = fmt::format("{}[{}]", slot.name, i);
      element.list = false;
      // A rule naming another list means its element i (FusedAdamw's grads[i] like params[i]).
      for (std::string* ref : {&element.like, &element.dtype_like}) {
        const int r = input_index(*ref);
        if (r >= 0 && inputs[static_cast<std::size_t>(r)].list)
          *ref = fmt::format("{}[{}]", *ref, i);
      }
      e.inputs.push_back(element);
    }
  }
  for (const OutputSlot& o : outputs) {
    if (o.list_of >= 0) {
      for (int i = 0; i < count[static_cast<std::size_t>(o.list_of)]; ++i) {
        const auto make = o.make_element;
        e.outputs.push_back({fmt::format("{}[{}]", o.name, i), -1, [make, i](const OpInputs& in) {
                               return make(in, static_cast<std::size_t>(i));
                             }});
      }
      continue;
    }
    if (o.counterpart < 0) {
      e.outputs.push_back(o);
      continue;
    }
    const auto k = static_cast<std::size_t>(o.counterpart);
    if (!inputs[k].list) {
      e.outputs.push_back({o.name, first[k], {}});
      continue;
    }
    for (int i = 0; i < count[k]; ++i) {
      e.outputs.push_back({fmt::format("{}[{}]", o.name, i), first[k] + i, {}});
    }
  }
  return e;
}

int OpEntry::attr_index(const std::string& n) const noexcept {
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    if (attrs[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

std::vector<HostTensor> OpEntry::make_outputs(const OpInputs& in) const {
  std::vector<HostTensor> out;
  for (const OutputSlot& o : outputs) {
    if (o.counterpart < 0) {
      out.push_back(o.make(in));
      continue;
    }
    const HostTensor& c = in.tensors[static_cast<std::size_t>(o.counterpart)];
    out.emplace_back(c.dtype, c.shape);
  }
  return out;
}

const char* backend_name(Backend b) noexcept {
  switch (b) {
    case Backend::kKernel: return "kernel";
    case Backend::kAclnn: return "aclnn";
    case Backend::kAclop: return "aclop";
  }
  return "?";
}

std::optional<Backend> backend_from_name(const std::string& name) noexcept {
  if (name == "kernel") return Backend::kKernel;
  if (name == "aclnn") return Backend::kAclnn;
  if (name == "aclop") return Backend::kAclop;
  return std::nullopt;
}

const char* standard_name(StandardKind kind) noexcept {
  switch (kind) {
    case StandardKind::kSingleBm: return "single_bm";
    case StandardKind::kMixed: return "mixed";
    case StandardKind::kBitwise: return "bitwise";
  }
  return "?";
}

const char* verdict_name(Verdict v) noexcept {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kError: return "ERROR";
    case Verdict::kNotApplicable: return "N/A";
  }
  return "?";
}

double StandardSpec::threshold(DType dtype) const noexcept {
  switch (dtype) {
    case DType::kFloat16: return fp16_error;
    case DType::kBFloat16: return bf16_error;
    default: return fp32_error;
  }
}

}  // namespace mantissa::precision
