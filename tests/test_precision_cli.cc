// `mantissa check` end to end: table, summary line, repro lines, JSON report, exit status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace mantissa::testing {

namespace {

namespace fs = std::filesystem;

const char* kGoodCase = R"({"id": "amp_grow", "name": "n", "op": "AmpUpdateScale", "version": "v",
  "standard": {"acc": {"bitwise": {}}}, "inputs": [
  {"name": "current_scale", "type": "tensor", "dtype": "fp16", "shape": [1],
   "range_values": {"name": "const", "value": 1024}},
  {"name": "growth_tracker", "type": "tensor", "dtype": "int32", "shape": [1],
   "range_values": {"name": "const", "value": 999}},
  {"name": "found_inf", "type": "tensor", "dtype": "fp16", "shape": [1],
   "range_values": {"name": "const", "value": 0}},
  {"name": "growth_factor", "type": "attr", "dtype": "fp64", "range_values": 2.0},
  {"name": "backoff_factor", "type": "attr", "dtype": "fp64", "range_values": 0.5},
  {"name": "growth_interval", "type": "attr", "dtype": "int64", "range_values": 1000}]})";

// The words of the first line of `out` that starts with `first`; empty if there is none.
std::vector<std::string> line_words(const std::string& out, const std::string& first) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(first + " ", 0) != 0) continue;
    std::istringstream words(line);
    std::vector<std::string> result;
    for (std::string w; words >> w;) result.push_back(w);
    return result;
  }
  return {};
}

struct ToolRun {
  int status = -1;
  std::string out;
};

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("MANTISSA_BINARY_DIR");
    tool_ = fs::path(bin ? bin : ".") / "mantissa";
    ASSERT_TRUE(fs::exists(tool_)) << tool_ << " is not built";
    dir_ = fs::temp_directory_path() / ("mantissa_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "cases");
  }
  void TearDown() override { fs::remove_all(dir_); }

  ToolRun check(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt";
    const std::string cmd = tool_.string() + " check --case-dir " + (dir_ / "cases").string() +
                            " " + args + " > " + out.string() + " 2>&1";
    ToolRun r;
    const int raw = std::system(cmd.c_str());
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    r.out = ss.str();
    return r;
  }

  fs::path tool_, dir_;
};

// An environment setting the library cannot honour is reported, and the tool refuses to run
// rather than silently running something else.
TEST_F(CheckCli, InvalidEnvironmentSettingsAreRefused) {
  for (const char* setting : {"MANTISSA_SIMD_TARGET=NO_SUCH_TARGET", "MANTISSA_NUM_THREADS=0",
                              "MANTISSA_NUM_THREADS=two", "MANTISSA_SIMD_TARGET=SCALAR_BF16"}) {
    const fs::path out = dir_ / "env.txt";
    const std::string cmd =
        std::string(setting) + " " + tool_.string() + " info > " + out.string() + " 2>&1";
    const int raw = std::system(cmd.c_str());
    EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 2) << setting;
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string name = std::string(setting).substr(0, std::string(setting).find('='));
    EXPECT_NE(ss.str().find("refusing to run: " + name), std::string::npos) << ss.str();
  }
  const std::string ok = "MANTISSA_SIMD_TARGET=SCALAR MANTISSA_NUM_THREADS=3 " + tool_.string() +
                         " info > /dev/null 2>&1";
  EXPECT_EQ(std::system(ok.c_str()), 0);
}

// MANTISSA_SIMD_TARGET holds for the whole process: after the tool has asked for the chosen
// target's name (as `info`, `bench` and `train` do in their headers), a dispatched call still
// runs that target.
TEST_F(CheckCli, TheEnvironmentsTargetIsWhatDispatchRuns) {
  auto info = [&](const std::string& env) {
    const fs::path out = dir_ / "info.txt";
    const std::string cmd = env + " " + tool_.string() + " info > " + out.string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << env;
    std::map<std::string, std::string> rows;
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream value(line.substr(colon + 1));
      std::string first;
      value >> first;
      rows[line.substr(0, colon)] = first;
      if (line.rfind("available targets:", 0) == 0)
        rows[line.substr(0, colon)] = line.substr(colon + 1);
    }
    return rows;
  };
  const auto all = info("");
  EXPECT_EQ(all.at("dispatch runs"), all.at("chosen target"));
  std::istringstream targets(all.at("available targets"));
  int forced = 0;
  for (std::string target; targets >> target; ++forced) {
    const auto rows = info("MANTISSA_SIMD_TARGET=" + target);
    EXPECT_EQ(rows.at("chosen target"), target);
    EXPECT_EQ(rows.at("dispatch runs"), target) << "MANTISSA_SIMD_TARGET=" << target;
  }
  EXPECT_GE(forced, 2);
}

TEST_F(CheckCli, PassingCasesExitZeroWithTheSummaryLine) {
  std::ofstream(dir_ / "cases" / "amp.json") << "[" << kGoodCase << "]";
  const fs::path json = dir_ / "report.json";
  const ToolRun r = check("--backend all --seed 3 --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\n3 passed, 0 failed\n"), std::string::npos) << r.out;
  // One line per operator: 1 case, 3 rows (one per backend), 3 passed, 0 failed, bit-exact.
  const std::vector<std::string> amp = line_words(r.out, "AmpUpdateScale");
  ASSERT_GE(amp.size(), 9u) << r.out;
  EXPECT_EQ(amp[1], "1") << r.out;
  EXPECT_EQ(amp[2], "3") << r.out;
  EXPECT_EQ(amp[3], "3") << r.out;
  EXPECT_EQ(amp[4], "0") << r.out;
  EXPECT_EQ(amp[6], "bitwise") << r.out;
  EXPECT_EQ(amp[7], "exact") << r.out;
  EXPECT_EQ(amp[8], "amp_grow") << r.out;
  EXPECT_EQ(r.out.find("max ulp"), std::string::npos) << r.out;  // the rows only with --rows
  EXPECT_EQ(r.out.find("\r"), std::string::npos);  // no progress when stdout is not a terminal
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["summary"]["passed"], 3);
  EXPECT_EQ(doc["seed"], 3);
  EXPECT_EQ(doc["cases"].size(), 3u);
  EXPECT_EQ(doc["cases"][0]["outputs"][0]["name"], "updated_scale");
  EXPECT_EQ(doc["cases"][0]["limit_used"], 0.0);
  // --rows: every row, with its errors.
  const ToolRun rows = check("--backend all --rows");
  EXPECT_EQ(rows.status, 0) << rows.out;
  EXPECT_NE(rows.out.find("max ulp"), std::string::npos) << rows.out;
  const std::vector<std::string> row = line_words(rows.out, "amp_grow");
  ASSERT_GE(row.size(), 4u) << rows.out;
  EXPECT_EQ(row[1], "AmpUpdateScale") << rows.out;
}

TEST_F(CheckCli, FailuresAndErrorRowsExitNonZeroWithRepro) {
  std::ofstream(dir_ / "cases" / "amp.json") << "[" << kGoodCase << "]";
  std::string wrong = kGoodCase;  // claims the kit's bitwise standard on a broken case file
  wrong.replace(wrong.find("\"amp_grow\""), 10, "\"amp_bad\"");
  wrong.replace(wrong.find("\"int32\""), 7, "\"fp32\"");
  std::ofstream(dir_ / "cases" / "bad.json") << "[" << wrong << ", {\"id\": 5}]";
  std::ofstream(dir_ / "cases" / "zz_not_json.json") << "{oops";
  const ToolRun r = check("");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("\n1 passed, 3 failed\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key 'inputs(growth_tracker).dtype': must be int32"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("case 5: key 'inputs': missing required key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("zz_not_json.json: not valid JSON"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("repro: mantissa check --case-dir " + (dir_ / "cases").string() +
                       " --case amp_bad --backend kernel --seed 0"),
            std::string::npos)
      << r.out;
  // The repro line runs that case alone.
  const ToolRun one = check("--case amp_grow --op AmpUpdateScale");
  EXPECT_EQ(one.status, 0) << one.out;
  EXPECT_NE(one.out.find("\n1 passed, 0 failed\n"), std::string::npos) << one.out;
}

TEST_F(CheckCli, NothingSelectedIsAnError) {
  std::ofstream(dir_ / "cases" / "amp.json") << "[" << kGoodCase << "]";
  const ToolRun r = check("--case no_such_case");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("0 passed, 0 failed"), std::string::npos) << r.out;
}

// The tool links only the shared library, so the environment variables set its thread count and
// SIMD target for the whole process. Every shipped case gives the same output digests for 1 and 3
// threads on every available target.
TEST_F(CheckCli, ShippedCasesGiveTheSameBitsOnEveryTargetAndThreadCount) {
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  const std::string cases = std::string(src ? src : ".") + "/cases";
  const fs::path info_out = dir_ / "info.txt";
  ASSERT_EQ(std::system((tool_.string() + " info > " + info_out.string()).c_str()), 0);
  std::ifstream info(info_out);
  std::vector<std::string> targets;
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("available targets:", 0) != 0) continue;
    std::istringstream words(line.substr(18));
    for (std::string t; words >> t;) targets.push_back(t);
  }
  ASSERT_FALSE(targets.empty());
  auto digests = [&](const std::string& target, int threads) {
    const fs::path json = dir_ / "digest.json";
    const std::string cmd = "MANTISSA_SIMD_TARGET=" + target +
                            " MANTISSA_NUM_THREADS=" + std::to_string(threads) + " " +
                            tool_.string() + " check --case-dir " + cases + " --json " +
                            json.string() + " > /dev/null 2>&1";
    [[maybe_unused]] const int status = std::system(cmd.c_str());
    std::ifstream in(json);
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::vector<std::string> out;
    for (const auto& c : doc["cases"]) {
      for (const auto& o : c["outputs"]) {
        out.push_back(c["id"].get<std::string>() + "/" + o["name"].get<std::string>() + "=" +
                      o["digest"].get<std::string>());
      }
    }
    return out;
  };
  const std::vector<std::string> reference = digests(targets.front(), 1);
  ASSERT_GT(reference.size(), 300u);
  for (const std::string& target : targets) {
    for (int threads : {1, 3}) {
      const std::vector<std::string> got = digests(target, threads);
      ASSERT_EQ(got.size(), reference.size()) << target << " " << threads;
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], reference[i]) << target << ", " << threads << " threads";
      }
    }
  }
}

}  // namespace

}  // namespace mantissa::testing
