// The OCTET_* configuration shared by the shims: defaults, every variable, bad values, the hash
// that ranks compare.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "shim_config.h"

namespace {

std::map<std::string, std::string> g_env;
const char* lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

octet_shim_config parse(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  octet_shim_config c;
  octet_shim_config_parse(&c, lookup);
  return c;
}

TEST(ShimConfig, DefaultsCompressTheGradientReductions) {
  const octet_shim_config c = parse({});
  EXPECT_TRUE(c.valid);
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.type, OCTET_TYPE_DYNAMIC);
  EXPECT_EQ(c.block, 2048u);  // resolved once, by the codec's rule
  EXPECT_EQ(c.min_bytes, 65536u);
  EXPECT_TRUE(octet_shim_config_wants(&c, OCTET_SHIM_OP_ALLREDUCE));
  EXPECT_TRUE(octet_shim_config_wants(&c, OCTET_SHIM_OP_IALLREDUCE));
  EXPECT_TRUE(octet_shim_config_wants(&c, OCTET_SHIM_OP_REDUCE_SCATTER_BLOCK));
  EXPECT_FALSE(octet_shim_config_wants(&c, OCTET_SHIM_OP_ALLGATHER));
  EXPECT_FALSE(octet_shim_config_wants(&c, OCTET_SHIM_OP_BCAST));
  EXPECT_FALSE(c.stochastic || c.error_feedback || c.shadow);
  EXPECT_STREQ(c.report, "");
}

TEST(ShimConfig, ReadsEveryVariable) {
  const octet_shim_config c = parse({{"OCTET_ENABLE", "1"},
                                     {"OCTET_OPS", " bcast , allgather"},
                                     {"OCTET_TYPE", "Linear"},
                                     {"OCTET_BLOCK", "4096"},
                                     {"OCTET_MIN_BYTES", "1M"},
                                     {"OCTET_STOCHASTIC", "true"},
                                     {"OCTET_ERROR_FEEDBACK", "on"},
                                     {"OCTET_SHADOW", "yes"},
                                     {"OCTET_PROGRESS", " Eager"},
                                     {"OCTET_POLICY", "Never "},
                                     {"OCTET_REPORT", "/tmp/r.json"},
                                     {"OCTET_CALIBRATION", "/tmp/curves.txt"},
                                     {"OCTET_SIMD_TARGET", "SCALAR"}});
  ASSERT_TRUE(c.valid) << c.error;
  EXPECT_EQ(c.type, OCTET_TYPE_LINEAR);
  EXPECT_EQ(c.block, 4096u);
  EXPECT_EQ(c.min_bytes, 1u << 20);
  EXPECT_TRUE(c.stochastic && c.error_feedback && c.shadow);
  EXPECT_STREQ(c.report, "/tmp/r.json");
  EXPECT_STREQ(c.calibration, "/tmp/curves.txt");
  EXPECT_EQ(c.progress, OCTET_SHIM_PROGRESS_EAGER);
  EXPECT_EQ(parse({}).progress, OCTET_SHIM_PROGRESS_THREAD);
  EXPECT_EQ(c.policy, OCTET_POLICY_NEVER);
  EXPECT_EQ(parse({}).policy, OCTET_POLICY_AUTO);
  EXPECT_EQ(parse({{"OCTET_POLICY", "always"}}).policy, OCTET_POLICY_ALWAYS);
  char ops[128];
  EXPECT_STREQ(octet_shim_ops_string(c.ops, ops, sizeof ops), "allgather,bcast");
  EXPECT_FALSE(octet_shim_config_wants(&c, OCTET_SHIM_OP_ALLREDUCE));
  EXPECT_TRUE(octet_shim_config_wants(&c, OCTET_SHIM_OP_BCAST));
}

TEST(ShimConfig, AllAndDisable) {
  octet_shim_config c = parse({{"OCTET_OPS", "all"}});
  for (int op = 0; op < OCTET_SHIM_OP_COUNT; ++op)
    EXPECT_TRUE(octet_shim_config_wants(&c, static_cast<octet_shim_op>(op)));
  c = parse({{"OCTET_OPS", "all"}, {"OCTET_ENABLE", "0"}});
  EXPECT_TRUE(c.valid);
  EXPECT_FALSE(octet_shim_config_wants(&c, OCTET_SHIM_OP_ALLREDUCE));
}

TEST(ShimConfig, BadValuesAreNamedAndInvalidateEverything) {
  const std::map<std::string, std::string> bad[] = {{{"OCTET_ENABLE", "2"}},
                                                    {{"OCTET_OPS", "allreduce,reduce"}},
                                                    {{"OCTET_OPS", "allreduce,"}},
                                                    {{"OCTET_TYPE", "int8"}},
                                                    {{"OCTET_BLOCK", "1000"}},
                                                    {{"OCTET_BLOCK", "32"}},
                                                    {{"OCTET_BLOCK", "131072"}},
                                                    {{"OCTET_MIN_BYTES", "-5"}},
                                                    {{"OCTET_MIN_BYTES", "12parsecs"}},
                                                    {{"OCTET_SHADOW", ""}},
                                                    {{"OCTET_STOCHASTIC", "maybe"}},
                                                    {{"OCTET_ERROR_FEEDBACK", "10"}},
                                                    {{"OCTET_PROGRESS", "lazy"}},
                                                    {{"OCTET_POLICY", "sometimes"}},
                                                    {{"OCTET_SIMD_TARGET", "AVX9"}},
                                                    {{"OCTET_SIMD_TARGET", "avx2"}},
                                                    {{"OCTET_SIMD_TARGET", "SCALAR SCALAR"}},
                                                    {{"OCTET_SIMD_TARGET", "SCAL"}}};
  for (const auto& env : bad) {
    const octet_shim_config c = parse(env);
    const std::string name = env.begin()->first;
    EXPECT_FALSE(c.valid) << name << "=" << env.begin()->second;
    EXPECT_NE(std::string(c.error).find(name), std::string::npos) << c.error;
    EXPECT_FALSE(octet_shim_config_wants(&c, OCTET_SHIM_OP_ALLREDUCE));
  }
}

TEST(ShimConfig, AgreedFieldsSeeWhatChangesDecisions) {
  auto hash = [](std::map<std::string, std::string> env) {
    const octet_shim_config c = parse(std::move(env));
    std::vector<int64_t> fields(OCTET_SHIM_CONFIG_FIELDS);
    octet_shim_config_fields(&c, fields.data());
    return fields;
  };
  const std::vector<int64_t> base = hash({});
  EXPECT_EQ(hash({}), base);
  EXPECT_EQ(hash({{"OCTET_MIN_BYTES", "64k"}}), base);  // same value, other spelling
  EXPECT_NE(hash({{"OCTET_MIN_BYTES", "1024"}}), base);
  EXPECT_NE(hash({{"OCTET_BLOCK", "4096"}}), base);
  EXPECT_NE(hash({{"OCTET_TYPE", "linear"}}), base);
  EXPECT_NE(hash({{"OCTET_OPS", "all"}}), base);
  EXPECT_NE(hash({{"OCTET_SHADOW", "1"}}), base);
  EXPECT_NE(hash({{"OCTET_PROGRESS", "eager"}}), base);
  EXPECT_NE(hash({{"OCTET_POLICY", "always"}}), base);
  EXPECT_NE(hash({{"OCTET_TYPE", "bogus"}}), base);
  // Only rank 0 writes the report, so the path may differ, but not whether there is one.
  EXPECT_EQ(hash({{"OCTET_REPORT", "/a"}}), hash({{"OCTET_REPORT", "/b"}}));
  EXPECT_NE(hash({{"OCTET_REPORT", "/a"}}), base);
  // Only a communicator's rank 0 reads the calibration, so with it: whether there is one.
  EXPECT_EQ(hash({{"OCTET_CALIBRATION", "/a"}}), hash({{"OCTET_CALIBRATION", "/b"}}));
  EXPECT_NE(hash({{"OCTET_CALIBRATION", "/a"}}), base);
  const octet_shim_config long_path = parse({{"OCTET_CALIBRATION", std::string(5000, 'x')}});
  EXPECT_FALSE(long_path.valid);
  EXPECT_NE(std::string(long_path.error).find("OCTET_CALIBRATION"), std::string::npos);
}

}  // namespace

namespace {

// The shim applies the library's rules, not copies of them: the size grammar for OCTET_BLOCK and
// OCTET_MIN_BYTES, the type's default block size, type names in any case.
TEST(ShimConfig, UsesTheLibrarysRules) {
  EXPECT_EQ(parse({{"OCTET_BLOCK", "4K"}}).block, 4096u);
  EXPECT_EQ(parse({{"OCTET_MIN_BYTES", "64 KiB"}}).min_bytes, 65536u);
  EXPECT_EQ(parse({{"OCTET_MIN_BYTES", "1.5K"}}).min_bytes, 1536u);
  EXPECT_FALSE(parse({{"OCTET_MIN_BYTES", "1.1K"}}).valid);
  EXPECT_EQ(parse({{"OCTET_TYPE", "dynamic4"}}).block, 128u);
  const octet_shim_config upper = parse({{"OCTET_TYPE", "Static-Tree"}});
  EXPECT_TRUE(upper.valid) << upper.error;
  EXPECT_EQ(upper.type, OCTET_TYPE_STATIC_TREE);
}

}  // namespace
