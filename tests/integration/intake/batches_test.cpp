// Batches against the real PostgreSQL: members counted as their ingestions change state, the
// finish decided in the transaction of the last change (an ingestion's, or the seal's) with one
// BATCH_FINISHED carrying the counts, duplicates counted once, a retry that opens a finished batch
// again, the last two members finishing at once, and the HTTP intake's X-Batch,
// GET /v1/batches/{id} and POST /v1/batches/{id}/seal.
#include <filesystem>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

class batches_test : public ::testing::Test {
protected:
  void SetUp() override {
    db = std::make_unique<test::pg_schema>();
    root = test::make_temp_dir("batches");
    queue_name = test::unique_name("q");
    ASSERT_TRUE(create_postgres_queue(db->url(), queue_name, queue_name + "-dlq", 0));
    intake_options opts;
    opts.ingest_queue = queue_name;
    opts.stage_queues = {{"ingest", queue_name}};
    service = std::make_shared<intake_service>(std::make_shared<pg_intake_repository>(db->url()),
                                               std::make_shared<filesystem_store>(root), opts);
  }
  void TearDown() override { fs::remove_all(root); }

  /// Submits a corpus file (in `batch` when given); answers the ingestion id.
  std::string submit(const std::string& file, std::optional<uuid> batch,
                     intake_status expect = intake_status::created) {
    intake_item it;
    it.tenant_id = tenant;
    it.source.uploaded_by = uuid{};
    it.bytes = test::corpus_bytes(file);
    it.name = file;
    it.channel = "test";
    it.batch_id = batch;
    auto r = service->submit(it);
    EXPECT_TRUE(r) << (r ? "" : r.error().describe());
    if (!r)
      return {};
    EXPECT_EQ(r->status, expect) << file;
    return r->ingestion_id.str();
  }

  /// What a stage's completion does to the ingestion: its work item's final status (the trigger
  /// moves the ingestion), with the extraction's verdict first when `valid` is given.
  void finish(const std::string& ingestion, const std::string& status,
              std::optional<bool> valid = std::nullopt) {
    if (valid)
      db->query("UPDATE ingestion SET valid_structured_data = $2::boolean WHERE id = $1::uuid",
                {ingestion, *valid ? "true" : "false"});
    db->query("UPDATE work_item SET status = $2, completed_at = now(), claim_token = NULL "
              "WHERE id = $1::uuid",
              {ingestion, status});
  }

  batch_info get(uuid id) {
    auto b = service->batch(tenant, id);
    EXPECT_TRUE(b && *b);
    return b && *b ? **b : batch_info{};
  }

  int64_t events(const std::string& type) {
    return std::stoll(db->scalar(
        "SELECT count(*) FROM event_outbox WHERE destination = 'events' AND body::jsonb ->> "
        "'type' = $1",
        {type}));
  }

  /// The last BATCH_FINISHED event's payload field.
  std::string finished_field(const std::string& field) {
    return db->scalar("SELECT body::jsonb -> 'payload' ->> $1 FROM event_outbox "
                      "WHERE destination = 'events' AND body::jsonb ->> 'type' = 'BATCH_FINISHED' "
                      "ORDER BY id DESC LIMIT 1",
                      {field});
  }

  std::unique_ptr<test::pg_schema> db;
  std::string root, queue_name;
  uuid tenant = uuid::v4();
  std::shared_ptr<intake_service> service;
};

} // namespace

TEST_F(batches_test, a_batch_counts_its_members_and_finishes_with_the_last_change) {
  auto opened = service->open_batch(tenant, "Monday import");
  ASSERT_TRUE(opened) << opened.error().describe();
  EXPECT_EQ(opened->state, "open");
  EXPECT_EQ(events("BATCH_STARTED"), 1);
  auto batch = opened->id;

  auto a = submit("inv01_en_classic.pdf", batch);
  auto b = submit("inv02_de_modern.pdf", batch);
  auto c = submit("inv03_en_compact.pdf", batch);
  // The same file again in the same batch is no new member and no duplicate of it...
  submit("inv01_en_classic.pdf", batch, intake_status::duplicate);
  // ...a file the tenant had before the batch is.
  submit("inv04_de_classic_scan.jpg", std::nullopt);
  submit("inv04_de_classic_scan.jpg", batch, intake_status::duplicate);

  auto sealed = service->seal_batch(tenant, batch);
  ASSERT_TRUE(sealed && *sealed);
  EXPECT_EQ((*sealed)->state, "sealed");
  EXPECT_EQ((*sealed)->documents, 3);
  EXPECT_EQ((*sealed)->in_progress, 3);
  EXPECT_EQ((*sealed)->duplicates, 1);

  finish(a, "completed", true);
  finish(b, "completed", false);
  auto mid = get(batch);
  EXPECT_EQ(mid.state, "sealed");
  EXPECT_EQ(mid.in_progress, 1);
  EXPECT_EQ(mid.completed, 1);
  EXPECT_EQ(mid.for_review, 1);
  EXPECT_EQ(events("BATCH_FINISHED"), 0);

  finish(c, "failed");
  auto done = get(batch);
  EXPECT_EQ(done.state, "finished");
  EXPECT_FALSE(done.finished_at.empty());
  EXPECT_EQ(done.in_progress, 0);
  EXPECT_EQ(done.failed, 1);
  ASSERT_EQ(events("BATCH_FINISHED"), 1);
  EXPECT_EQ(finished_field("batch_id"), batch.str());
  EXPECT_EQ(finished_field("name"), "Monday import");
  EXPECT_EQ(finished_field("documents"), "3");
  EXPECT_EQ(finished_field("completed"), "1");
  EXPECT_EQ(finished_field("for_review"), "1");
  EXPECT_EQ(finished_field("failed"), "1");
  EXPECT_EQ(finished_field("duplicates"), "1");
  EXPECT_EQ(finished_field("in_progress"), "0");

  // A retry of the failed member opens the batch again; it finishes, and says so, once more.
  auto retried = service->retry(tenant, *uuid::parse(c), "test");
  ASSERT_TRUE(retried && retried->size() == 1);
  auto again = get(batch);
  EXPECT_EQ(again.state, "sealed");
  EXPECT_EQ(again.in_progress, 1);
  EXPECT_EQ(again.failed, 0);
  finish(c, "completed", true);
  EXPECT_EQ(get(batch).state, "finished");
  EXPECT_EQ(events("BATCH_FINISHED"), 2);
  EXPECT_EQ(finished_field("completed"), "2");
  EXPECT_EQ(finished_field("failed"), "0");

  // Listed, newest first, and scoped to its tenant.
  auto listed = service->batch(uuid::v4(), batch);
  ASSERT_TRUE(listed);
  EXPECT_FALSE(*listed);
  pg_intake_repository repo{db->url()};
  auto all = repo.list_batches(tenant, 10, 10s);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->front().name, "Monday import");
}

TEST_F(batches_test, a_batch_whose_members_finished_before_its_seal_finishes_at_the_seal) {
  auto batch = service->open_batch(tenant, "small");
  ASSERT_TRUE(batch);
  auto a = submit("inv01_en_classic.pdf", batch->id);
  finish(a, "completed", true);
  // Not sealed: more documents may come.
  EXPECT_EQ(get(batch->id).state, "open");
  EXPECT_EQ(events("BATCH_FINISHED"), 0);
  auto sealed = service->seal_batch(tenant, batch->id);
  ASSERT_TRUE(sealed && *sealed);
  EXPECT_EQ((*sealed)->state, "finished");
  EXPECT_EQ(events("BATCH_FINISHED"), 1);
  // Sealing again changes nothing; opening it by name again takes more documents.
  ASSERT_TRUE(service->seal_batch(tenant, batch->id));
  EXPECT_EQ(events("BATCH_FINISHED"), 1);
  auto reopened = service->open_batch(tenant, "small");
  ASSERT_TRUE(reopened);
  EXPECT_EQ(reopened->id, batch->id);
  submit("inv02_de_modern.pdf", batch->id);
  EXPECT_EQ(get(batch->id).in_progress, 1);
  EXPECT_NE(get(batch->id).state, "finished");
  // A bad name is refused; another tenant's id is not found.
  auto bad = service->open_batch(tenant, std::string{"tab\tname"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, errc::intake_invalid_batch);
  ASSERT_FALSE(service->open_batch(tenant, std::string(201, 'x')));
  auto other = service->seal_batch(uuid::v4(), batch->id);
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
}

TEST_F(batches_test, the_last_two_members_finishing_at_once_finish_the_batch_once) {
  auto batch = service->open_batch(tenant, "race");
  ASSERT_TRUE(batch);
  auto a = submit("inv01_en_classic.pdf", batch->id);
  auto b = submit("inv02_de_modern.pdf", batch->id);
  ASSERT_TRUE(service->seal_batch(tenant, batch->id));

  // The first completion holds the batch's row until it commits; the second waits for it, then
  // counts on the committed row and finishes the batch.
  constexpr pg::statement complete{"test_batch_complete",
                                   "UPDATE work_item SET status = 'completed' WHERE id = $1::uuid"};
  pg::connection first{db->url()}, second{db->url()};
  ASSERT_TRUE(first.exec_simple("BEGIN"));
  ASSERT_TRUE(first.exec(complete, {a}));
  auto later = std::async(std::launch::async, [&] { return second.exec(complete, {b}).ok(); });
  auto waiting = [&] {
    return db->scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                      "AND query LIKE 'UPDATE work_item SET status%'")
           == "1";
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!waiting() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(waiting());
  EXPECT_EQ(events("BATCH_FINISHED"), 0);
  ASSERT_TRUE(first.exec_simple("COMMIT"));
  ASSERT_TRUE(later.get());
  auto done = get(batch->id);
  EXPECT_EQ(done.state, "finished");
  EXPECT_EQ(done.completed, 2);
  EXPECT_EQ(events("BATCH_FINISHED"), 1);
}

TEST_F(batches_test, the_http_intake_takes_documents_into_a_batch_and_shows_and_seals_it) {
  intake_server_options opts;
  opts.default_tenant = tenant;
  intake_server server{service, opts};
  ASSERT_TRUE(server.start());
  httplib::Client client{"127.0.0.1", server.port()};
  auto post = [&](const std::string& file, const httplib::Headers& headers) {
    return client.Post("/v1/documents", headers, test::corpus_bytes(file), "application/pdf");
  };
  auto first = post("inv01_en_classic.pdf", {{"X-Batch", "upload 7"}});
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  auto key = std::string{R"("batch_id":")"};
  auto at = first->body.find(key);
  ASSERT_NE(at, std::string::npos) << first->body;
  auto id = first->body.substr(at + key.size(), 36);
  auto second = post("inv02_de_modern.pdf", {{"X-Batch", "upload 7"}});
  ASSERT_TRUE(second);
  EXPECT_NE(second->body.find(id), std::string::npos) << second->body;
  auto bad = post("inv03_en_compact.pdf", {{"X-Batch", std::string(300, 'b')}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("intake.invalid_batch"), std::string::npos);

  // The ingestion names its batch.
  auto ingestion = first->body.substr(first->body.find(R"("ingestion_id":")") + 16, 36);
  auto member = client.Get(("/v1/ingestions/" + ingestion).c_str());
  ASSERT_TRUE(member);
  EXPECT_NE(member->body.find(R"("batch_id" : ")" + id), std::string::npos) << member->body;

  auto shown = client.Get(("/v1/batches/" + id).c_str());
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->status, 200);
  EXPECT_NE(shown->body.find(R"("documents": 2)"), std::string::npos) << shown->body;
  EXPECT_NE(shown->body.find(R"("state": "open")"), std::string::npos) << shown->body;
  auto sealed = client.Post(("/v1/batches/" + id + "/seal").c_str());
  ASSERT_TRUE(sealed);
  EXPECT_EQ(sealed->status, 200);
  EXPECT_NE(sealed->body.find(R"("state": "sealed")"), std::string::npos) << sealed->body;
  EXPECT_EQ(client.Get(("/v1/batches/" + uuid::v4().str()).c_str())->status, 404);
  EXPECT_EQ(client.Get("/v1/batches/nope")->status, 400);
  server.stop();
}
