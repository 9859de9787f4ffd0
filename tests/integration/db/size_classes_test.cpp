// pg_repository's size classes (migration 011) on a fresh schema: intake's class, the small
// class giving up on an ingestion (record_failure with escalate), and a crash moving a small
// ingestion to the large class while its attempts keep counting toward the poison bound.
#include "tests/integration/db/repository_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::repository_test;

namespace {

std::optional<claimed_ingestion> claim_escalating(repository& repo, uuid id, uuid token, int32_t max_attempts = 3) {
  auto res = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
    repo.claim({claim_request{id, token, max_attempts, true}}, "w1", 300s, cb);
  });
  EXPECT_TRUE(res) << res.error().describe();
  return res ? res->at(0) : std::nullopt;
}

} // namespace

TEST_F(repository_test, intake_records_the_size_class_and_the_claim_answers_it) {
  auto req = intake(uuid::v4().str());
  req.size_class = "large";
  auto made = intake_repo->create_ingestion(req, 30s);
  ASSERT_TRUE(made) << made.error().describe();
  EXPECT_EQ(column(made->ingestion_id, "size_class"), "large");
  auto c = claim_one(made->ingestion_id, uuid::v4());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->size_class, "large");
  EXPECT_EQ(c->class_attempts_base, 0);
  EXPECT_EQ(column(new_ingestion(), "size_class"), "small");
}

TEST_F(repository_test, an_escalating_failure_moves_the_ingestion_to_the_large_class_in_progress) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  failure_record rec;
  rec.error = error::make_permanent("ocr.deadline", "too slow for the small class");
  rec.max_attempts = 1;  // neither the permanent error nor the count fails it: it moves
  rec.escalate = true;
  auto r = await<failure_outcome>([&](auto cb) { repo->record_failure({id, token}, rec, 0s, cb); });
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_FALSE(r->failed);
  EXPECT_EQ(r->attempt_count, 1);
  EXPECT_EQ(column(id, "status"), "in-progress");
  EXPECT_EQ(column(id, "size_class"), "large");
  EXPECT_EQ(column(id, "class_attempts_base"), "1");
  EXPECT_EQ(column(id, "claim_token IS NULL"), "t");
}

TEST_F(repository_test, a_crash_moves_a_small_ingestion_to_large_and_keeps_counting_to_poison) {
  auto id = new_ingestion();
  ASSERT_TRUE(claim_escalating(*repo, id, uuid::v4()));
  expire_lease(id);  // its holder died
  auto second = claim_escalating(*repo, id, uuid::v4());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->size_class, "large");
  EXPECT_EQ(second->attempt_count, 1);
  EXPECT_EQ(second->class_attempts_base, 1);
  expire_lease(id);  // and the large worker's too
  auto third = claim_escalating(*repo, id, uuid::v4());
  ASSERT_TRUE(third);
  EXPECT_EQ(third->attempt_count, 2);
  EXPECT_EQ(third->class_attempts_base, 1);  // already large: the base stays
  expire_lease(id);
  auto fourth = claim_escalating(*repo, id, uuid::v4());
  ASSERT_TRUE(fourth);
  EXPECT_TRUE(fourth->poisoned);  // the third crash of three: the bound holds across the move
  EXPECT_EQ(column(id, "status"), "failed");
  EXPECT_EQ(column(id, "error_class"), "poison");
}

TEST_F(repository_test, a_crash_without_classes_leaves_the_class_alone) {
  auto id = new_ingestion();
  ASSERT_TRUE(claim_one(id, uuid::v4()));
  expire_lease(id);
  auto again = claim_one(id, uuid::v4());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempt_count, 1);
  EXPECT_EQ(again->size_class, "small");
}
