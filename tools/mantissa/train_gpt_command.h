// `mantissa train --model gpt`: the transformer language model of docs/training_gpt.md trained
// on a text corpus in one or every precision mode, with a progress line, a JSONL log, an SVG of
// the validation curves and the loss scale, and with --compare a side-by-side table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/train_policy_command.h"
#include "trainer/train_distributed.h"

namespace mantissa::tool {

struct GptCommandOptions {
  std::string data;       // "" (the default corpus) or text:FILE
  std::string precision;  // modes, comma-separated
  bool compare = false;
  int64_t layers = 4, d_model = 128, heads = 4, context = 128, vocab = 256;
  std::string mlp = "gelu", norm = "layernorm";
  bool untie = false;
  int64_t steps = 300, eval_every = 50, eval_windows = 128, warmup = -1;
  int64_t batch_size = 16;
  int64_t micro_batches = 0;  // 0: the trainer's default
  double lr = 1e-3, weight_decay = 0.1, clip = 1.0;
  int64_t scale_growth_interval = 100;
  std::string optimizer_state;  // "" (moments in var's dtype) or fp32, bf16, int8, int4, fp8
  // The FP8 and MX modes: the MX scale rule, and delayed scaling's history and margin.
  std::string mx_scale_rule = "floor";
  int64_t amax_history = 1024;
  int64_t fp8_margin = 0;
  std::string save_checkpoint, resume;  // files (one mode)
  int64_t stop_after = 0;
  uint64_t seed = 0;
  int show_severity = 7;
  std::string log_path, plot_path;
  std::string export_init;  // a directory: each parameter's initial fp32 weights as NAME.npy
  std::string analyze_path, analyze_svg;  // --analyze: the precision analysis after training
  std::vector<std::string> policies;      // --policy FILE.json or preset:NAME, over the units
  PolicyToolOptions policy_tools;         // --sensitivity, --tradeoff, --suggest*
};

// With a communicator (--distributed under mpirun) every rank trains; `quiet` ranks (all but 0)
// write no files.
int run_train_gpt(const GptCommandOptions& o, train::Communicator* comm = nullptr,
                  bool quiet = false);

}  // namespace mantissa::tool
