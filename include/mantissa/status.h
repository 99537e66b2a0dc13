// Status codes (CANN's aclnn values) and a status carrying a message that names operator,
// argument and values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "mantissa/export.h"

namespace mantissa {

enum class StatusCode : int32_t {
  kSuccess = 0,
  kParamNullptr = 161001,      // ACLNN_ERR_PARAM_NULLPTR
  kParamInvalid = 161002,      // ACLNN_ERR_PARAM_INVALID
  kRuntimeError = 361001,      // ACLNN_ERR_RUNTIME_ERROR
  kInner = 561000,             // ACLNN_ERR_INNER
  kInferShape = 561001,        // ACLNN_ERR_INNER_INFERSHAPE_ERROR
  kTiling = 561002,            // ACLNN_ERR_INNER_TILING_ERROR
  kFindKernel = 561003,        // ACLNN_ERR_INNER_FIND_KERNEL_ERROR
  kCreateExecutor = 561101,    // ACLNN_ERR_INNER_CREATE_EXECUTOR
  kNotTransExecutor = 561102,  // ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR
  kInnerNullptr = 561103,      // ACLNN_ERR_INNER_NULLPTR
};

// Symbolic name of a code ("ACLNN_ERR_PARAM_INVALID"); "UNKNOWN" for other values.
MANTISSA_API const char* status_code_name(StatusCode code) noexcept;

// The result of an operator call. Default-constructed means success. Never thrown.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const noexcept { return code_ == StatusCode::kSuccess; }
  StatusCode code() const noexcept { return code_; }
  int32_t raw_code() const noexcept { return static_cast<int32_t>(code_); }
  const std::string& message() const noexcept { return message_; }

 private:
  StatusCode code_ = StatusCode::kSuccess;
  std::string message_;
};

}  // namespace mantissa
