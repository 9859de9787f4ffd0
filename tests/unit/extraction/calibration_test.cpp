// Calibrated confidence (adapters/extraction/calibration): which fields of an extraction hold a
// value, the verdict against a threshold from the reviewed values per field and confidence, and
// the per-tenant copy of the reviews (adapters/db/tenant_cache) that the node reuses for a set
// time.
#include <gtest/gtest.h>

#include "adapters/extraction/calibration.hpp"

namespace ingestd {
namespace {

extraction invoice(const std::string& confidence = "high") {
  extraction x;
  x.structured_data = R"({"invoice_number":"INV-1","invoice_date":"2024-03-01","due_date":null,)"
                      R"("supplier_name":"","line_items":[],"total":119,"confidence":")"
                      + confidence + R"(","extraction_successful":true,"missing_fields":[]})";
  x.confidence = confidence;
  return x;
}

std::vector<field_reviews> reviewed(int64_t reviewed, int64_t total_kept) {
  return {{"high", "invoice_number", reviewed, reviewed},
          {"high", "invoice_date", reviewed, reviewed},
          {"high", "total", reviewed, total_kept},
          {"low", "total", 100, 100}};
}

TEST(calibration, only_fields_with_a_value_are_judged_and_the_flags_are_not_values) {
  EXPECT_EQ(valued_fields(invoice().structured_data),
            (std::vector<std::string>{"invoice_number", "invoice_date", "total"}));
  EXPECT_TRUE(valued_fields("not json").empty());
  EXPECT_TRUE(valued_fields("[1]").empty());
}

TEST(calibration, a_document_goes_through_when_every_field_reaches_the_threshold) {
  auto v = judge(invoice(), reviewed(50, 49), 0.95, 20);
  EXPECT_TRUE(v.through) << v.reason;
  EXPECT_TRUE(v.reason.empty());
}

TEST(calibration, the_field_that_falls_short_is_the_reason) {
  auto v = judge(invoice(), reviewed(50, 45), 0.95, 20);
  EXPECT_FALSE(v.through);
  EXPECT_EQ(v.reason, "calibration: total at confidence high kept in 45 of 50 reviews (0.90 < "
                      "review.auto_approve 0.95)");
}

TEST(calibration, too_few_reviews_at_the_extractors_confidence_send_it_to_a_person) {
  auto v = judge(invoice(), reviewed(5, 5), 0.95, 20);
  EXPECT_FALSE(v.through);
  EXPECT_EQ(v.reason, "calibration: invoice_number at confidence high has 5 reviews, fewer than "
                      "review.calibration_min_reviews 20");
  // Reviews at another confidence do not count: "low" has only the total reviewed.
  auto low = judge(invoice("low"), reviewed(50, 50), 0.95, 20);
  EXPECT_FALSE(low.through);
  EXPECT_NE(low.reason.find("invoice_number at confidence low has 0 reviews"), std::string::npos)
      << low.reason;
  // Nothing to judge is nothing to let through.
  extraction empty;
  empty.structured_data = "{}";
  EXPECT_FALSE(judge(empty, reviewed(50, 50), 0.5, 1).through);
}

/// A repository that answers when told to, counting its reads.
class held_reviews : public learning_repository {
public:
  int reads = 0;
  std::vector<callback<std::vector<field_reviews>>> pending;
  void reviews_of(uuid, callback<std::vector<field_reviews>> done) override {
    ++reads;
    pending.push_back(std::move(done));
  }
  void facts_of(uuid, callback<std::vector<supplier_fact>> done) override {
    done(std::vector<supplier_fact>{});
  }
  void answer(const result<std::vector<field_reviews>>& r) {
    auto p = std::move(pending);
    pending.clear();
    for (auto& cb : p)
      cb(r);
  }
};

struct calibration_cache : ::testing::Test {
  std::shared_ptr<held_reviews> db = std::make_shared<held_reviews>();
  std::chrono::steady_clock::time_point now{std::chrono::hours{1}};
  uuid tenant = uuid::v7();
  uuid other = uuid::v7();

  std::shared_ptr<confidence_calibration> make(double threshold) {
    confidence_calibration::settings s;
    s.threshold = threshold;
    s.tenants[other] = 0;
    s.min_reviews = 20;
    s.recheck = std::chrono::seconds{300};
    return confidence_calibration::make(s, db, [this] { return now; });
  }

  std::vector<result<calibration_verdict>> answers;
  void check(confidence_calibration& c, const uuid& t) {
    c.check(t, invoice(),
            [this](result<calibration_verdict> r) { answers.push_back(std::move(r)); });
  }
};

TEST_F(calibration_cache, no_threshold_anywhere_makes_no_calibration) {
  EXPECT_EQ(make(0), nullptr);
}

TEST_F(calibration_cache, callers_meanwhile_share_one_read_which_is_reused_until_it_is_too_old) {
  auto c = make(0.95);
  ASSERT_NE(c, nullptr);
  check(*c, tenant);
  check(*c, tenant);
  EXPECT_EQ(db->reads, 1);
  EXPECT_TRUE(answers.empty());
  db->answer(reviewed(50, 50));
  ASSERT_EQ(answers.size(), 2U);
  EXPECT_TRUE(answers[0] && answers[0]->through);
  EXPECT_TRUE(answers[1] && answers[1]->through);
  now += std::chrono::seconds{299};
  check(*c, tenant);
  EXPECT_EQ(db->reads, 1) << "still recent";
  ASSERT_EQ(answers.size(), 3U);
  now += std::chrono::seconds{1};
  check(*c, tenant);
  EXPECT_EQ(db->reads, 2) << "too old: read again";
  db->answer(reviewed(50, 40));
  ASSERT_EQ(answers.size(), 4U);
  EXPECT_FALSE(answers[3]->through);
}

TEST_F(calibration_cache, a_failed_read_is_an_error_and_the_next_call_reads_again) {
  auto c = make(0.95);
  check(*c, tenant);
  db->answer(error::make_transient("db.unavailable", "the database went away"));
  ASSERT_EQ(answers.size(), 1U);
  EXPECT_FALSE(answers[0]);
  check(*c, tenant);
  EXPECT_EQ(db->reads, 2);
  // Answered, so that no read is left holding the cache (and the cache its reader) at the end.
  db->answer(reviewed(50, 50));
  ASSERT_EQ(answers.size(), 2U);
  EXPECT_TRUE(answers[1] && answers[1]->through);
}

TEST_F(calibration_cache, a_tenant_without_a_threshold_goes_through_without_a_read) {
  auto c = make(0.95);
  EXPECT_DOUBLE_EQ(c->threshold_of(tenant), 0.95);
  EXPECT_DOUBLE_EQ(c->threshold_of(other), 0);
  check(*c, other);
  EXPECT_EQ(db->reads, 0);
  ASSERT_EQ(answers.size(), 1U);
  EXPECT_TRUE(answers[0] && answers[0]->through);
}

} // namespace
} // namespace ingestd
