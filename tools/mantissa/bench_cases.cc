// Benchmark cases: buffers, realistic values, one operator call per run(); and the probe.
#include "mantissa/bench_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_amp_update_scale.h"
#include "mantissa/mantissa.h"
#include "ops/all_ops.h"

namespace mantissa::bench {

// bench_probe.cc: 0..5 read-write and 0..4 read-only streams; `sink` receives the reads when
// nothing is written.
void probe_range(int rmw_streams, int ro_streams, float* const* rmw, const float* const* ro,
                 float* sink, int64_t begin, int64_t end);

namespace {

// 64-byte aligned, first-touched buffer of n elements of `dtype`, filled from a cheap LCG
// around `center` with spread `spread`.
struct Buffer {
  void* data = nullptr;
  Buffer(DType dtype, int64_t n, float center, float spread) {
    const std::size_t bytes = std::max<std::size_t>(64, dtype_size(dtype) * n);
    data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    uint32_t state = 12345u + static_cast<uint32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      const float u = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
      store_from_float(dtype, data, i, center + spread * u);
    }
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

TensorView view(const Buffer& b, DType dtype, int64_t n) { return TensorView(b.data, dtype, {n}); }
TensorView scalar(const Buffer& b, DType dtype) { return TensorView(b.data, dtype, {1}); }

class SgdCall final : public PreparedCall {
 public:
  using Variant = detail::SgdOp::Variant;
  SgdCall(DType dtype, int64_t n, Variant variant)
      : p_(dtype, n, 0.0f, 2.0f),
        g_(dtype, n, 0.0f, 0.02f),
        a_(dtype, n, 0.0f, 0.01f),
        s_(dtype, n, 0.0f, 0.0f),
        lr_(dtype, 1, 0.01f, 0.0f),
        m_(dtype, 1, variant == Variant::kNoMomentum ? 0.0f : 0.9f, 0.0f),
        params_(detail::SgdOp::params_for(variant)) {
    t_ = {view(p_, dtype, n), view(g_, dtype, n), scalar(lr_, dtype), view(a_, dtype, n),
          scalar(m_, dtype),  view(s_, dtype, n), std::nullopt};
  }
  void run() override { (void)sgd(t_, params_); }

 private:
  Buffer p_, g_, a_, s_, lr_, m_;
  SgdTensors t_;
  SgdParams params_;
};

class AdamCall final : public PreparedCall {
 public:
  AdamCall(DType dtype, int64_t n, detail::ApplyAdamDOp::Variant variant)
      : var_(dtype, n, 0.0f, 2.0f),
        m_(dtype, n, 0.0f, 0.1f),
        v_(dtype, n, 0.75f, 0.1f),
        g_(dtype, n, 0.0f, 0.4f),
        b1p_(dtype, 1, 0.9f, 0.0f),
        b2p_(dtype, 1, 0.999f, 0.0f),
        lr_(dtype, 1, 0.001f, 0.0f),
        b1_(dtype, 1, 0.9f, 0.0f),
        b2_(dtype, 1, 0.999f, 0.0f),
        eps_(dtype, 1, 1e-7f, 0.0f),
        params_(detail::ApplyAdamDOp::params_for(variant)) {
    t_.var = view(var_, dtype, n);
    t_.m = view(m_, dtype, n);
    t_.v = view(v_, dtype, n);
    t_.grad = view(g_, dtype, n);
    t_.beta1_power = scalar(b1p_, dtype);
    t_.beta2_power = scalar(b2p_, dtype);
    t_.lr = scalar(lr_, dtype);
    t_.beta1 = scalar(b1_, dtype);
    t_.beta2 = scalar(b2_, dtype);
    t_.epsilon = scalar(eps_, dtype);
  }
  void run() override { (void)apply_adam_d(t_, params_); }

 private:
  Buffer var_, m_, v_, g_, b1p_, b2p_, lr_, b1_, b2_, eps_;
  ApplyAdamDTensors t_;
  ApplyAdamDParams params_;
};

// AdamW with PyTorch's defaults at step 10; amsgrad with a running maximum near v.
class AdamWCall final : public PreparedCall {
 public:
  AdamWCall(DType dtype, int64_t n, detail::ApplyAdamWV2Op::Variant variant)
      : var_(dtype, n, 0.0f, 2.0f),
        m_(dtype, n, 0.0f, 0.1f),
        v_(dtype, n, 0.75f, 0.1f),
        max_(dtype, n, 0.75f, 0.1f),
        g_(dtype, n, 0.0f, 0.4f),
        params_(detail::ApplyAdamWV2Op::params_for(variant)) {
    t_.var = view(var_, dtype, n);
    t_.m = view(m_, dtype, n);
    t_.v = view(v_, dtype, n);
    if (params_.amsgrad) t_.max_grad_norm = view(max_, dtype, n);
    t_.grad = view(g_, dtype, n);
    t_.step = TensorView(&step_, DType::kInt64, {1});
  }
  void run() override { (void)apply_adam_w_v2(t_, params_); }

 private:
  Buffer var_, m_, v_, max_, g_;
  int64_t step_ = 9;
  ApplyAdamWV2Tensors t_;
  ApplyAdamWV2Params params_;
};

class AmpCppCall final : public PreparedCall {
 public:
  void run() override {
    const AmpUpdateScaleTensors t{
        TensorView(&scale_, DType::kFloat32, {1}), TensorView(&tracker_, DType::kInt32, {1}),
        TensorView(&found_, DType::kFloat32, {1}), TensorView(&scale_, DType::kFloat32, {1}),
        TensorView(&tracker_, DType::kInt32, {1})};
    (void)amp_update_scale(t, {2.0, 0.5, 1 << 30});
  }

 private:
  float scale_ = 65536.0f, found_ = 0.0f;
  int32_t tracker_ = 0;
};

class AmpAclnnCall final : public PreparedCall {
 public:
  AmpAclnnCall() {
    const int64_t dims[] = {1}, strides[] = {1};
    scale_t_ = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, &scale_);
    tracker_t_ = aclCreateTensor(dims, 1, ACL_INT32, strides, 0, ACL_FORMAT_ND, dims, 1, &tracker_);
    found_t_ = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, &found_);
  }
  ~AmpAclnnCall() override {
    aclDestroyTensor(scale_t_);
    aclDestroyTensor(tracker_t_);
    aclDestroyTensor(found_t_);
  }
  void run() override {
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    if (aclnnAmpUpdateScaleGetWorkspaceSize(scale_t_, tracker_t_, found_t_, 2.0, 0.5, 1 << 30,
                                            scale_t_, tracker_t_, &workspace_size,
                                            &executor) == ACLNN_SUCCESS) {
      (void)aclnnAmpUpdateScale(nullptr, 0, executor, nullptr);
    }
  }

 private:
  float scale_ = 65536.0f, found_ = 0.0f;
  int32_t tracker_ = 0;
  aclTensor *scale_t_ = nullptr, *tracker_t_ = nullptr, *found_t_ = nullptr;
};

// Gradients split into four tensors of about n/4 elements (the list path), found_inf, inv_scale.
// Unscaling alternates inv_scale between 2^-10 and 2^10 (exact in every dtype), so repeated
// runs keep the values in range; the check-only variant uses inv_scale 1.
class UnscaleCall final : public PreparedCall {
 public:
  using Variant = detail::ForeachNonFiniteCheckAndUnscaleOp::Variant;
  UnscaleCall(DType dtype, int64_t n, Variant variant)
      : g_(dtype, n, 0.0f, 1000.0f), check_only_(variant == Variant::kCheckOnly) {
    for (int k = 0; k < 4; ++k) {
      const int64_t begin = n * k / 4, end = n * (k + 1) / 4;
      views_.push_back(TensorView(static_cast<char*>(g_.data) + begin * dtype_size(dtype), dtype,
                                  {end - begin}));
    }
    t_.scaled_grads = views_;
    t_.found_inf = TensorView(&found_, DType::kFloat32, {1});
    t_.inv_scale = TensorView(&inv_, DType::kFloat32, {1});
  }
  void run() override {
    up_ = !up_;
    inv_ = check_only_ ? 1.0f : (up_ ? 1024.0f : 1.0f / 1024.0f);
    (void)foreach_non_finite_check_and_unscale(t_);
  }

 private:
  Buffer g_;
  bool check_only_, up_ = true;
  float inv_ = 1.0f, found_ = 0.0f;
  std::vector<TensorView> views_;
  ForeachNonFiniteCheckAndUnscaleTensors t_;
};

// ---- Lists. Each tensor its own buffer, as a model's parameters are.
struct ListBuffers {
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<TensorView> views;
  ListBuffers(DType dtype, const std::vector<Shape>& shapes, float center, float spread) {
    for (const Shape& s : shapes) {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      buffers.push_back(std::make_unique<Buffer>(dtype, n, center, spread));
      views.push_back(TensorView(buffers.back()->data, dtype, s));
    }
  }
};

// ForeachNonFiniteCheckAndUnscale over the list; inv_scale alternates 2^-10 and 2^10 as in
// UnscaleCall, or stays 1 (the read-only check).
class UnscaleListCall final : public PreparedCall {
 public:
  UnscaleListCall(DType dtype, const std::vector<Shape>& shapes, bool check_only)
      : g_(dtype, shapes, 0.0f, 1000.0f), check_only_(check_only) {
    t_.scaled_grads = g_.views;
    t_.found_inf = TensorView(&found_, DType::kFloat32, {1});
    t_.inv_scale = TensorView(&inv_, DType::kFloat32, {1});
  }
  void run() override {
    up_ = !up_;
    inv_ = check_only_ ? 1.0f : (up_ ? 1024.0f : 1.0f / 1024.0f);
    (void)foreach_non_finite_check_and_unscale(t_);
  }

 private:
  ListBuffers g_;
  bool check_only_, up_ = true;
  float inv_ = 1.0f, found_ = 0.0f;
  ForeachNonFiniteCheckAndUnscaleTensors t_;
};

// The anomaly detector's pass over the list: read only, or fused with the loss scaler's unscale.
// Two scalers (scales 2^10 and 2^-10, never growing) take turns, so repeated runs keep the
// values where they started.
class InspectListCall final : public PreparedCall {
 public:
  InspectListCall(DType dtype, const std::vector<Shape>& shapes, bool unscale)
      : g_(dtype, shapes, 0.0f, 1000.0f), unscale_(unscale) {
    amp::LossScalerOptions o;
    o.growth_interval = INT32_MAX;
    o.init_scale = 1024.0f;
    (void)amp::DynamicLossScaler::create(o, &down_);
    o.init_scale = 1.0f / 1024.0f;
    (void)amp::DynamicLossScaler::create(o, &up_);
  }
  void run() override {
    if (!unscale_) {
      (void)detector_.inspect(g_.views, {}, {}, &report_);
      return;
    }
    amp::DynamicLossScaler& s = (flip_ = !flip_) ? down_ : up_;
    (void)s.unscale_and_inspect(g_.views, detector_, {}, &report_);
    (void)s.update();
  }

 private:
  ListBuffers g_;
  bool unscale_, flip_ = false;
  amp::DynamicLossScaler down_, up_;
  amp::AnomalyDetector detector_;
  amp::AnomalyReport report_;
};

// The fused multi-tensor optimizer steps over the list (mantissa/optim.h), with the values of the
// single-tensor cases above: AdamW at step 10, ApplyAdamD, SGD with momentum 0.9.
class MultiStepCall final : public PreparedCall {
 public:
  enum class Kind { kAdamW, kAdamD, kSgd };
  MultiStepCall(Kind kind, DType dtype, const std::vector<Shape>& shapes)
      : kind_(kind),
        var_(dtype, shapes, 0.0f, 2.0f),
        m_(dtype, shapes, 0.0f, 0.1f),
        v_(dtype, shapes, 0.75f, 0.1f),
        g_(dtype, shapes, 0.0f, 0.4f) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      adamw_.push_back({var_.views[i], m_.views[i], v_.views[i], std::nullopt, g_.views[i],
                        std::nullopt, std::nullopt});
      adam_.push_back(
          {var_.views[i], m_.views[i], v_.views[i], g_.views[i], std::nullopt, std::nullopt});
      sgd_.push_back(
          {var_.views[i], g_.views[i], m_.views[i], v_.views[i], std::nullopt, std::nullopt});
    }
  }
  void run() override {
    switch (kind_) {
      case Kind::kAdamW: (void)multi_tensor_adam_w(adamw_, {.hyper = {}, .step = 9}); break;
      case Kind::kAdamD:
        (void)multi_tensor_apply_adam_d(adam_, {.beta1_power = 0.9f,
                                                .beta2_power = 0.999f,
                                                .lr = 0.001f,
                                                .beta1 = 0.9f,
                                                .beta2 = 0.999f,
                                                .epsilon = 1e-7f,
                                                .use_nesterov = false});
        break;
      case Kind::kSgd:
        (void)multi_tensor_sgd(sgd_, {.learning_rate = 0.01f,
                                      .momentum = 0.9f,
                                      .dampening = 0.0f,
                                      .weight_decay = 0.0f,
                                      .nesterov = false});
        break;
    }
  }

 private:
  Kind kind_;
  ListBuffers var_, m_, v_, g_;
  std::vector<AdamWParamTensors> adamw_;
  std::vector<AdamDParamTensors> adam_;
  std::vector<SgdParamTensors> sgd_;
};

// CANN's FusedAdamw (a step count per parameter) and FusedSgd (momentum buffers, no grad scale)
// over the list, through the C++ API.
class FusedListCall final : public PreparedCall {
 public:
  FusedListCall(bool adamw, DType dtype, const std::vector<Shape>& shapes)
      : adamw_(adamw),
        var_(dtype, shapes, 0.0f, 2.0f),
        m_(dtype, shapes, 0.0f, 0.1f),
        v_(dtype, shapes, 0.75f, 0.1f),
        g_(dtype, shapes, 0.0f, 0.4f),
        steps_(shapes.size()) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      steps_[i] = static_cast<int64_t>(9 + i % 3);
      fused_adamw_.push_back({var_.views[i], g_.views[i], m_.views[i], v_.views[i], std::nullopt,
                              TensorView(&steps_[i], DType::kInt64, {1})});
      fused_sgd_.push_back({var_.views[i], g_.views[i], m_.views[i]});
    }
  }
  void run() override {
    if (adamw_) {
      (void)fused_adamw(fused_adamw_, {});
    } else {
      FusedSgdParams p;
      p.momentum = 0.9f;
      p.lr = 0.01f;
      (void)fused_sgd(fused_sgd_, p);
    }
  }

 private:
  bool adamw_;
  ListBuffers var_, m_, v_, g_;
  std::vector<int64_t> steps_;
  std::vector<FusedAdamwParamTensors> fused_adamw_;
  std::vector<FusedSgdParamTensors> fused_sgd_;
};

// multi_tensor_adam_w_8bit over the list: codes spread over the maps, absmax of ordinary
// moments (0.01 for m, 1e-4 for v).
// multi_tensor_adam_w_compact over a list, moments in `format`: random codes (or moments) and
// scales of a trained state's magnitude.
class CompactListCall final : public PreparedCall {
 public:
  CompactListCall(DType dtype, const std::vector<Shape>& shapes, MomentFormat format)
      : format_(format), var_(dtype, shapes, 0.0f, 2.0f), g_(dtype, shapes, 0.0f, 0.4f) {
    uint32_t state = 7u;
    const int64_t block = moment_block(format);
    const bool bf16 = format == MomentFormat::kBf16;
    const std::size_t width = format == MomentFormat::kFp32 ? 4 : bf16 ? 2 : 1;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const int64_t n = *var_.views[i].numel();
      const int64_t bytes = moment_elements(format, n) * static_cast<int64_t>(width);
      for (auto* codes : {&m_, &v_}) {
        codes->emplace_back(static_cast<std::size_t>(bytes));
        for (uint8_t& c : codes->back()) {
          state = state * 1664525u + 1013904223u;
          c = static_cast<uint8_t>(state >> 24);
        }
      }
      if (width > 1) {  // moments of a trained state's magnitude, v positive
        for (auto* moments : {&m_.back(), &v_.back()}) {
          for (std::size_t k = 0; k < moments->size(); k += width) {
            state = state * 1664525u + 1013904223u;
            const float x = (moments == &m_.back() ? 1e-3f : 1e-6f) *
                            static_cast<float>(state >> 8) / 16777216.0f;
            if (bf16) {
              const uint16_t h = static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
              std::memcpy(moments->data() + k, &h, 2);
            } else {
              std::memcpy(moments->data() + k, &x, 4);
            }
          }
        }
      }
      const std::size_t blocks = block == 0 ? 0 : static_cast<std::size_t>((n + block - 1) / block);
      const float fp8 = format == MomentFormat::kFp8E4M3 ? 1.0f / 448.0f : 1.0f;
      am_.emplace_back(blocks, 0.01f * fp8);
      av_.emplace_back(blocks, 1e-4f * fp8);
    }
    const DType moment_dtype = format == MomentFormat::kFp32 ? DType::kFloat32
                               : bf16                        ? DType::kBFloat16
                                                             : DType::kUInt8;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const TensorView& x = var_.views[i];
      std::span<const int64_t> shape(x.shape.data(), static_cast<std::size_t>(x.rank));
      const std::array<int64_t, 1> packed{static_cast<int64_t>(m_[i].size())};
      if (format == MomentFormat::kInt4) shape = packed;
      CompactAdamWParamTensors t{x,
                                 TensorView(m_[i].data(), moment_dtype, shape),
                                 TensorView(v_[i].data(), moment_dtype, shape),
                                 g_.views[i],
                                 std::nullopt,
                                 std::nullopt,
                                 std::nullopt,
                                 std::nullopt};
      if (block > 0) {
        const std::array<int64_t, 1> blocks{static_cast<int64_t>(am_[i].size())};
        t.scale_m = TensorView(am_[i].data(), DType::kFloat32, blocks);
        t.scale_v = TensorView(av_[i].data(), DType::kFloat32, blocks);
      }
      params_.push_back(t);
    }
  }
  void run() override {
    (void)multi_tensor_adam_w_compact(params_, {.hyper = {}, .step = 9}, format_);
  }

 private:
  MomentFormat format_;
  ListBuffers var_, g_;
  std::vector<std::vector<uint8_t>> m_, v_;
  std::vector<std::vector<float>> am_, av_;
  std::vector<CompactAdamWParamTensors> params_;
};

// ForeachNorm over four tensors of about n/4 elements (the list path), one norm per tensor.
class NormCall final : public PreparedCall {
 public:
  using Op = detail::ForeachNormOp;
  NormCall(DType dtype, int64_t n, Op::Variant variant)
      : x_(dtype, n, 0.0f, 1.0f), p_(Op::params_for(variant)) {
    for (int k = 0; k < 4; ++k) {
      const int64_t begin = n * k / 4, end = n * (k + 1) / 4;
      views_.push_back(TensorView(static_cast<char*>(x_.data) + begin * dtype_size(dtype), dtype,
                                  {end - begin}));
      outs_.push_back(TensorView(&out_[k], dtype, {1}));
    }
    t_.x = views_;
    t_.out = outs_;
  }
  void run() override { (void)foreach_norm(t_, p_); }

 private:
  Buffer x_;
  Op::Params p_;
  float out_[4] = {};
  std::vector<TensorView> views_, outs_;
  ForeachNormTensors t_;
};

// AddRmsNorm over n elements as tokens x hidden: rows of 4096 (a transformer's hidden size), or
// one row of n where n is not a multiple of it. Residual and block output of unit scale, gamma
// near 1; y, rstd and x all written.
class AddRmsNormCall final : public PreparedCall {
 public:
  static constexpr int64_t kHidden = 4096;
  AddRmsNormCall(DType dtype, int64_t n)
      : hidden_(n % kHidden == 0 ? kHidden : n),
        x1_(dtype, n, 0.0f, 4.0f),
        x2_(dtype, n, 0.0f, 2.0f),
        g_(dtype, hidden_, 1.0f, 0.5f),
        y_(dtype, n, 0.0f, 0.0f),
        x_(dtype, n, 0.0f, 0.0f),
        rstd_(DType::kFloat32, std::max<int64_t>(1, n / std::max<int64_t>(1, hidden_)), 0.0f,
              0.0f) {
    const int64_t rows = hidden_ > 0 ? n / hidden_ : 0;
    const std::array<int64_t, 2> shape{rows, hidden_}, rstd_shape{rows, 1};
    t_.x1 = TensorView(x1_.data, dtype, shape);
    t_.x2 = TensorView(x2_.data, dtype, shape);
    t_.gamma = view(g_, dtype, hidden_);
    t_.y = TensorView(y_.data, dtype, shape);
    t_.rstd = TensorView(rstd_.data, DType::kFloat32, rstd_shape);
    t_.x = TensorView(x_.data, dtype, shape);
  }
  void run() override { (void)add_rms_norm(t_, {}); }

 private:
  int64_t hidden_;
  Buffer x1_, x2_, g_, y_, x_, rstd_;
  AddRmsNormTensors t_;
};

// CrossEntropyLoss and CrossEntropyLossGrad over rows of a vocabulary: logits in [-4, 4), every
// target valid (row r's class is r * 7919 mod C), mean reduction, no weights; log_prob kept for the
// backward (written by one forward in the constructor). The element count is rows x classes
// (case_elements rounds it to whole rows).
class CrossEntropyCall final : public PreparedCall {
 public:
  CrossEntropyCall(DType dtype, int64_t n, int64_t classes, bool forward, bool backward)
      : rows_(std::max<int64_t>(1, n / classes)),
        classes_(classes),
        forward_(forward),
        backward_(backward),
        x_(dtype, rows_ * classes, 0.0f, 8.0f),
        log_prob_(dtype, rows_ * classes, 0.0f, 0.0f),
        grad_(dtype, rows_ * classes, 0.0f, 0.0f),
        scalars_(dtype, 4, 1.0f, 0.0f),
        lse_(dtype, rows_, 0.0f, 0.0f),
        targets_(static_cast<std::size_t>(rows_)) {
    for (int64_t r = 0; r < rows_; ++r) targets_[r] = (r * 7919) % classes;
    const auto at = [&](const Buffer& b, int64_t i) {
      return static_cast<char*>(b.data) + i * static_cast<int64_t>(dtype_size(dtype));
    };
    fwd_ = {.input = TensorView(x_.data, dtype, {rows_, classes}),
            .target = TensorView(targets_.data(), DType::kInt64, {rows_}),
            .weight = std::nullopt,
            .loss = TensorView(at(scalars_, 0), dtype, {1}),
            .log_prob = TensorView(log_prob_.data, dtype, {rows_, classes}),
            .zloss = TensorView(at(scalars_, 1), dtype, {1}),
            .lse_for_zloss = TensorView(lse_.data, dtype, {rows_})};
    bwd_ = {.grad_loss = TensorView(at(scalars_, 2), dtype, {}),
            .log_prob = fwd_.log_prob,
            .target = fwd_.target,
            .weight = std::nullopt,
            .grad_zloss = std::nullopt,
            .lse_for_zloss = std::nullopt,
            .out = TensorView(grad_.data, dtype, {rows_, classes})};
    fwd_ws_.resize(cross_entropy_loss_workspace_size(fwd_));
    bwd_ws_.resize(cross_entropy_loss_grad_workspace_size(bwd_));
    (void)cross_entropy_loss(fwd_, {}, {fwd_ws_.data(), fwd_ws_.size()});
  }
  void run() override {
    if (forward_) (void)cross_entropy_loss(fwd_, {}, {fwd_ws_.data(), fwd_ws_.size()});
    if (backward_) (void)cross_entropy_loss_grad(bwd_, {}, {bwd_ws_.data(), bwd_ws_.size()});
  }

 private:
  int64_t rows_, classes_;
  bool forward_, backward_;
  Buffer x_, log_prob_, grad_, scalars_, lse_;
  std::vector<int64_t> targets_;
  std::vector<std::byte> fwd_ws_, bwd_ws_;
  CrossEntropyLossTensors fwd_{};
  CrossEntropyLossGradTensors bwd_{};
};

// The vocabulary of a cross-entropy case (0 for the other operators' cases).
int64_t vocabulary_of(const OpCase& c) {
  if (c.op == detail::CrossEntropyLossOp::kType || c.op == detail::CrossEntropyLossGradOp::kType) {
    return c.variant.find("128256") != std::string::npos ? 128256 : 32000;
  }
  return 0;
}

// SwiGlu and SwiGluGrad on a transformer's MLP shape: n results (the case's elements, as the
// declared streams count them) as rows of 4096, so x is [n / 4096, 2 * 4096] split along its last
// dim (16M results: [4096, 8192]); a size that is not a multiple of 4096 is one row [1, 2n].
// Inputs in [-4, 4), y_grad in [-1, 1).
class SwiGluCall final : public PreparedCall {
 public:
  SwiGluCall(DType dtype, int64_t n, bool grad)
      : grad_(grad),
        x_(dtype, 2 * n, 0.0f, 8.0f),
        g_(dtype, grad ? n : 1, 0.0f, 2.0f),
        out_(dtype, grad ? 2 * n : n, 0.0f, 0.0f) {
    const int64_t cols = n % 4096 == 0 ? 4096 : n;
    const int64_t rows = n / cols;
    const std::array<int64_t, 2> half{rows, cols}, full{rows, 2 * cols};
    x_view_ = TensorView(x_.data, dtype, full);
    g_view_ = TensorView(g_.data, dtype, half);
    out_view_ = TensorView(out_.data, dtype,
                           grad ? std::span<const int64_t>(full) : std::span<const int64_t>(half));
  }
  void run() override {
    if (grad_) {
      (void)swi_glu_grad({.y_grad = g_view_, .x = x_view_, .out = out_view_});
    } else {
      (void)swi_glu({.x = x_view_, .out = out_view_});
    }
  }

 private:
  bool grad_;
  Buffer x_, g_, out_;
  TensorView x_view_, g_view_, out_view_;
};

// The call of an operator without a make_call overload, from its declaration alone: every
// tensor argument (all element-wise on the first: [n] of the case's dtype, as an element-wise
// operator's rules have them) its own buffer, inputs in [-4, 4), outputs written out of place,
// optional arguments left out, the variant's Params.
template <class Op>
class DeclaredCall final : public PreparedCall {
 public:
  DeclaredCall(DType dtype, int64_t n, typename Op::Variant variant) : p_(Op::params_for(variant)) {
    for (std::size_t k = 0; k < detail::kNumArgs<Op>; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.optional) continue;
      const bool input = a.role != detail::Role::kOut;
      buffers_.push_back(std::make_unique<Buffer>(dtype, n, 0.0f, input ? 8.0f : 0.0f));
      detail::set_view<Op>(t_, k, view(*buffers_.back(), dtype, n));
    }
  }
  void run() override { (void)Op::run(t_, p_); }

 private:
  std::vector<std::unique_ptr<Buffer>> buffers_;
  typename Op::Tensors t_{};
  typename Op::Params p_;
};

// The prepared call of one declared variant: the operator's own overload where it needs
// realistic values or lists, else DeclaredCall.
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::SgdOp::Variant v) {
  return std::make_unique<SgdCall>(dtype, n, v);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::ApplyAdamDOp::Variant v) {
  return std::make_unique<AdamCall>(dtype, n, v);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n,
                                        detail::ForeachNonFiniteCheckAndUnscaleOp::Variant v) {
  return std::make_unique<UnscaleCall>(dtype, n, v);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::ApplyAdamWV2Op::Variant v) {
  return std::make_unique<AdamWCall>(dtype, n, v);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::ForeachNormOp::Variant v) {
  return std::make_unique<NormCall>(dtype, n, v);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::AddRmsNormOp::Variant) {
  return std::make_unique<AddRmsNormCall>(dtype, n);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n,
                                        detail::CrossEntropyLossOp::Variant v) {
  using V = detail::CrossEntropyLossOp::Variant;
  const bool big = v == V::kForward128256 || v == V::kForwardBackward128256;
  const bool backward = v == V::kForwardBackward32000 || v == V::kForwardBackward128256;
  return std::make_unique<CrossEntropyCall>(dtype, n, big ? 128256 : 32000, true, backward);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n,
                                        detail::CrossEntropyLossGradOp::Variant v) {
  const bool big = v == detail::CrossEntropyLossGradOp::Variant::kBackward128256;
  return std::make_unique<CrossEntropyCall>(dtype, n, big ? 128256 : 32000, false, true);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::SwiGluOp::Variant) {
  return std::make_unique<SwiGluCall>(dtype, n, false);
}
std::unique_ptr<PreparedCall> make_call(DType dtype, int64_t n, detail::SwiGluGradOp::Variant) {
  return std::make_unique<SwiGluCall>(dtype, n, true);
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
  std::vector<OpCase> cases;
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    detail::AllOps::for_each([&](auto op) {
      using Op = typename decltype(op)::type;
      for (std::size_t i = 0; i < Op::kVariants.size(); ++i) {
        const auto& v = Op::kVariants[i];
        cases.push_back({std::string(Op::kType),
                         dtype,
                         std::string(v.name),
                         {v.traffic.rmw_streams, v.traffic.ro_streams},
                         static_cast<int>(i)});
      }
    });
  }
  return cases;
}

std::unique_ptr<PreparedCall> prepare(const OpCase& c, int64_t n) {
  std::unique_ptr<PreparedCall> call;
  detail::AllOps::for_each([&](auto op) {
    using Op = typename decltype(op)::type;
    if constexpr (Op::kVariants.size() > 0) {
      if (c.op == Op::kType) {
        const auto variant = Op::kVariants[static_cast<std::size_t>(c.variant_index)].variant;
        if constexpr (requires { make_call(c.dtype, n, variant); }) {
          call = make_call(c.dtype, n, variant);
        } else {
          call = std::make_unique<DeclaredCall<Op>>(c.dtype, n, variant);
        }
      }
    }
  });
  return call;
}

int64_t case_elements(const OpCase& c, int64_t n) {
  const int64_t classes = vocabulary_of(c);
  return classes > 0 ? std::max<int64_t>(1, n / classes) * classes : n;
}

std::vector<ListCase> list_cases() {
  return {{"unscale", {1, 0}},       {"check-only", {0, 1}},
          {"inspect", {0, 1}},       {"unscale+inspect", {1, 0}},
          {"adamw", {3, 1}},         {"adamw8bit", {1, 1}, 2},
          {"adamw4bit", {1, 1}, 1},  {"adamwfp8", {1, 1}, 2},
          {"adamwbf16m", {1, 1}, 4}, {"adam", {3, 1}},
          {"sgd", {3, 1}},           {"fusedadamw", {3, 1}},
          {"fusedsgd", {2, 1}}};
}

Traffic ListCase::probe_traffic(std::size_t element_size, int64_t* stream_bytes) const {
  const auto e = static_cast<int64_t>(element_size);
  if (byte_streams == 0) {
    *stream_bytes = e;
    return traffic;
  }
  // Read-write and read-only bytes per element, in streams of byte_streams bytes each.
  const int64_t rmw = e * traffic.rmw_streams + byte_streams, ro = e * traffic.ro_streams;
  *stream_bytes = byte_streams;
  return {static_cast<int>(rmw / byte_streams), static_cast<int>(ro / byte_streams)};
}

std::unique_ptr<PreparedCall> prepare_list(const std::string& op, DType dtype,
                                           const std::vector<Shape>& shapes) {
  if (op == "unscale" || op == "check-only") {
    return std::make_unique<UnscaleListCall>(dtype, shapes, op == "check-only");
  }
  if (op == "adamw")
    return std::make_unique<MultiStepCall>(MultiStepCall::Kind::kAdamW, dtype, shapes);
  if (op == "adamw8bit")
    return std::make_unique<CompactListCall>(dtype, shapes, MomentFormat::kInt8);
  if (op == "adamw4bit")
    return std::make_unique<CompactListCall>(dtype, shapes, MomentFormat::kInt4);
  if (op == "adamwfp8") {
    return std::make_unique<CompactListCall>(dtype, shapes, MomentFormat::kFp8E4M3);
  }
  if (op == "adamwbf16m")
    return std::make_unique<CompactListCall>(dtype, shapes, MomentFormat::kBf16);
  if (op == "adam")
    return std::make_unique<MultiStepCall>(MultiStepCall::Kind::kAdamD, dtype, shapes);
  if (op == "sgd") return std::make_unique<MultiStepCall>(MultiStepCall::Kind::kSgd, dtype, shapes);
  if (op == "fusedadamw" || op == "fusedsgd") {
    return std::make_unique<FusedListCall>(op == "fusedadamw", dtype, shapes);
  }
  if (op == "inspect" || op == "unscale+inspect") {
    return std::make_unique<InspectListCall>(dtype, shapes, op == "unscale+inspect");
  }
  return nullptr;
}

std::unique_ptr<PreparedCall> prepare_amp_update_scale_cpp() {
  return std::make_unique<AmpCppCall>();
}
std::unique_ptr<PreparedCall> prepare_amp_update_scale_aclnn() {
  return std::make_unique<AmpAclnnCall>();
}

int64_t out_of_cache_elements(int64_t bytes_per_element) {
  int64_t n = int64_t{64} << 20;
  while (n * bytes_per_element < (int64_t{1} << 30)) n *= 2;
  return n;
}

// ---- Probe: persistent worker threads, each owning a fixed contiguous part of the range. Idle
// workers sleep (after a short spin), so they do not compete with the operator being timed in
// alternation with the probe.
struct Probe::Impl {
  Traffic traffic;
  int64_t n = 0;
  std::vector<float*> rmw;
  std::vector<const float*> ro;
  std::array<float, 64> sinks{};  // one per part: the read-only pattern's result
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake;
  uint64_t generation = 0;  // guarded by mutex; also read with a spin below
  std::atomic<uint64_t> posted{0};
  std::atomic<int> pending{0};
  bool stop = false;  // guarded by mutex
  int active_threads = 1;

  void part(int index, int parts) {
    const int64_t begin = n * index / parts, end = n * (index + 1) / parts;
    probe_range(traffic.rmw_streams, traffic.ro_streams, rmw.data(), ro.data(),
                &sinks[static_cast<std::size_t>(index) % sinks.size()], begin, end);
  }
  void ensure_workers(int count) {
    while (static_cast<int>(workers.size()) < count) {
      const int index = static_cast<int>(workers.size()) + 1;
      workers.emplace_back([this, index] {
        uint64_t seen = 0;
        for (;;) {
          for (int i = 0; i < 4096 && posted.load(std::memory_order_acquire) == seen; ++i) {
          }
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait(lock, [&] { return stop || generation != seen; });
          if (stop) return;
          seen = generation;
          const int parts = active_threads;
          lock.unlock();
          if (index < parts) part(index, parts);
          pending.fetch_sub(1, std::memory_order_acq_rel);
        }
      });
    }
  }
};

Probe::Probe(Traffic traffic, int64_t bytes_per_stream) : impl_(std::make_unique<Impl>()) {
  if (traffic.rmw_streams < 0 || traffic.rmw_streams > 5 || traffic.ro_streams < 0 ||
      traffic.ro_streams > 4) {
    throw std::invalid_argument(
        fmt::format("the probe runs 0..5 read-write and 0..4 read-only streams, not {}+{}",
                    traffic.rmw_streams, traffic.ro_streams));
  }
  impl_->traffic = traffic;
  impl_->n = bytes_per_stream / 4;
  const std::size_t bytes = static_cast<std::size_t>(impl_->n) * 4 + 64;
  for (int k = 0; k < traffic.rmw_streams; ++k) {
    auto* p = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    std::fill_n(p, impl_->n, 1.0f);
    impl_->rmw.push_back(p);
  }
  for (int k = 0; k < traffic.ro_streams; ++k) {
    auto* p = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    std::fill_n(p, impl_->n, 0.001f);
    impl_->ro.push_back(p);
  }
}

Probe::~Probe() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (auto& t : impl_->workers) t.join();
  for (float* p : impl_->rmw) std::free(p);
  for (const float* p : impl_->ro) std::free(const_cast<float*>(p));
}

void Probe::run(int threads) {
  Impl& s = *impl_;
  threads = std::max(1, threads);
  if (threads == 1) {
    s.part(0, 1);
    return;
  }
  s.ensure_workers(threads - 1);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.active_threads = threads;
    s.pending.store(static_cast<int>(s.workers.size()), std::memory_order_relaxed);
    ++s.generation;
    s.posted.store(s.generation, std::memory_order_release);
  }
  s.wake.notify_all();
  s.part(0, threads);
  while (s.pending.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

int64_t Probe::bytes_per_pass() const {
  return impl_->n * 4 * (2 * impl_->traffic.rmw_streams + impl_->traffic.ro_streams);
}

}  // namespace mantissa::bench
