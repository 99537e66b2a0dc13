// Case files: JSON lists of ATK-shaped cases. Every problem becomes an error naming the file, the
// case and the key; a broken entry never stops the others from loading.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/json_depth.h"
#include "precision/kit.h"

namespace mantissa::precision {
namespace {

using json = nlohmann::json;

// Thrown inside the parser only; turned into a LoadedCase error.
struct CaseError {
  std::string key;
  std::string message;
};

[[noreturn]] void fail(std::string key, std::string message) {
  throw CaseError{std::move(key), std::move(message)};
}

void check_keys(const json& obj, const std::string& where, const std::set<std::string>& allowed,
                const std::set<std::string>& required) {
  if (!obj.is_object()) fail(where, "must be a JSON object");
  for (const auto& [k, v] : obj.items()) {
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(where.empty() ? k : where + "." + k, fmt::format("unknown key (allowed: {})", list));
    }
  }
  for (const auto& r : required) {
    if (!obj.contains(r)) fail(where.empty() ? r : where + "." + r, "missing required key");
  }
}

double number(const json& v, const std::string& key) {
  if (!v.is_number()) fail(key, fmt::format("must be a number, got {}", v.dump()));
  return v.get<double>();
}

std::pair<double, double> range_pair(const json& v, const std::string& key) {
  if (!v.is_array() || v.size() != 2) fail(key, fmt::format("must be [lo, hi], got {}", v.dump()));
  const double lo = number(v[0], key + "[0]"), hi = number(v[1], key + "[1]");
  if (!(lo <= hi)) fail(key, fmt::format("lo {} is greater than hi {}", lo, hi));
  return {lo, hi};
}

GeneratorSpec::Value generator_value(const json& v, const std::string& key) {
  GeneratorSpec::Value out;
  if (v.is_string()) {
    out.name = v.get<std::string>();
    if (!is_special_value_name(out.name)) {
      fail(key, fmt::format("unknown special value \"{}\" (known: nan, -nan, inf, -inf, 0.0, "
                            "-0.0, denorm, min_subnormal, max_subnormal, min_normal, max and "
                            "their negatives)",
                            out.name));
    }
    out.is_name = true;
  } else {
    out.number = number(v, key);
  }
  return out;
}

GeneratorSpec parse_generator(const json& rv, const std::string& key) {
  if (!rv.is_object()) fail(key, "must be a generator object {\"name\": ...}");
  if (!rv.contains("name")) fail(key + ".name", "missing required key");
  if (!rv["name"].is_string()) fail(key + ".name", "must be a string");
  const std::string name = rv["name"].get<std::string>();
  GeneratorSpec g;
  if (name == "nd") {
    check_keys(rv, key, {"name", "mean", "std"}, {"mean", "std"});
    g.kind = GeneratorSpec::Kind::kNormal;
    std::tie(g.mean_lo, g.mean_hi) = range_pair(rv["mean"], key + ".mean");
    std::tie(g.std_lo, g.std_hi) = range_pair(rv["std"], key + ".std");
    if (g.std_lo < 0) fail(key + ".std", "must not be negative");
  } else if (name == "uniform") {
    check_keys(rv, key, {"name", "range"}, {"range"});
    g.kind = GeneratorSpec::Kind::kUniform;
    std::tie(g.lo, g.hi) = range_pair(rv["range"], key + ".range");
  } else if (name == "const") {
    check_keys(rv, key, {"name", "value"}, {"value"});
    g.kind = GeneratorSpec::Kind::kConst;
    g.values.push_back(generator_value(rv["value"], key + ".value"));
  } else if (name == "special") {
    check_keys(rv, key, {"name", "values"}, {"values"});
    g.kind = GeneratorSpec::Kind::kSpecial;
    const json& vals = rv["values"];
    if (!vals.is_array() || vals.empty()) fail(key + ".values", "must be a non-empty list");
    for (std::size_t i = 0; i < vals.size(); ++i) {
      g.values.push_back(generator_value(vals[i], fmt::format("{}.values[{}]", key, i)));
    }
  } else {
    fail(key + ".name",
         fmt::format("unknown generator \"{}\" (known: nd, uniform, const, special)", name));
  }
  return g;
}

DType parse_dtype(const json& v, const std::string& key, bool attr) {
  if (!v.is_string()) fail(key, "must be a string");
  const std::string s = v.get<std::string>();
  static const std::map<std::string, DType> kTensor{
      {"fp32", DType::kFloat32},
      {"fp16", DType::kFloat16},
      {"bf16", DType::kBFloat16},
      {"int32", DType::kInt32},
      {"int64", DType::kInt64},
      {"bool", DType::kBool},
      {"int8", DType::kInt8},
      {"uint8", DType::kUInt8},
      // Quantized inputs: FP8 values (rounded to nearest even, saturated), E8M0 scale codes.
      {"fp8_e4m3", DType::kFloat8E4M3FN},
      {"fp8_e5m2", DType::kFloat8E5M2},
      {"fp8_e8m0", DType::kFloat8E8M0},
      // FP4 values (packed two per byte; rounded to nearest even, saturated, NaN to +0).
      {"fp4_e2m1", DType::kFloat4E2M1},
      {"fp4_e1m2", DType::kFloat4E1M2}};
  static const std::map<std::string, DType> kAttrExtra{{"fp64", DType::kFloat64}};
  if (auto it = kTensor.find(s); it != kTensor.end()) return it->second;
  if (attr) {
    if (auto it = kAttrExtra.find(s); it != kAttrExtra.end()) return it->second;
  }
  fail(key, fmt::format("bad dtype \"{}\" (allowed: fp32, fp16, bf16, int8, uint8, int32, int64, "
                        "bool, fp8_e4m3, fp8_e5m2, fp8_e8m0{})",
                        s, attr ? ", fp64" : ""));
}

AttrValue parse_attr_literal(const json& v, DType dtype, const std::string& key) {
  AttrValue a;
  if (v.is_array()) {  // a list attr: every element a literal of the dtype
    if (v.size() > 64)
      fail(key, fmt::format("a list attr holds at most 64 values, got {}", v.size()));
    for (std::size_t j = 0; j < v.size(); ++j) {
      const AttrValue e = parse_attr_literal(v[j], dtype, fmt::format("{}[{}]", key, j));
      if (e.kind == AttrKind::kFloat) fail(key, "a list attr holds bools or integers");
      a.list.push_back(e.kind == AttrKind::kBool ? e.b : e.i);
      a.kind = e.kind == AttrKind::kBool ? AttrKind::kBoolList : AttrKind::kIntList;
    }
    if (v.empty()) a.kind = dtype == DType::kBool ? AttrKind::kBoolList : AttrKind::kIntList;
    return a;
  }
  switch (dtype) {
    case DType::kBool:
      a.kind = AttrKind::kBool;
      if (v.is_boolean()) {
        a.b = v.get<bool>();
      } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
        a.b = v.get<int64_t>() == 1;
      } else {
        fail(key, fmt::format("must be true/false (or 0/1), got {}", v.dump()));
      }
      break;
    case DType::kInt32:
    case DType::kInt64:
      a.kind = AttrKind::kInt;
      if (!v.is_number_integer()) fail(key, fmt::format("must be an integer, got {}", v.dump()));
      a.i = v.get<int64_t>();
      if (dtype == DType::kInt32 && (a.i < INT32_MIN || a.i > INT32_MAX)) {
        fail(key, fmt::format("{} does not fit int32", a.i));
      }
      break;
    default: {
      a.kind = AttrKind::kFloat;
      if (v.is_string()) {
        const auto bits = special_value_bits(v.get<std::string>(), DType::kFloat32);
        if (!bits) fail(key, fmt::format("unknown special value {}", v.dump()));
        a.f = static_cast<double>(std::bit_cast<float>(*bits));
      } else {
        a.f = number(v, key);
      }
    }
  }
  return a;
}

InputSpec parse_input(const json& in, std::size_t index) {
  const std::string key = fmt::format("inputs[{}]", index);
  check_keys(in, key, {"name", "type", "dtype", "shape", "range_values", "required"},
             {"name", "type", "dtype", "range_values"});
  InputSpec s;
  if (!in["name"].is_string() || in["name"].get<std::string>().empty()) {
    fail(key + ".name", "must be a non-empty string");
  }
  s.name = in["name"].get<std::string>();
  // From here on keys carry the input's name: "inputs[3](lr).dtype".
  const std::string nkey = fmt::format("{}({})", key, s.name);
  if (!in["type"].is_string()) fail(nkey + ".type", "must be \"tensor\" or \"attr\"");
  const std::string type = in["type"].get<std::string>();
  if (type != "tensor" && type != "attr") {
    fail(nkey + ".type", fmt::format("must be \"tensor\" or \"attr\", got \"{}\"", type));
  }
  s.is_attr = type == "attr";
  s.dtype = parse_dtype(in["dtype"], nkey + ".dtype", s.is_attr);
  s.dtype_text = in["dtype"].get<std::string>();
  if (in.contains("required")) {
    if (!in["required"].is_boolean()) fail(nkey + ".required", "must be true or false");
    s.required = in["required"].get<bool>();
  }
  if (s.is_attr) {
    if (in.contains("shape") && !(in["shape"].is_array() && in["shape"].empty())) {
      fail(nkey + ".shape", "an attr has no shape (omit it or use [])");
    }
    s.attr = parse_attr_literal(in["range_values"], s.dtype, nkey + ".range_values");
    return s;
  }
  if (!in.contains("shape")) fail(nkey + ".shape", "missing required key");
  const json& shape = in["shape"];
  if (!shape.is_array()) fail(nkey + ".shape", fmt::format("must be a list, got {}", shape.dump()));
  if (shape.size() > 8) fail(nkey + ".shape", fmt::format("rank {} exceeds 8", shape.size()));
  int64_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_integer() || shape[i].get<int64_t>() < 0) {
      fail(nkey + ".shape",
           fmt::format("dim {} must be a non-negative integer, got {}", i, shape[i].dump()));
    }
    const int64_t d = shape[i].get<int64_t>();
    s.shape.push_back(d);
    if (d != 0 && count > kMaxCaseElements / d) {
      fail(nkey + ".shape", fmt::format("too many elements (at most 2^{} per case)",
                                        std::countr_zero(static_cast<uint64_t>(kMaxCaseElements))));
    }
    count *= d;
  }
  s.generator = parse_generator(in["range_values"], nkey + ".range_values");
  const bool is_fp8 = s.dtype == DType::kFloat8E4M3FN || s.dtype == DType::kFloat8E5M2 ||
                      s.dtype == DType::kFloat4E2M1 || s.dtype == DType::kFloat4E1M2;
  if (is_fp8) {
    // FP8 tensors take every generator; of the special names only those FP8 can hold.
    for (const auto& v : s.generator.values) {
      if (v.is_name && v.name != "nan" && v.name != "-nan" && v.name != "inf" && v.name != "-inf" &&
          v.name != "-0.0") {
        fail(nkey + ".range_values",
             fmt::format("\"{}\" is not an FP8 value (FP8 takes nan, -nan, inf, -inf, -0.0)",
                         v.name));
      }
    }
  }
  const bool is_float = is_fp8 || s.dtype == DType::kFloat32 || s.dtype == DType::kFloat16 ||
                        s.dtype == DType::kBFloat16;
  if (!is_float && s.generator.kind != GeneratorSpec::Kind::kConst &&
      s.generator.kind != GeneratorSpec::Kind::kUniform) {
    fail(nkey + ".range_values", fmt::format("{} tensors take const or uniform", s.dtype_text));
  }
  if (!is_float) {
    for (const auto& v : s.generator.values) {
      if (v.is_name) fail(nkey + ".range_values", "special names apply to float tensors only");
    }
  }
  return s;
}

StandardSpec parse_standard(const json& st) {
  check_keys(st, "standard", {"acc", "perf"}, {"acc"});
  if (st.contains("perf") && !st["perf"].is_string()) fail("standard.perf", "must be a string");
  const json& acc = st["acc"];
  check_keys(acc, "standard.acc", {"single_bm", "mixed", "bitwise"}, {});
  if (acc.size() != 1) fail("standard.acc", "must name exactly one of single_bm, mixed, bitwise");
  StandardSpec s;
  auto positive = [](const json& v, const std::string& key) {
    const double x = number(v, key);
    if (!(x > 0)) fail(key, fmt::format("must be positive, got {}", x));
    return x;
  };
  if (acc.contains("single_bm")) {
    const json& b = acc["single_bm"];
    check_keys(b, "standard.acc.single_bm", {"type", "fp32_error", "fp16_error", "bf16_error"}, {});
    s.kind = StandardKind::kSingleBm;
    if (b.contains("type")) {
      if (!b["type"].is_string()) fail("standard.acc.single_bm.type", "must be a string");
      s.type = b["type"].get<std::string>();
    }
    if (b.contains("fp32_error"))
      s.fp32_error = positive(b["fp32_error"], "standard.acc.single_bm.fp32_error");
    if (b.contains("fp16_error"))
      s.fp16_error = positive(b["fp16_error"], "standard.acc.single_bm.fp16_error");
    if (b.contains("bf16_error"))
      s.bf16_error = positive(b["bf16_error"], "standard.acc.single_bm.bf16_error");
  } else if (acc.contains("mixed")) {
    const json& m = acc["mixed"];
    check_keys(m, "standard.acc.mixed", {"rtol", "atol", "pass_ratio"}, {});
    s.kind = StandardKind::kMixed;
    if (m.contains("rtol")) s.rtol = positive(m["rtol"], "standard.acc.mixed.rtol");
    if (m.contains("atol")) s.atol = positive(m["atol"], "standard.acc.mixed.atol");
    if (m.contains("pass_ratio")) {
      s.pass_ratio = positive(m["pass_ratio"], "standard.acc.mixed.pass_ratio");
      if (s.pass_ratio > 1) fail("standard.acc.mixed.pass_ratio", "must be at most 1");
    }
  } else {
    check_keys(acc["bitwise"], "standard.acc.bitwise", {}, {});
    s.kind = StandardKind::kBitwise;
  }
  return s;
}

std::string string_field(const json& c, const std::string& key) {
  if (!c[key].is_string()) fail(key, fmt::format("must be a string, got {}", c[key].dump()));
  return c[key].get<std::string>();
}

}  // namespace

std::vector<LoadedCase> parse_case_text(const std::string& text, const std::string& file) {
  std::vector<LoadedCase> out;
  // Case files nest a few levels; a deeper file is refused before parsing, which bounds the
  // stack every later step (messages echo values) needs.
  if (const int depth = detail::json_nesting_depth(text); depth > kMaxCaseNesting) {
    out.push_back(
        {file, "", std::nullopt,
         fmt::format("{}: nested {} levels deep (at most {})", file, depth, kMaxCaseNesting)});
    return out;
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // syntax, and numbers outside double's range
    out.push_back({file, "", std::nullopt, fmt::format("{}: not valid JSON: {}", file, e.what())});
    return out;
  }
  if (!doc.is_array()) {
    out.push_back(
        {file, "", std::nullopt, fmt::format("{}: a case file holds a JSON list of cases", file)});
    return out;
  }
  std::set<std::string> seen;
  for (std::size_t index = 0; index < doc.size(); ++index) {
    const json& c = doc[index];
    LoadedCase lc;
    lc.file = file;
    // The id first, so every later message can name the case.
    if (c.is_object() && c.contains("id")) {
      if (c["id"].is_string()) lc.id = c["id"].get<std::string>();
      if (c["id"].is_number_integer()) lc.id = std::to_string(c["id"].get<int64_t>());
    }
    const std::string case_label = lc.id.empty() ? fmt::format("#{}", index) : lc.id;
    try {
      check_keys(c, "", {"id", "name", "op", "version", "standard", "inputs"},
                 {"id", "name", "op", "version", "standard", "inputs"});
      if (lc.id.empty()) fail("id", "must be a non-empty string or an integer");
      if (!seen.insert(lc.id).second) fail("id", "duplicate case id in this file");
      CaseSpec spec;
      spec.file = file;
      spec.id = lc.id;
      spec.name = string_field(c, "name");
      spec.op = string_field(c, "op");
      spec.version = string_field(c, "version");
      spec.standard = parse_standard(c["standard"]);
      const json& inputs = c["inputs"];
      if (!inputs.is_array()) fail("inputs", "must be a list");
      std::set<std::string> names;
      int64_t elements = 0;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        InputSpec s = parse_input(inputs[i], i);
        int64_t n = 1;
        for (int64_t d : s.shape) n *= d;  // each within the limit (parse_input)
        elements += s.is_attr ? 0 : n;
        if (elements > kMaxCaseElements) {
          fail("inputs", fmt::format("the tensors hold more than 2^{} elements together",
                                     std::countr_zero(static_cast<uint64_t>(kMaxCaseElements))));
        }
        if (!names.insert(s.name).second) {
          fail(fmt::format("inputs[{}].name", i), fmt::format("duplicate input \"{}\"", s.name));
        }
        spec.inputs.push_back(std::move(s));
      }
      lc.spec = std::move(spec);
    } catch (const CaseError& e) {
      lc.error = fmt::format("{}: case {}: key '{}': {}", file, case_label, e.key, e.message);
    }
    out.push_back(std::move(lc));
  }
  return out;
}

std::vector<LoadedCase> load_case_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {{path, "", std::nullopt, fmt::format("{}: cannot open the file", path)}};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_case_text(ss.str(), path);
}

std::vector<LoadedCase> load_case_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return {{dir, "", std::nullopt, fmt::format("{}: not a directory", dir)}};
  }
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".json") {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<LoadedCase> out;
  for (const auto& f : files) {
    auto part = load_case_file(f);
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

const InputSpec* CaseSpec::find_input(const std::string& input_name) const noexcept {
  for (const auto& i : inputs) {
    if (i.name == input_name) return &i;
  }
  return nullptr;
}

}  // namespace mantissa::precision
