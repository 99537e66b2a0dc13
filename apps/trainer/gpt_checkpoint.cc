// GPT checkpoints (gpt_checkpoint.h).
#include "trainer/gpt_checkpoint.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace mantissa::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'A', 'N', 'T', 'G', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;

void put(std::string& out, const void* p, std::size_t n) {
  if (n > 0) out.append(static_cast<const char*>(p), n);  // an empty buffer may have no data
}
template <class T>
void put_value(std::string& out, T v) {
  put(out, &v, sizeof(T));
}
void put_text(std::string& out, const std::string& s) {
  put_value<uint64_t>(out, s.size());
  out += s;
}

// The buffers a parameter's step reads and writes, in the file's order.
template <class P>
auto buffers(P& p) {
  return std::vector{&p.var, &p.working, &p.m, &p.v, &p.compensation, &p.scale_m, &p.scale_v};
}

class Reader {
 public:
  Reader(const std::string& bytes, std::size_t end) : bytes_(bytes), end_(end) {}
  bool take(void* p, std::size_t n) {
    if (end_ - at_ < n) return false;
    if (n == 0) return true;  // an empty buffer may have no data
    std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  template <class T>
  bool value(T* v) {
    return take(v, sizeof(T));
  }
  bool text(std::string* s) {
    uint64_t n = 0;
    if (!value(&n) || n > end_ - at_) return false;
    s->assign(bytes_.data() + at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return true;
  }
  bool done() const { return at_ == end_; }

 private:
  const std::string& bytes_;
  std::size_t end_, at_ = 0;
};

}  // namespace

Status save_gpt_checkpoint(const std::string& path, const GptCheckpointHeader& h,
                           const amp::DynamicLossScaler& scaler, const Gpt& model) {
  std::string out;
  put(out, kMagic, sizeof kMagic);
  put_value(out, kVersion);
  put_value(out, h.config);
  for (int64_t v : {h.step, h.taken, h.overflow_steps, h.findings, h.stalled, h.weights_seen}) {
    put_value(out, v);
  }
  put_text(out, scaler.state());
  put_value<uint64_t>(out, model.params().size());
  for (const auto& p : model.params()) {
    for (const Tensor* t : buffers(*p)) {
      put_value<uint64_t>(out, static_cast<uint64_t>(t->bytes()));
      put(out, t->data(), static_cast<std::size_t>(t->bytes()));
    }
  }
  put_value<uint64_t>(out, model.gemms().size());
  for (const LowpGemm* g : model.gemms()) {
    const std::vector<std::string> states = g->state();
    put_value<uint64_t>(out, states.size());
    for (const std::string& s : states) put_text(out, s);
  }
  put_value(out, fnv1a(out.data(), out.size()));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f.flush()) return invalid("train --save-checkpoint: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return invalid("train --save-checkpoint: cannot rename " + tmp + " to " + path);
  }
  return {};
}

Status load_gpt_checkpoint(const std::string& path, uint64_t expect_config,
                           amp::DynamicLossScaler* scaler, Gpt* model, GptCheckpointHeader* got) {
  auto bad = [&](const std::string& why) { return invalid("train --resume " + path + ": " + why); };
  std::ifstream f(path, std::ios::binary);
  if (!f) return bad("cannot read the file");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic + sizeof(uint32_t) + sizeof(uint64_t) ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return bad("not a GPT checkpoint (magic MANTGPT1)");
  }
  const std::size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + body, sizeof sum);
  if (sum != fnv1a(bytes.data(), body)) return bad("checksum mismatch (a damaged file)");
  Reader r(bytes, body);
  char magic[8];
  uint32_t version = 0;
  GptCheckpointHeader h;
  r.take(magic, sizeof magic);
  if (!r.value(&version) || version != kVersion) {
    return bad("version " + std::to_string(version) + ", this build reads " +
               std::to_string(kVersion));
  }
  if (!r.value(&h.config)) return bad("truncated header");
  if (h.config != expect_config) {
    return bad("written by another run (model, precision, options or corpus differ)");
  }
  for (int64_t* v :
       {&h.step, &h.taken, &h.overflow_steps, &h.findings, &h.stalled, &h.weights_seen}) {
    if (!r.value(v)) return bad("truncated header");
  }
  // Everything is read into staging first; the model changes only when all of it is valid.
  std::string scaler_state;
  if (!r.text(&scaler_state)) return bad("truncated loss-scaler state");
  amp::DynamicLossScaler next_scaler = *scaler;
  if (Status st = next_scaler.load_state(scaler_state); !st.ok()) return bad(st.message());
  uint64_t count = 0;
  if (!r.value(&count) || count != model->params().size()) {
    return bad("holds " + std::to_string(count) + " parameters, the model has " +
               std::to_string(model->params().size()));
  }
  std::vector<std::vector<char>> staged;
  for (auto& p : model->params()) {
    for (Tensor* t : buffers(*p)) {
      uint64_t n = 0;
      if (!r.value(&n) || n != static_cast<uint64_t>(t->bytes())) {
        return bad(p->name + ": a buffer of " + std::to_string(n) +
                   " bytes where the model's has " + std::to_string(t->bytes()));
      }
      staged.emplace_back(static_cast<std::size_t>(n));
      if (!r.take(staged.back().data(), static_cast<std::size_t>(n))) {
        return bad(p->name + ": truncated");
      }
    }
  }
  uint64_t gemms = 0;
  if (!r.value(&gemms) || gemms != model->gemms().size()) {
    return bad("holds " + std::to_string(gemms) + " FP8/MX products, the model has " +
               std::to_string(model->gemms().size()));
  }
  std::vector<std::vector<std::string>> states(static_cast<std::size_t>(gemms));
  for (auto& s : states) {
    uint64_t n = 0;
    if (!r.value(&n) || n > 3) return bad("an FP8 scaling state count of " + std::to_string(n));
    s.resize(static_cast<std::size_t>(n));
    for (std::string& t : s) {
      if (!r.text(&t)) return bad("truncated FP8 scaling state");
    }
  }
  if (!r.done()) return bad("bytes after the last section");
  // Validate the FP8 states on copies, then commit everything.
  for (std::size_t i = 0; i < states.size(); ++i) {
    LowpGemm copy = *model->gemms()[i];
    if (Status st = copy.load_state(states[i]); !st.ok()) return bad(st.message());
  }
  for (std::size_t i = 0; i < states.size(); ++i) (void)model->gemms()[i]->load_state(states[i]);
  std::size_t k = 0;
  for (auto& p : model->params()) {
    for (Tensor* t : buffers(*p)) {
      const std::vector<char>& s = staged[k++];
      if (!s.empty()) std::memcpy(t->data(), s.data(), s.size());
    }
  }
  *scaler = std::move(next_scaler);
  *got = h;
  return {};
}

}  // namespace mantissa::trainer
