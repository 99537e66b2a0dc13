// The precision kit itself: its own fp encodings, case-file errors, deterministic generation,
// the goldens on hand-computed values, and that each standard catches the wrong kernels it should.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/runtime.h"
#include "precision/fp.h"
#include "precision/kit.h"

namespace mantissa::testing {
using namespace mantissa::precision;

namespace {

// ---- Own fp encodings -----------------------------------------------------------------------

TEST(PrecisionFp, HalfAndBfloatDecodeAgreesWithTheLibraryOnEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const double mine_h = decode_bits(b, DType::kFloat16);
    const double mine_b = decode_bits(b, DType::kBFloat16);
    const float lib_h = fp16_bits_to_float(h), lib_b = bf16_bits_to_float(h);
    if (std::isnan(lib_h)) {
      EXPECT_TRUE(std::isnan(mine_h)) << b;
    } else {
      EXPECT_EQ(mine_h, static_cast<double>(lib_h)) << b;
      EXPECT_EQ(round_to_bits(mine_h, DType::kFloat16), b) << b;  // round trip
    }
    if (std::isnan(lib_b)) {
      EXPECT_TRUE(std::isnan(mine_b)) << b;
      EXPECT_EQ(round_to_bits(mine_b, DType::kBFloat16), b | 0x40u) << b;  // made quiet
    } else {
      EXPECT_EQ(mine_b, static_cast<double>(lib_b)) << b;
      EXPECT_EQ(round_to_bits(mine_b, DType::kBFloat16), b) << b;
    }
  }
}

TEST(PrecisionFp, RoundingFromFloatMatchesTheLibraryOnASweep) {
  // Every 4099th fp32 pattern plus both neighbours: ties, subnormals, overflow, NaN payloads.
  for (uint64_t base = 0; base < (1ull << 32); base += 4099) {
    for (uint64_t d : {base, base + 1, base + 0x1000, base + 0x8000}) {
      const auto bits = static_cast<uint32_t>(d);
      const float f = std::bit_cast<float>(bits);
      const double x = static_cast<double>(f);
      ASSERT_EQ(round_to_bits(x, DType::kFloat16), float_to_fp16_bits(f)) << std::hex << bits;
      ASSERT_EQ(round_to_bits(x, DType::kBFloat16), float_to_bf16_bits(f)) << std::hex << bits;
      if (!std::isnan(f)) {
        ASSERT_EQ(round_to_bits(x, DType::kFloat32), bits) << std::hex << bits;
      }
    }
  }
}

TEST(PrecisionFp, DoubleIsRoundedOnceNotThroughFloat) {
  // 1 + 2^-11 + 2^-40 is above the fp16 half-way point: it rounds up. Through fp32 it would
  // first become the exact tie 1 + 2^-11 and then round to even (1.0).
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(round_to_bits(x, DType::kFloat16), 0x3C01u);
  EXPECT_EQ(float_to_fp16_bits(static_cast<float>(x)), 0x3C00u);
  EXPECT_EQ(round_to_bits(65520.0, DType::kFloat16), 0x7C00u);          // overflow to inf
  EXPECT_EQ(round_to_bits(65519.99, DType::kFloat16), 0x7BFFu);         // max finite
  EXPECT_EQ(round_to_bits(std::ldexp(1.0, -25), DType::kFloat16), 0u);  // tie to even zero
  EXPECT_EQ(round_to_bits(std::ldexp(1.5, -25), DType::kFloat16), 1u);  // above the tie
  EXPECT_EQ(round_to_bits(-0.0, DType::kBFloat16), 0x8000u);
  EXPECT_EQ(round_to_bits(1e-320, DType::kFloat32), 0u);  // double subnormal
}

TEST(PrecisionFp, UlpDistance) {
  EXPECT_EQ(ulp_distance(0x3C00, 0x3C01, DType::kFloat16), 1u);
  EXPECT_EQ(ulp_distance(0x0000, 0x8000, DType::kFloat16), 0u);
  EXPECT_EQ(ulp_distance(0x0001, 0x8001, DType::kFloat16), 2u);
  EXPECT_EQ(ulp_distance(0x7F7FFFFF, 0x7F800000, DType::kFloat32), 1u);
}

// ---- Case files -----------------------------------------------------------------------------

// One ApplyAdamD case as JSON, with pieces replaceable for the error tests.
std::string adam_case_json(const std::string& id, const std::string& dtype,
                           const std::string& standard, const std::string& shape = "[4, 16]",
                           const std::string& extra_case_key = "",
                           const std::string& lr = "0.001") {
  auto tensor = [&](const std::string& name, const std::string& shp, const std::string& rv) {
    return "{\"name\": \"" + name + "\", \"type\": \"tensor\", \"dtype\": \"" + dtype +
           "\", \"shape\": " + shp + ", \"range_values\": " + rv + "}";
  };
  auto scalar = [&](const std::string& name, const std::string& v) {
    return tensor(name, "[1]", "{\"name\": \"const\", \"value\": " + v + "}");
  };
  return "{\"id\": \"" + id + "\", \"name\": \"n\", \"op\": \"ApplyAdamD\", \"version\": \"v\"," +
         extra_case_key + " \"standard\": " + standard + ", \"inputs\": [" +
         tensor("var", shape, R"({"name": "nd", "mean": [-1, 1], "std": [0.1, 0.5]})") + ", " +
         tensor("m", shape, R"({"name": "nd", "mean": [-0.5, 0.5], "std": [0.05, 0.2]})") + ", " +
         tensor("v", shape, R"({"name": "nd", "mean": [0.5, 1.0], "std": [0.01, 0.05]})") + ", " +
         scalar("beta1_power", "0.9") + ", " + scalar("beta2_power", "0.999") + ", " +
         scalar("lr", lr) + ", " + scalar("beta1", "0.9") + ", " + scalar("beta2", "0.999") + ", " +
         scalar("epsilon", "1e-7") + ", " +
         tensor("grad", shape, R"({"name": "nd", "mean": [-0.5, 0.5], "std": [0.05, 0.3]})") +
         R"(, {"name": "use_nesterov", "type": "attr", "dtype": "bool", "range_values": false}]})";
}

const std::string kBitwise = R"({"acc": {"bitwise": {}}})";
const std::string kSingleBm =
    R"({"acc": {"single_bm": {"type": "high_performance", "fp32_error": 0.0001220703125,
        "fp16_error": 0.0009765625, "bf16_error": 0.0078125}}, "perf": "not_key"})";
const std::string kMixed = R"({"acc": {"mixed": {}}})";

std::string replace_first(std::string text, const std::string& from, const std::string& to,
                          std::size_t start = 0) {
  const std::size_t at = text.find(from, start);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

CaseSpec parse_one(const std::string& json) {
  auto cases = parse_case_text("[" + json + "]", "mem.json");
  EXPECT_EQ(cases.size(), 1u);
  EXPECT_TRUE(cases[0].spec.has_value()) << cases[0].error;
  return *cases[0].spec;
}

std::string parse_error(const std::string& text) {
  auto cases = parse_case_text(text, "bad.json");
  EXPECT_EQ(cases.size(), 1u);
  EXPECT_FALSE(cases[0].spec.has_value());
  return cases[0].error;
}

TEST(PrecisionCaseFile, ParsesAnAtkShapedCase) {
  const CaseSpec c = parse_one(adam_case_json("c1", "bf16", kSingleBm));
  EXPECT_EQ(c.id, "c1");
  EXPECT_EQ(c.op, "ApplyAdamD");
  EXPECT_EQ(c.standard.kind, StandardKind::kSingleBm);
  EXPECT_EQ(c.standard.threshold(DType::kBFloat16), 0.0078125);
  ASSERT_EQ(c.inputs.size(), 11u);
  EXPECT_EQ(c.inputs[0].dtype, DType::kBFloat16);
  EXPECT_EQ(c.inputs[0].generator.kind, GeneratorSpec::Kind::kNormal);
  EXPECT_TRUE(c.inputs[10].is_attr);
}

TEST(PrecisionCaseFile, ErrorsNameFileCaseAndKey) {
  // Not JSON.
  EXPECT_NE(parse_error("[{\"id\": ").find("bad.json: not valid JSON"), std::string::npos);
  // Not a list.
  EXPECT_NE(parse_error("{}").find("bad.json: a case file holds a JSON list"), std::string::npos);
  // Missing key.
  std::string ok = adam_case_json("c7", "fp32", kBitwise);
  std::string missing = ok;
  missing = replace_first(missing, "\"version\": \"v\",", "");
  std::string e = parse_error("[" + missing + "]");
  EXPECT_NE(e.find("bad.json: case c7: key 'version': missing required key"), std::string::npos)
      << e;
  // Unknown key, at the case level and inside an input.
  e = parse_error("[" + adam_case_json("c8", "fp32", kBitwise, "[4]", " \"colour\": 1,") + "]");
  EXPECT_NE(e.find("case c8: key 'colour': unknown key"), std::string::npos) << e;
  std::string inner = ok;
  inner = replace_first(inner, "\"type\": \"tensor\"", "\"type\": \"tensor\", \"typo\": 2");
  e = parse_error("[" + inner + "]");
  EXPECT_NE(e.find("case c7: key 'inputs[0].typo': unknown key"), std::string::npos) << e;
  // Bad dtype.
  e = parse_error("[" + adam_case_json("c9", "fp8", kBitwise) + "]");
  EXPECT_NE(e.find("case c9: key 'inputs[0](var).dtype': bad dtype \"fp8\""), std::string::npos)
      << e;
  // Bad shape.
  e = parse_error("[" + adam_case_json("c10", "fp32", kBitwise, "[4, -1]") + "]");
  EXPECT_NE(e.find("case c10: key 'inputs[0](var).shape': dim 1 must be a non-negative integer"),
            std::string::npos)
      << e;
  e = parse_error("[" + adam_case_json("c11", "fp32", kBitwise, "\"4x16\"") + "]");
  EXPECT_NE(e.find("case c11: key 'inputs[0](var).shape': must be a list"), std::string::npos) << e;
  // Unknown generator and unknown special value.
  std::string gen = ok;
  gen = replace_first(gen, "\"name\": \"nd\"", "\"name\": \"poisson\"");
  e = parse_error("[" + gen + "]");
  EXPECT_NE(e.find("case c7: key 'inputs[0](var).range_values.name': unknown generator "
                   "\"poisson\""),
            std::string::npos)
      << e;
  std::string special = ok;
  special = replace_first(special, "\"value\": 0.9", "\"value\": \"nanx\"");
  e = parse_error("[" + special + "]");
  EXPECT_NE(e.find("key 'inputs[3](beta1_power).range_values.value': unknown special value"),
            std::string::npos)
      << e;
  // Bad standard.
  e = parse_error("[" + adam_case_json("c12", "fp32", R"({"acc": {"exact": {}}})") + "]");
  EXPECT_NE(e.find("case c12: key 'standard.acc.exact': unknown key"), std::string::npos) << e;
}

TEST(PrecisionCaseFile, SchemaErrorsBecomeErrorRowsNamingTheKey) {
  const OpEntry& op = *find_op("ApplyAdamD");
  // m with a different shape from var.
  std::string text = adam_case_json("s1", "fp32", kBitwise);
  text = replace_first(text, "[4, 16]", "[4, 15]", text.find("\"m\""));
  CaseResult r = run_case(parse_one(text), op, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_NE(r.reason.find("mem.json: case s1: key 'inputs(m).shape': [4, 15] differs from var's "
                          "[4, 16]"),
            std::string::npos)
      << r.reason;
  // An input the operator does not have.
  text = adam_case_json("s2", "fp32", kBitwise);
  text = replace_first(text, "\"grad\"", "\"grads\"");
  r = run_case(parse_one(text), op, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_NE(r.reason.find("case s2: key 'inputs[9](grads).name': ApplyAdamD has no input"),
            std::string::npos)
      << r.reason;
}

TEST(PrecisionCaseFile, ABrokenFileIsAnErrorRowAndTheRunGoesOn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mantissa_kit_" + std::to_string(::getpid()));
  fs::create_directories(dir / "adam");
  std::ofstream(dir / "adam" / "a_broken.json") << "[{\"id\": \"x\", ";
  std::ofstream(dir / "adam" / "b_good.json")
      << "[" << adam_case_json("good", "fp32", kBitwise) << ", {\"id\": \"bad\"}]";
  CheckOptions opt;
  opt.case_dir = dir.string();
  const CheckReport rep = run_check(opt);
  fs::remove_all(dir);
  ASSERT_EQ(rep.rows.size(), 3u);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::kError);
  EXPECT_NE(rep.rows[0].reason.find("a_broken.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(rep.rows[1].case_id, "good");
  EXPECT_EQ(rep.rows[2].verdict, Verdict::kError);
  EXPECT_NE(rep.rows[2].reason.find("case bad: key 'inputs': missing required key"),
            std::string::npos)
      << rep.rows[2].reason;
  EXPECT_EQ(rep.errors, 2);
  EXPECT_EQ(rep.failed, 2 + (rep.rows[1].verdict == Verdict::kFail ? 1 : 0));
}

// Cases run side by side and the goldens shared by the backends change nothing in the report:
// the rows of a shipped set, every backend, with one thread and with three, and each row as
// run_case gives it for its backend alone.
TEST(PrecisionCheck, TheReportIsTheSameForAnyJobCountAndSharedGoldens) {
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "MANTISSA_SOURCE_DIR must name the source tree";
  CheckOptions opt;
  opt.case_dir = std::string(src) + "/cases/amp_update_scale";
  opt.all_backends = true;
  opt.jobs = 1;
  const CheckReport one = run_check(opt);
  opt.jobs = 3;
  std::size_t calls = 0, last_done = 0;
  bool in_order = true;
  const CheckReport three = run_check(opt, [&](std::size_t done, std::size_t total) {
    in_order = in_order && done == last_done + 1 && done <= total;
    last_done = done;
    ++calls;
  });
  ASSERT_GT(one.rows.size(), 9u);
  EXPECT_EQ(report_json(opt, one), report_json(opt, three));
  EXPECT_EQ(one.passed, static_cast<int>(one.rows.size()));
  EXPECT_EQ(calls * 3, three.rows.size());  // one call per case, counting up
  EXPECT_TRUE(in_order);
  for (std::size_t k = 0; k < one.rows.size(); ++k) {
    EXPECT_EQ(one.rows[k].backend,
              std::vector<Backend>({Backend::kKernel, Backend::kAclnn, Backend::kAclop})[k % 3]);
  }
  // Each backend alone, for the first cases of the set.
  int compared = 0;
  for (const LoadedCase& lc : load_case_dir(opt.case_dir)) {
    if (compared == 3) break;
    ASSERT_TRUE(lc.spec) << lc.error;
    for (Backend b : {Backend::kKernel, Backend::kAclnn, Backend::kAclop}) {
      CheckReport alone, shared;
      alone.rows.push_back(run_case(*lc.spec, *find_op(lc.spec->op), b, 0));
      for (const CaseResult& r : one.rows) {
        if (r.case_id == lc.id && r.file == lc.file && r.backend == b) shared.rows.push_back(r);
      }
      ASSERT_EQ(shared.rows.size(), 1u) << lc.id;
      EXPECT_EQ(report_json(opt, alone), report_json(opt, shared)) << lc.id;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 3);
}

// Inputs that once terminated `mantissa check` (an exception out of the parser, a stack overflow,
// an allocation of tens of GB) are error rows now.
TEST(PrecisionCaseFile, HostileFilesAreErrorRows) {
  // A number outside double's range.
  EXPECT_NE(parse_error("[{\"id\": 1e400}]").find("not valid JSON"), std::string::npos);
  // 100k levels of nesting: refused before parsing.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(parse_error(deep).find("nested 100000 levels deep (at most 64)"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_NE(parse_error("[\"" + std::string(1000, '[') + "\"]").find("case"), std::string::npos);
  // Shapes within the per-tensor rules whose total is too large for one case.
  const std::string big = adam_case_json("big", "fp32", kBitwise, "[4096, 4096]");
  EXPECT_NE(parse_error("[" + big + "]").find("more than 2^24 elements together"),
            std::string::npos);
  EXPECT_NE(parse_error("[" +
                        replace_first(adam_case_json("huge", "fp32", kBitwise), "[4, 16]",
                                      "[1048576, 1048576]") +
                        "]")
                .find("too many elements (at most 2^24 per case)"),
            std::string::npos);
}

// A report quoting bytes that are not UTF-8 (a file name, a parser message) is still written.
TEST(PrecisionReport, InvalidUtf8IsReplacedNotThrown) {
  CheckOptions opt;
  opt.case_dir = "dir\xff\xfe";
  CheckReport rep;
  const auto cases = parse_case_text("[{\"id\": \"\xc3\x28\"}]", "bad\xff.json");
  ASSERT_EQ(cases.size(), 1u);
  CaseResult r;
  r.case_id = "x";
  r.verdict = Verdict::kError;
  r.reason = cases[0].error;
  rep.rows.push_back(r);
  rep.errors = 1;
  std::string json;
  ASSERT_NO_THROW(json = report_json(opt, rep));
  EXPECT_NE(json.find("\"errors\": 1"), std::string::npos);
}

// ---- Generation -----------------------------------------------------------------------------

TEST(PrecisionGenerate, IndependentOfThreadCountAndRepeatable) {
  const OpEntry& op = *find_op("ApplyAdamD");
  const CaseSpec c = parse_one(adam_case_json("gen", "fp16", kBitwise, "[37, 129]"));
  OpInputs a, b, d, e;
  ASSERT_TRUE(set_num_threads(1).ok());
  ASSERT_EQ(generate_inputs(c, op, 7, a), "");
  ASSERT_TRUE(set_num_threads(4).ok());
  ASSERT_EQ(generate_inputs(c, op, 7, b), "");
  ASSERT_EQ(generate_inputs(c, op, 7, d), "");
  ASSERT_EQ(generate_inputs(c, op, 8, e), "");
  ASSERT_TRUE(set_num_threads(0).ok());
  for (std::size_t k = 0; k < a.tensors.size(); ++k) {
    EXPECT_EQ(a.tensors[k].bytes, b.tensors[k].bytes) << k;
    EXPECT_EQ(a.tensors[k].bytes, d.tensors[k].bytes) << k;
  }
  EXPECT_NE(a.tensors[0].bytes, e.tensors[0].bytes);  // the seed matters
  EXPECT_NE(a.tensors[0].bytes, a.tensors[1].bytes);  // inputs have their own streams
  // v is drawn from mean in [0.5, 1], std in [0.01, 0.05]: strictly positive here.
  double sum = 0;
  for (int64_t i = 0; i < a.tensors[2].numel(); ++i) {
    EXPECT_GT(a.tensors[2].value(i), 0.2);
    sum += a.tensors[2].value(i);
  }
  const double mean = sum / static_cast<double>(a.tensors[2].numel());
  EXPECT_GT(mean, 0.45);
  EXPECT_LT(mean, 1.05);
}

TEST(PrecisionGenerate, SpecialValuesAreCycledExactly) {
  const OpEntry& op = *find_op("ApplyAdamD");
  std::string text = adam_case_json("sp", "fp16", kBitwise, "[9]");
  text = replace_first(text, R"({"name": "nd", "mean": [-0.5, 0.5], "std": [0.05, 0.3]})",
                       R"({"name": "special", "values": ["nan", "-nan", "inf", "-inf", "-0.0",
                           "denorm", "min_subnormal", "max", 1.5]})");
  OpInputs in;
  ASSERT_EQ(generate_inputs(parse_one(text), op, 0, in), "");
  const HostTensor& g = in.tensors[9];
  const uint32_t want[] = {0x7E00, 0xFE00, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x0001, 0x7BFF, 0x3E00};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(g.bits(i), want[i]) << i;
}

// ---- Goldens on hand-computed values ----------------------------------------------------------

HostTensor scalar(DType d, double v) {
  HostTensor t(d, {1});
  if (d == DType::kInt32) {
    t.set_bits(0, static_cast<uint32_t>(static_cast<int32_t>(v)));
  } else {
    t.set_bits(0, round_to_bits(v, d));
  }
  return t;
}

AttrValue fattr(double f) { return {AttrKind::kFloat, false, 0, f, {}}; }
AttrValue iattr(int64_t i) { return {AttrKind::kInt, false, i, 0.0, {}}; }
AttrValue battr(bool b) { return {AttrKind::kBool, b, 0, 0.0, {}}; }

TEST(PrecisionGolden, AmpUpdateScaleWorkedExamples) {
  const OpEntry& op = *find_op("AmpUpdateScale");
  struct Example {
    DType d;
    double scale, tracker, found, want_scale, want_tracker;
  };
  const Example examples[] = {
      {DType::kFloat32, 65536, 900, 0, 65536, 901}, {DType::kFloat32, 65536, 999, 0, 131072, 0},
      {DType::kFloat32, 65536, 500, 1, 32768, 0},   {DType::kFloat32, 3e38, 999, 0, 3e38, 0},
      {DType::kFloat16, 65504, 999, 0, 65504, 0},   {DType::kBFloat16, 2, 999, -0.0, 4, 0},
  };
  for (const Example& x : examples) {
    OpInputs in;
    in.tensors = {scalar(x.d, x.scale), scalar(DType::kInt32, x.tracker), scalar(x.d, x.found)};
    in.attrs = {fattr(2.0), fattr(0.5), iattr(1000)};
    const auto raw = op.golden(in);
    EXPECT_EQ(round_to_dtype(raw[0][0], x.d), round_to_dtype(x.want_scale, x.d)) << x.scale;
    EXPECT_EQ(raw[1][0], x.want_tracker);
    const auto g32 = op.golden32(in);
    EXPECT_EQ(g32[0].bits(0), round_to_bits(x.want_scale, x.d));
    EXPECT_EQ(static_cast<int32_t>(g32[1].bits(0)), static_cast<int32_t>(x.want_tracker));
  }
}

TEST(PrecisionGolden, SgdHandComputed) {
  // p 1, g 0.5, lr 0.1, accum 0.2, m 0.9, stat 0, d 0.1, wd 0.01:
  // grad = 0.51, accum_t = 0.2*0.9 + 0.51 - 0.51*1*0.1 = 0.639, p = 1 - 0.0639 = 0.9361.
  const OpEntry& op = *find_op("SGD");
  const DType f = DType::kFloat32;
  OpInputs in;
  in.tensors = {scalar(f, 1),   scalar(f, 0.5), scalar(f, 0.1),
                scalar(f, 0.2), scalar(f, 0.9), scalar(f, 0)};
  in.attrs = {fattr(0.1), fattr(0.01), battr(false)};
  auto raw = op.golden(in);
  EXPECT_NEAR(raw[0][0], 0.9361, 1e-8);
  EXPECT_NEAR(raw[1][0], 0.639, 1e-8);
  EXPECT_EQ(raw[2][0], 0.0);
  auto g32 = op.golden32(in);
  EXPECT_NEAR(g32[0].value(0), 0.9361, 2e-7);
  EXPECT_NEAR(g32[1].value(0), 0.639, 2e-7);
  // momentum 0: accum and stat keep every bit (here -0.0 stays -0.0).
  in.tensors[4] = scalar(f, 0);
  in.tensors[5] = scalar(f, -0.0);
  g32 = op.golden32(in);
  EXPECT_EQ(g32[2].bits(0), 0x80000000u);
  EXPECT_EQ(g32[1].bits(0), in.tensors[3].bits(0));
  // (1 - d) times the plain step with stat 0: 1 - 0.51*(1-0.1)*0.1 = 0.9541.
  raw = op.golden(in);
  EXPECT_NEAR(raw[0][0], 0.9541, 1e-8);
}

TEST(PrecisionGolden, ApplyAdamDHandComputed) {
  // var 1, m 0.1, v 0.01, grad 0.2, beta1_power 0.9, beta2_power 0.999, lr 0.001, beta1 0.9,
  // beta2 0.999, epsilon 1e-7 (each first rounded to fp32).
  const OpEntry& op = *find_op("ApplyAdamD");
  const DType f = DType::kFloat32;
  OpInputs in;
  for (double v : {1.0, 0.1, 0.01, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-7, 0.2}) {
    in.tensors.push_back(scalar(f, v));
  }
  in.attrs = {battr(false), battr(false)};
  auto raw = op.golden(in);
  EXPECT_NEAR(raw[0][0], 0.9996526726878848, 1e-13);
  EXPECT_NEAR(raw[1][0], 0.11000000402331356, 1e-15);
  EXPECT_NEAR(raw[2][0], 0.010029999391660075, 1e-15);
  in.attrs[1] = battr(true);
  raw = op.golden(in);
  EXPECT_NEAR(raw[0][0], 0.9996242549933052, 1e-13);
  const auto g32 = op.golden32(in);
  EXPECT_LE(ulp_distance(g32[0].bits(0), round_to_bits(raw[0][0], f), f), 1u);
}

// ---- Standards catch wrong kernels --------------------------------------------------------------

// The real kernel backend with a defect injected.
OpEntry with_kernel(const std::string& op_name, BackendFn fn) {
  OpEntry e = *find_op(op_name);
  e.backends[Backend::kKernel] = std::move(fn);
  return e;
}

BackendFn real(const std::string& op_name) {
  return find_op(op_name)->backends.at(Backend::kKernel);
}

BackendFn off_by_one_ulp(const std::string& op_name) {
  return [fn = real(op_name)](const OpInputs& in, std::vector<HostTensor>& out) {
    std::string e = fn(in, out);
    out[0].set_bits(5, out[0].bits(5) + 1);
    return e;
  };
}

BackendFn swapped_m_and_grad() {
  return [fn = real("ApplyAdamD")](const OpInputs& in, std::vector<HostTensor>& out) {
    OpInputs swapped = in;
    std::swap(swapped.tensors[1], swapped.tensors[9]);
    return fn(swapped, out);
  };
}

BackendFn writes_nothing() {
  return [](const OpInputs& in, std::vector<HostTensor>& out) {
    out = {in.tensors[0], in.tensors[1], in.tensors[2]};  // in place, untouched
    return std::string();
  };
}

TEST(PrecisionStandards, TheRealKernelPassesEveryStandard) {
  for (const char* dtype : {"fp32", "fp16", "bf16"}) {
    for (const std::string& st : {kBitwise, kSingleBm, kMixed}) {
      const CaseResult r = run_case(parse_one(adam_case_json("ok", dtype, st)),
                                    *find_op("ApplyAdamD"), Backend::kKernel, 3);
      EXPECT_EQ(r.verdict, Verdict::kPass) << dtype << " " << r.standard << ": " << r.reason;
      EXPECT_FALSE(r.zero_trust);
      ASSERT_TRUE(r.condition_number.has_value());
      EXPECT_GT(*r.condition_number, 0.0);
    }
  }
}

TEST(PrecisionStandards, OneUlpIsCaughtByBitwiseAndToleratedByTheOthers) {
  const OpEntry e = with_kernel("ApplyAdamD", off_by_one_ulp("ApplyAdamD"));
  CaseResult r =
      run_case(parse_one(adam_case_json("ulp", "fp32", kBitwise)), e, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.reason.find("var: 1 of 64 elements differ in bits from golden32 (first at 5"),
            std::string::npos)
      << r.reason;
  EXPECT_EQ(r.outputs[0].bit_mismatches, 1u);
  // One ulp is within the tolerance standards by design.
  r = run_case(parse_one(adam_case_json("ulp", "fp32", kSingleBm)), e, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;
  EXPECT_GE(r.max_ulp, 1u);
  r = run_case(parse_one(adam_case_json("ulp", "bf16", kMixed)), e, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;
}

TEST(PrecisionStandards, SwappedInputsFailEveryStandard) {
  const OpEntry e = with_kernel("ApplyAdamD", swapped_m_and_grad());
  for (const char* dtype : {"fp32", "fp16", "bf16"}) {
    for (const std::string& st : {kBitwise, kSingleBm, kMixed}) {
      const CaseResult r =
          run_case(parse_one(adam_case_json("swap", dtype, st)), e, Backend::kKernel, 0);
      EXPECT_EQ(r.verdict, Verdict::kFail) << dtype << " " << r.standard;
    }
  }
}

TEST(PrecisionStandards, AKernelThatWritesNothingFailsAndIsFlagged) {
  const OpEntry e = with_kernel("ApplyAdamD", writes_nothing());
  for (const std::string& st : {kBitwise, kSingleBm, kMixed}) {
    const CaseResult r =
        run_case(parse_one(adam_case_json("noop", "fp32", st)), e, Backend::kKernel, 0);
    EXPECT_EQ(r.verdict, Verdict::kFail) << r.standard;
    EXPECT_TRUE(r.zero_trust) << r.standard;
    EXPECT_NE(r.reason.find("zero-trust"), std::string::npos) << r.reason;
  }
}

TEST(PrecisionStandards, ZeroTrustCatchesANoOpThatTheToleranceWouldPass) {
  // SGD with momentum 0 and a tiny learning rate: each parameter moves by ~1e-6 relative, far
  // inside single_bm's fp32 bound, and the reference leaves accum and stat untouched. A kernel
  // that does nothing meets MERE/MARE; only the guard sees it.
  const std::string text = R"({"id": "tiny", "name": "n", "op": "SGD", "version": "v",
    "standard": {"acc": {"single_bm": {}}}, "inputs": [
    {"name": "parameters", "type": "tensor", "dtype": "fp32", "shape": [256],
     "range_values": {"name": "uniform", "range": [1, 2]}},
    {"name": "gradient", "type": "tensor", "dtype": "fp32", "shape": [256],
     "range_values": {"name": "uniform", "range": [0.5, 1]}},
    {"name": "learning_rate", "type": "tensor", "dtype": "fp32", "shape": [1],
     "range_values": {"name": "const", "value": 1e-6}},
    {"name": "accum", "type": "tensor", "dtype": "fp32", "shape": [256],
     "range_values": {"name": "const", "value": 0.5}},
    {"name": "momentum", "type": "tensor", "dtype": "fp32", "shape": [1],
     "range_values": {"name": "const", "value": 0}},
    {"name": "stat", "type": "tensor", "dtype": "fp32", "shape": [256],
     "range_values": {"name": "const", "value": 1}}]})";
  const CaseSpec c = parse_one(text);
  CaseResult good = run_case(c, *find_op("SGD"), Backend::kKernel, 0);
  EXPECT_EQ(good.verdict, Verdict::kPass) << good.reason;
  EXPECT_FALSE(good.zero_trust);
  const OpEntry e = with_kernel("SGD", [](const OpInputs& in, std::vector<HostTensor>& out) {
    out = {in.tensors[0], in.tensors[3], in.tensors[5]};
    return std::string();
  });
  const CaseResult r = run_case(c, e, Backend::kKernel, 0);
  const double t = c.standard.threshold(DType::kFloat32);
  EXPECT_LT(r.outputs[0].vs_golden.mere, t);  // the tolerance alone would pass it
  EXPECT_LT(r.outputs[0].vs_golden.mare, 10 * t);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_TRUE(r.outputs[0].zero_trust);
  EXPECT_FALSE(r.outputs[1].zero_trust);  // accum is unchanged by the reference too
  EXPECT_TRUE(r.outputs[1].degenerate);
}

TEST(PrecisionStandards, NanAndInfMustMatchPositionAndSign) {
  // A kernel that turns the first +inf of var_out into -inf, and a NaN into a number.
  std::string text = adam_case_json("nf", "fp32", kSingleBm, "[8]");
  text = replace_first(text, R"({"name": "nd", "mean": [-1, 1], "std": [0.1, 0.5]})",
                       R"({"name": "special", "values": ["inf", 1.0, "nan", 2.0]})");
  const CaseSpec c = parse_one(text);
  EXPECT_EQ(run_case(c, *find_op("ApplyAdamD"), Backend::kKernel, 0).outputs[0].pass, true);
  for (uint32_t bad : {0xFF800000u, 0x3F800000u}) {
    const OpEntry e =
        with_kernel("ApplyAdamD", [bad](const OpInputs& in, std::vector<HostTensor>& out) {
          std::string err = real("ApplyAdamD")(in, out);
          out[0].set_bits(bad == 0xFF800000u ? 0 : 2, bad);
          return err;
        });
    const CaseResult r = run_case(c, e, Backend::kKernel, 0);
    EXPECT_EQ(r.verdict, Verdict::kFail);
    EXPECT_EQ(r.outputs[0].vs_golden.nonfinite_mismatch, 1u);
  }
}

// A small operator plugged in by a test: (a + b) - a, which cancels in fp32 for large a. Its
// fp32 result is far from the fp64 one, so the kit judges it bit for bit against golden32.
OpEntry cancel_op() {
  OpEntry e;
  e.name = "Cancel";
  e.inputs = {{"a", TensorSlot::Kind::kFloat, TensorSlot::Shape::kAny, "", 0, 8},
              {"b", TensorSlot::Kind::kFloat, TensorSlot::Shape::kLike, "a", 0, 8}};
  e.outputs = {{"out", 1, {}}};
  e.golden = [](const OpInputs& in) {
    std::vector<double> out;
    for (int64_t i = 0; i < in.tensors[0].numel(); ++i) {
      const double a = in.tensors[0].value(i), b = in.tensors[1].value(i);
      out.push_back((a + b) - a);
    }
    return std::vector<std::vector<double>>{out};
  };
  e.golden32 = [](const OpInputs& in) {
    HostTensor out(DType::kFloat32, in.tensors[0].shape);
    for (int64_t i = 0; i < out.numel(); ++i) {
      const auto a = static_cast<float>(in.tensors[0].value(i));
      const auto b = static_cast<float>(in.tensors[1].value(i));
      out.set_bits(i, std::bit_cast<uint32_t>((a + b) - a));
    }
    return std::vector<HostTensor>{out};
  };
  e.backends[Backend::kKernel] = [g32 = e.golden32](const OpInputs& in,
                                                    std::vector<HostTensor>& out) {
    out = g32(in);
    return std::string();
  };
  return e;
}

TEST(PrecisionStandards, Golden32OutsideSingleBmIsJudgedBitwise) {
  const std::string text = R"({"id": "cancel", "name": "n", "op": "Cancel", "version": "v",
    "standard": {"acc": {"single_bm": {}}}, "inputs": [
    {"name": "a", "type": "tensor", "dtype": "fp32", "shape": [16],
     "range_values": {"name": "uniform", "range": [1e7, 2e7]}},
    {"name": "b", "type": "tensor", "dtype": "fp32", "shape": [16],
     "range_values": {"name": "uniform", "range": [0.1, 0.9]}}]})";
  const CaseSpec c = parse_one(text);
  OpEntry e = cancel_op();
  CaseResult r = run_case(c, e, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;
  EXPECT_TRUE(r.golden32_outside_single_bm);
  EXPECT_GT(r.mare, 10 * c.standard.threshold(DType::kFloat32));
  e.backends[Backend::kKernel] = [g32 = e.golden32](const OpInputs& in,
                                                    std::vector<HostTensor>& out) {
    out = g32(in);
    out[0].set_bits(3, out[0].bits(3) ^ 1u);
    return std::string();
  };
  r = run_case(c, e, Backend::kKernel, 0);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.reason.find("golden32 itself is outside single_bm"), std::string::npos) << r.reason;
}

TEST(PrecisionStandards, ABackendAnOpLacksIsNotApplicable) {
  const std::string text = R"({"id": "na", "name": "n", "op": "SGD", "version": "v",
    "standard": {"acc": {"bitwise": {}}}, "inputs": [
    {"name": "parameters", "type": "tensor", "dtype": "fp32", "shape": [4],
     "range_values": {"name": "const", "value": 1}},
    {"name": "gradient", "type": "tensor", "dtype": "fp32", "shape": [4],
     "range_values": {"name": "const", "value": 1}},
    {"name": "learning_rate", "type": "tensor", "dtype": "fp32", "shape": [1],
     "range_values": {"name": "const", "value": 0.5}},
    {"name": "accum", "type": "tensor", "dtype": "fp32", "shape": [4],
     "range_values": {"name": "const", "value": 0}},
    {"name": "momentum", "type": "tensor", "dtype": "fp32", "shape": [1],
     "range_values": {"name": "const", "value": 0.9}},
    {"name": "stat", "type": "tensor", "dtype": "fp32", "shape": [4],
     "range_values": {"name": "const", "value": 1}}]})";
  const CaseResult r = run_case(parse_one(text), *find_op("SGD"), Backend::kAclnn, 0);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
}

TEST(PrecisionReport, JsonAndRepro) {
  CheckOptions opt;
  opt.case_dir = "some dir";
  opt.seed = 5;
  CheckReport rep;
  CaseResult r = run_case(parse_one(adam_case_json("rep", "fp16", kSingleBm)),
                          with_kernel("ApplyAdamD", swapped_m_and_grad()), Backend::kKernel, 5);
  rep.rows.push_back(r);
  rep.failed = 1;
  EXPECT_EQ(repro_command(opt, r),
            "mantissa check --case-dir 'some dir' --case rep --backend kernel --seed 5");
  const std::string json = report_json(opt, rep);
  for (const char* key :
       {"\"repro\"", "\"error_buckets\"", "\"severe\"", "\"max_ulp\"", "\"condition_number\"",
        "\"underflow_to_zero\"", "\"verdict\": \"FAIL\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
}

}  // namespace

}  // namespace mantissa::testing
