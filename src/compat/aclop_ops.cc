// The op-by-name operator table: for each op type its inputs, outputs and attributes (names are
// CANN's), and a handler that turns descriptors, buffers and attributes into a C++ API call.
// Adding an operator is one handler below and one row in kOps.
#include <array>

#include "compat/aclop_internal.h"
#include "mantissa/ops/amp_update_scale.h"
#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/ops/sgd.h"

namespace mantissa::compat::aclop {
namespace {

AttrValue bool_value(bool b) {
  AttrValue v{AttrType::kBool};
  v.b = b;
  return v;
}

AttrValue float_value(float f) {
  AttrValue v{AttrType::kFloat};
  v.f = f;
  return v;
}

// ---- AmpUpdateScale -------------------------------------------------------------------------
// The three attributes are required, as in CANN's graph definition of the operator: there is no
// silent default for the loss-scale schedule.
constexpr std::array<const char*, 3> kAmpInputs{"current_scale", "growth_tracker", "found_inf"};
constexpr std::array<const char*, 2> kAmpOutputs{"updated_scale", "updated_growth_tracker"};
const std::array<AttrSpec, 3> kAmpAttrs{{
    {"growth_factor", AttrType::kFloat, true, {AttrType::kFloat}},
    {"backoff_factor", AttrType::kFloat, true, {AttrType::kFloat}},
    {"growth_interval", AttrType::kInt, true, {AttrType::kInt}},
}};

Status run_amp_update_scale(const OpCall& c) {
  const AmpUpdateScaleTensors t{c.in(0), c.in(1), c.in(2), c.out(0), c.out(1)};
  AmpUpdateScaleParams p;
  p.growth_factor = c.attr_float("growth_factor");
  p.backoff_factor = c.attr_float("backoff_factor");
  p.growth_interval = c.attr_int("growth_interval");
  return c.execute(t, p, amp_update_scale_validate, amp_update_scale);
}

// ---- SGD ------------------------------------------------------------------------------------
// The output is the new parameters: the input's buffer (in place) or another one, in which case
// the input parameters are left unchanged. accum and stat have no output slot: they are updated
// through their input buffers.
constexpr std::array<const char*, 6> kSgdInputs{"parameters", "gradient", "learning_rate",
                                                "accum",      "momentum", "stat"};
constexpr std::array<const char*, 1> kSgdOutputs{"parameters"};
const std::array<AttrSpec, 3> kSgdAttrs{{
    {"dampening", AttrType::kFloat, false, float_value(0.0f)},
    {"weight_decay", AttrType::kFloat, false, float_value(0.0f)},
    {"nesterov", AttrType::kBool, false, bool_value(false)},
}};

Status run_sgd(const OpCall& c) {
  SgdTensors t;
  t.parameters = c.in(0);
  t.gradient = c.in(1);
  t.learning_rate = c.in(2);
  t.accum = c.in(3);
  t.momentum = c.in(4);
  t.stat = c.in(5);
  t.parameters_out = c.out(0);
  SgdParams p;
  p.dampening = c.attr_float("dampening");
  p.weight_decay = c.attr_float("weight_decay");
  p.nesterov = c.attr_bool("nesterov");
  return c.execute(t, p, sgd_validate, sgd);
}

// ---- ApplyAdamD -----------------------------------------------------------------------------
// Outputs var, m, v may be the input buffers (in place) or separate ones.
constexpr std::array<const char*, 10> kAdamInputs{
    "var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"};
constexpr std::array<const char*, 3> kAdamOutputs{"var", "m", "v"};
const std::array<AttrSpec, 2> kAdamAttrs{{
    {"use_locking", AttrType::kBool, false, bool_value(false)},
    {"use_nesterov", AttrType::kBool, false, bool_value(false)},
}};

Status run_apply_adam_d(const OpCall& c) {
  ApplyAdamDTensors t;
  t.var = c.in(0);
  t.m = c.in(1);
  t.v = c.in(2);
  t.beta1_power = c.in(3);
  t.beta2_power = c.in(4);
  t.lr = c.in(5);
  t.beta1 = c.in(6);
  t.beta2 = c.in(7);
  t.epsilon = c.in(8);
  t.grad = c.in(9);
  t.var_out = c.out(0);
  t.m_out = c.out(1);
  t.v_out = c.out(2);
  ApplyAdamDParams p;
  p.use_locking = c.attr_bool("use_locking");
  p.use_nesterov = c.attr_bool("use_nesterov");
  return c.execute(t, p, apply_adam_d_validate, apply_adam_d);
}

// ---- The table ------------------------------------------------------------------------------
const std::array<OpDef, 3> kOps{{
    {"AmpUpdateScale", kAmpInputs, kAmpOutputs, kAmpAttrs, run_amp_update_scale},
    {"SGD", kSgdInputs, kSgdOutputs, kSgdAttrs, run_sgd},
    {"ApplyAdamD", kAdamInputs, kAdamOutputs, kAdamAttrs, run_apply_adam_d},
}};

}  // namespace

std::span<const OpDef> op_table() noexcept { return kOps; }

}  // namespace mantissa::compat::aclop
