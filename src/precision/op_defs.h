// The operator entries of the kit's registry, one function per operator (see registry.cc).
#pragma once

#include "precision/kit.h"

namespace mantissa::precision {

OpEntry amp_update_scale_entry();
OpEntry sgd_entry();
OpEntry apply_adam_d_entry();

// Adds the C API backends (aclnn two-phase calls, op-by-name) to the entries that have them.
void add_compat_backends(std::map<std::string, OpEntry>& ops);

}  // namespace mantissa::precision
