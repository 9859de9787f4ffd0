// UUID parsing, formatting and v7 generation.
#include <set>

#include <gtest/gtest.h>

#include "messages/uuid.hpp"

using ingestd::uuid;

TEST(uuid, parses_and_formats_canonical_text) {
  auto id = uuid::parse("0190F1B2-7C3D-7E4F-8A5B-6C7D8E9F0A1B");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->str(), "0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b");
  EXPECT_EQ(id->version(), 7);
  EXPECT_EQ(uuid::parse(id->str()), id);
}

TEST(uuid, rejects_everything_else) {
  for (auto text : {"", "not-a-uuid", "0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1",
                    "0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1bb", "0190f1b27c3d7e4f8a5b6c7d8e9f0a1b",
                    "0190f1b2-7c3d-7e4f-8a5b_6c7d8e9f0a1b", "0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1g",
                    " 0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1", "{0190f1b2-7c3d-7e4f-8a5b-6c7d8e9f0a}"})
    EXPECT_FALSE(uuid::parse(text)) << text;
}

TEST(uuid, v7_is_time_ordered_unique_and_well_formed) {
  std::set<uuid> seen;
  uuid previous;
  for (int i = 0; i < 10000; ++i) {
    auto id = uuid::v7();
    EXPECT_EQ(id.version(), 7);
    EXPECT_EQ(id.lo >> 62, 2u) << "RFC 9562 variant bits";
    EXPECT_TRUE(seen.insert(id).second);
    // The 48-bit millisecond prefix never goes backwards.
    EXPECT_GE(id.hi >> 16, previous.hi >> 16);
    previous = id;
  }
}

TEST(uuid, v7_timestamp_is_now) {
  auto id = uuid::v7();
  auto ms = static_cast<int64_t>(id.hi >> 16);
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  EXPECT_LE(std::abs(now - ms), 5000);
}

TEST(uuid, v4_has_version_and_variant) {
  auto id = uuid::v4();
  EXPECT_EQ(id.version(), 4);
  EXPECT_EQ(id.lo >> 62, 2u);
  EXPECT_FALSE(id.is_nil());
  EXPECT_TRUE(uuid{}.is_nil());
}
