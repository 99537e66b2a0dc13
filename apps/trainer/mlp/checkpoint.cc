// Checkpoints of the data-parallel trainer (checkpoint.h): one file per rank, written whole and
// renamed into place, read back only when every field checks out.
#include "trainer/mlp/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace mantissa::train::detail {

namespace {

Status checkpoint_invalid(std::string message) {
  return {StatusCode::kParamInvalid, "train (distributed): " + std::move(message)};
}

constexpr char kMagic[8] = {'M', 'N', 'T', 'S', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 2;

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void bytes(const void* p, int64_t n) {
    put(n);
    if (n > 0) out_.append(static_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <class T>
  bool get(T* v) {
    if (at_ + sizeof(T) > s_.size()) return false;
    std::memcpy(v, s_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  // A block of exactly `expected` bytes into dst.
  bool bytes(void* dst, int64_t expected) {
    int64_t n = 0;
    if (!get(&n) || n != expected || at_ + static_cast<std::size_t>(n) > s_.size()) return false;
    if (n > 0) std::memcpy(dst, s_.data() + at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return true;
  }
  std::string text() {
    int64_t n = 0;
    if (!get(&n) || n < 0 || at_ + static_cast<std::size_t>(n) > s_.size()) return {};
    std::string t = s_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return t;
  }
  bool at_end() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  std::size_t at_ = 0;
};

Buffer* buffers_of(Parameter& p, int which) {
  switch (which) {
    case 0: return &p.var;
    case 1: return &p.working;
    case 2: return &p.m;
    case 3: return &p.v;
    default: return &p.compensation;
  }
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".ckpt")).string();
}

Status save_checkpoint(const std::string& dir, const CheckpointHeader& h,
                       const amp::DynamicLossScaler& scaler, Mlp& model,
                       const std::vector<std::vector<float>>& residuals) {
  Writer w;
  w.str().append(kMagic, sizeof(kMagic));
  w.put(kVersion);
  w.put(h);
  const std::string scaler_state = scaler.state();
  w.bytes(scaler_state.data(), static_cast<int64_t>(scaler_state.size()));
  w.put(static_cast<int64_t>(model.params().size()));
  for (Parameter& p : model.params()) {
    for (int b = 0; b < 5; ++b) {
      Buffer* buf = buffers_of(p, b);
      w.bytes(buf->data(), buf->bytes());
    }
  }
  w.put(static_cast<int64_t>(residuals.size()));
  for (const auto& r : residuals) w.bytes(r.data(), static_cast<int64_t>(r.size() * 4));
  w.put(fnv1a(w.str()));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = checkpoint_path(dir, static_cast<int>(h.rank));
  const std::string tmp = path + ".tmp";
  // Written whole to `tmp`, then renamed over `path`: a failure leaves the previous checkpoint as
  // it was, and removes the partial `tmp` this call created (never a file it could not open).
  bool opened = false, written = false;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    opened = f.is_open();
    f.write(w.str().data(), static_cast<std::streamsize>(w.str().size()));
    f.close();
    written = opened && !f.fail();
  }
  if (!written) {
    std::error_code ignored;
    if (opened) std::filesystem::remove(tmp, ignored);
    return {StatusCode::kRuntimeError, "train (distributed): cannot write checkpoint " + tmp};
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return {StatusCode::kRuntimeError,
            "train (distributed): cannot write checkpoint " + path + " (" + ec.message() + ")"};
  }
  return {};
}

// Reads and checks this rank's file against the run (`expect`: ranks, rank, mode, optimizer,
// zero, grad_comm, seed); restores the model, scaler and residuals only when all of it is valid.
Status load_checkpoint(const std::string& dir, const CheckpointHeader& expect,
                       amp::DynamicLossScaler* scaler, Mlp* model,
                       std::vector<std::vector<float>>* residuals, CheckpointHeader* got) {
  const std::string path = checkpoint_path(dir, static_cast<int>(expect.rank));
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    // Say why when rank 0's file tells: another rank count.
    std::ifstream first(checkpoint_path(dir, 0), std::ios::binary);
    char head[sizeof(kMagic) + 4 + sizeof(uint32_t)] = {};
    uint32_t ranks = 0;
    if (first.read(head, sizeof(head)) && std::memcmp(head, kMagic, sizeof(kMagic)) == 0) {
      std::memcpy(&ranks, head + sizeof(kMagic) + 4, sizeof(ranks));
    }
    if (ranks != 0 && ranks != expect.ranks) {
      return checkpoint_invalid("checkpoint " + dir + " was written by " + std::to_string(ranks) +
                                " ranks, this run has " + std::to_string(expect.ranks) + " (no " +
                                path + ")");
    }
    return checkpoint_invalid("checkpoint " + path + " cannot be read");
  }
  const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_checkpoint(s, path, expect, scaler, model, residuals, got);
}

Status parse_checkpoint(const std::string& s, const std::string& path,
                        const CheckpointHeader& expect, amp::DynamicLossScaler* scaler, Mlp* model,
                        std::vector<std::vector<float>>* residuals, CheckpointHeader* got) {
  auto corrupt = [&](const std::string& what) {
    return checkpoint_invalid("checkpoint " + path + " is corrupt: " + what);
  };
  if (s.size() < sizeof(kMagic) + 12 || std::memcmp(s.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("not a mantissa checkpoint");
  }
  uint64_t sum = 0;
  std::memcpy(&sum, s.data() + s.size() - 8, 8);
  const std::string body = s.substr(0, s.size() - 8);
  if (fnv1a(body) != sum) return corrupt("checksum mismatch");
  Reader r(body);
  char magic[8];
  uint32_t version = 0;
  CheckpointHeader h;
  for (char& c : magic) r.get(&c);
  if (!r.get(&version) || version != kVersion) {
    return corrupt("version " + std::to_string(version) + ", expected " + std::to_string(kVersion));
  }
  if (!r.get(&h)) return corrupt("truncated header");
  if (h.ranks != expect.ranks) {
    return checkpoint_invalid("checkpoint " + path + " was written by " + std::to_string(h.ranks) +
                              " ranks, this run has " + std::to_string(expect.ranks));
  }
  if (h.rank != expect.rank || h.mode != expect.mode || h.optimizer != expect.optimizer ||
      h.zero != expect.zero || h.grad_comm != expect.grad_comm || h.seed != expect.seed) {
    return checkpoint_invalid(
        "checkpoint " + path +
        " was written by another configuration (rank, precision mode, optimizer, "
        "--zero, --grad-comm or seed differ)");
  }
  if (h.config != expect.config) {
    return checkpoint_invalid(
        "checkpoint " + path +
        " was written with other options or data (model, optimizer settings, batch size, "
        "learning rate, bucket size, or the data after its split and scaling differ; only "
        "--epochs may change on resume)");
  }
  // The counters, which the checksum cannot vouch for (FNV-1a detects damage, not a crafted
  // file): none negative, the overflow steps and findings within the steps taken.
  if (h.epoch < 0 || h.optimizer_steps < 0 || h.steps < 0 || h.overflow_steps < 0 ||
      h.findings < 0 || h.optimizer_steps > h.steps || h.overflow_steps > h.steps) {
    return corrupt("counters out of range (epoch " + std::to_string(h.epoch) + ", steps " +
                   std::to_string(h.steps) + ", optimizer steps " +
                   std::to_string(h.optimizer_steps) + ", overflow steps " +
                   std::to_string(h.overflow_steps) + ", findings " + std::to_string(h.findings) +
                   ")");
  }
  const std::string scaler_state = r.text();
  amp::DynamicLossScaler restored = *scaler;
  if (Status st = restored.load_state(scaler_state); !st.ok()) {
    return corrupt("loss scaler state: " + st.message());
  }
  int64_t params = 0;
  if (!r.get(&params) || params != static_cast<int64_t>(model->params().size())) {
    return corrupt("parameter count differs from the model (other --hidden?)");
  }
  // Into copies first: the model is left unchanged on any error.
  std::vector<Parameter> copies(model->params().begin(), model->params().end());
  for (Parameter& p : copies) {
    for (int b = 0; b < 5; ++b) {
      Buffer* buf = buffers_of(p, b);
      if (!r.bytes(buf->data(), buf->bytes())) {
        return corrupt("parameter " + p.name + " does not match the model's shapes");
      }
    }
  }
  int64_t count = 0;
  if (!r.get(&count) || count != static_cast<int64_t>(residuals->size())) {
    return corrupt("error-feedback shard count differs");
  }
  std::vector<std::vector<float>> res = *residuals;
  for (auto& v : res) {
    if (!r.bytes(v.data(), static_cast<int64_t>(v.size() * 4))) return corrupt("error feedback");
  }
  if (!r.at_end()) return corrupt("trailing bytes");
  for (std::size_t i = 0; i < copies.size(); ++i) model->params()[i] = std::move(copies[i]);
  *scaler = std::move(restored);
  *residuals = std::move(res);
  *got = h;
  return {};
}

uint64_t checkpoint_checksum(const std::string& bytes) { return fnv1a(bytes); }

}  // namespace mantissa::train::detail
