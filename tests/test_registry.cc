// The operator list (ops/all_ops.h) against every consumer: each declared operator has its
// op-by-name row, its precision-kit entry (schema, goldens, backends), its benchmark cases, and
// a case set, with matching argument counts and names. A forgotten entry fails here.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>

#include "compat/aclop_internal.h"
#include "compat/op_binding.h"
#include "mantissa/bench_cases.h"
#include "ops/all_ops.h"
#include "precision/kit.h"

namespace mantissa::testing {

namespace {

// The kit's operators written by hand (src/precision/op_fused_optim.cc).
constexpr const char* kHandWrittenOps[] = {"FusedAdamw", "FusedSgd"};

using mantissa::detail::AllOps;
using mantissa::detail::Role;

template <class Op>
std::size_t count(Role role) {
  std::size_t n = 0;
  for (const auto& a : Op::kArgs) n += a.role == role;
  return n;
}

TEST(Registry, EveryOperatorHasAnOpByNameRow) {
  AllOps::for_each([](auto op) {
    using Op = typename decltype(op)::type;
    SCOPED_TRACE(std::string(Op::kType));
    const mantissa::compat::aclop::OpDef* row = nullptr;
    for (const auto& def : mantissa::compat::aclop::op_table()) {
      if (def.type == Op::kType) row = &def;
    }
    ASSERT_NE(row, nullptr);
    // Attributes given as inputs by name (host scalars, int lists) sit among the inputs in the
    // graph's order; attributes the graph lacks are absent; the others are attributes.
    using mantissa::detail::AttrType;
    const std::size_t tensor_inputs = mantissa::compat::count_graph_inputs<Op>();
    std::size_t input_attrs = 0, graph_attrs = 0;
    for (const auto& a : Op::kAttrs) {
      if (a.graph_input_before == mantissa::detail::kNotInGraph) continue;
      (mantissa::detail::is_input_attr(a.type) ? input_attrs : graph_attrs) += 1;
    }
    EXPECT_EQ(row->inputs.size(), tensor_inputs + input_attrs);
    EXPECT_EQ(row->outputs.size(), count<Op>(Role::kOut));
    ASSERT_EQ(row->attrs.size(), graph_attrs);
    std::size_t attr = 0;
    for (std::size_t i = 0; i < Op::kAttrs.size(); ++i) {
      // Under the graph's name where it differs (SoftmaxV2's "axes" for dim).
      const std::string_view graph =
          Op::kAttrs[i].graph_name.empty() ? Op::kAttrs[i].name : Op::kAttrs[i].graph_name;
      if (Op::kAttrs[i].graph_input_before == mantissa::detail::kNotInGraph) continue;
      if (mantissa::detail::is_input_attr(Op::kAttrs[i].type)) {
        bool listed = false;
        for (const char* name : row->inputs) listed |= std::string_view(name) == graph;
        EXPECT_TRUE(listed) << graph;
        continue;
      }
      EXPECT_EQ(std::string_view(row->attrs[attr].name), graph);
      EXPECT_EQ(row->attrs[attr++].int_list, Op::kAttrs[i].graph_int_list);
    }
    // An output list is the row's dynamic output.
    bool output_list = false;
    for (const auto& a : Op::kArgs) output_list |= a.role == Role::kOut && a.is_list;
    EXPECT_EQ(row->dynamic_output >= 0, output_list);
    EXPECT_NE(row->handler, nullptr);
  });
  EXPECT_EQ(mantissa::compat::aclop::op_table().size(), static_cast<std::size_t>(AllOps::size));
}

TEST(Registry, EveryOperatorIsInThePrecisionKit) {
  AllOps::for_each([](auto op) {
    using Op = typename decltype(op)::type;
    SCOPED_TRACE(std::string(Op::kType));
    const mantissa::precision::OpEntry* e = mantissa::precision::find_op(std::string(Op::kType));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->inputs.size(), count<Op>(Role::kIn) + count<Op>(Role::kInOut));
    EXPECT_EQ(e->outputs.size(), count<Op>(Role::kOut) + count<Op>(Role::kInOut));
    EXPECT_EQ(e->attrs.size(), Op::kAttrs.size());
    EXPECT_TRUE(e->golden);
    EXPECT_TRUE(e->golden32);
    using mantissa::precision::Backend;
    EXPECT_TRUE(e->backends.contains(Backend::kKernel));
    EXPECT_TRUE(e->backends.contains(Backend::kAclop));
    // An aclnn backend exactly when CANN defines an aclnn call for the operator.
    EXPECT_EQ(e->backends.contains(Backend::kAclnn), !Op::kAclnn.empty());
  });
  // And the entries written by hand for the operators of several lists, which the
  // declarations do not describe: goldens, the C++ API and aclnn (no op-by-name form).
  for (const char* name : kHandWrittenOps) {
    SCOPED_TRACE(name);
    const auto* e = mantissa::precision::find_op(name);
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(e->golden);
    EXPECT_TRUE(e->golden32);
    using mantissa::precision::Backend;
    EXPECT_TRUE(e->backends.contains(Backend::kKernel));
    EXPECT_TRUE(e->backends.contains(Backend::kAclnn));
    EXPECT_FALSE(e->backends.contains(Backend::kAclop));
  }
  EXPECT_EQ(mantissa::precision::registry().size(),
            static_cast<std::size_t>(AllOps::size) + std::size(kHandWrittenOps));
}

TEST(Registry, EveryDeclaredVariantIsBenchmarked) {
  const auto cases = mantissa::bench::elementwise_cases();
  AllOps::for_each([&](auto op) {
    using Op = typename decltype(op)::type;
    for (const auto& v : Op::kVariants) {
      int found = 0;
      for (const auto& c : cases) found += c.op == Op::kType && c.variant == v.name;
      EXPECT_EQ(found, 3) << Op::kType << " " << v.name << ": one case per dtype";
    }
  });
  for (const auto& c : cases) {
    bool declared = false;
    AllOps::for_each([&](auto op) {
      using Op = typename decltype(op)::type;
      for (const auto& v : Op::kVariants) declared |= c.op == Op::kType && c.variant == v.name;
    });
    EXPECT_TRUE(declared) << c.op << " " << c.variant;
  }
}

// Every case prepares and runs, and so does the probe with its access pattern (on 1 and 2
// threads): `mantissa bench` and the Google Benchmark harness run exactly these.
TEST(Registry, EveryBenchmarkCaseAndItsProbeRun) {
  for (const auto& c : mantissa::bench::elementwise_cases()) {
    SCOPED_TRACE(c.op + " " + c.variant);
    auto call = mantissa::bench::prepare(c, 1000);
    ASSERT_NE(call, nullptr);
    call->run();
    mantissa::bench::Probe probe(c.traffic, 4000);
    probe.run(1);
    probe.run(2);
    EXPECT_EQ(probe.bytes_per_pass(), 4000 * (2 * c.traffic.rmw_streams + c.traffic.ro_streams));
  }
}

TEST(Registry, EveryOperatorShipsACaseSet) {
  const char* source = std::getenv("MANTISSA_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (MANTISSA_SOURCE_DIR)";
  const auto loaded = mantissa::precision::load_case_dir(std::string(source) + "/cases");
  AllOps::for_each([&](auto op) {
    using Op = typename decltype(op)::type;
    int n = 0;
    for (const auto& c : loaded) n += c.spec && c.spec->op == Op::kType;
    EXPECT_GT(n, 0) << Op::kType << " has no case under cases/";
  });
  for (const char* name : kHandWrittenOps) {
    int n = 0;
    for (const auto& c : loaded) n += c.spec && c.spec->op == name;
    EXPECT_GT(n, 0) << name << " has no case under cases/";
  }
}

// The descriptors' in-place pairing and names, as the C layer and the kit rely on them.
TEST(Registry, DescriptorsAreWellFormed) {
  AllOps::for_each([](auto op) {
    using Op = typename decltype(op)::type;
    static_assert(mantissa::detail::well_formed<Op>());
    for (const auto& a : Op::kArgs) {
      EXPECT_FALSE(a.name.empty());
      EXPECT_FALSE(a.acl_name.empty());
      EXPECT_FALSE(a.graph_name.empty());
    }
  });
}

}  // namespace

}  // namespace mantissa::testing
