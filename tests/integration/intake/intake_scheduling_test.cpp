// The HTTP intake's scheduling parts against the real PostgreSQL, the filesystem store
// and the Postgres queue, the server in-process: the priority of POST /v1/documents (header, form
// field, query) stored on the ingestion's work item and its queue message, bad priorities refused,
// and
// DELETE /v1/ingestions/{id} on a queued, a running, a finished and another tenant's ingestion.
#include <filesystem>

#include <gtest/gtest.h>
#include <httplib.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

std::string json_string(const std::string& body, const std::string& key) {
  auto k = "\"" + key + "\":\"";
  auto i = body.find(k);
  if (i == std::string::npos)
    return {};
  i += k.size();
  return body.substr(i, body.find('"', i) - i);
}

class intake_scheduling_test : public ::testing::Test {
protected:
  void SetUp() override {
    db = std::make_unique<test::pg_schema>();
    root = test::make_temp_dir("intake_sched");
    queue_name = test::unique_name("q");
    ASSERT_TRUE(create_postgres_queue(db->url(), queue_name, queue_name + "-dlq", 0));
    intake_options intake_opts;
    intake_opts.ingest_queue = queue_name;
    intake_opts.stage_queues = {{"ingest", queue_name}};
    auto service
        = std::make_shared<intake_service>(std::make_shared<pg_intake_repository>(db->url()),
                                           std::make_shared<filesystem_store>(root), intake_opts);
    intake_server_options opts;
    opts.default_tenant = tenant;
    server = std::make_unique<intake_server>(service, opts);
    ASSERT_TRUE(server->start());
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
  }
  void TearDown() override {
    client.reset();
    if (server)
      server->stop();
    server.reset();
    fs::remove_all(root);
  }

  /// POSTs a corpus file with `headers`; answers the ingestion id (empty on failure).
  std::string post(const std::string& file, const httplib::Headers& headers,
                   const std::string& path = "/v1/documents", int expect = 202) {
    auto r = client->Post(path.c_str(), headers, test::corpus_bytes(file), "application/pdf");
    EXPECT_TRUE(r);
    if (!r)
      return {};
    EXPECT_EQ(r->status, expect) << r->body;
    return json_string(r->body, "ingestion_id");
  }

  /// A column of the ingestion's row as text, named by a parameter ("" when NULL).
  std::string column(const std::string& id, const std::string& name) {
    return db->scalar("SELECT to_jsonb(i) ->> $2 FROM ingestion AS i WHERE i.id = $1::uuid",
                      {id, name});
  }
  /// A column of the ingestion's work item.
  std::string item(const std::string& id, const std::string& name) {
    return db->scalar("SELECT to_jsonb(w) ->> $2 FROM work_item AS w WHERE w.id = $1::uuid",
                      {id, name});
  }
  /// The metadata kept with the ingestion (source_metadata.metadata), as PostgreSQL writes it.
  std::string metadata_of(const std::string& id) {
    return db->scalar("SELECT source_metadata -> 'metadata' FROM ingestion WHERE id = $1::uuid",
                      {id});
  }

  std::unique_ptr<test::pg_schema> db;
  std::string root, queue_name;
  uuid tenant = uuid::v4();
  std::unique_ptr<intake_server> server;
  std::unique_ptr<httplib::Client> client;
};

} // namespace

TEST_F(intake_scheduling_test, the_priority_is_stored_on_the_work_item_and_its_message) {
  auto by_header = post("inv01_en_classic.pdf", {{"X-Priority", "5"}});
  auto by_query = post("inv02_de_modern.pdf", {}, "/v1/documents?priority=95");
  auto by_default = post("inv03_en_compact.pdf", {});
  ASSERT_FALSE(by_header.empty());
  EXPECT_EQ(item(by_header, "priority"), "5");
  EXPECT_EQ(item(by_query, "priority"), "95");
  EXPECT_EQ(item(by_default, "priority"), "50");
  EXPECT_EQ(db->scalar("SELECT priority FROM queue_message WHERE queue_name = $1 AND body = $2",
                       {queue_name, by_header}),
            "5");
  for (const char* bad : {"101", "-1", "high", "5.5", ""}) {
    if (std::string{bad}.empty())
      continue;
    auto r = client->Post("/v1/documents", {{"X-Priority", bad}},
                          test::corpus_bytes("inv04_de_classic.pdf"), "application/pdf");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << " " << r->body;
    EXPECT_NE(r->body.find("intake.invalid_priority"), std::string::npos) << r->body;
  }
}

TEST_F(intake_scheduling_test, metadata_is_kept_with_the_ingestion_and_shown_by_the_api) {
  auto by_header = post("inv01_en_classic.pdf",
                        {{"X-Metadata", R"({"po_number":"4711","cost centre":"A-12"})"}});
  ASSERT_FALSE(by_header.empty());
  EXPECT_EQ(metadata_of(by_header), R"({"po_number": "4711", "cost centre": "A-12"})");
  auto shown = client->Get(("/v1/ingestions/" + by_header).c_str());
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->status, 200);
  EXPECT_NE(shown->body.find(R"("metadata": {"po_number": "4711", "cost centre": "A-12"})"),
            std::string::npos)
      << shown->body;

  // The multipart form's field metadata, beside its file.
  httplib::MultipartFormDataItems form{
      {"file", test::corpus_bytes("inv02_de_modern.pdf"), "inv02.pdf", "application/pdf"},
      {"metadata", R"({"vendor_ref":"V-9"})", "", ""}};
  auto multipart = client->Post("/v1/documents", form);
  ASSERT_TRUE(multipart);
  ASSERT_EQ(multipart->status, 202) << multipart->body;
  EXPECT_EQ(metadata_of(json_string(multipart->body, "ingestion_id")), R"({"vendor_ref": "V-9"})");

  // Metadata that is not an object of text values is refused before anything is stored.
  auto before = db->scalar("SELECT count(*) FROM ingestion");
  for (const char* bad : {R"({"po_number":4711})", "po_number=4711", R"({"a":"x","a":"y"})"}) {
    auto r = client->Post("/v1/documents", {{"X-Metadata", bad}},
                          test::corpus_bytes("inv04_de_classic.pdf"), "application/pdf");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << " " << r->body;
    EXPECT_NE(r->body.find("intake.invalid_metadata"), std::string::npos) << r->body;
  }
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion"), before);
}

TEST_F(intake_scheduling_test, post_retry_runs_a_failed_ingestion_again_and_only_that) {
  auto id = post("inv01_en_classic.pdf", {});
  ASSERT_FALSE(id.empty());
  auto retry = [&](const std::string& ingestion, const httplib::Headers& headers = {}) {
    return client->Post(("/v1/ingestions/" + ingestion + "/retry").c_str(), headers, "",
                        "application/json");
  };
  // Nothing of it failed yet: 404, and nothing changes.
  auto r = retry(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_NE(r->body.find("intake.nothing_failed"), std::string::npos) << r->body;

  // Its stage failed (as a node records it after its last attempt).
  db->query("UPDATE work_item SET status = 'failed', attempt_count = 3, "
            "last_error = 'ocr.corrupt_file: broken', completed_at = now() WHERE id = $1::uuid",
            {id});
  db->query("UPDATE ingestion SET status = 'failed' WHERE id = $1::uuid", {id});
  auto messages = [&] {
    return db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                      {queue_name, id});
  };
  auto before = messages();
  // Another tenant's caller does not see it.
  r = retry(id, {{"X-Tenant-Id", uuid::v4().str()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_EQ(item(id, "status"), "failed");

  r = retry(id);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_NE(r->body.find(R"("stage":"ingest")"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find(R"("sent":true)"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("ocr.corrupt_file: broken"), std::string::npos) << r->body;
  EXPECT_EQ(item(id, "status"), "in-progress");
  EXPECT_EQ(item(id, "attempt_count"), "0");
  EXPECT_EQ(std::stoi(messages()), std::stoi(before) + 1);
  EXPECT_EQ(db->scalar("SELECT worker_id FROM ingestion_event WHERE ingestion_id = $1::uuid "
                       "AND step = 'retry'",
                       {id}),
            "http");
  // Once running again, a second retry has nothing to do.
  r = retry(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  r = retry("not-a-uuid");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

TEST_F(intake_scheduling_test,
       delete_cancels_queued_and_running_ingestions_and_refuses_finished_ones) {
  auto queued = post("inv01_en_classic.pdf", {});
  auto running = post("inv02_de_modern.pdf", {});
  auto finished = post("inv03_en_compact.pdf", {});
  ASSERT_FALSE(queued.empty());
  auto path = [](const std::string& id) { return "/v1/ingestions/" + id; };

  auto r = client->Delete(path(queued).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"status\":\"cancelled\""), std::string::npos) << r->body;
  EXPECT_EQ(column(queued, "status"), "cancelled");
  EXPECT_EQ(
      db->scalar(
          "SELECT worker_id FROM ingestion_event WHERE ingestion_id = $1::uuid AND step = 'cancel'",
          {queued}),
      "http");
  r = client->Delete(path(queued).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;

  // A worker holds it: the request is recorded, the job stops at its next step.
  pg_work_repository work{db->url()};
  claim_request request;
  request.item = *uuid::parse(running);
  request.token = uuid::v7();
  request.stage = "ingest";
  auto claimed = test::await<std::vector<claim_answer>>(
      [&](auto cb) { work.claim({request}, "w1", 300s, cb); });
  ASSERT_TRUE(claimed && claimed->at(0).outcome == claim_outcome::granted);
  r = client->Delete(path(running).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_NE(r->body.find("\"status\":\"cancelling\""), std::string::npos) << r->body;
  EXPECT_EQ(column(running, "status"), "in-progress");
  EXPECT_FALSE(item(running, "cancel_requested_at").empty()); // NOT NULL: asked to stop
  auto requested
      = test::await<std::vector<uuid>>([&](auto cb) { work.cancel_requests({request.item}, cb); });
  ASSERT_TRUE(requested);
  EXPECT_EQ(*requested, std::vector<uuid>{request.item});

  db->query("UPDATE work_item SET status = 'completed' WHERE id = $1::uuid", {finished});
  EXPECT_EQ(column(finished, "status"), "completed");
  r = client->Delete(path(finished).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
  EXPECT_NE(r->body.find("intake.already_finished"), std::string::npos) << r->body;

  // Another tenant's, unknown, malformed.
  r = client->Delete(path(running).c_str(), {{"X-Tenant-Id", uuid::v4().str()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  r = client->Delete(path(uuid::v7().str()).c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  r = client->Delete("/v1/ingestions/not-a-uuid");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}
