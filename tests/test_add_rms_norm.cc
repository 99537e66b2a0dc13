// AddRmsNorm: bitwise against the kit's golden32 on every SIMD target and thread count (dtypes,
// row lengths around the vector widths and the 4096-element reduction block, gamma of two dims
// and of shape [1, D], both rstd forms, the optional outputs left out), y and rstd equal to
// RmsNorm's on the stored x bit for bit, x the exactly rounded sum, the stress inputs (sums that
// cancel, fp16 sums that overflow, special values, epsilon variants), outputs in place of the
// inputs and overlapping them, every validation row through the C++ API and aclnn (nothing
// written), upstream's aclnn combinations of null outputs, strided tensors through aclnn, empty
// tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add_rms_norm.h"
#include "mantissa/ops/add_rms_norm.h"
#include "mantissa/ops/rms_norm.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::AddRmsNormParams;
using mantissa::AddRmsNormTensors;
using mantissa::DType;
using mantissa::Status;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::AddRmsNormOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::string name_of(DType d) { return mantissa::dtype_name(d); }

// rstd's shape for x1's shape and `dims` normalised trailing dims: those dims set to 1, or
// dropped.
std::vector<int64_t> reduced(std::vector<int64_t> shape, int dims, bool drop) {
  if (drop) {
    shape.resize(shape.size() - static_cast<std::size_t>(dims));
  } else {
    for (std::size_t i = shape.size() - static_cast<std::size_t>(dims); i < shape.size(); ++i) {
      shape[i] = 1;
    }
  }
  return shape;
}

// The tensors of one call: inputs, and outputs starting as sentinels.
struct Call {
  HostTensor x1, x2, gamma, y, rstd, x;
  Call(DType d, std::vector<int64_t> shape, std::vector<int64_t> gamma_shape, int dims,
       bool drop_rstd = false, uint32_t seed = 1)
      : x1(filled(d, shape, 0.0, 1.0, seed)),
        x2(filled(d, shape, 0.25, 0.5, seed + 1)),
        gamma(filled(d, gamma_shape, 1.0, 0.25, seed + 2)),
        y(sentinel(d, shape)),
        rstd(sentinel(DType::kFloat32, reduced(shape, dims, drop_rstd))),
        x(sentinel(d, shape)) {}
  // The views, rstd and x given when asked for.
  AddRmsNormTensors tensors(bool with_rstd = true, bool with_x = true) {
    AddRmsNormTensors t{.x1 = view(x1),
                        .x2 = view(x2),
                        .gamma = view(gamma),
                        .y = view(y),
                        .rstd = std::nullopt,
                        .x = std::nullopt};
    if (with_rstd) t.rstd = view(rstd);
    if (with_x) t.x = view(x);
    return t;
  }
  void reset_outputs() {
    y = sentinel(y.dtype, y.shape);
    rstd = sentinel(rstd.dtype, rstd.shape);
    x = sentinel(x.dtype, x.shape);
  }
  // golden32's y, rstd and x for these inputs (every output computed).
  void golden(HostTensor& ry, HostTensor& rr, HostTensor& rx) {
    ry = sentinel(y.dtype, y.shape);
    rr = sentinel(rstd.dtype, rstd.shape);
    rx = sentinel(x.dtype, x.shape);
    mt::apply_golden32<AddRmsNormOp>({.x1 = view(x1),
                                      .x2 = view(x2),
                                      .gamma = view(gamma),
                                      .y = view(ry),
                                      .rstd = view(rr),
                                      .x = view(rx)},
                                     {.epsilon = epsilon});
  }
  double epsilon = 1e-6;
};

struct Problem {
  DType d;
  std::vector<int64_t> shape, gamma_shape;
  int dims;  // normalised trailing dims
  bool drop_rstd = false;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  for (DType d : kDtypes) {
    // Around the vector widths (fp64 accumulators of 1 to 8 lanes, pairs of fp32 vectors), the
    // 32 lanes of a reduction block, and past one block of 4096.
    for (int64_t n : {1, 3, 7, 8, 16, 31, 32, 33, 64, 100, 129, 4096, 4100, 9000}) {
      p.push_back({d, {5, n}, {n}, 1});
    }
    p.push_back({d, {3, 4, 24}, {4, 24}, 2, true});  // two normalised dims, rstd [3]
    p.push_back({d, {4, 3, 64}, {1, 64}, 1});        // gamma [1, D]: rows of x1's last dim
    p.push_back({d, {301, 64}, {64}, 1});            // odd rows, several rows at once, blocks
    p.push_back({d, {70, 1000}, {1000}, 1, true});   // several parallel pieces
  }
  return p;
}

std::string describe(const Problem& p) {
  std::string s = name_of(p.d);
  for (int64_t v : p.shape) s += " " + std::to_string(v);
  s += " gamma";
  for (int64_t v : p.gamma_shape) s += " " + std::to_string(v);
  return s;
}

TEST(AddRmsNorm, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(describe(pr));
    Call c(pr.d, pr.shape, pr.gamma_shape, pr.dims, pr.drop_rstd);
    HostTensor ry, rr, rx;
    c.golden(ry, rr, rx);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      c.reset_outputs();
      ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {.epsilon = c.epsilon}).ok());
      expect_same_bits(c.y, ry, "y");
      expect_same_bits(c.rstd, rr, "rstd");
      expect_same_bits(c.x, rx, "x");
      // rstd and x left out, alone or together: y keeps its bits, nothing else is written.
      const std::pair<bool, bool> left_out[] = {{false, true}, {true, false}, {false, false}};
      for (const auto& [with_rstd, with_x] : left_out) {
        c.reset_outputs();
        ASSERT_TRUE(
            mantissa::add_rms_norm(c.tensors(with_rstd, with_x), {.epsilon = c.epsilon}).ok());
        expect_same_bits(c.y, ry, "y (outputs left out)");
        if (with_rstd) expect_same_bits(c.rstd, rr, "rstd");
        if (with_x) expect_same_bits(c.x, rx, "x");
        EXPECT_EQ(untouched(c.rstd), !with_rstd);
        EXPECT_EQ(untouched(c.x), !with_x);
      }
    });
  }
}

// The contract: y and rstd are exactly RmsNorm's on the stored x, whatever the inputs (special
// values, cancelling sums, overflowing sums included), on every target and thread count.
TEST(AddRmsNorm, EqualsRmsNormOfItsXBitForBit) {
  for (DType d : kDtypes) {
    for (int kind = 0; kind < 4; ++kind) {
      SCOPED_TRACE(name_of(d) + " inputs " + std::to_string(kind));
      Call c(d, {6, 257}, {257}, 1, false, 40 + static_cast<uint32_t>(kind));
      const double big = d == DType::kFloat16 ? 3e4 : (d == DType::kBFloat16 ? 1e30 : 1e4);
      if (kind == 1) {  // large magnitudes that cancel
        c.x1 = filled(d, c.x1.shape, big, big / 100, 41);
        c.x2 = filled(d, c.x2.shape, -big, big / 100, 42);
      } else if (kind == 2) {  // sums beyond the dtype's range in some elements
        const double top = d == DType::kFloat16 ? 4e4 : 2e38;
        c.x1 = filled(d, c.x1.shape, top, top / 4, 43);
        c.x2 = filled(d, c.x2.shape, top, top / 4, 44);
      } else if (kind == 3) {  // special values
        const std::vector<uint32_t> bits = mt::special_bits(d);
        for (int64_t i = 0; i < c.x1.numel(); ++i) {
          c.x1.set_bits(i, bits[static_cast<std::size_t>(i * 7 % 23) % bits.size()]);
          if (i % 5 == 0) c.x2.set_bits(i, bits[static_cast<std::size_t>(i / 5) % bits.size()]);
        }
      }
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            c.reset_outputs();
            ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {.epsilon = 1e-6}).ok());
            HostTensor y = sentinel(d, c.y.shape), rstd = sentinel(DType::kFloat32, c.rstd.shape);
            ASSERT_TRUE(
                mantissa::rms_norm(
                    {.x = view(c.x), .gamma = view(c.gamma), .y = view(y), .rstd = view(rstd)},
                    {.epsilon = 1e-6})
                    .ok());
            expect_same_bits(c.y, y, "y against rms_norm(x)");
            expect_same_bits(c.rstd, rstd, "rstd against rms_norm(x)");
          },
          {1, 2, 3});
    }
  }
}

// x is x1 + x2 rounded once to the dtype (the fp32 sum rounded again is the exactly rounded sum):
// every pair of special values, and random pairs over the whole range of each dtype, against the
// kit's own rounding of the exact sum (a double holds any fp16 or bf16 sum exactly, and an fp32
// sum within half an fp64 ulp, which rounds to fp32 as the exact sum does).
TEST(AddRmsNorm, XIsTheExactlyRoundedSum) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(name_of(d));
    const std::vector<uint32_t> special = mt::special_bits(d);
    const int64_t pairs = static_cast<int64_t>(special.size() * special.size());
    const int64_t n = pairs + 100000;
    HostTensor x1(d, {n}), x2(d, {n}), gamma = filled(d, {n}, 1.0, 0.0, 1);
    std::mt19937 rng(7);
    const uint32_t mask = d == DType::kFloat32 ? 0xFFFFFFFFu : 0xFFFFu;
    for (int64_t i = 0; i < n; ++i) {
      if (i < pairs) {
        x1.set_bits(i, special[static_cast<std::size_t>(i) / special.size()]);
        x2.set_bits(i, special[static_cast<std::size_t>(i) % special.size()]);
      } else {
        // Mostly nearby exponents (where rounding happens), some far apart.
        const uint32_t a = rng() & mask;
        const uint32_t shift = d == DType::kFloat32 ? 23 : (d == DType::kFloat16 ? 10 : 7);
        const uint32_t b = (i % 4 == 0) ? (rng() & mask)
                                        : ((a ^ (rng() & ((1u << (shift + 3)) - 1))) |
                                           ((rng() & 1u) << (d == DType::kFloat32 ? 31 : 15)));
        x1.set_bits(i, a);
        x2.set_bits(i, b & mask);
      }
    }
    HostTensor y = sentinel(d, {n}), x = sentinel(d, {n});
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          ASSERT_TRUE(mantissa::add_rms_norm({.x1 = view(x1),
                                              .x2 = view(x2),
                                              .gamma = view(gamma),
                                              .y = view(y),
                                              .rstd = std::nullopt,
                                              .x = view(x)},
                                             {})
                          .ok());
          int64_t wrong = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double sum = mantissa::precision::decode_bits(x1.bits(i), d) +
                               mantissa::precision::decode_bits(x2.bits(i), d);
            const uint32_t want = std::isnan(sum) ? mantissa::precision::quiet_nan_bits(d, false)
                                                  : mantissa::precision::round_to_bits(sum, d);
            if (x.bits(i) != want && wrong++ < 5) {
              ADD_FAILURE() << "element " << i << ": " << std::hex << x1.bits(i) << " + "
                            << x2.bits(i) << " gave " << x.bits(i) << ", expected " << want;
            }
          }
          EXPECT_EQ(wrong, 0);
        },
        {1, 3});
  }
}

// Stress rows, against golden32 on every target, with what each must show.
TEST(AddRmsNorm, StressInputs) {
  // fp16 sums past 65504: x holds +inf there, rstd is 0 for those rows, y is NaN where x is
  // infinite and a zero elsewhere.
  {
    Call c(DType::kFloat16, {4, 64}, {64}, 1);
    c.x1 = filled(DType::kFloat16, {4, 64}, 30000.0, 100.0, 3);
    c.x2 = filled(DType::kFloat16, {4, 64}, 30000.0, 100.0, 4);
    c.x1.set_bits(5, mantissa::precision::round_to_bits(60000.0, DType::kFloat16));  // row 0
    c.x1.set_bits(64 * 2 + 9, mantissa::precision::round_to_bits(-60000.0, DType::kFloat16));
    c.x2.set_bits(64 * 2 + 9, mantissa::precision::round_to_bits(-60000.0, DType::kFloat16));
    HostTensor ry, rr, rx;
    c.golden(ry, rr, rx);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      c.reset_outputs();
      ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {}).ok());
      expect_same_bits(c.y, ry, "y");
      expect_same_bits(c.rstd, rr, "rstd");
      expect_same_bits(c.x, rx, "x");
    });
    EXPECT_EQ(c.x.bits(5), 0x7C00u);           // +inf
    EXPECT_EQ(c.x.bits(64 * 2 + 9), 0xFC00u);  // -inf
    EXPECT_EQ(c.rstd.value(0), 0.0);
    EXPECT_EQ(c.rstd.value(2), 0.0);
    EXPECT_GT(c.rstd.value(1), 0.0);
    EXPECT_EQ(c.y.bits(5), 0x7E00u);  // inf * 0: the canonical NaN
    EXPECT_EQ(c.y.value(6), 0.0);
  }
  // Cancellation at large magnitudes: x1 = 1e4 + a, x2 = -1e4 + b (fp32). The sums are exact
  // (Sterbenz), and rstd is within an ulp of the fp64 value of the exact rows.
  {
    Call c(DType::kFloat32, {8, 1000}, {1000}, 1);
    c.x1 = filled(DType::kFloat32, {8, 1000}, 1e4, 1.0, 5);
    c.x2 = filled(DType::kFloat32, {8, 1000}, -1e4, 1.0, 6);
    HostTensor ry, rr, rx;
    c.golden(ry, rr, rx);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      c.reset_outputs();
      ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {}).ok());
      expect_same_bits(c.y, ry, "y");
      expect_same_bits(c.rstd, rr, "rstd");
      expect_same_bits(c.x, rx, "x");
    });
    for (int64_t r = 0; r < 8; ++r) {
      long double ss = 0;
      for (int64_t i = 0; i < 1000; ++i) {
        const long double v = static_cast<long double>(c.x1.value(r * 1000 + i)) +
                              static_cast<long double>(c.x2.value(r * 1000 + i));
        EXPECT_EQ(c.x.value(r * 1000 + i), static_cast<double>(v));
        ss += v * v;
      }
      const double want = static_cast<double>(1.0L / std::sqrt(ss / 1000 + 1e-6L));
      EXPECT_NEAR(c.rstd.value(r), want, want * 0x1.0p-23) << r;
    }
  }
  // Epsilon variants: 0 (a zero row: rstd +inf, y NaN), small, large (dominating tiny rows).
  for (double eps : {0.0, 1e-6, 1e-2, 1.0, 1e30}) {
    for (DType d : kDtypes) {
      SCOPED_TRACE(name_of(d) + " epsilon " + std::to_string(eps));
      Call c(d, {6, 40}, {40}, 1);
      c.epsilon = eps;
      c.x1 = filled(d, {6, 40}, 0.0, 1e-3, 7);
      for (int64_t i = 0; i < 40; ++i) {  // row 1: x1 + x2 == 0
        c.x1.set_bits(40 + i, mantissa::precision::round_to_bits(0.5, d));
        c.x2.set_bits(40 + i, mantissa::precision::round_to_bits(-0.5, d));
      }
      HostTensor ry, rr, rx;
      c.golden(ry, rr, rx);
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            c.reset_outputs();
            ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {.epsilon = eps}).ok());
            expect_same_bits(c.y, ry, "y");
            expect_same_bits(c.rstd, rr, "rstd");
            expect_same_bits(c.x, rx, "x");
          },
          {1, 2});
      if (eps == 0.0) {
        EXPECT_TRUE(std::isinf(c.rstd.value(1)));
        EXPECT_TRUE(std::isnan(c.y.value(40)));  // 0 * inf
      } else {
        EXPECT_EQ(c.rstd.value(1), static_cast<float>(1.0 / std::sqrt(eps)));
        EXPECT_EQ(c.y.value(40), 0.0);
      }
    }
  }
}

// Outputs that are the very buffers of the inputs (the residual updated in place, upstream's
// in-place form: y in x1, x in x2), and outputs that overlap the inputs otherwise (the inputs
// are copied first): the bits of the call out of place.
TEST(AddRmsNorm, OutputsOnTheInputs) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(name_of(d));
    Call c(d, {9, 300}, {300}, 1);
    HostTensor ry, rr, rx;
    c.golden(ry, rr, rx);
    struct Form {
      const char* what;
      bool y_on_x1, y_on_x2, x_on_x1, x_on_x2, with_x;
    };
    const Form forms[] = {{"y in x1, x in x2", true, false, false, true, true},
                          {"y in x2, x in x1", false, true, true, false, true},
                          {"x in x1", false, false, true, false, true},
                          {"x in x2", false, false, false, true, true},
                          {"y in x1, no x", true, false, false, false, false},
                          {"y in x2, no x", false, true, false, false, false}};
    for (const Form& f : forms) {
      SCOPED_TRACE(f.what);
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            HostTensor x1 = c.x1, x2 = c.x2, y = sentinel(d, c.y.shape), x = sentinel(d, c.x.shape);
            HostTensor rstd = sentinel(DType::kFloat32, c.rstd.shape);
            AddRmsNormTensors t{.x1 = view(x1),
                                .x2 = view(x2),
                                .gamma = view(c.gamma),
                                .y = f.y_on_x1 ? view(x1) : (f.y_on_x2 ? view(x2) : view(y)),
                                .rstd = view(rstd),
                                .x = std::nullopt};
            if (f.with_x) t.x = f.x_on_x1 ? view(x1) : (f.x_on_x2 ? view(x2) : view(x));
            EXPECT_EQ(mantissa::add_rms_norm_workspace_size(t, {}), 0u);
            ASSERT_TRUE(mantissa::add_rms_norm(t, {}).ok());
            expect_same_bits(f.y_on_x1 ? x1 : (f.y_on_x2 ? x2 : y), ry, "y");
            expect_same_bits(rstd, rr, "rstd");
            if (f.with_x) expect_same_bits(f.x_on_x1 ? x1 : (f.x_on_x2 ? x2 : x), rx, "x");
          },
          {1, 3});
    }
    // Overlaps other than in place: x over x1 shifted by half a row, y over x2 shifted by a row
    // and a bit, rstd inside x1, gamma inside y. The result is the out-of-place one; the call
    // reports a workspace, and computes with a lent one or without.
    const int64_t n = 300, rows = 9, numel = rows * n;
    const std::size_t size = mantissa::dtype_size(d);
    for (int with_workspace = 0; with_workspace < 2; ++with_workspace) {
      for (int form = 0; form < 4; ++form) {
        SCOPED_TRACE("overlap " + std::to_string(form) + " workspace " +
                     std::to_string(with_workspace));
        // One arena holding every tensor at the offsets of the form.
        std::vector<unsigned char> arena((5 * numel + 4 * n) * size + 4096, 0);
        auto place = [&](const HostTensor& h, std::size_t offset) {
          if (!h.bytes.empty()) std::memcpy(arena.data() + offset, h.data(), h.bytes.size());
          return TensorView(arena.data() + offset, h.dtype,
                            std::span<const int64_t>(h.shape.data(), h.shape.size()));
        };
        const std::size_t x1_at = 0, x2_at = static_cast<std::size_t>(numel) * size + 64;
        const std::size_t free_at = x2_at + static_cast<std::size_t>(numel) * size + 64;
        AddRmsNormTensors t{};
        t.x1 = place(c.x1, x1_at);
        t.x2 = place(c.x2, x2_at);
        TensorView y_view = place(c.y, free_at), x_view = place(c.x, free_at + numel * size + 64);
        TensorView rstd_view = place(c.rstd, free_at + 2 * numel * size + 128);
        t.gamma = place(c.gamma, free_at + 2 * numel * size + 256 + 4 * rows);
        if (form == 0) x_view.data = arena.data() + x1_at + (n / 2) * size;
        if (form == 1) y_view.data = arena.data() + x2_at + (n + 3) * size;
        if (form == 2) rstd_view.data = arena.data() + x1_at + 7 * size * 2;
        if (form == 3) {
          t.gamma = place(c.gamma, free_at + (n + 5) * size);  // inside y's second row
        }
        t.y = y_view;
        t.rstd = rstd_view;
        t.x = x_view;
        const uint64_t need = mantissa::add_rms_norm_workspace_size(t, {});
        EXPECT_GT(need, 0u);
        std::vector<uint64_t> ws(need / 8 + 1);
        const mantissa::Workspace lent{with_workspace ? ws.data() : nullptr,
                                       with_workspace ? need : 0};
        ASSERT_TRUE(mantissa::add_rms_norm(t, {}, lent).ok());
        EXPECT_EQ(std::memcmp(t.y.data, ry.data(), ry.bytes.size()), 0) << "y";
        EXPECT_EQ(std::memcmp(t.rstd->data, rr.data(), rr.bytes.size()), 0) << "rstd";
        EXPECT_EQ(std::memcmp(t.x->data, rx.data(), rx.bytes.size()), 0) << "x";
      }
    }
  }
}

// Tensors at random places of one buffer: inputs overlapping one another and the outputs in any
// way. Outputs that share no byte with one another give the bits of the call on separate copies
// of the inputs; outputs that overlap one another are refused (161002) with nothing written.
TEST(AddRmsNorm, RandomOverlapsGiveTheBitsOfSeparateTensors) {
  std::mt19937 rng(17);
  int computed = 0, refused = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const DType d = kDtypes[rng() % 3];
    const std::size_t es = mantissa::dtype_size(d);
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 5),
                  n = 1 + static_cast<int64_t>(rng() % 70);
    const int64_t numel = rows * n;
    const std::size_t span = static_cast<std::size_t>(3 * numel) * es + 64;
    std::vector<unsigned char> arena(span + static_cast<std::size_t>(numel) * es + 64);
    for (auto& b : arena) b = static_cast<unsigned char>(rng());
    // Finite values: a NaN's payload would survive a copy but not a computation.
    for (std::size_t i = 0; i + es <= arena.size(); i += es) {
      mantissa::store_from_float(d, arena.data() + i, 0,
                                 static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 256);
    }
    const std::vector<int64_t> shape{rows, n}, gamma_shape{n}, rstd_shape{rows, 1};
    auto at = [&](const std::vector<int64_t>& sh, DType dt) {
      const std::size_t size = mantissa::dtype_size(dt);
      const std::size_t count = static_cast<std::size_t>(sh[0] * (sh.size() > 1 ? sh[1] : 1));
      const std::size_t slots = (arena.size() - count * size) / size;
      return TensorView(arena.data() + (rng() % slots) * size, dt,
                        std::span<const int64_t>(sh.data(), sh.size()));
    };
    AddRmsNormTensors t{.x1 = at(shape, d),
                        .x2 = at(shape, d),
                        .gamma = at(gamma_shape, d),
                        .y = at(shape, d),
                        .rstd = std::nullopt,
                        .x = std::nullopt};
    if (rng() % 4 != 0) {
      TensorView r = at(rstd_shape, DType::kFloat32);
      r.data =
          arena.data() +
          (reinterpret_cast<uintptr_t>(r.data) - reinterpret_cast<uintptr_t>(arena.data())) / 4 * 4;
      t.rstd = r;
    }
    if (rng() % 4 != 0) t.x = at(shape, d);
    if (rng() % 8 == 0) t.y = t.x1;  // in place
    if (rng() % 8 == 0 && t.x) t.x = t.x2;
    // The expected bits: the call on copies of the inputs, into separate outputs.
    HostTensor x1 = mt::host_copy(t.x1), x2 = mt::host_copy(t.x2), g = mt::host_copy(t.gamma);
    HostTensor ry = sentinel(d, shape), rr = sentinel(DType::kFloat32, rstd_shape),
               rx = sentinel(d, shape);
    ASSERT_TRUE(mantissa::add_rms_norm({.x1 = view(x1),
                                        .x2 = view(x2),
                                        .gamma = view(g),
                                        .y = view(ry),
                                        .rstd = view(rr),
                                        .x = view(rx)},
                                       {})
                    .ok());
    std::vector<const TensorView*> outs{&t.y};
    if (t.rstd) outs.push_back(&*t.rstd);
    if (t.x) outs.push_back(&*t.x);
    bool outputs_overlap = false;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      for (std::size_t j = i + 1; j < outs.size(); ++j) {
        const auto a = mantissa::detail::byte_range(*outs[i]),
                   b = mantissa::detail::byte_range(*outs[j]);
        outputs_overlap = outputs_overlap || a.intersects(b);
      }
    }
    const std::vector<unsigned char> before = arena;
    const Status st = mantissa::add_rms_norm(t, {});
    if (outputs_overlap) {
      EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << iter;
      EXPECT_TRUE(arena == before) << iter;
      ++refused;
      continue;
    }
    ASSERT_TRUE(st.ok()) << iter << ": " << st.message();
    ++computed;
    EXPECT_EQ(std::memcmp(t.y.data, ry.data(), ry.bytes.size()), 0) << iter << " y";
    if (t.rstd) {
      EXPECT_EQ(std::memcmp(t.rstd->data, rr.data(), rr.bytes.size()), 0) << iter;
    }
    if (t.x) {
      EXPECT_EQ(std::memcmp(t.x->data, rx.data(), rx.bytes.size()), 0) << iter << " x";
    }
  }
  EXPECT_GT(computed, 100);
  EXPECT_GT(refused, 20);
}

TEST(AddRmsNorm, EmptyTensorsAndRowsOfNothing) {
  // No rows: nothing to write. Rows of 0 elements: rstd NaN (the mean of nothing), as RmsNorm.
  Call none(DType::kFloat32, {0, 16}, {16}, 1);
  ASSERT_TRUE(mantissa::add_rms_norm(none.tensors(), {}).ok());
  Call empty_rows(DType::kBFloat16, {3, 0}, {0}, 1);
  ASSERT_TRUE(mantissa::add_rms_norm(empty_rows.tensors(), {}).ok());
  for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(empty_rows.rstd.bits(r), 0x7FC00000u);
  // The same through aclnn.
  Call again(DType::kBFloat16, {3, 0}, {0}, 1);
  AddRmsNormTensors t = again.tensors();
  aclTensor *a = acl(t.x1), *b = acl(t.x2), *g = acl(t.gamma), *y = acl(t.y), *r = acl(*t.rstd),
            *x = acl(*t.x);
  ASSERT_EQ(
      mt::run_two_phases(
          [&](uint64_t* s, aclOpExecutor** e) {
            return aclnnAddRmsNormGetWorkspaceSize(a, b, g, 1e-6, y, r, x, s, e);
          },
          [](void* w, uint64_t s, aclOpExecutor* e) { return aclnnAddRmsNorm(w, s, e, nullptr); }),
      ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(again.rstd.bits(i), 0x7FC00000u);
  for (aclTensor* h : {a, b, g, y, r, x}) aclDestroyTensor(h);
}

// ---- Validation -----------------------------------------------------------------------------

struct Row {
  const char* what;
  void (*mutate)(Call&, AddRmsNormTensors&);
  StatusCode code;
  const char* arg;  // named in the message
};

Call base_call() { return Call(DType::kFloat16, {2, 3, 8}, {8}, 1); }

const std::vector<Row>& rows() {
  static const std::vector<Row> r{
      {"null x1", [](Call&, AddRmsNormTensors& t) { t.x1.data = nullptr; },
       StatusCode::kParamNullptr, "x1"},
      {"x2 bf16",
       [](Call& c, AddRmsNormTensors& t) {
         c.x2 = filled(DType::kBFloat16, {2, 3, 8}, 0.0, 1.0, 1);
         t.x2 = view(c.x2);
       },
       StatusCode::kParamInvalid, "x2"},
      {"x2 other shape",
       [](Call& c, AddRmsNormTensors& t) {
         c.x2 = filled(DType::kFloat16, {2, 4, 8}, 0.0, 1.0, 1);
         t.x2 = view(c.x2);
       },
       StatusCode::kParamInvalid, "x2"},
      {"gamma FLOAT with FLOAT16 x1",
       [](Call& c, AddRmsNormTensors& t) {
         c.gamma = filled(DType::kFloat32, {8}, 1.0, 0.1, 1);
         t.gamma = view(c.gamma);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"gamma not trailing",
       [](Call& c, AddRmsNormTensors& t) {
         c.gamma = filled(DType::kFloat16, {3}, 1.0, 0.1, 1);
         t.gamma = view(c.gamma);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"gamma [1, D] of another D",
       [](Call& c, AddRmsNormTensors& t) {
         c.gamma = filled(DType::kFloat16, {1, 4}, 1.0, 0.1, 1);
         t.gamma = view(c.gamma);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"gamma [2, D]",
       [](Call& c, AddRmsNormTensors& t) {
         c.gamma = filled(DType::kFloat16, {2, 8}, 1.0, 0.1, 1);
         t.gamma = view(c.gamma);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"rstd fp16",
       [](Call& c, AddRmsNormTensors& t) {
         c.rstd = sentinel(DType::kFloat16, {2, 3, 1});
         t.rstd = view(c.rstd);
       },
       StatusCode::kParamInvalid, "rstd"},
      {"rstd wrong shape",
       [](Call& c, AddRmsNormTensors& t) {
         c.rstd = sentinel(DType::kFloat32, {6, 2});
         t.rstd = view(c.rstd);
       },
       StatusCode::kParamInvalid, "rstd"},
      {"y wrong dtype",
       [](Call& c, AddRmsNormTensors& t) {
         c.y = sentinel(DType::kFloat32, {2, 3, 8});
         t.y = view(c.y);
       },
       StatusCode::kParamInvalid, "y"},
      {"x wrong shape",
       [](Call& c, AddRmsNormTensors& t) {
         c.x = sentinel(DType::kFloat16, {2, 3, 4});
         t.x = view(c.x);
       },
       StatusCode::kParamInvalid, "x shape"},
      {"x is y", [](Call&, AddRmsNormTensors& t) { t.x = t.y; }, StatusCode::kParamInvalid, "y"},
      {"rstd inside y",
       [](Call&, AddRmsNormTensors& t) {
         TensorView inside = *t.rstd;
         inside.data = static_cast<char*>(t.y.data) + 4;
         t.rstd = inside;
       },
       StatusCode::kParamInvalid, "rstd"},
      {"x1 rank 0",
       [](Call& c, AddRmsNormTensors& t) {
         c.x1 = filled(DType::kFloat16, {}, 0.0, 1.0, 1);
         t.x1 = view(c.x1);
       },
       StatusCode::kParamInvalid, "x1"},
  };
  return r;
}

TEST(AddRmsNormValidation, RowsThroughTheCppApi) {
  {
    Call c = base_call();
    ASSERT_TRUE(mantissa::add_rms_norm(c.tensors(), {}).ok());
    ASSERT_TRUE(mantissa::add_rms_norm_validate(c.tensors(), {}).ok());
  }
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    Call c = base_call();
    AddRmsNormTensors t = c.tensors();
    row.mutate(c, t);
    const Status s = mantissa::add_rms_norm(t, {});
    EXPECT_EQ(s.code(), row.code);
    EXPECT_EQ(mantissa::add_rms_norm_validate(t, {}).code(), row.code);
    EXPECT_NE(s.message().find("AddRmsNorm"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(row.arg), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.y));
    EXPECT_TRUE(untouched(c.rstd));
    EXPECT_TRUE(untouched(c.x));
  }
}

// aclnnAddRmsNorm's phase one on the views of t (null handles where the optional outputs are
// left out, or where `null_x1`).
aclnnStatus aclnn_phase_one(const AddRmsNormTensors& t, bool null_x1 = false) {
  aclTensor* a = null_x1 ? nullptr : acl(t.x1);
  aclTensor *b = acl(t.x2), *g = acl(t.gamma), *y = acl(t.y);
  aclTensor* r = t.rstd ? acl(*t.rstd) : nullptr;
  aclTensor* x = t.x ? acl(*t.x) : nullptr;
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  const aclnnStatus s = aclnnAddRmsNormGetWorkspaceSize(a, b, g, 1e-6, y, r, x, &size, &e);
  for (aclTensor* h : {a, b, g, y, r, x}) {
    if (h != nullptr) aclDestroyTensor(h);
  }
  return s;
}

TEST(AddRmsNormValidation, RowsThroughAclnn) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    Call c = base_call();
    AddRmsNormTensors t = c.tensors();
    row.mutate(c, t);
    EXPECT_EQ(aclnn_phase_one(t), static_cast<aclnnStatus>(row.code));
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(row.arg), std::string::npos) << msg;
    EXPECT_TRUE(untouched(c.y));
    EXPECT_TRUE(untouched(c.rstd));
    EXPECT_TRUE(untouched(c.x));
  }
  // Null handles: 161001 naming the argument.
  Call c = base_call();
  EXPECT_EQ(aclnn_phase_one(c.tensors(), true), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("x1"), std::string::npos);
}

// Upstream's aclnn combinations: rstdOut and xOut both given; xOut alone (FLOAT16 or BFLOAT16,
// gamma of rank 1 or 2); neither (likewise). rstdOut without xOut is 161001; FLOAT without
// rstdOut, or gamma of rank 3 without it, 161002. The C++ API takes every combination.
TEST(AddRmsNormValidation, AclnnNullOutputCombinations) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(name_of(d));
    const std::pair<bool, bool> combos[] = {
        {true, true}, {true, false}, {false, true}, {false, false}};
    for (const auto& [with_rstd, with_x] : combos) {
      SCOPED_TRACE(std::string("rstd ") + (with_rstd ? "given" : "null") + ", x " +
                   (with_x ? "given" : "null"));
      Call c(d, {4, 2, 16}, {1, 16}, 1);
      const AddRmsNormTensors t = c.tensors(with_rstd, with_x);
      aclnnStatus want = ACLNN_SUCCESS;
      if (with_rstd && !with_x) {
        want = ACLNN_ERR_PARAM_NULLPTR;
      } else if (!with_rstd && d == DType::kFloat32) {
        want = ACLNN_ERR_PARAM_INVALID;
      }
      EXPECT_EQ(aclnn_phase_one(t), want) << aclGetRecentErrMsg();
      EXPECT_TRUE(mantissa::add_rms_norm(t, {}).ok());
    }
    // gamma of rank 3 without rstdOut.
    Call c(d, {2, 3, 4, 8}, {3, 4, 8}, 3);
    EXPECT_EQ(aclnn_phase_one(c.tensors(false, true)), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find(d == DType::kFloat32 ? "x1" : "gamma"),
              std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_EQ(aclnn_phase_one(c.tensors(true, true)), ACLNN_SUCCESS);
  }
}

// ---- aclnn ----------------------------------------------------------------------------------

// Both phases with a workspace of the reported size.
aclnnStatus run_aclnn(aclTensor* x1, aclTensor* x2, aclTensor* g, aclTensor* y, aclTensor* r,
                      aclTensor* x, double eps, uint64_t* size_out = nullptr) {
  return mt::run_two_phases(
      [&](uint64_t* s, aclOpExecutor** e) {
        const aclnnStatus st = aclnnAddRmsNormGetWorkspaceSize(x1, x2, g, eps, y, r, x, s, e);
        if (size_out != nullptr) *size_out = *s;
        return st;
      },
      [](void* w, uint64_t s, aclOpExecutor* e) { return aclnnAddRmsNorm(w, s, e, nullptr); });
}

// Transposed storage (element (i, j) of a [rows, cols] tensor at j * rows + i) for x1, x2, y and
// x; the bits of the contiguous call. Then in place through aclnn: yOut the very handle of x1 and
// xOut x2's, contiguous and transposed.
TEST(AddRmsNormAclnn, StridedAndInPlaceTensorsGiveTheContiguousBits) {
  constexpr int64_t kRows = 6, kCols = 40;
  for (DType d : kDtypes) {
    SCOPED_TRACE(name_of(d));
    Call c(d, {kRows, kCols}, {kCols}, 1);
    HostTensor ry, rr, rx;
    c.golden(ry, rr, rx);
    auto transposed = [&](const HostTensor& h) {
      HostTensor t(h.dtype, {kCols, kRows});
      for (int64_t i = 0; i < kRows; ++i) {
        for (int64_t j = 0; j < kCols; ++j) t.set_bits(j * kRows + i, h.bits(i * kCols + j));
      }
      return t;
    };
    auto expect_transposed = [&](const HostTensor& got, const HostTensor& want, const char* what) {
      for (int64_t i = 0; i < kRows; ++i) {
        for (int64_t j = 0; j < kCols; ++j) {
          ASSERT_EQ(got.bits(j * kRows + i), want.bits(i * kCols + j))
              << what << " " << i << " " << j;
        }
      }
    };
    const std::vector<int64_t> strides{1, kRows}, storage{kCols, kRows};
    auto strided = [&](HostTensor& h) {
      TensorView v = view(c.x1);
      v.data = h.data();
      return acl(v, strides, storage);
    };
    HostTensor x1t = transposed(c.x1), x2t = transposed(c.x2);
    HostTensor yt = sentinel(d, {kCols, kRows}), xt = sentinel(d, {kCols, kRows});
    HostTensor r = sentinel(DType::kFloat32, c.rstd.shape);
    aclTensor *a = strided(x1t), *b = strided(x2t), *y = strided(yt), *x = strided(xt);
    aclTensor *g = acl(view(c.gamma)), *ar = acl(view(r));
    uint64_t size = 0;
    ASSERT_EQ(run_aclnn(a, b, g, y, ar, x, 1e-6, &size), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_GT(size, 0u);  // staged
    expect_transposed(yt, ry, "y");
    expect_transposed(xt, rx, "x");
    expect_same_bits(r, rr, "rstd");
    // In place, transposed: yOut is x1's handle, xOut x2's.
    std::fill(r.bytes.begin(), r.bytes.end(), mt::kSentinel);  // r2 and ar hold its data
    ASSERT_EQ(run_aclnn(a, b, g, a, ar, b, 1e-6), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    expect_transposed(x1t, ry, "y in x1 (transposed)");
    expect_transposed(x2t, rx, "x in x2 (transposed)");
    expect_same_bits(r, rr, "rstd");
    for (aclTensor* h : {a, b, y, x, g, ar}) aclDestroyTensor(h);
    // In place, contiguous: no workspace.
    HostTensor x1 = c.x1, x2 = c.x2;
    r = sentinel(DType::kFloat32, c.rstd.shape);
    aclTensor *c1 = acl(view(x1)), *c2 = acl(view(x2)), *g2 = acl(view(c.gamma)),
              *r2 = acl(view(r));
    size = 1;
    ASSERT_EQ(run_aclnn(c1, c2, g2, c1, r2, c2, 1e-6, &size), ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_EQ(size, 0u);
    expect_same_bits(x1, ry, "y in x1");
    expect_same_bits(x2, rx, "x in x2");
    expect_same_bits(r, rr, "rstd");
    // xOut over x1 shifted by half a row (an overlap other than in place): the workspace
    // covers copies of the inputs, and the bits are those of the call out of place.
    {
      const std::size_t es = mantissa::dtype_size(d);
      std::vector<unsigned char> big((kRows + 1) * kCols * es, 0);
      std::memcpy(big.data(), c.x1.data(), c.x1.bytes.size());
      TensorView in = view(c.x1), out = view(c.x1);
      in.data = big.data();
      out.data = big.data() + (kCols / 2) * es;
      HostTensor x2b = c.x2, y3 = sentinel(d, c.y.shape);
      std::fill(r.bytes.begin(), r.bytes.end(), mt::kSentinel);  // r2 and ar hold its data
      aclTensor *i1 = acl(in), *i2 = acl(view(x2b)), *o = acl(out), *y3h = acl(view(y3));
      size = 0;
      ASSERT_EQ(run_aclnn(i1, i2, g2, y3h, r2, o, 1e-6, &size), ACLNN_SUCCESS)
          << aclGetRecentErrMsg();
      EXPECT_GT(size, 0u);
      expect_same_bits(y3, ry, "y (xOut over x1)");
      expect_same_bits(r, rr, "rstd (xOut over x1)");
      EXPECT_EQ(std::memcmp(out.data, rx.data(), rx.bytes.size()), 0) << "x over x1";
      for (aclTensor* h : {i1, i2, o, y3h}) aclDestroyTensor(h);
    }
    for (aclTensor* h : {c1, c2, g2, r2}) aclDestroyTensor(h);
  }
}

}  // namespace

}  // namespace mantissa::testing
