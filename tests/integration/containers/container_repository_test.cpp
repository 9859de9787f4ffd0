// The unpack stage's completion against PostgreSQL: a container's children are created with
// their ingestions and messages in the transaction that completes the container's ingestion; a
// lost claim leaves nothing; content the tenant already has creates nothing new; the document
// JSON and the documents list show parent and children.
#include <tuple>

#include <gtest/gtest.h>

#include "adapters/db/pg_container_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

class container_repository_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    intake = std::make_unique<pg_intake_repository>(db->url());
    repo = std::make_unique<pg_repository>(db->url());
  }

  void TearDown() override {
    containers.reset();
    repo.reset();
    intake.reset();
    postgres_test::TearDown();
  }

  void use_queues(bool via_outbox) {
    containers = std::make_unique<pg_container_repository>(db->url(), container_queues{"ingest-q", "unpack-q", via_outbox});
  }

  /// A submitted container, its unpack ingestion claimed: {ingestion, document, token}.
  std::tuple<uuid, uuid, uuid> claimed_container() {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = tenant;
    r.content_hash = uuid::v4().str();
    r.file_path = "documents/" + r.document_id.str() + ".zip";
    r.mime_type = "application/zip";
    r.uploaded_by = uuid::v4();
    r.stage = "unpack";
    auto made = intake->create_ingestion(r, 30s);
    EXPECT_TRUE(made) << made.error().describe();
    auto token = uuid::v7();
    auto got = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
      repo->claim({claim_request{made->ingestion_id, token, 3}}, "w1", 300s, cb);
    });
    EXPECT_TRUE(got && got->size() == 1 && got->front());
    return {made->ingestion_id, made->document_id, token};
  }

  static unpack_child child(const std::string& name, const std::string& hash, bool container = false) {
    unpack_child c;
    c.document_id = uuid::v7();
    c.ingestion_id = uuid::v7();
    c.content_hash = hash;
    c.file_path = "documents/" + c.document_id.str() + (container ? ".zip" : ".pdf");
    c.mime_type = container ? "application/zip" : "application/pdf";
    c.member_name = name;
    c.container = container;
    return c;
  }

  result<unpack_counts> complete(uuid id, uuid token, unpack_completion c) {
    return await<unpack_counts>([&](auto cb) { containers->complete_unpack({id, token}, std::move(c), cb); });
  }

  int64_t count(const std::string& sql, const std::vector<std::optional<std::string>>& params = {}) {
    return std::stoll(db->scalar(sql, params));
  }

  uuid tenant = uuid::v4();
  std::unique_ptr<pg_intake_repository> intake;
  std::unique_ptr<pg_repository> repo;
  std::unique_ptr<pg_container_repository> containers;
};

TEST_F(container_repository_test, children_are_created_with_ingestions_and_messages_in_the_completion) {
  use_queues(false);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  unpack_completion c;
  c.children = {child("a/one.pdf", "h1"), child("two.pdf", "h2"), child("inner.zip", "h3", true)};
  c.body_text = "Dear Bob, the invoices.";
  c.structured_data = R"({"container": {"kind": "zip", "members": 3}})";
  auto done = complete(id, token, c);
  ASSERT_TRUE(done) << done.error().describe();
  EXPECT_EQ(done->created, 3);
  EXPECT_EQ(done->known, 0);

  EXPECT_EQ(db->scalar("SELECT status FROM ingestion WHERE id = $1", {id.str()}), "completed");
  EXPECT_EQ(db->scalar("SELECT body_text FROM document WHERE id = $1", {parent.str()}), "Dear Bob, the invoices.");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {parent.str()}), "false");
  EXPECT_EQ(db->scalar("SELECT structured_data->'container'->>'kind' FROM document WHERE id = $1", {parent.str()}),
            "zip");
  // Each child: a document under the parent with its name and depth, one in-progress ingestion
  // with the parent's source, one message on its stage's queue.
  for (auto& ch : c.children) {
    auto row = db->query("SELECT parent_id::text, member_name, container_depth::text, tenant_id::text FROM document "
                         "WHERE id = $1", {ch.document_id.str()});
    ASSERT_EQ(row.size(), 1u) << ch.member_name;
    EXPECT_EQ(row[0][0], parent.str());
    EXPECT_EQ(row[0][1], ch.member_name);
    EXPECT_EQ(row[0][2], "1");
    EXPECT_EQ(row[0][3], tenant.str());
    EXPECT_EQ(db->scalar("SELECT status || '/' || stage FROM ingestion WHERE id = $1", {ch.ingestion_id.str()}),
              ch.container ? "in-progress/unpack" : "in-progress/ingest");
    EXPECT_EQ(count("SELECT count(*) FROM ingestion AS i JOIN ingestion AS p ON p.id = $2 "
                    "WHERE i.id = $1 AND i.uploaded_by = p.uploaded_by", {ch.ingestion_id.str(), id.str()}), 1);
    EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                    {ch.container ? "unpack-q" : "ingest-q", ch.ingestion_id.str()}), 1);
  }
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE event_id IS NULL"), 0);

  // The API's view: the parent lists its children; a child names its parent.
  auto json = intake->document_json(tenant, parent, 30s);
  ASSERT_TRUE(json && *json);
  EXPECT_NE((*json)->find("\"member_name\" : \"a/one.pdf\""), std::string::npos) << **json;
  EXPECT_NE((*json)->find(c.children[2].document_id.str()), std::string::npos);
  auto child_json = intake->document_json(tenant, c.children[0].document_id, 30s);
  ASSERT_TRUE(child_json && *child_json);
  EXPECT_NE((*child_json)->find("\"parent_id\" : \"" + parent.str() + "\""), std::string::npos) << **child_json;
  auto list = intake->documents_json(100, 30s);
  ASSERT_TRUE(list);
  EXPECT_NE(list->find("\"parent_id\" : \"" + parent.str() + "\""), std::string::npos) << *list;
}

TEST_F(container_repository_test, on_sqs_the_messages_go_through_the_outbox) {
  use_queues(true);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  unpack_completion c;
  c.children = {child("one.pdf", "o1"), child("nested.zip", "o2", true)};
  ASSERT_TRUE(complete(id, token, c));
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'ingest-q' AND body = $1",
                  {c.children[0].ingestion_id.str()}), 1);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'unpack-q' AND body = $1",
                  {c.children[1].ingestion_id.str()}), 1);
}

TEST_F(container_repository_test, a_lost_claim_leaves_nothing_behind) {
  use_queues(false);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  unpack_completion c;
  c.children = {child("one.pdf", "l1")};
  auto r = complete(id, uuid::v7(), c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().cls, error_class::claim_lost);
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {parent.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
  EXPECT_EQ(db->scalar("SELECT status FROM ingestion WHERE id = $1", {id.str()}), "in-progress");
  // The holder still completes it.
  ASSERT_TRUE(complete(id, token, c));
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {parent.str()}), 1);
}

TEST_F(container_repository_test, known_content_is_not_created_again_and_errors_go_to_review) {
  use_queues(false);
  uuid id1, parent1, token1;
  std::tie(id1, parent1, token1) = claimed_container();
  unpack_completion first;
  first.children = {child("one.pdf", "k1")};
  ASSERT_TRUE(complete(id1, token1, first));

  uuid id2, parent2, token2;
  std::tie(id2, parent2, token2) = claimed_container();
  unpack_completion second;
  second.children = {child("again.pdf", "k1"), child("new.pdf", "k2")};
  second.unpack_error = "after 2 members: truncated archive";
  auto r = complete(id2, token2, second);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->created, 1);
  EXPECT_EQ(r->known, 1);
  // The known document keeps its first parent.
  EXPECT_EQ(db->scalar("SELECT parent_id::text FROM document WHERE content_hash = 'k1' AND tenant_id = $1",
                       {tenant.str()}),
            parent1.str());
  EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE id = $1", {second.children[0].ingestion_id.str()}), 0);
  EXPECT_EQ(db->scalar("SELECT unpack_error FROM document WHERE id = $1", {parent2.str()}),
            "after 2 members: truncated archive");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {parent2.str()}), "true");
}

TEST_F(container_repository_test, depth_follows_the_nesting) {
  use_queues(false);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  auto d0 = await<int32_t>([&](auto cb) { containers->depth_of(parent, cb); });
  ASSERT_TRUE(d0);
  EXPECT_EQ(*d0, 0);
  unpack_completion c;
  c.children = {child("inner.zip", "d1", true)};
  ASSERT_TRUE(complete(id, token, c));
  auto d1 = await<int32_t>([&](auto cb) { containers->depth_of(c.children[0].document_id, cb); });
  ASSERT_TRUE(d1);
  EXPECT_EQ(*d1, 1);
}

TEST_F(container_repository_test, each_sweeper_net_rescues_its_own_stage) {
  use_queues(false);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  ASSERT_TRUE(await<void>([&](auto cb) { repo->release({id, token}, cb); }));
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour', message_seen_at = now() - interval '1 hour' "
            "WHERE id = $1", {id.str()});
  auto rescued = await<std::vector<stranded_ingestion>>([&](auto cb) { repo->rescue_stranded(60s, 10, cb); });
  ASSERT_TRUE(rescued);
  EXPECT_TRUE(rescued->empty());
  // The unpack stage's own net finds it, once (it is marked seen).
  auto mine = await<std::vector<uuid>>([&](auto cb) { containers->rescue_stranded(60s, 10, cb); });
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ(mine->front(), id);
  auto again = await<std::vector<uuid>>([&](auto cb) { containers->rescue_stranded(60s, 10, cb); });
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST_F(container_repository_test, the_unpack_net_leaves_a_container_whose_message_exists) {
  use_queues(false);
  uuid id, parent, token;
  std::tie(id, parent, token) = claimed_container();
  ASSERT_TRUE(await<void>([&](auto cb) { repo->release({id, token}, cb); }));
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour', message_seen_at = now() - interval '1 hour' "
            "WHERE id = $1", {id.str()});
  db->query("INSERT INTO queue_message (id, queue_name, body) VALUES (gen_random_uuid(), 'unpack-q', $1)",
            {id.str()});
  auto mine = await<std::vector<uuid>>([&](auto cb) { containers->rescue_stranded(60s, 10, cb); });
  ASSERT_TRUE(mine);
  EXPECT_TRUE(mine->empty());
}

} // namespace
