// The headers nearly every test parses, precompiled once for all of them (tests/CMakeLists.txt,
// MANTISSA_TEST_PCH). Each test file still includes what it uses.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "mantissa/mantissa.h"
#include "ops/all_ops.h"
#include "precision/kit.h"
#include "precision/op_schema.h"
