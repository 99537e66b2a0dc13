// Text corpora (text.h).
#include "trainer/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "trainer/rng.h"
#include "trainer/tensor.h"

namespace mantissa::trainer {

namespace fs = std::filesystem;

std::string default_corpus_dir() { return "/usr/share/games/fortunes"; }

namespace {

Status read_file(const fs::path& path, std::vector<uint8_t>* bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return invalid("train --data text:" + path.string() + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid("train --data text:" + path.string() + ": cannot be opened");
  bytes->insert(bytes->end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return invalid("train --data text:" + path.string() + ": read error");
  return {};
}

}  // namespace

Status load_text(const std::string& path, int64_t context, TextCorpus* out) {
  TextCorpus c;
  std::vector<uint8_t> all;
  if (path.empty()) {
    const fs::path dir = default_corpus_dir();
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(dir, ec)) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        // The collections: regular files without an extension (not the .dat indexes, not the
        // .u8 links).
        if (e.is_symlink() || !e.is_regular_file() || e.path().has_extension()) continue;
        files.push_back(e.path());
      }
    }
    if (files.empty()) {
      return invalid("train --model gpt: the default corpus (Debian's fortunes package, " +
                     dir.string() +
                     ") is not installed; run scripts/install-deps.sh main, or pass "
                     "--data text:FILE");
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      Status st = read_file(f, &all);
      if (!st.ok()) return st;
    }
    c.source = dir.string();
    c.files = static_cast<int64_t>(files.size());
  } else {
    Status st = read_file(path, &all);
    if (!st.ok()) return st;
    c.source = path;
    c.files = 1;
  }
  if (all.empty()) return invalid("train --data text:" + c.source + ": the file is empty");
  const auto n = static_cast<int64_t>(all.size());
  const int64_t split = n - n / 10;
  if (n / 10 < context + 1) {
    return invalid("train --data text:" + c.source + ": " + std::to_string(n) +
                   " bytes; the validation split (the last 10%) needs at least context + 1 = " +
                   std::to_string(context + 1) + " bytes, so the text needs " +
                   std::to_string(10 * (context + 1)) + " or more");
  }
  c.train.assign(all.begin(), all.begin() + split);
  c.validation.assign(all.begin() + split, all.end());
  *out = std::move(c);
  return {};
}

namespace {

void window(const std::vector<uint8_t>& bytes, int64_t at, int64_t context, int32_t* tokens,
            int32_t* targets) {
  for (int64_t i = 0; i < context; ++i) {
    tokens[i] = bytes[static_cast<std::size_t>(at + i)];
    targets[i] = bytes[static_cast<std::size_t>(at + i + 1)];
  }
}

}  // namespace

void training_batch(const TextCorpus& corpus, int64_t context, int64_t batch, uint64_t seed,
                    int64_t step, std::vector<int32_t>* tokens, std::vector<int32_t>* targets) {
  tokens->resize(static_cast<std::size_t>(batch * context));
  targets->resize(tokens->size());
  const int64_t positions = static_cast<int64_t>(corpus.train.size()) - context;
  Rng rng(stream_seed(seed, 1'000'000 + static_cast<uint64_t>(step)));
  for (int64_t b = 0; b < batch; ++b) {
    window(corpus.train, rng.below(positions), context, tokens->data() + b * context,
           targets->data() + b * context);
  }
}

int64_t validation_windows(const TextCorpus& corpus, int64_t context, int64_t count) {
  const int64_t positions = static_cast<int64_t>(corpus.validation.size()) - context;
  return std::min(count, positions);
}

void validation_batch(const TextCorpus& corpus, int64_t context, int64_t count, int64_t first,
                      int64_t batch, std::vector<int32_t>* tokens, std::vector<int32_t>* targets) {
  tokens->resize(static_cast<std::size_t>(batch * context));
  targets->resize(tokens->size());
  const int64_t positions = static_cast<int64_t>(corpus.validation.size()) - context;
  for (int64_t b = 0; b < batch; ++b) {
    // Window k of count starts at floor(k * positions / count): evenly spaced, the last one
    // ending at the split's end at most.
    const int64_t k = first + b;
    const int64_t at = static_cast<int64_t>((static_cast<__int128>(k) * positions) / count);
    window(corpus.validation, at, context, tokens->data() + b * context,
           targets->data() + b * context);
  }
}

}  // namespace mantissa::trainer
