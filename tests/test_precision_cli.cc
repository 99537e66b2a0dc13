// `mantissa check` end to end: table, summary line, repro lines, JSON report, exit status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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

TEST_F(CheckCli, PassingCasesExitZeroWithTheSummaryLine) {
  std::ofstream(dir_ / "cases" / "amp.json") << "[" << kGoodCase << "]";
  const fs::path json = dir_ / "report.json";
  const ToolRun r = check("--backend all --seed 3 --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\n3 passed, 0 failed\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("amp_grow"), std::string::npos);
  EXPECT_NE(r.out.find("max ulp"), std::string::npos);
  EXPECT_EQ(r.out.find("\r"), std::string::npos);  // no progress when stdout is not a terminal
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["summary"]["passed"], 3);
  EXPECT_EQ(doc["seed"], 3);
  EXPECT_EQ(doc["cases"].size(), 3u);
  EXPECT_EQ(doc["cases"][0]["outputs"][0]["name"], "updated_scale");
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

}  // namespace
