// The C API backends of the kit's registry (see registry.cc and op_schema.h).
#pragma once

#include "precision/kit.h"

namespace mantissa::precision {

// Adds the C API backends: op-by-name for every declared operator, aclnn for those CANN defines
// it for (FusedAdamw and FusedSgd included).
void add_compat_backends(std::map<std::string, OpEntry>& ops);

// FusedAdamw and FusedSgd, whose several lists the declarations do not describe: their entries
// (op_fused_optim.cc), and the tensors a backend has updated, `w` (the case's inputs after the
// call), in the kit's output order.
void add_fused_optim_ops(std::map<std::string, OpEntry>& ops);
std::vector<HostTensor> fused_optim_written(const std::string& op, const OpInputs& in,
                                            std::vector<HostTensor> w);

}  // namespace mantissa::precision
