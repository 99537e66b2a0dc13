// The precision kit's case-file parser on arbitrary text: every input gives cases or error rows,
// never a crash, an exception or unbounded memory; parsed cases are checked against their
// operator's schema as `mantissa check` does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "precision/kit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  namespace pk = mantissa::precision;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const pk::LoadedCase& lc : pk::parse_case_text(text, "fuzz.json")) {
    if (!lc.spec) continue;
    if (const pk::OpEntry* op = pk::find_op(lc.spec->op)) {
      std::vector<int64_t> list_sizes;
      const pk::OpEntry instance = op->instantiate(*lc.spec, list_sizes);
      (void)pk::check_case_against_op(*lc.spec, instance);
    }
  }
  return 0;
}
