// The whole public C++ API of mantissa.
#pragma once

#include "mantissa/dtype.h"
#include "mantissa/lowp.h"
#include "mantissa/mx.h"
#include "mantissa/ops/amp_update_scale.h"
#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "mantissa/ops/rms_norm.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "mantissa/ops/sgd.h"
#include "mantissa/reduce.h"
#include "mantissa/runtime.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"
