// Intake end to end on real services: one document and one stored object per (tenant, content)
// however often and however concurrently it is submitted, its work item and message written with
// it; bad files refused by name; a message lost after intake sent again by the real sweeper;
// `ingestd submit` over a directory of mixed files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <rapidjson/document.h>

#include "actors/sweeper.hpp"
#include "adapters/aws/encoding.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/http_server/credentials.hpp"
#include "adapters/ocr/document_source.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "stages/ingest/ingest_stage.hpp"
#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd {
namespace {

namespace fs = std::filesystem;
using test::pg_schema;

std::string read_all(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string corpus(const std::string& name) {
  return read_all(test::source_dir() + "/tests/fixtures/corpus/" + name);
}

class intake_test : public ::testing::Test {
protected:
  void SetUp() override {
    db = std::make_unique<pg_schema>();
    root = test::make_temp_dir("intake");
    queue_name = test::unique_name("q");
    q = std::make_shared<postgres_queue>(db->url(), queue_name);
    // What `ingestd queues create` makes, for the command-line submits.
    test::create_stage_queues(db->url(), queue_name);
    store = std::make_shared<filesystem_store>(root);
  }
  void TearDown() override { fs::remove_all(root); }

  /// A service with a repository (and so connections) of its own, as another process would have.
  std::unique_ptr<intake_service>
  make(size_t max_bytes = 20u << 20, std::chrono::seconds call_timeout = std::chrono::seconds{60}) {
    intake_options opts;
    opts.max_bytes = max_bytes;
    opts.call_timeout = call_timeout;
    opts.ingest_queue = queue_name;
    return std::make_unique<intake_service>(std::make_shared<pg_intake_repository>(db->url()),
                                            store, opts);
  }

  intake_item item(std::string bytes, uuid tenant, std::string name = "f.pdf") {
    intake_item it;
    it.tenant_id = tenant;
    it.source.uploaded_by = uploader;
    it.bytes = std::move(bytes);
    it.name = std::move(name);
    it.channel = "test";
    return it;
  }

  int64_t count(const std::string& sql) { return std::stoll(db->scalar(sql)); }

  /// The originals stored, of every tenant ("{tenant}/documents/...").
  int64_t stored_documents() {
    int64_t n = 0;
    for (auto& e : fs::recursive_directory_iterator(root))
      n += e.is_regular_file() && e.path().parent_path().filename() == "documents" ? 1 : 0;
    return n;
  }

  int64_t messages_for(const uuid& ingestion) {
    return std::stoll(
        db->scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND body = $2",
                   {queue_name, ingestion.str()}));
  }

  std::unique_ptr<pg_schema> db;
  std::string root, queue_name;
  std::shared_ptr<postgres_queue> q;
  std::shared_ptr<filesystem_store> store;
  uuid tenant_a = uuid::v7(), tenant_b = uuid::v7(), uploader = uuid::v7();
};

// One rule for both ends of the pipeline: every file the OCR provider can open, intake takes
// (including a PDF whose header follows some junk, which readers accept), and what intake
// refuses for its type, OCR refuses too.
TEST_F(intake_test, a_file_accepted_by_ocr_is_accepted_by_intake) {
  auto intake = make();
  std::vector<std::pair<std::string, std::string>> files;
  for (auto& e : fs::directory_iterator(test::source_dir() + "/tests/fixtures/corpus"))
    if (e.is_regular_file() && e.path().extension() != ".json")
      files.emplace_back(e.path().filename().string(), read_all(e.path().string()));
  files.emplace_back("junk_then.pdf", std::string(300, '\n') + corpus("inv03_en_compact.pdf"));
  files.emplace_back("text.txt", "just some text, not a document");
  int accepted = 0;
  for (auto& [name, bytes] : files) {
    auto opened = open_document(std::make_shared<const std::string>(bytes), "", document_limits{});
    auto taken = intake->submit(item(bytes, tenant_a, name));
    if (opened) {
      ++accepted;
      EXPECT_TRUE(taken) << name << ": " << taken.error().describe();
    } else if (opened.error().code == "ocr.unsupported_type") {
      ASSERT_FALSE(taken) << name;
      EXPECT_EQ(taken.error().code, "intake.unsupported_type") << name;
    }
  }
  EXPECT_GE(accepted, 20);
}

TEST_F(intake_test, new_file_is_stored_recorded_and_enqueued_and_again_is_a_duplicate) {
  auto intake = make();
  auto bytes = corpus("inv01_en_classic.pdf");
  auto first = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->status, intake_status::created);
  EXPECT_TRUE(first->enqueued);
  // Under the tenant's prefix.
  EXPECT_EQ(first->file_path, tenant_a.str() + "/documents/" + first->document_id.str() + ".pdf");
  EXPECT_EQ(read_all(root + "/" + first->file_path), bytes);
  EXPECT_EQ(messages_for(first->ingestion_id), 1);
  EXPECT_EQ(
      db->scalar("SELECT stage || ' ' || status || ' ' || priority FROM work_item WHERE id = $1",
                 {first->ingestion_id.str()}),
      "ingest in-progress 50");
  EXPECT_EQ(db->scalar("SELECT content_hash FROM document"), aws::sha256_hex(bytes));
  EXPECT_EQ(db->scalar("SELECT uploaded_by::text FROM ingestion"), uploader.str());
  EXPECT_EQ(db->scalar("SELECT source_metadata->>'file_name' FROM ingestion"), "f.pdf");

  auto again = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(again->status, intake_status::duplicate);
  EXPECT_EQ(again->document_id, first->document_id);
  EXPECT_EQ(again->ingestion_id, first->ingestion_id);
  EXPECT_EQ(again->ingestion_status, "in-progress");
  EXPECT_EQ(count("SELECT count(*) FROM document"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 1);
  EXPECT_EQ(stored_documents(), 1);
  EXPECT_EQ(messages_for(first->ingestion_id), 1);

  // Completed: still a duplicate, reported with the completed ingestion.
  db->query("UPDATE work_item SET status = 'completed', completed_at = now()");
  auto done = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, intake_status::duplicate);
  EXPECT_EQ(done->ingestion_status, "completed");
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 1);
}

TEST_F(intake_test, concurrent_submissions_of_one_file_make_one_document_and_one_object) {
  auto intake = make();
  auto bytes = corpus("inv02_de_modern.pdf");
  constexpr int clients = 8;
  std::vector<result<intake_outcome>> results(clients, error::make_transient("unset", ""));
  std::vector<std::thread> threads;
  threads.reserve(clients);
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&, i] { results[i] = intake->submit(item(bytes, tenant_a)); });
  for (auto& t : threads)
    t.join();
  int created = 0, duplicates = 0;
  for (auto& r : results) {
    ASSERT_TRUE(r) << r.error().describe();
    created += r->status == intake_status::created;
    duplicates += r->status == intake_status::duplicate;
    EXPECT_EQ(r->document_id, results[0]->document_id);
    EXPECT_EQ(r->ingestion_id, results[0]->ingestion_id);
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(duplicates, clients - 1);
  EXPECT_EQ(count("SELECT count(*) FROM document"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM work_item"), 1);
  EXPECT_EQ(stored_documents(), 1);
}

TEST_F(intake_test, concurrent_submissions_from_separate_services_are_serialised_by_the_database) {
  // Two intake services (as two processes would have) with their own connections.
  auto one = make(), two = make();
  auto bytes = corpus("inv03_en_compact.pdf");
  std::vector<result<intake_outcome>> results(6, error::make_transient("unset", ""));
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int i = 0; i < 6; ++i)
    threads.emplace_back(
        [&, i] { results[i] = (i % 2 ? one : two)->submit(item(bytes, tenant_a)); });
  for (auto& t : threads)
    t.join();
  for (auto& r : results)
    ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(count("SELECT count(*) FROM document"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 1);
  EXPECT_EQ(stored_documents(), 1);
}

TEST_F(intake_test, same_content_in_another_tenant_is_a_new_document) {
  auto intake = make();
  auto bytes = corpus("inv01_en_classic_scan.png");
  auto a = intake->submit(item(bytes, tenant_a, "a.png"));
  auto b = intake->submit(item(bytes, tenant_b, "b.png"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, intake_status::created);
  EXPECT_EQ(b->status, intake_status::created);
  EXPECT_NE(a->document_id, b->document_id);
  EXPECT_EQ(b->file_path, tenant_b.str() + "/documents/" + b->document_id.str() + ".png");
  EXPECT_EQ(count("SELECT count(*) FROM document"), 2);
  EXPECT_EQ(stored_documents(), 2);
}

TEST_F(intake_test, empty_oversized_unsupported_and_sourceless_files_are_refused_by_name) {
  auto intake = make(4096);
  auto empty = intake->submit(item("", tenant_a));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, "intake.empty");
  EXPECT_EQ(empty.error().cls, error_class::permanent);
  auto big = intake->submit(item("%PDF-1.4\n" + std::string(5000, 'x'), tenant_a));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "intake.too_large");
  auto text = intake->submit(item(corpus("bad/notes.txt"), tenant_a));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, "intake.unsupported_type");
  auto no_source = item(corpus("inv01_en_classic.pdf"), tenant_a);
  no_source.source = {};
  auto r = intake->submit(no_source);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "intake.invalid_source");
  EXPECT_EQ(count("SELECT count(*) FROM document"), 0);
  EXPECT_EQ(stored_documents(), 0);
}

TEST_F(intake_test, a_document_whose_ingestions_failed_is_reprocessed_on_resubmission) {
  auto intake = make();
  auto bytes = corpus("inv04_de_classic.pdf");
  auto first = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(first);
  db->query("UPDATE work_item SET status = 'failed', error_class = 'permanent', last_error = 'x'");
  auto again = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(again->status, intake_status::reprocessing);
  EXPECT_EQ(again->document_id, first->document_id);
  EXPECT_NE(again->ingestion_id, first->ingestion_id);
  EXPECT_EQ(messages_for(again->ingestion_id), 1);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM work_item WHERE status = 'in-progress'"), 1);
  EXPECT_EQ(stored_documents(), 1);
}

// The content lock waits no longer than the call's deadline, reports it as intake always has, and
// is not left behind: once the holder lets go, the same content goes in.
TEST_F(intake_test, a_held_content_lock_makes_intake_fail_at_its_deadline_and_leaves_no_lock) {
  auto intake = make(20u << 20, std::chrono::seconds{1});
  auto bytes = corpus("inv05_en_modern.pdf");
  pg_intake_repository holder{db->url()};
  auto held = holder.lock_content(tenant_a, aws::sha256_hex(bytes), std::chrono::seconds{10});
  ASSERT_TRUE(held) << held.error().describe();
  auto waited = intake->submit(item(bytes, tenant_a));
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code, "intake.timeout");
  EXPECT_EQ(waited.error().message, "database did not answer within 1 s");
  EXPECT_TRUE(waited.error().transient());
  EXPECT_EQ(count("SELECT count(*) FROM document"), 0);
  EXPECT_EQ(stored_documents(), 0);
  held->reset();
  auto again = intake->submit(item(bytes, tenant_a));
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(again->status, intake_status::created);
}

// An intake that anyone who reaches it could use for any tenant does not start.
TEST_F(intake_test, the_server_refuses_a_non_loopback_bind_without_credentials) {
  for (const char* bind : {"127.0.0.1", "127.0.0.53", "::1", "::ffff:127.0.0.1", "localhost"})
    EXPECT_TRUE(is_loopback_bind(bind)) << bind;
  for (const char* bind : {"0.0.0.0", "::", "10.0.0.7", "::ffff:10.0.0.7", "example.com", ""})
    EXPECT_FALSE(is_loopback_bind(bind)) << bind;

  std::shared_ptr<intake_service> intake = make();
  auto server_at = [](const char* bind, std::shared_ptr<intake_access> access) {
    intake_server_options o;
    o.bind = bind;
    o.access = std::move(access);
    return o;
  };
  intake_server open{intake, server_at("0.0.0.0", nullptr)};
  auto refused = open.start();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "intake.unauthenticated");
  EXPECT_NE(refused.error().message.find("intake.bind"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("INGESTD_INTAKE_TOKEN"), std::string::npos);
  EXPECT_NE(refused.error().message.find("ingestd tenants add"), std::string::npos);
  EXPECT_EQ(open.port(), 0); // nothing was bound

  auto tokens = http_server::tenant_tokens::parse("a-token-of-twenty-chars", tenant_a, "T");
  ASSERT_TRUE(tokens);
  intake_server guarded{
      intake, server_at("0.0.0.0", std::make_shared<intake_access>(*tokens, "", std::nullopt))};
  auto started = guarded.start();
  ASSERT_TRUE(started) << started.error().describe();
  EXPECT_GT(guarded.port(), 0);
  guarded.stop();
  intake_server local{intake, server_at("127.0.0.1", nullptr)};
  EXPECT_TRUE(local.start());
  local.stop();

  // Tokens stored in the database count once a tenant has one.
  auto repo = std::make_shared<pg_intake_repository>(db->url());
  auto stored = [&] {
    return std::make_shared<intake_access>(
        http_server::tenant_tokens{}, "", std::nullopt,
        [repo](const std::string& d) { return repo->tenant_of_token(d, std::chrono::seconds{5}); },
        [repo] { return repo->any_tenant_token(std::chrono::seconds{5}); });
  };
  intake_server none_yet{intake, server_at("0.0.0.0", stored())};
  EXPECT_FALSE(none_yet.start());
  ASSERT_TRUE(
      repo->add_tenant(tenant_a, "acme", http_server::token_digest("t"), std::chrono::seconds{5}));
  intake_server with_stored{intake, server_at("0.0.0.0", stored())};
  auto up = with_stored.start();
  EXPECT_TRUE(up) << up.error().describe();
  with_stored.stop();
}

// The look-ups that the HTTP intake, `ingestd status` and the admin endpoint show.
TEST_F(intake_test, repository_look_ups_show_documents_ingestions_and_the_review_list) {
  auto intake = make();
  auto first = intake->submit(item(corpus("inv01_en_classic.pdf"), tenant_a, "a.pdf"));
  ASSERT_TRUE(first) << first.error().describe();
  pg_intake_repository look{db->url()};
  constexpr auto t = std::chrono::seconds{10};
  ASSERT_TRUE(look.ping(t));

  auto parse = [](const std::string& text) {
    rapidjson::Document d;
    d.Parse(text.c_str());
    EXPECT_FALSE(d.HasParseError()) << text;
    return d;
  };
  auto doc = intake->document_json(tenant_a, first->document_id);
  ASSERT_TRUE(doc && *doc);
  auto d = parse(**doc);
  EXPECT_STREQ(d["state"].GetString(), "processing");
  EXPECT_EQ(d["ingestions"].Size(), 1u);
  auto ing = intake->ingestion_json(tenant_a, first->ingestion_id);
  ASSERT_TRUE(ing && *ing);
  EXPECT_STREQ(parse(**ing)["status"].GetString(), "in-progress");
  auto unknown = intake->document_json(tenant_a, uuid::v7());
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(*unknown);
  // Another tenant's rows are as unknown as rows that do not exist.
  auto foreign_doc = intake->document_json(tenant_b, first->document_id);
  ASSERT_TRUE(foreign_doc) << foreign_doc.error().describe();
  EXPECT_FALSE(*foreign_doc);
  auto foreign_ing = intake->ingestion_json(tenant_b, first->ingestion_id);
  ASSERT_TRUE(foreign_ing) << foreign_ing.error().describe();
  EXPECT_FALSE(*foreign_ing);

  auto documents = look.documents_json(10, t);
  ASSERT_TRUE(documents) << documents.error().describe();
  auto list = parse(*documents);
  ASSERT_EQ(list.Size(), 1u);
  EXPECT_STREQ(list[0]["file_name"].GetString(), "a.pdf");
  auto review = look.review_json(10, t);
  ASSERT_TRUE(review);
  EXPECT_EQ(parse(*review).Size(), 0u);
  db->query("UPDATE work_item SET status = 'failed', last_error = 'llm.refused: no'");
  db->query("UPDATE document SET needs_human_review = true");
  review = look.review_json(10, t);
  ASSERT_TRUE(review);
  auto flagged = parse(*review);
  ASSERT_EQ(flagged.Size(), 1u);
  EXPECT_EQ(flagged[0]["document_id"].GetString(), first->document_id.str());
  EXPECT_STREQ(flagged[0]["last_error"].GetString(), "llm.refused: no");
  EXPECT_STREQ(parse(*look.documents_json(10, t))[0]["state"].GetString(), "needs_review");
}

// The message is written with the ingestion, so intake cannot lose it; a message lost afterwards
// (a queue purged by hand) is sent again by the real sweeper over the ingest stage.
TEST_F(intake_test, a_message_lost_after_intake_is_sent_again_by_the_sweeper) {
  auto intake = make();
  auto r = intake->submit(item(corpus("inv05_en_modern.pdf"), tenant_a));
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_TRUE(r->enqueued);
  EXPECT_EQ(messages_for(r->ingestion_id), 1);
  db->query("DELETE FROM queue_message");
  EXPECT_EQ(db->scalar("SELECT status FROM ingestion WHERE id = $1", {r->ingestion_id.str()}),
            "in-progress");

  // The real sweeper with a short interval and stale threshold, over the ingest stage of the real
  // queue and the real work repository.
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto ctx = std::make_shared<node_context>();
  ctx->work = std::make_shared<pg_work_repository>(db->url());
  auto ports = std::make_shared<ingest_ports>();
  ports->db = std::make_shared<pg_ingest_repository>(db->url());
  ports->storage = store;
  ingest_class cls;
  cls.queue = q;
  cls.queue_name = queue_name;
  ctx->stages = {make_ingest_stage(ports, ingest_settings{}, cls)};
  ctx->settings.sweeper_interval = std::chrono::seconds{1};
  ctx->settings.stale_threshold = std::chrono::seconds{1};
  // An hour without a sign of a message: longer than the queue keeps one invisible.
  db->query("UPDATE work_item SET due_at = now() - interval '1 hour', message_seen_at = now() - "
            "interval '1 hour'");
  auto sweeper = spawn_sweeper(sys, ctx);
  // The message is in the queue once the rescue's statement commits; the sweeper counts the
  // rescue when the statement's answer reaches it, a moment later: wait for both (the checks
  // below say which was missing).
  test::wait_until(
      [&] { return messages_for(r->ingestion_id) > 0 && ctx->metrics->rescues.load() >= 1; },
      std::chrono::seconds{60}, std::chrono::milliseconds{100});
  caf::anon_send_exit(sweeper, caf::exit_reason::user_shutdown);
  EXPECT_EQ(messages_for(r->ingestion_id), 1);
  EXPECT_GE(ctx->metrics->rescues.load(), 1);
  EXPECT_EQ(db->scalar(
                "SELECT message_seen_at > now() - interval '1 minute' FROM work_item WHERE id = $1",
                {r->ingestion_id.str()}),
            "t");
}

/// Runs `ingestd submit` against this schema; returns (exit code, stdout+stderr).
std::pair<int, std::string> run_submit(const pg_schema& db, const std::string& root,
                                       const std::string& queue_name, const std::string& args) {
  auto cmd = "INGESTD_DATABASE__URL='" + db.url() + "' INGESTD_STORAGE__ROOT='" + root
             + "' INGESTD_QUEUE__NAME='" + queue_name + "' INGESTD_LOG__LEVEL=error '"
             + test::ingestd_binary() + "' submit " + args + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_F(intake_test, submit_command_walks_a_directory_of_mixed_files_and_reports_each_failure) {
  auto dir = test::make_temp_dir("mixed");
  fs::create_directories(dir + "/sub");
  auto src = test::source_dir() + "/tests/fixtures/corpus/";
  fs::copy_file(src + "inv01_en_classic.pdf", dir + "/a.pdf");
  fs::copy_file(src + "inv02_de_modern_scan.png", dir + "/sub/b.png");
  fs::copy_file(src + "inv04_de_classic_scan.jpg", dir + "/sub/c.jpg");
  fs::copy_file(src + "bad/notes.txt", dir + "/notes.txt");
  { std::ofstream empty_pdf{dir + "/empty.pdf"}; } // an empty file
  auto [code, out] = run_submit(*db, root, queue_name, "'" + dir + "' '" + dir + "/missing.pdf'");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("submitted 6 file(s)"), std::string::npos) << out; // 5 in the dir, 1 missing
  EXPECT_NE(out.find("3 new, 0 reprocessing, 0 duplicate, 3 failed"), std::string::npos) << out;
  EXPECT_NE(out.find("notes.txt: intake.unsupported_type"), std::string::npos) << out;
  EXPECT_NE(out.find("empty.pdf: intake.empty"), std::string::npos) << out;
  EXPECT_NE(out.find("missing.pdf: intake.not_found"), std::string::npos) << out;
  EXPECT_EQ(count("SELECT count(*) FROM document"), 3);

  // Again: the three are duplicates; only the good files, so it succeeds.
  fs::remove(dir + "/notes.txt");
  fs::remove(dir + "/empty.pdf");
  auto [code2, out2] = run_submit(
      *db, root, queue_name,
      "--tenant " + db->scalar("SELECT tenant_id::text FROM document LIMIT 1") + " '" + dir + "'");
  EXPECT_EQ(code2, 0) << out2;
  EXPECT_NE(out2.find("0 new, 0 reprocessing, 3 duplicate, 0 failed"), std::string::npos) << out2;
  EXPECT_EQ(count("SELECT count(*) FROM document"), 3);
  fs::remove_all(dir);
}

TEST_F(intake_test, submit_manifest_keeps_each_rows_columns_and_reports_bad_rows_by_line) {
  auto dir = test::make_temp_dir("manifest");
  fs::create_directories(dir + "/march");
  auto src = test::source_dir() + "/tests/fixtures/corpus/";
  fs::copy_file(src + "inv01_en_classic.pdf", dir + "/march/a.pdf");
  fs::copy_file(src + "inv02_de_modern_scan.png", dir + "/b.png");
  {
    std::ofstream csv{dir + "/load.csv", std::ios::binary};
    csv << "path,po_number,note\r\n"
           "march/a.pdf,PO-1,\"first, with a comma\"\r\n"
           "b.png,PO-2,\r\n"
           "missing.pdf,PO-3,gone\r\n"
           "b.png,PO-4\r\n";
  }
  auto [code, out] = run_submit(*db, root, queue_name, "--manifest '" + dir + "/load.csv'");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("submitted 4 file(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("2 new, 0 reprocessing, 0 duplicate, 2 failed"), std::string::npos) << out;
  EXPECT_NE(out.find("load.csv:4 missing.pdf: intake.manifest: no such file"), std::string::npos)
      << out;
  EXPECT_NE(out.find("load.csv:5 b.png: intake.manifest: it has 2 fields; the header has 3"),
            std::string::npos)
      << out;
  EXPECT_EQ(db->scalar("SELECT source_metadata->'metadata'::text FROM ingestion WHERE "
                       "source_metadata->>'file_name' = 'a.pdf'"),
            R"({"note": "first, with a comma", "po_number": "PO-1"})");
  EXPECT_EQ(db->scalar("SELECT source_metadata->'metadata'::text FROM ingestion WHERE "
                       "source_metadata->>'file_name' = 'b.png'"),
            R"({"po_number": "PO-2"})");

  // Again, without the bad rows: duplicates only, nothing new.
  {
    std::ofstream csv{dir + "/load.csv", std::ios::binary | std::ios::trunc};
    csv << "path,po_number\nmarch/a.pdf,PO-1\n" << dir << "/b.png,PO-2\n";
  }
  auto [code2, out2]
      = run_submit(*db, root, queue_name,
                   "--tenant " + db->scalar("SELECT tenant_id::text FROM document LIMIT 1")
                       + " --manifest '" + dir + "/load.csv'");
  EXPECT_EQ(code2, 0) << out2;
  EXPECT_NE(out2.find("0 new, 0 reprocessing, 2 duplicate, 0 failed"), std::string::npos) << out2;
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 2);

  // A manifest without a path column is refused whole; FILE and --manifest do not mix.
  {
    std::ofstream csv{dir + "/bad.csv", std::ios::binary};
    csv << "file,po\na.pdf,1\n";
  }
  auto [code3, out3] = run_submit(*db, root, queue_name, "--manifest '" + dir + "/bad.csv'");
  EXPECT_EQ(code3, 1) << out3;
  EXPECT_NE(out3.find("no column \"path\""), std::string::npos) << out3;
  auto [code4, out4]
      = run_submit(*db, root, queue_name, "--manifest '" + dir + "/bad.csv' '" + dir + "/b.png'");
  EXPECT_EQ(code4, 2) << out4;
  fs::remove_all(dir);
}

} // namespace
} // namespace ingestd
