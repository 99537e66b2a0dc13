// The frame of every computing entry of the C++ API: the default floating-point environment for
// the whole call (core/fpenv.h), and an exception barrier. The C++ API promises not to throw:
// std::bad_alloc (a buffer the call needs and cannot get) and anything else thrown inside become
// 561000 (ACLNN_ERR_INNER) naming the operator. Entries allocate before they write, so such a
// failure leaves every output untouched.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "core/fpenv.h"
#include "mantissa/status.h"

namespace mantissa::detail {

// 561000 with "<op>: <what>"; without a message if even that cannot be allocated.
inline Status inner_error(std::string_view op, std::string_view what) noexcept {
  try {
    std::string message(op);
    message.append(": ").append(what);
    return Status(StatusCode::kInner, std::move(message));
  } catch (...) {
    return Status(StatusCode::kInner, std::string());
  }
}

template <class Body>
Status guarded_entry(std::string_view op, Body&& body) noexcept {
  const DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return inner_error(op, "out of memory for the call's scratch buffers");
  } catch (const std::exception& e) {
    return inner_error(op, e.what());
  } catch (...) {
    return inner_error(op, "unexpected exception");
  }
}

}  // namespace mantissa::detail
