// The whole public C++ API of mantissa.
#pragma once

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/calibrate.h"
#include "mantissa/dtype.h"
#include "mantissa/lowp.h"
#include "mantissa/math.h"
#include "mantissa/mx.h"
#include "mantissa/ops.h"  // every operator (generated from include/mantissa/ops/)
#include "mantissa/optim.h"
#include "mantissa/reduce.h"
#include "mantissa/runtime.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"
