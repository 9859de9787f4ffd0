// Batches as a user runs them: `ingestd submit --batch` of a ZIP, an e-mail and a PDF, a daemon
// killed -9 while the batch runs and another that finishes it; the batch finishes once, its
// container children counted, its BATCH_FINISHED event carrying the counts, and `ingestd batches`
// shows it. `ingestd cancel --batch` cancels a queued batch, which then finishes as cancelled.
#include <filesystem>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

std::vector<std::string> as_env(const std::map<std::string, std::string>& m) {
  std::vector<std::string> out;
  out.reserve(m.size());
  for (const auto& [k, v] : m)
    out.emplace_back(k).append("=").append(v);
  return out;
}

/// The batch id `ingestd submit --batch` printed ("batch NAME id=ID state: ...").
std::string batch_id_of(const std::string& out) {
  auto at = out.find(" id=");
  return at == std::string::npos ? std::string{} : out.substr(at + 4, 36);
}

int64_t batch_count(e2e_setup& s, const std::string& id, const std::string& column) {
  return s.count("SELECT (to_jsonb(b) ->> $2)::bigint FROM batch AS b WHERE b.id = $1::uuid",
                 {id, column});
}

} // namespace

TEST(e2e_daemon_batches, a_batch_with_containers_finishes_once_through_a_kill_9) {
  e2e_setup s;
  held_llm_server llm;
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  write_file(in + "/march.zip",
             make_archive("zip", {{"inv01.pdf", corpus_bytes("inv01_en_classic.pdf")},
                                  {"inv02.pdf", corpus_bytes("inv02_de_modern.pdf")}}));
  write_file(in + "/mail.eml", make_email("Invoice", "Attached.",
                                          {{"inv03.pdf", corpus_bytes("inv03_en_compact.pdf")}}));
  write_file(in + "/inv05.pdf", corpus_bytes("inv05_en_modern.pdf"));
  std::map<std::string, std::string> settings{{"INGESTD_STAGES__ENABLED", "ingest,unpack"}};
  auto env_map = s.daemon_env();
  env_map.insert(settings.begin(), settings.end());
  auto env = as_env(env_map);
  auto submitted = run_ingestd(
      {"submit", "--batch", "e2e march", in + "/march.zip", in + "/mail.eml", in + "/inv05.pdf"},
      env);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  auto id = batch_id_of(submitted.out);
  ASSERT_EQ(id.size(), 36u) << submitted.out;
  EXPECT_CONTAINS(submitted.out, "sealed: 3 document(s)");

  // The first node's ingest jobs wait on an LLM that answers when the test says so: one document
  // completes, then the node is killed with the other three held.
  auto first_settings = settings;
  first_settings["INGESTD_WORKER__ID"] = "e2e-first";
  first_settings["INGESTD_EXTRACTION__PROVIDER"] = "llm";
  first_settings["INGESTD_EXTRACTION__LLM_BASE_URL"] = llm.url();
  auto first = s.start(first_settings);
  ASSERT_TRUE(await_waiting_on_extraction(s, 4, 300s)) << s.logs();
  llm.release(1);
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = "
                       "'completed'")
               == 1;
      },
      120s))
      << s.logs();
  first->signal(SIGKILL);
  ASSERT_TRUE(first->wait_exit(30s).has_value());
  // Both containers and their four documents are members; three are still in progress.
  EXPECT_EQ(batch_count(s, id, "documents"), 6);
  EXPECT_EQ(batch_count(s, id, "in_progress"), 3);
  EXPECT_EQ(s.count("SELECT count(*) FROM batch WHERE finished_at IS NOT NULL"), 0);

  auto second_settings = settings;
  second_settings["INGESTD_WORKER__ID"] = "e2e-second";
  auto second = s.start(second_settings);
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM batch WHERE finished_at IS NOT NULL") == 1; },
      300s))
      << s.logs();
  second->signal(SIGTERM);
  auto rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();

  EXPECT_EQ(batch_count(s, id, "documents"), 6);
  EXPECT_EQ(batch_count(s, id, "in_progress"), 0);
  EXPECT_EQ(batch_count(s, id, "completed") + batch_count(s, id, "for_review"), 6);
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                    "body::jsonb ->> 'type' = 'BATCH_STARTED'"),
            1);
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                    "body::jsonb ->> 'type' = 'BATCH_FINISHED'"),
            1);
  EXPECT_EQ(s.count("SELECT (body::jsonb -> 'payload' ->> 'documents')::bigint FROM event_outbox "
                    "WHERE destination = 'events' AND body::jsonb ->> 'type' = 'BATCH_FINISHED'"),
            6);

  auto listed = run_ingestd({"batches", "--json"}, env);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_CONTAINS(listed.out, id);
  EXPECT_CONTAINS(listed.out, R"("state": "finished")");
  auto shown = run_ingestd({"batches", id}, env);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_CONTAINS(shown.out, "finished");
  EXPECT_CONTAINS(shown.out, "e2e march");
  auto nothing_left = run_ingestd({"cancel", "--batch", id}, env);
  EXPECT_EQ(nothing_left.exit_code, 0) << nothing_left.err;
  EXPECT_CONTAINS(nothing_left.out, "0 cancelled");
}

TEST(e2e_daemon_batches, a_cancelled_batch_finishes_with_its_documents_cancelled) {
  e2e_setup s;
  auto env = as_env(s.daemon_env());
  auto submitted
      = run_ingestd({"submit", "--batch", "to cancel", corpus_dir() + "/inv01_en_classic.pdf",
                     corpus_dir() + "/inv02_de_modern.pdf"},
                    env);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  auto id = batch_id_of(submitted.out);
  ASSERT_EQ(id.size(), 36u) << submitted.out;

  auto cancelled = run_ingestd({"cancel", "--batch", id, "--json"}, env);
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;
  EXPECT_CONTAINS(cancelled.out, R"("cancelled":2)");
  EXPECT_EQ(batch_count(s, id, "cancelled"), 2);
  EXPECT_EQ(s.count("SELECT count(*) FROM batch WHERE finished_at IS NOT NULL"), 1);
  EXPECT_EQ(s.count("SELECT (body::jsonb -> 'payload' ->> 'cancelled')::bigint FROM event_outbox "
                    "WHERE destination = 'events' AND body::jsonb ->> 'type' = 'BATCH_FINISHED'"),
            2);

  auto unknown = run_ingestd({"cancel", "--batch", ingestd::uuid::v4().str()}, env);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.err, "no batch");
  auto bad = run_ingestd({"submit", "--batch", "", corpus_dir() + "/inv03_en_compact.pdf"}, env);
  EXPECT_EQ(bad.exit_code, 2);
}
