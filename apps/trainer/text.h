// Text corpora for the language model: bytes are tokens (V = 256). A file named by the user, or
// the default corpus: the fortune collections Debian's `fortunes` package installs, concatenated
// in file-name order. The first 90% of the bytes trains, the last 10% validates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/status.h"

namespace mantissa::trainer {

struct TextCorpus {
  std::string source;  // the file, or the directory of the default corpus
  int64_t files = 0;
  std::vector<uint8_t> train, validation;
};

// Where the default corpus is looked for.
std::string default_corpus_dir();

// `path` empty: the default corpus. Refused (161002, naming the file and the problem): a missing
// or unreadable file, an empty one, or one whose splits are shorter than context + 1 bytes.
Status load_text(const std::string& path, int64_t context, TextCorpus* out);

// Training windows: `batch` positions in [0, train.size() - context - 1] drawn from the seed and
// the step (the same batches on every machine and for every rank layout); tokens are the bytes
// at p .. p + context - 1, targets the bytes one further.
void training_batch(const TextCorpus& corpus, int64_t context, int64_t batch, uint64_t seed,
                    int64_t step, std::vector<int32_t>* tokens, std::vector<int32_t>* targets);

// The validation windows: `count` windows at evenly spaced positions over the validation split
// (fixed for a corpus and context), in batches of `batch`.
int64_t validation_windows(const TextCorpus& corpus, int64_t context, int64_t count);
void validation_batch(const TextCorpus& corpus, int64_t context, int64_t count, int64_t first,
                      int64_t batch, std::vector<int32_t>* tokens, std::vector<int32_t>* targets);

}  // namespace mantissa::trainer
