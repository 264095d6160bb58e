// octet train's JSON read back (`--report`): the tables of the runs read equal the tables of the
// runs written, every field is checked with a message naming the file and the key, and files of
// earlier versions (without the fields added since) still read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "octet/error.h"
#include "train/report.h"

namespace octet {
namespace train {
namespace {

std::vector<RunResult> sample_runs() {
  std::vector<RunResult> runs;
  for (uint64_t seed : {1, 2})
    for (const char* comm : {"fp32", "dynamic"}) {
      RunResult r;
      r.mode = "mp";
      r.comm = comm;
      r.seed = seed;
      r.ranks = 3;
      r.fp32_reference_bytes = 1000000 * seed;
      r.params_hash = 0x0123456789abcdefULL + seed;
      for (int e = 1; e <= 2; ++e) {
        EpochResult ep;
        ep.epoch = e;
        ep.train_loss = 0.5 + 0.01 * e + 0.001 * double(seed);
        ep.test_error = 0.2 - 0.01 * e + (comm[0] == 'd' ? 0.003 : 0.0) * double(seed);
        ep.bytes_sent = comm[0] == 'd' ? 250000 * seed : 1000000 * seed;
        ep.steps = 10;
        ep.compute_seconds = 0.25;
        ep.comm_seconds = 0.125;
        ep.codec_seconds = comm[0] == 'd' ? 0.0625 : 0.0;
        ep.measure_seconds = comm[0] == 'd' ? 0.03125 : 0.0;
        ep.wait_seconds = 0.015625;
        ep.wall_seconds = 0.5;
        r.epochs.push_back(ep);
      }
      r.best_test_error = r.epochs.back().test_error;
      if (comm[0] == 'd') {
        ErrorSum s;
        s.abs_sum = 0.75 * double(seed);
        s.rel_sum = 12.5;
        s.count = 1000;
        s.nonzero = 500;
        s.original_sum = 30.0 * double(seed);
        r.errors["act layer 0"] = s;
      }
      runs.push_back(r);
    }
  return runs;
}

TEST(TrainReport, RunsReadBackGiveTheSameTables) {
  const std::vector<RunResult> runs = sample_runs();
  const std::vector<RunResult> back = from_json(to_json(runs, "octet train test"), "t.json");
  ASSERT_EQ(back.size(), runs.size());
  EXPECT_EQ(summary_table(back), summary_table(runs));
  EXPECT_EQ(error_table(back), error_table(runs));
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(back[i].mode, runs[i].mode);
    EXPECT_EQ(back[i].comm, runs[i].comm);
    EXPECT_EQ(back[i].seed, runs[i].seed);
    EXPECT_EQ(back[i].ranks, 3);
    EXPECT_EQ(back[i].params_hash, runs[i].params_hash);
    EXPECT_EQ(back[i].bytes_sent(), runs[i].bytes_sent());
    EXPECT_DOUBLE_EQ(back[i].step_seconds(), runs[i].step_seconds());
    ASSERT_EQ(back[i].epochs.size(), 2u);
    EXPECT_DOUBLE_EQ(back[i].epochs[1].wait_seconds, runs[i].epochs[1].wait_seconds);
    EXPECT_DOUBLE_EQ(back[i].epochs[1].measure_seconds, runs[i].epochs[1].measure_seconds);
    ASSERT_EQ(back[i].errors.size(), runs[i].errors.size());
    for (const auto& [k, e] : runs[i].errors) {
      EXPECT_EQ(back[i].errors.at(k).nonzero, e.nonzero);
      EXPECT_DOUBLE_EQ(back[i].errors.at(k).mean_rel(), e.mean_rel());
      ASSERT_TRUE(back[i].errors.at(k).l1_known());
      EXPECT_DOUBLE_EQ(back[i].errors.at(k).l1_rel(), e.l1_rel());
    }
  }
  // Combining two files' halves is the same as one file of all of them.
  const std::vector<RunResult> first(runs.begin(), runs.begin() + 2),
      second(runs.begin() + 2, runs.end());
  std::vector<RunResult> combined = from_json(to_json(first, "a"), "a.json");
  for (RunResult& r : from_json(to_json(second, "b"), "b.json")) combined.push_back(r);
  EXPECT_EQ(summary_table(combined), summary_table(runs));
}

// The message of from_json's error for `text`, or "" if it reads.
std::string error_of(const std::string& text) {
  try {
    from_json(text, "f.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(TrainReport, EveryFieldIsCheckedAndNamed) {
  const std::string good = to_json(sample_runs(), "x");
  ASSERT_EQ(error_of(good), "");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of("{").find("f.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("f.json: ranks: missing"), std::string::npos);
  EXPECT_NE(error_of(R"({"ranks": 2, "runs": {}})").find("runs: expected an array"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("\"mode\": \"mp\"", "\"mode\": \"tp\"")).find("runs[0].mode"),
            std::string::npos);
  EXPECT_NE(
      error_of(replaced("\"seed\": 1", "\"seed\": -1")).find("runs[0].seed: expected a whole"),
      std::string::npos);
  EXPECT_NE(error_of(replaced("\"test_error\": 0.19", "\"test_error\": 1.19"))
                .find("runs[0].epochs[0].test_error: out of range"),
            std::string::npos);
  // strtoull alone also takes a sign or leading blanks: "-000000000000001" read as 2^64 - 1.
  for (const char* hash : {"0123456789abcdfx", "-000000000000001", " 123456789abcdf0",
                           "+123456789abcdf0", "0x23456789abcdf0"})
    EXPECT_NE(error_of(replaced("\"params_fnv1a\": \"0123456789abcdf0\"",
                                std::string("\"params_fnv1a\": \"") + hash + "\""))
                  .find("runs[0].params_fnv1a"),
              std::string::npos)
        << hash;
  EXPECT_NE(error_of(replaced("\"steps\": 10", "\"steps\": \"10\""))
                .find("runs[0].epochs[0].steps: expected a number"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("\"nonzero_values\": 500", "\"nonzero_values\": 5000"))
                .find("nonzero_values: more than values"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("\"epochs\": [", "\"epochs\": [], \"x\": [")).find("runs[0].epochs"),
            std::string::npos);
}

TEST(TrainReport, FilesWithoutTheNewerFieldsRead) {
  std::string s = to_json(sample_runs(), "x");
  for (const char* key : {"\"measure_seconds\"", "\"wait_seconds\"", "\"nonzero_values\"",
                          "\"l1_rel_error\"", "\"mean_abs_exact\""}) {
    size_t at;
    while ((at = s.find(key)) != std::string::npos) {
      const size_t end = s.find_first_of(",\n}", at);
      const size_t before = s.find_last_not_of(" \n", at - 1);
      if (s[before] == '{')  // the object's first key: it and the comma after it
        s.erase(at, s.find_first_not_of(" \n", end + 1) - at);
      else  // the comma before the key, the key and its value
        s.erase(before, end - before);
    }
  }
  ASSERT_EQ(s.find("wait_seconds"), std::string::npos);
  const std::vector<RunResult> back = from_json(s, "old.json");
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[1].epochs[0].wait_seconds, 0.0);
  EXPECT_EQ(back[1].errors.at("act layer 0").nonzero, 1000u);  // every value counted
  EXPECT_FALSE(back[1].errors.at("act layer 0").l1_known());   // printed as "-"
  EXPECT_NE(error_table(back).find("     -  "), std::string::npos);
}

// The L1 relative error stays finite where the mean relative error is ruled by exact values near
// zero (error feedback sends them a residual); all-zero exact values leave it unknown.
TEST(ApproxError, L1RelativeErrorIgnoresTinyOriginals) {
  const float exact[3] = {1e-30f, 1.0f, -2.0f}, sent[3] = {1e-3f, 1.0f, -2.0f};
  ErrorSum e;
  e.add(exact, sent, 3);
  EXPECT_GT(e.mean_rel(), 1e20);
  EXPECT_NEAR(e.l1_rel(), 1e-3 / 3.0, 1e-9);
  ErrorSum zeros;
  const float none[2] = {0.0f, 0.0f}, residual[2] = {0.5f, 0.0f};
  zeros.add(none, residual, 2);
  EXPECT_FALSE(zeros.l1_known());
  ErrorSum exact_zeros;
  exact_zeros.add(none, none, 2);
  EXPECT_TRUE(exact_zeros.l1_known());
  EXPECT_EQ(exact_zeros.l1_rel(), 0.0);
  e.merge(exact_zeros);
  EXPECT_NEAR(e.l1_rel(), 1e-3 / 3.0, 1e-9);
}

}  // namespace
}  // namespace train
}  // namespace octet
