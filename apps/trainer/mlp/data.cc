// `mantissa train`'s data: the CSV(.gz) reader (zlib reads plain files too), the synthetic set,
// the stratified split and the per-column standardisation.
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trainer/mlp/common.h"
#include "trainer/mlp/rng.h"
#include "trainer/train.h"

namespace mantissa::train {
namespace {

// Rows as read: features row-major, raw labels, and the line read as a header.
struct RawData {
  int64_t features = 0;
  std::vector<double> x;
  std::vector<int64_t> labels;
  std::string header;
};

// Limits of what the reader holds: a line's length, and the values of the whole set (fp64 each).
constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;
constexpr int64_t kMaxValues = int64_t{1} << 28;  // 2 GiB of fp64

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// The whole field as a finite number (from_chars: no locale, no leading '+').
bool parse_number(std::string_view s, double* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*v);
}

// The CSV parser, fed one line at a time.
class CsvParser {
 public:
  CsvParser(const std::string& path, HeaderRule rule) : path_(path), rule_(rule) {}
  Status line(std::string_view text) {
    ++line_no_;
    const std::string_view line = trim(text);
    if (line.empty()) return {};
    const std::vector<std::string_view> fields = split_fields(line);
    std::vector<double> values(fields.size());
    std::size_t bad = fields.size();
    for (std::size_t i = 0; i < fields.size() && bad == fields.size(); ++i) {
      if (!parse_number(fields[i], &values[i])) bad = i;
    }
    if (first_) {
      first_ = false;
      // A header: kYes, or (kAuto) a line with a field that is not a number (scikit-learn's
      // files: "150,4,setosa,...") or the column names 0, 1, ..., n-1 that pandas writes.
      bool header = rule_ == HeaderRule::kYes;
      if (rule_ == HeaderRule::kAuto) {
        bool counting = bad == fields.size();
        for (std::size_t i = 0; counting && i < fields.size(); ++i) {
          counting = values[i] == static_cast<double>(i);
        }
        header = bad != fields.size() || (counting && fields.size() >= 2);
      }
      if (header) {
        raw_.header = std::string(line.substr(0, 200));
        return {};
      }
    }
    const std::string where = path_ + ":" + std::to_string(line_no_) + ":";
    if (raw_.features == 0) {
      if (fields.size() < 2) {
        return invalid(where + "1: a row needs at least one feature and a label, found " +
                       std::to_string(fields.size()) + " column");
      }
      raw_.features = static_cast<int64_t>(fields.size()) - 1;
    }
    if (static_cast<int64_t>(fields.size()) != raw_.features + 1) {
      // The first column too many, or the first one missing.
      const std::size_t column = fields.size() > static_cast<std::size_t>(raw_.features + 1)
                                     ? static_cast<std::size_t>(raw_.features + 2)
                                     : fields.size() + 1;
      return invalid(where + std::to_string(column) + ": expected " +
                     std::to_string(raw_.features + 1) + " columns, found " +
                     std::to_string(fields.size()));
    }
    if (bad != fields.size()) {
      return invalid(where + std::to_string(bad + 1) + ": not a finite number: '" +
                     std::string(fields[bad]) + "'");
    }
    const double label = values.back();
    if (label != std::floor(label) || label < 0 || label > 1e6) {
      return invalid(where + std::to_string(fields.size()) +
                     ": the label must be an integer in [0, 1000000], found '" +
                     std::string(fields.back()) + "'");
    }
    if (static_cast<int64_t>(raw_.x.size()) + raw_.features > kMaxValues) {
      return invalid(path_ + ": more than " + std::to_string(kMaxValues) +
                     " values (the training data is held in memory as fp64); stopped at line " +
                     std::to_string(line_no_));
    }
    raw_.x.insert(raw_.x.end(), values.begin(), values.end() - 1);
    raw_.labels.push_back(static_cast<int64_t>(label));
    return {};
  }
  int64_t line_no() const { return line_no_; }
  Status finish(RawData* out) {
    if (raw_.labels.empty()) return invalid(path_ + ": no data rows");
    *out = std::move(raw_);
    return {};
  }

 private:
  std::string path_;
  HeaderRule rule_;
  RawData raw_;
  int64_t line_no_ = 0;
  bool first_ = true;
};

// Reads the file (gzip-compressed or not: zlib reads plain files as they are) in blocks and hands
// each complete line to the parser, so memory follows the data kept, not the file's inflated
// size. A gzip stream that ends before its trailer (a truncated download, a partial copy) reads
// as far as it goes and then reports Z_BUF_ERROR, at the last gzread and again at gzclose: both
// are checked, so such a file is refused rather than trained on in part.
Status read_csv(const std::string& path, HeaderRule rule, RawData* out) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return invalid(path + ": cannot open");
  const auto failure = [&](int err, const std::string& what) {
    return invalid(path +
                   (err == Z_BUF_ERROR
                        ? ": truncated: the compressed data ends before its end (" + what + ")"
                        : ": read error: " + what));
  };
  CsvParser parser(path, rule);
  std::string pending;  // the current line's start, carried across blocks
  std::vector<char> buf(std::size_t{1} << 16);
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    int err = Z_OK;
    const char* what = gzerror(f, &err);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
      const Status st = failure(err, what != nullptr ? what : "unknown");
      gzclose(f);
      return st;
    }
    if (n == 0) break;
    std::string_view block(buf.data(), static_cast<std::size_t>(n));
    for (;;) {
      const std::size_t nl = block.find('\n');
      if (nl == std::string_view::npos) {
        pending.append(block);
        break;
      }
      Status st;
      if (pending.empty()) {
        st = parser.line(block.substr(0, nl));
      } else {
        pending.append(block.substr(0, nl));
        st = parser.line(pending);
        pending.clear();
      }
      if (!st.ok()) {
        gzclose(f);
        return st;
      }
      block.remove_prefix(nl + 1);
    }
    if (pending.size() > kMaxLineBytes) {
      gzclose(f);
      return invalid(path + ":" + std::to_string(parser.line_no() + 1) + ": a line longer than " +
                     std::to_string(kMaxLineBytes >> 20) + " MiB");
    }
  }
  if (const int err = gzclose(f); err != Z_OK) return failure(err, "at close");
  if (!pending.empty()) {
    if (Status st = parser.line(pending); !st.ok()) return st;
  }
  return parser.finish(out);
}

// Gaussian clusters: 4 classes, 16 features, centres drawn from N(0, 3^2), points N(centre, 1).
RawData synthetic(int64_t rows, uint64_t seed) {
  constexpr int64_t kClasses = 4, kFeatures = 16;
  detail::Rng rng(detail::stream_seed(seed, 1));
  std::vector<double> centres(kClasses * kFeatures);
  for (double& c : centres) c = 3.0 * rng.normal();
  RawData raw;
  raw.features = kFeatures;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = r % kClasses;
    for (int64_t f = 0; f < kFeatures; ++f) {
      raw.x.push_back(centres[label * kFeatures + f] + rng.normal());
    }
    raw.labels.push_back(label);
  }
  return raw;
}

}  // namespace

std::vector<std::string> digits_search_paths() {
  std::vector<std::string> paths;
  for (const char* dir : {"/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages",
                          "/usr/share/python3-sklearn"}) {
    paths.push_back(std::string(dir) + "/sklearn/datasets/data/digits.csv.gz");
  }
  return paths;
}

Status load_dataset(const DataOptions& o, Dataset* out) {
  if (!(o.test_fraction > 0.0 && o.test_fraction < 1.0)) {
    return invalid("test_fraction must be in (0, 1), got " + std::to_string(o.test_fraction));
  }
  RawData raw;
  std::string source = o.spec;
  if (o.spec.rfind("synthetic:", 0) == 0) {
    int64_t rows = 0;
    const std::string_view n = std::string_view(o.spec).substr(10);
    const auto r = std::from_chars(n.data(), n.data() + n.size(), rows);
    if (r.ec != std::errc() || r.ptr != n.data() + n.size() || rows < 8 || rows > 10000000) {
      return invalid("synthetic:N needs an integer N in [8, 10000000], got '" + o.spec + "'");
    }
    raw = synthetic(rows, o.seed);
  } else {
    if (source.empty()) {
      for (const std::string& p : digits_search_paths()) {
        if (std::filesystem::exists(p)) {
          source = p;
          break;
        }
      }
      if (source.empty()) {
        return invalid(
            "the digits set (python3-sklearn's digits.csv.gz) was not found; install "
            "python3-sklearn or give --data FILE");
      }
    }
    if (Status st = read_csv(source, o.header, &raw); !st.ok()) return st;
  }

  // Labels -> class indices in increasing label order.
  std::map<int64_t, int32_t> classes;
  for (int64_t l : raw.labels) classes.emplace(l, 0);
  if (classes.size() < 2) return invalid(source + ": needs at least 2 classes");
  int32_t next_class = 0;
  for (auto& [label, index] : classes) index = next_class++;

  // Stratified split: each class's rows shuffled from the seed, the first round(n * fraction)
  // (at least one, and leaving at least one for training when the class has two) go to test.
  const int64_t rows = static_cast<int64_t>(raw.labels.size());
  std::vector<std::vector<int64_t>> by_class(classes.size());
  for (int64_t r = 0; r < rows; ++r) by_class[classes[raw.labels[r]]].push_back(r);
  detail::Rng rng(detail::stream_seed(o.seed, 2));
  std::vector<int64_t> train_rows, test_rows;
  for (auto& members : by_class) {
    for (int64_t i = static_cast<int64_t>(members.size()) - 1; i > 0; --i) {
      std::swap(members[i], members[rng.below(i + 1)]);
    }
    const int64_t n = static_cast<int64_t>(members.size());
    int64_t n_test = std::llround(static_cast<double>(n) * o.test_fraction);
    n_test = std::clamp<int64_t>(n_test, n > 0 ? 1 : 0, n > 1 ? n - 1 : n);
    test_rows.insert(test_rows.end(), members.begin(), members.begin() + n_test);
    train_rows.insert(train_rows.end(), members.begin() + n_test, members.end());
  }
  if (train_rows.empty() || test_rows.empty()) {
    return invalid(source + ": too few rows to split into train and test (" + std::to_string(rows) +
                   " rows, " + std::to_string(classes.size()) + " classes)");
  }
  std::sort(train_rows.begin(), train_rows.end());
  std::sort(test_rows.begin(), test_rows.end());

  Dataset d;
  d.source = source;
  d.header = raw.header;
  d.features = raw.features;
  d.classes = static_cast<int64_t>(classes.size());
  const int64_t f = raw.features;
  // Standardisation with the training split's statistics (fp64, population deviation).
  d.column_mean.assign(f, 0.0);
  d.column_scale.assign(f, 1.0);
  // A column with values beyond 2^500 in magnitude is first scaled by a power of two (exact), so
  // that its sums cannot overflow fp64 (finite values near 1e308 gave NaN features); every other
  // column is computed exactly as written (scale 1).
  std::vector<double> pow2(static_cast<std::size_t>(f), 1.0);
  for (int64_t c = 0; c < f; ++c) {
    double top = 0.0;
    for (int64_t r = 0; r < rows; ++r) top = std::max(top, std::fabs(raw.x[r * f + c]));
    if (top > 0x1p500) pow2[c] = std::ldexp(1.0, -std::ilogb(top));
  }
  // Statistics in the scaled units (x * pow2), reported in the file's units.
  std::vector<double> mean_s(static_cast<std::size_t>(f)), sd_s(static_cast<std::size_t>(f));
  for (int64_t c = 0; c < f; ++c) {
    double sum = 0.0;
    for (int64_t r : train_rows) sum += raw.x[r * f + c] * pow2[c];
    const double mean = sum / static_cast<double>(train_rows.size());
    double ss = 0.0;
    for (int64_t r : train_rows) {
      ss += (raw.x[r * f + c] * pow2[c] - mean) * (raw.x[r * f + c] * pow2[c] - mean);
    }
    mean_s[c] = mean;
    sd_s[c] = std::sqrt(ss / static_cast<double>(train_rows.size()));
    d.column_mean[c] = mean / pow2[c];
    d.column_scale[c] = sd_s[c] > 0.0 ? sd_s[c] / pow2[c] : 1.0;
  }
  auto emit = [&](const std::vector<int64_t>& rows_of, std::vector<float>* x,
                  std::vector<int32_t>* y) {
    for (int64_t r : rows_of) {
      for (int64_t c = 0; c < f; ++c) {
        const double centred = raw.x[r * f + c] * pow2[c] - mean_s[c];
        x->push_back(static_cast<float>(centred / (sd_s[c] > 0.0 ? sd_s[c] : 1.0)));
      }
      y->push_back(classes[raw.labels[r]]);
    }
  };
  emit(train_rows, &d.x_train, &d.y_train);
  emit(test_rows, &d.x_test, &d.y_test);
  *out = std::move(d);
  return {};
}

}  // namespace mantissa::train
