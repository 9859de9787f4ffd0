// The unpack stage's completion against PostgreSQL: a container's children are created with their
// ingestions, work items and messages in the transaction that completes the container's work item;
// a lost claim, or a child's message the database refuses, leaves nothing; content the tenant
// already has creates nothing new; the depth of nested containers; the sweeper's net of the unpack
// stage; the document JSON and the documents list show parent and children.
#include <gtest/gtest.h>

#include "adapters/db/pg_container_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

const std::string ingest_q = "ingest-q";
const std::string unpack_q = "unpack-q";

class container_repository_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    intake = std::make_unique<pg_intake_repository>(db->url());
    work = std::make_unique<pg_work_repository>(db->url());
  }

  void TearDown() override {
    containers.reset();
    work.reset();
    intake.reset();
    postgres_test::TearDown();
  }

  void use_queues(bool via_outbox) {
    pg_container_options opts;
    opts.via_outbox = via_outbox;
    containers = std::make_unique<pg_container_repository>(db->url(), opts);
  }

  struct container {
    uuid ingestion;
    uuid document;
    claim_ref ref;
  };

  /// A submitted container (priority 15), its unpack work item claimed.
  container claimed_container() {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = tenant;
    r.content_hash = uuid::v4().str();
    r.file_path = "documents/" + r.document_id.str() + ".zip";
    r.mime_type = "application/zip";
    r.uploaded_by = uuid::v4();
    r.stage = "unpack";
    r.queue = unpack_q;
    r.priority = 15;
    auto made = intake->create_ingestion(r, 30s);
    EXPECT_TRUE(made) << made.error().describe();
    claim_request c;
    c.item = r.ingestion_id;
    c.token = uuid::v7();
    c.stage = "unpack";
    c.audit = true;
    auto got = await<std::vector<claim_answer>>([&](auto cb) { work->claim({c}, "w1", 300s, cb); });
    EXPECT_TRUE(got && got->size() == 1 && got->front().outcome == claim_outcome::granted);
    return {r.ingestion_id, r.document_id, claim_ref{r.ingestion_id, c.token}};
  }

  /// Claims the work item `item` of `stage` for worker "w2": its token.
  claim_ref claim(uuid item, const std::string& stage) {
    claim_request c;
    c.item = item;
    c.token = uuid::v7();
    c.stage = stage;
    c.audit = true;
    auto got = await<std::vector<claim_answer>>([&](auto cb) { work->claim({c}, "w2", 300s, cb); });
    EXPECT_TRUE(got && got->size() == 1 && got->front().outcome == claim_outcome::granted);
    return claim_ref{item, c.token};
  }

  int64_t cancel_events(uuid id, const std::string& outcome, const std::string& detail_has) {
    return count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'cancel' "
                 "AND outcome = $2 AND strpos(detail, $3) > 0",
                 {id.str(), outcome, detail_has});
  }

  static unpack_child child(const std::string& name, const std::string& hash,
                            bool is_container = false) {
    unpack_child c;
    c.document_id = uuid::v7();
    c.ingestion_id = uuid::v7();
    c.content_hash = hash;
    c.file_path = "documents/" + c.document_id.str() + (is_container ? ".zip" : ".pdf");
    c.mime_type = is_container ? "application/zip" : "application/pdf";
    c.member_name = name;
    c.stage = is_container ? "unpack" : "ingest";
    c.queue = is_container ? unpack_q : ingest_q;
    return c;
  }

  result<unpack_counts> complete(claim_ref ref, unpack_completion c) {
    work_outcome o{ref, {audit_event{ref.item, "complete", "ok", "", 3, "w1", 0}}};
    return await<unpack_counts>([&](auto cb) { containers->complete_unpack(o, std::move(c), cb); });
  }

  int64_t count(const std::string& sql,
                const std::vector<std::optional<std::string>>& params = {}) {
    return std::stoll(db->scalar(sql, params));
  }

  std::string row(uuid id, const std::string& table, const std::string& expr) {
    return db->scalar("SELECT (" + expr + ")::text FROM " + table + " WHERE id = $1", {id.str()});
  }

  uuid tenant = uuid::v4();
  std::unique_ptr<pg_intake_repository> intake;
  std::unique_ptr<pg_work_repository> work;
  std::unique_ptr<pg_container_repository> containers;
};

TEST_F(container_repository_test,
       children_are_created_with_their_work_and_messages_in_the_completion) {
  use_queues(false);
  auto p = claimed_container();
  unpack_completion c;
  c.children = {child("a/one.pdf", "h1"), child("two.pdf", "h2"), child("inner.zip", "h3", true)};
  c.body_text = "Dear Bob, the invoices.";
  c.structured_data = R"({"container": {"kind": "zip", "members": 3}})";
  auto done = complete(p.ref, c);
  ASSERT_TRUE(done) << done.error().describe();
  EXPECT_EQ(done->created, 3);
  EXPECT_EQ(done->known, 0);

  EXPECT_EQ(row(p.ingestion, "work_item", "status || ' ' || (claim_token IS NULL)"),
            "completed true");
  EXPECT_EQ(row(p.ingestion, "ingestion", "status || ' ' || valid_structured_data"),
            "completed true");
  EXPECT_EQ(
      count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'complete'",
            {p.ingestion.str()}),
      1);
  EXPECT_EQ(row(p.document, "document", "body_text"), "Dear Bob, the invoices.");
  EXPECT_EQ(row(p.document, "document", "needs_human_review"), "false");
  EXPECT_EQ(row(p.document, "document", "structured_data->'container'->>'kind'"), "zip");
  // Each child: a document under the parent with its name and depth, one in-progress ingestion
  // with the parent's source, its work item of its stage with the parent's priority, one message
  // on its stage's queue.
  for (auto& ch : c.children) {
    SCOPED_TRACE(ch.member_name);
    EXPECT_EQ(row(ch.document_id, "document",
                  "parent_id || ' ' || member_name || ' ' || container_depth || ' ' || tenant_id"),
              p.document.str() + " " + ch.member_name + " 1 " + tenant.str());
    EXPECT_EQ(
        row(ch.ingestion_id, "ingestion",
            "status || ' ' || (source_metadata->>'channel') || ' ' || "
            "(source_metadata->>'parent_document_id') || ' ' || (source_metadata->>'file_name')"),
        "in-progress unpack " + p.document.str() + " " + ch.member_name);
    EXPECT_EQ(count("SELECT count(*) FROM ingestion AS i JOIN ingestion AS p ON p.id = $2 "
                    "WHERE i.id = $1 AND i.uploaded_by = p.uploaded_by",
                    {ch.ingestion_id.str(), p.ingestion.str()}),
              1);
    EXPECT_EQ(row(ch.ingestion_id, "work_item",
                  "stage || ' ' || status || ' ' || document_id || ' ' || tenant_id || ' ' || "
                  "priority || ' ' || size_class || ' ' || (claim_token IS NULL)"),
              ch.stage + " in-progress " + ch.document_id.str() + " " + tenant.str()
                  + " 15 small true");
    EXPECT_EQ(db->scalar("SELECT queue_name || ' ' || priority FROM queue_message WHERE body = $1",
                         {ch.ingestion_id.str()}),
              ch.queue + " 15");
  }
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE event_id IS NULL"), 0);
  // The stream: the parent completed, each child added and queued.
  auto events = [&](const std::string& type) {
    return count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                 "(body::jsonb)->>'type' = $1",
                 {type});
  };
  EXPECT_EQ(events("INGESTION_COMPLETED"), 1);
  EXPECT_EQ(events("DOCUMENT_ADDED"), 4);
  EXPECT_EQ(events("INGESTION_QUEUED"), 4);

  // The API's view: the parent lists its children; a child names its parent.
  auto json = intake->document_json(tenant, p.document, 30s);
  ASSERT_TRUE(json && *json);
  EXPECT_NE((*json)->find("\"member_name\" : \"a/one.pdf\""), std::string::npos) << **json;
  EXPECT_NE((*json)->find(c.children[2].document_id.str()), std::string::npos);
  auto child_json = intake->document_json(tenant, c.children[0].document_id, 30s);
  ASSERT_TRUE(child_json && *child_json);
  EXPECT_NE((*child_json)->find("\"parent_id\" : \"" + p.document.str() + "\""), std::string::npos)
      << **child_json;
  auto list = intake->documents_json(100, 30s);
  ASSERT_TRUE(list);
  EXPECT_NE(list->find("\"parent_id\" : \"" + p.document.str() + "\""), std::string::npos) << *list;
}

TEST_F(container_repository_test, on_sqs_the_messages_go_through_the_outbox) {
  use_queues(true);
  auto p = claimed_container();
  db->query("DELETE FROM queue_message");
  unpack_completion c;
  c.children = {child("one.pdf", "o1"), child("nested.zip", "o2", true)};
  ASSERT_TRUE(complete(p.ref, c));
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = $1 AND body = $2 AND "
                  "priority = 15",
                  {ingest_q, c.children[0].ingestion_id.str()}),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = $1 AND body = $2",
                  {unpack_q, c.children[1].ingestion_id.str()}),
            1);
}

TEST_F(container_repository_test, a_lost_claim_leaves_nothing_behind) {
  use_queues(false);
  auto p = claimed_container();
  unpack_completion c;
  c.children = {child("one.pdf", "l1")};
  c.body_text = "body";
  auto r = complete(claim_ref{p.ingestion, uuid::v7()}, c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().cls, error_class::claim_lost);
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {p.document.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {ingest_q}), 0);
  EXPECT_EQ(row(p.ingestion, "work_item", "status"), "in-progress");
  EXPECT_EQ(row(p.document, "document", "body_text IS NULL"), "true");
  EXPECT_EQ(count("SELECT count(*) FROM ingestion_event"), 0);
  // The holder still completes it.
  ASSERT_TRUE(complete(p.ref, c));
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {p.document.str()}), 1);
  // And only once.
  auto again = complete(p.ref, c);
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().claim_lost());
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {p.document.str()}), 1);
}

TEST_F(container_repository_test, a_childs_message_the_database_refuses_leaves_nothing_behind) {
  use_queues(false);
  auto p = claimed_container();
  db->query(
      "ALTER TABLE queue_message ADD CONSTRAINT test_no_ingest CHECK (queue_name <> 'ingest-q')");
  unpack_completion c;
  c.children = {child("nested.zip", "r1", true), child("one.pdf", "r2")};
  c.body_text = "body";
  auto r = complete(p.ref, c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "pg.23514") << r.error().describe();
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {p.document.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE body <> $1", {p.ingestion.str()}), 0);
  EXPECT_EQ(row(p.ingestion, "work_item", "status || ' ' || claim_token"),
            "in-progress " + p.ref.token.str());
  EXPECT_EQ(row(p.document, "document", "body_text IS NULL"), "true");
}

TEST_F(container_repository_test, known_content_is_not_created_again_and_errors_go_to_review) {
  use_queues(false);
  auto first = claimed_container();
  unpack_completion one;
  one.children = {child("one.pdf", "k1")};
  ASSERT_TRUE(complete(first.ref, one));

  auto second = claimed_container();
  unpack_completion two;
  two.children = {child("again.pdf", "k1"), child("new.pdf", "k2")};
  two.unpack_error = "after 2 members: truncated archive";
  auto r = complete(second.ref, two);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->created, 1);
  EXPECT_EQ(r->known, 1);
  // The known document keeps its first parent, and gets no ingestion, work or message.
  EXPECT_EQ(db->scalar(
                "SELECT parent_id::text FROM document WHERE content_hash = 'k1' AND tenant_id = $1",
                {tenant.str()}),
            first.document.str());
  auto known = two.children[0].ingestion_id.str();
  EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE id = $1", {known}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE id = $1", {known}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE body = $1", {known}), 0);
  EXPECT_EQ(row(second.document, "document", "unpack_error"), "after 2 members: truncated archive");
  EXPECT_EQ(row(second.document, "document", "needs_human_review"), "true");
  EXPECT_EQ(row(second.ingestion, "ingestion", "status || ' ' || valid_structured_data"),
            "completed false");
}

TEST_F(container_repository_test, load_answers_the_container_and_its_depth_in_the_nesting) {
  use_queues(false);
  auto p = claimed_container();
  auto d0 = await<container_details>([&](auto cb) { containers->load(p.ingestion, cb); });
  ASSERT_TRUE(d0) << d0.error().describe();
  EXPECT_EQ(d0->depth, 0);
  EXPECT_EQ(d0->mime_type, "application/zip");
  EXPECT_EQ(d0->file_path, "documents/" + p.document.str() + ".zip");
  unpack_completion c;
  c.children = {child("inner.zip", "d1", true)};
  ASSERT_TRUE(complete(p.ref, c));
  auto d1 = await<container_details>(
      [&](auto cb) { containers->load(c.children[0].ingestion_id, cb); });
  ASSERT_TRUE(d1);
  EXPECT_EQ(d1->depth, 1);
  EXPECT_EQ(d1->file_path, c.children[0].file_path);
  auto unknown = await<container_details>([&](auto cb) { containers->load(uuid::v7(), cb); });
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(unknown.error().permanent());
  EXPECT_EQ(unknown.error().code, "unpack.unknown");
}

TEST_F(container_repository_test, the_unpack_stages_net_revives_its_own_items_only) {
  use_queues(false);
  auto p = claimed_container();
  ASSERT_TRUE(await<void>([&](auto cb) { work->release(p.ref, std::chrono::seconds{0}, {}, cb); }));
  db->query("DELETE FROM queue_message");
  db->query("UPDATE work_item SET due_at = now() - interval '1 hour', message_seen_at = now() - "
            "interval '1 hour'");
  auto revive = [&](const std::string& stage, const std::string& queue) {
    auto r = await<int64_t>([&](auto cb) {
      work->revive(revive_request{stage, "", queue, 60s, 10}, cb);
    });
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : -1;
  };
  EXPECT_EQ(revive("ingest", ingest_q), 0);
  // The unpack stage's own net finds it, once (it is marked seen).
  EXPECT_EQ(revive("unpack", unpack_q), 1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                  {unpack_q, p.ingestion.str()}),
            1);
  db->query("DELETE FROM queue_message");
  EXPECT_EQ(revive("unpack", unpack_q), 0);
}

TEST_F(container_repository_test, the_unpack_net_leaves_a_container_whose_message_exists) {
  use_queues(false);
  auto p = claimed_container();
  ASSERT_TRUE(await<void>([&](auto cb) { work->release(p.ref, std::chrono::seconds{0}, {}, cb); }));
  db->query("UPDATE work_item SET due_at = now() - interval '1 hour', message_seen_at = now() - "
            "interval '1 hour'");
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                  {unpack_q, p.ingestion.str()}),
            1);
  auto r = await<int64_t>([&](auto cb) {
    work->revive(revive_request{"unpack", "", unpack_q, 60s, 10}, cb);
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 0);
}

TEST_F(container_repository_test,
       cancelling_a_container_cascades_to_its_unfinished_children_and_theirs) {
  use_queues(false);
  auto p = claimed_container();
  unpack_completion c;
  c.children = {child("running.pdf", "k1"), child("queued.pdf", "k2"), child("done.pdf", "k3"),
                child("nested.zip", "k4", true)};
  ASSERT_TRUE(complete(p.ref, c));
  auto& running = c.children[0];
  auto& queued = c.children[1];
  auto& done = c.children[2];
  auto& nested = c.children[3];
  // One child runs on another worker, one is finished, the nested container completed with a
  // child of its own still queued.
  auto running_ref = claim(running.ingestion_id, "ingest");
  auto done_ref = claim(done.ingestion_id, "ingest");
  ASSERT_TRUE(await<std::vector<result<void>>>([&](auto cb) {
    work->complete({work_outcome{done_ref, {}}}, cb);
  }));
  auto nested_ref = claim(nested.ingestion_id, "unpack");
  unpack_completion inner;
  inner.children = {child("deep.pdf", "k5")};
  ASSERT_TRUE(complete(nested_ref, inner));
  auto& deep = inner.children[0];
  // Another container's child is not touched.
  auto other = claimed_container();
  unpack_completion others;
  others.children = {child("other.pdf", "k6")};
  ASSERT_TRUE(complete(other.ref, others));

  auto r = intake->cancel_ingestion(p.ingestion, tenant, "test", 30s);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->outcome, cancel_outcome::finished);
  EXPECT_EQ(r->status, "completed");
  EXPECT_EQ(r->children_cancelled, 2);  // queued.pdf, deep.pdf
  EXPECT_EQ(r->children_cancelling, 1); // running.pdf
  auto status = [&](uuid id) { return row(id, "work_item", "status"); };
  EXPECT_EQ(status(p.ingestion), "completed");
  EXPECT_EQ(status(queued.ingestion_id), "cancelled");
  EXPECT_EQ(status(deep.ingestion_id), "cancelled");
  EXPECT_EQ(row(deep.ingestion_id, "ingestion", "status"), "cancelled");
  EXPECT_EQ(status(done.ingestion_id), "completed");
  EXPECT_EQ(status(nested.ingestion_id), "completed");
  EXPECT_EQ(status(others.children[0].ingestion_id), "in-progress");
  // The running child has a request its worker's heartbeat finds; its claim stands.
  EXPECT_EQ(row(running.ingestion_id, "work_item",
                "status || ' ' || (cancel_requested_at IS NOT NULL) || ' ' || "
                "(claim_token IS NOT NULL)"),
            "in-progress true true");
  auto asked = await<std::vector<uuid>>([&](auto cb) {
    work->cancel_requests({running.ingestion_id, others.children[0].ingestion_id}, cb);
  });
  ASSERT_TRUE(asked);
  EXPECT_EQ(*asked, std::vector<uuid>{running.ingestion_id});
  EXPECT_TRUE(await<void>([&](auto cb) { work->record_cancelled(running_ref, {}, cb); }));
  EXPECT_EQ(status(running.ingestion_id), "cancelled");
  // Each child's audit trail names the container; the events of the cancelled ones are there.
  auto container_id = p.ingestion.str();
  EXPECT_EQ(cancel_events(queued.ingestion_id, "cancelled", container_id), 1);
  EXPECT_EQ(cancel_events(deep.ingestion_id, "cancelled", container_id), 1);
  EXPECT_EQ(cancel_events(running.ingestion_id, "requested", container_id), 1);
  EXPECT_EQ(cancel_events(done.ingestion_id, "cancelled", ""), 0);
  EXPECT_EQ(count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                  "body::jsonb->>'type' = 'INGESTION_CANCELLED' AND "
                  "body::jsonb->>'ingestion_id' = ANY($1::text[])",
                  {"{" + queued.ingestion_id.str() + "," + deep.ingestion_id.str() + "}"}),
            2);
  // A queued child's message finds it final.
  auto a = await<std::vector<claim_answer>>([&](auto cb) {
    claim_request q;
    q.item = queued.ingestion_id;
    q.token = uuid::v7();
    q.stage = "ingest";
    work->claim({q}, "w3", 300s, cb);
  });
  ASSERT_TRUE(a);
  EXPECT_EQ(a->front().outcome, claim_outcome::finished);
  // Again: nothing left to cancel; another tenant sees no such ingestion.
  r = intake->cancel_ingestion(p.ingestion, tenant, "test", 30s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, cancel_outcome::finished);
  EXPECT_EQ(r->children(), 0);
  r = intake->cancel_ingestion(other.ingestion, uuid::v4(), "test", 30s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, cancel_outcome::not_found);
  EXPECT_EQ(status(others.children[0].ingestion_id), "in-progress");
}

TEST_F(container_repository_test,
       a_running_container_cancelled_before_its_completion_adds_no_child) {
  use_queues(false);
  auto p = claimed_container();
  auto r = intake->cancel_ingestion(p.ingestion, std::nullopt, "test", 30s);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->outcome, cancel_outcome::cancelling);
  EXPECT_EQ(r->children(), 0);
  unpack_completion c;
  c.children = {child("one.pdf", "c1"), child("nested.zip", "c2", true)};
  auto refused = complete(p.ref, c);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "work.cancelled") << refused.error().describe();
  EXPECT_EQ(count("SELECT count(*) FROM document WHERE parent_id = $1", {p.document.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE id <> $1", {p.ingestion.str()}), 0);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {ingest_q}), 0);
  EXPECT_EQ(row(p.ingestion, "work_item", "status || ' ' || (claim_token IS NOT NULL)"),
            "in-progress true");
  // The job records the cancellation instead, fenced by its claim.
  ASSERT_TRUE(await<void>([&](auto cb) { work->record_cancelled(p.ref, {}, cb); }));
  EXPECT_EQ(row(p.ingestion, "ingestion", "status"), "cancelled");
  EXPECT_EQ(intake->cancel_ingestion(p.ingestion, std::nullopt, "test", 30s)->outcome,
            cancel_outcome::already_cancelled);
}

} // namespace
