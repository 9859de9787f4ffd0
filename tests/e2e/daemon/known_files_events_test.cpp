// Known-file filtering and the status event stream as a user meets them: `ingestd known-files
// import|add|count` (idempotent, bad input refused by line), a known file submitted and skipped by
// the daemon while another completes, counted by `ingestd status`; the daemon's events printed by
// `ingestd events --json` and delivered, signed, to a webhook receiver.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/http/curl_engine.hpp"
#include "e2e_checks.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

namespace fs = std::filesystem;

std::vector<std::string> as_env(const std::map<std::string, std::string>& m) {
  std::vector<std::string> out;
  out.reserve(m.size());
  for (auto& [k, v] : m)
    out.emplace_back(k).append("=").append(v);
  return out;
}

std::string corpus(const std::string& file) {
  return source_dir() + "/tests/fixtures/corpus/" + file;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary};
  out << text;
}

/// Adds inv01 to the known-file set, submits it and inv02, and runs a daemon whose events go to
/// the signed webhook `hook` (with `extra` settings) until inv01 is skipped, inv02 completed and
/// every webhook event sent; then stops it (SIGTERM, exit 0).
void run_known_and_new(e2e_setup& s, const std::string& hook,
                       const std::map<std::string, std::string>& extra = {}) {
  const std::string secret = "e2e-secret";
  auto env = as_env(s.daemon_env());
  auto known = corpus("inv01_en_classic.pdf");
  auto added = run_ingestd({"known-files", "add", known}, env);
  ASSERT_EQ(added.exit_code, 0) << added.err;
  auto submitted = run_ingestd({"submit", known, corpus("inv02_de_modern.pdf")}, env);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;

  auto settings = extra;
  settings["INGESTD_EVENTS_WEBHOOK_URL"] = hook + "?secret=" + secret;
  settings["INGESTD_EVENTS_WEBHOOK_SECRET"] = secret;
  auto d = s.start(settings);
  ASSERT_TRUE(wait_until(
      [&] { return s.with_status("skipped") == 1 && s.with_status("completed") == 1; }, 120s))
      << s.logs();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook' AND "
                       "sent_at IS NULL")
               == 0;
      },
      60s))
      << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
}

} // namespace

TEST(e2e_daemon_known_files_events, import_is_idempotent_and_bad_input_is_refused_by_line) {
  pg_schema db{true};
  auto dir = make_temp_dir("e2e_daemon_known_files_events");
  std::vector<std::string> env{"INGESTD_DATABASE__URL=" + db.url()};
  std::string list = "# generated\n";
  for (int i = 0; i < 1000; ++i) {
    char md5[33];
    std::snprintf(md5, sizeof md5, "%032x", i);
    list += md5;
    list += '\n';
  }
  write(dir + "/list.txt", list);
  auto first = run_ingestd({"known-files", "import", dir + "/list.txt"}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_CONTAINS(first.out, "imported 1000 hashes from 1001 lines");
  EXPECT_CONTAINS(first.out, "1000 new, 0 already known");
  auto again = run_ingestd({"known-files", "import", dir + "/list.txt"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_CONTAINS(again.out, "0 new, 1000 already known");

  write(dir + "/bad.csv", "\"SHA-1\",\"MD5\",\"FileName\"\n\"00\",\"" + std::string(32, 'a')
                              + "\",\"x\"\n"
                                "\"00\",\"zz\",\"y\"\n");
  auto bad = run_ingestd({"known-files", "import", dir + "/bad.csv"}, env);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.err, "line 3");
  EXPECT_CONTAINS(bad.err, "md5 column");
  auto missing = run_ingestd({"known-files", "import", dir + "/nope.txt"}, env);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.err, "cannot open");

  auto added = run_ingestd({"known-files", "add", corpus("inv01_en_classic.pdf")}, env);
  ASSERT_EQ(added.exit_code, 0) << added.err;
  EXPECT_CONTAINS(added.out, "added 2 new hashes");
  auto count = run_ingestd({"known-files", "count"}, env);
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(count.out, "1002\n");
  auto usage = run_ingestd({"known-files", "import"}, env);
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_CONTAINS(usage.err, "Usage: ingestd known-files");
  auto events_usage = run_ingestd({"events", "--bogus"}, env);
  EXPECT_EQ(events_usage.exit_code, 2);

  // Dead outbox rows: listed with their last error, given back to the relay by id.
  auto id = db.scalar(
      "INSERT INTO event_outbox (destination, body, ordering_key, attempts, last_error, dead_at) "
      "VALUES ('events:webhook', '{\"id\":\"e1\"}', 'doc', 50, 'receiver answered 500', now()) "
      "RETURNING id");
  auto dead = run_ingestd({"events", "--dead"}, env);
  ASSERT_EQ(dead.exit_code, 0) << dead.err;
  EXPECT_CONTAINS(dead.out, id);
  EXPECT_CONTAINS(dead.out, "events:webhook");
  EXPECT_CONTAINS(dead.out, "receiver answered 500");
  EXPECT_CONTAINS(dead.out, "1 dead row(s)");
  auto dead_json = run_ingestd({"events", "--dead", "--json"}, env);
  ASSERT_EQ(dead_json.exit_code, 0) << dead_json.err;
  rapidjson::Document row;
  row.Parse(dead_json.out.c_str());
  ASSERT_FALSE(row.HasParseError()) << dead_json.out;
  EXPECT_EQ(row["attempts"].GetInt(), 50);
  EXPECT_EQ(std::string{row["body"].GetString()}, "{\"id\":\"e1\"}");
  for (auto args : {std::vector<std::string>{"events", "redeliver"},
                    std::vector<std::string>{"events", "redeliver", "x1"},
                    std::vector<std::string>{"events", "redeliver", id, "--all"}})
    EXPECT_EQ(run_ingestd(args, env).exit_code, 2) << args.back();
  auto given = run_ingestd({"events", "redeliver", id}, env);
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_CONTAINS(given.out, "1 dead row(s) given back");
  EXPECT_EQ(db.scalar("SELECT attempts || ' ' || (dead_at IS NULL) FROM event_outbox WHERE id = $1",
                      {id}),
            "0 true");
  EXPECT_CONTAINS(run_ingestd({"events", "--dead"}, env).out, "0 dead row(s)");
  fs::remove_all(dir);
}

TEST(e2e_daemon_known_files_events,
     a_known_file_is_skipped_and_the_daemon_s_events_reach_a_signed_webhook) {
  e2e_setup s;
  chat_stub stub;
  curl_engine engine;
  auto env = as_env(s.daemon_env());
  ASSERT_NO_FATAL_FAILURE(run_known_and_new(s, stub.base_url() + "/events/e2e"));
  EXPECT_EQ(s.db().scalar("SELECT skip_reason FROM ingestion WHERE status = 'skipped'"),
            "known_file");
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE needs_human_review"), 0);

  auto status = run_ingestd({"status", "--json", "--documents"}, env);
  ASSERT_EQ(status.exit_code, 0) << status.err;
  rapidjson::Document st;
  st.Parse(status.out.c_str());
  ASSERT_FALSE(st.HasParseError()) << status.out;
  EXPECT_EQ(st["ingestions"]["skipped"].GetInt64(), 1);
  EXPECT_EQ(st["skipped_by_reason"]["known_file"].GetInt64(), 1);
  EXPECT_EQ(st["ingestions"]["failed"].GetInt64(), 0);
  std::multiset<std::string> states;
  for (auto& doc : st["documents"].GetArray())
    states.insert(doc["state"].GetString());
  EXPECT_EQ(states.count("skipped"), 1u) << status.out;
  EXPECT_EQ(states.count("ready"), 1u) << status.out;

  // The stream as `ingestd events --json` prints it, one object per line.
  auto printed = run_ingestd({"events", "--json"}, env);
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  std::vector<std::string> types;
  std::istringstream lines{printed.out};
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document e;
    e.Parse(line.c_str());
    ASSERT_FALSE(e.HasParseError()) << line;
    types.emplace_back(e["type"].GetString());
  }
  std::set<std::string> seen(types.begin(), types.end());
  for (auto* t :
       {"WORKER_STARTED", "DOCUMENT_ADDED", "INGESTION_QUEUED", "INGESTION_STARTED",
        "INGESTION_SKIPPED", "INGESTION_COMPLETED", "DOCUMENT_PROCESSED", "WORKER_FINISHED"})
    EXPECT_TRUE(seen.count(t)) << t << " missing in:\n" << printed.out;
  auto table = run_ingestd({"events"}, env);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_CONTAINS(table.out, "INGESTION_SKIPPED");
  EXPECT_CONTAINS(table.out, "\"reason\":\"known_file\"");

  // The receiver got each event the daemon delivered once, signed (WORKER_FINISHED is written as
  // the node stops: the next node's relay delivers it).
  auto got = get_sync(engine, stub.base_url() + "/events/e2e");
  ASSERT_TRUE(got && got->status == 200);
  rapidjson::Document r;
  r.Parse(got->body.c_str());
  std::set<std::string> ids, received_types;
  for (auto& e : r["deliveries"].GetArray()) {
    EXPECT_TRUE(e["signature_ok"].GetBool());
    EXPECT_TRUE(ids.insert(e["id"].GetString()).second) << "twice: " << e["id"].GetString();
    received_types.insert(e["type"].GetString());
  }
  EXPECT_EQ(static_cast<int64_t>(ids.size()),
            s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events:webhook' AND "
                    "sent_at IS NOT NULL"));
  EXPECT_TRUE(received_types.count("INGESTION_SKIPPED"));
  EXPECT_TRUE(received_types.count("WORKER_STARTED"));
}

TEST(e2e_daemon_known_files_events, a_webhook_limited_to_some_types_gets_those_only) {
  e2e_setup s;
  chat_stub stub;
  curl_engine engine;

  // An unknown type is refused before the node starts.
  auto env_bad = as_env(s.daemon_env());
  env_bad.push_back("INGESTD_OUTBOX__EVENTS_WEBHOOK_TYPES=INGESTION_DONE");
  auto refused = run_ingestd({"config", "check"}, env_bad);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_CONTAINS(refused.err + refused.out, "outbox.events_webhook_types");

  ASSERT_NO_FATAL_FAILURE(run_known_and_new(
      s, stub.base_url() + "/events/types",
      {{"INGESTD_OUTBOX__EVENTS_WEBHOOK_TYPES", "INGESTION_COMPLETED, INGESTION_SKIPPED"}}));

  // The stream has every type; the webhook got the two it takes, once each.
  EXPECT_GT(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events'"), 5);
  auto got = get_sync(engine, stub.base_url() + "/events/types");
  ASSERT_TRUE(got && got->status == 200);
  rapidjson::Document r;
  r.Parse(got->body.c_str());
  std::multiset<std::string> received;
  for (auto& e : r["deliveries"].GetArray()) {
    EXPECT_TRUE(e["signature_ok"].GetBool());
    received.insert(e["type"].GetString());
  }
  EXPECT_EQ(received, (std::multiset<std::string>{"INGESTION_COMPLETED", "INGESTION_SKIPPED"}))
      << got->body;
}
