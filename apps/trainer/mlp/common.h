// What the MLP trainer's files share: the trainer's status helpers, in its namespace.
#pragma once

#include "trainer/status.h"

namespace mantissa::train {

using trainer::invalid;

}  // namespace mantissa::train
