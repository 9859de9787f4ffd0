// The error value and result<T>.
#include <gtest/gtest.h>

#include "messages/result.hpp"

using namespace ingestd;

TEST(error, classes_render_as_stored_in_the_database) {
  EXPECT_EQ(to_string(error_class::transient), "transient");
  EXPECT_EQ(to_string(error_class::permanent), "permanent");
  EXPECT_EQ(to_string(error_class::claim_lost), "claim_lost");
  auto e = error::make_permanent("ocr.corrupt_file", "not a PDF");
  EXPECT_TRUE(e.permanent());
  EXPECT_EQ(e.describe(), "ocr.corrupt_file: not a PDF");
}

TEST(result, holds_a_value_or_an_error) {
  result<int> good{42};
  ASSERT_TRUE(good);
  EXPECT_EQ(*good, 42);
  result<int> bad{error::make_transient("http.timeout", "after 30 s")};
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().transient());
  result<void> done;
  EXPECT_TRUE(done);
  result<void> lost{error::make_claim_lost("fenced out")};
  EXPECT_TRUE(lost.error().claim_lost());
}
