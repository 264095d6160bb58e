// The --comm grammar: fp32 | <type>[+sr][+ef], type names from octet::parse_data_type; and the
// --mode list.
#include <gtest/gtest.h>

#include "octet/error.h"
#include "train/comm_spec.h"

namespace octet {
namespace train {
namespace {

TEST(CommSpec, ParsesTheList) {
  const auto specs =
      parse_comm_list("fp32,dynamic,linear,dynamic4,dynamic+sr,dynamic+ef,static-tree");
  ASSERT_EQ(specs.size(), 7u);
  EXPECT_TRUE(specs[0].fp32);
  EXPECT_EQ(specs[3].type, DataType::kDynamic4);
  EXPECT_TRUE(specs[4].stochastic);
  EXPECT_TRUE(specs[5].error_feedback);
  EXPECT_EQ(specs[6].name(), "static_tree");
  EXPECT_EQ(parse_comm("linear+ef+sr").name(), "linear+sr+ef");
}

TEST(CommSpec, RejectsBadItems) {
  for (const char* bad : {"", "fp16", "fp32+sr", "dynamic+", "dynamic+sr+sr", "dynamic+xx",
                          "dynamic_unsigned", "fp32,fp32", "dynamic,,linear"})
    EXPECT_THROW(parse_comm_list(bad), Error) << bad;
}

TEST(ModeList, ParsesAndRejects) {
  EXPECT_EQ(parse_mode_list("hybrid,dp,mp"), (std::vector<std::string>{"hybrid", "dp", "mp"}));
  for (const char* bad : {"", "dp,", "dp,dp", "pp", "DP"})
    EXPECT_THROW(parse_mode_list(bad), Error) << bad;
}

}  // namespace
}  // namespace train
}  // namespace octet
