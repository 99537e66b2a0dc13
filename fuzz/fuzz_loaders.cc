// The file loaders of the tools on arbitrary bytes: .npy (mantissa calibrate) and CSV (mantissa
// train). Every input gives an array or a status, never a crash or a huge allocation. The first
// byte picks the loader.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "mantissa/calibrate.h"
#include "trainer/train.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const mantissa::fuzz::MemFile file(data + 1, size - 1);
  if (!file.ok()) return 0;
  if (data[0] & 1) {
    mantissa::calib::NpyArray a;
    (void)mantissa::calib::read_npy(file.path(), &a);
  } else {
    mantissa::train::Dataset d;
    mantissa::train::DataOptions o;
    o.spec = file.path();
    (void)mantissa::train::load_dataset(o, &d);
  }
  return 0;
}
