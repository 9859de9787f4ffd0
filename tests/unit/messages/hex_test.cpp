// Unit tests of the one hex codec (messages/hex.hpp) that UUIDs and the AWS encodings share.
#include <string>

#include <gtest/gtest.h>

#include "messages/hex.hpp"

using namespace ingestd;

TEST(hex, reads_digits_of_either_case_and_nothing_else) {
  EXPECT_EQ(hex_value('0'), 0);
  EXPECT_EQ(hex_value('9'), 9);
  EXPECT_EQ(hex_value('a'), 10);
  EXPECT_EQ(hex_value('F'), 15);
  for (char c : std::string{"gG/:@`- \xff"})
    EXPECT_EQ(hex_value(c), -1) << c;
}

TEST(hex, writes_lower_case_unless_asked) {
  EXPECT_EQ(hex_digit(0), '0');
  EXPECT_EQ(hex_digit(11), 'b');
  EXPECT_EQ(hex_digit(11, true), 'B');
  EXPECT_EQ(hex_digit(0x1F), 'f'); // only the low four bits count
  EXPECT_EQ(hex_encode(std::string{"\x00\x7f\xab\xff", 4}), "007fabff");
  EXPECT_EQ(hex_encode(""), "");
}
