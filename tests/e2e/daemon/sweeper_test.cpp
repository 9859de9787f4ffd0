// The sweeper's net through the daemon: hand-offs write their message in the transaction that
// makes them true, so what can still strand work is a message that goes away while its work item
// is in progress: deleted (a queue purged by hand) or moved to a dead-letter queue by the queue's
// redrive. The daemon's sweeper sends such an item a new message on its stage's queue, and the
// work completes once; an item whose message waits in its queue is left alone.
#include <csignal>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

int64_t messages_naming(e2e_setup& s, const std::string& queue, const std::string& id) {
  return s.count(
      "SELECT count(*) FROM queue_message WHERE queue_name = $1 AND lower(btrim(body)) = $2",
      {queue, id});
}

/// The sweeper sends again only what was not seen for longer than its threshold (the lease, at
/// least 5 minutes): the items' clocks are set back instead of waiting for it.
void long_forgotten(e2e_setup& s, const std::vector<std::string>& ids) {
  s.db().query("UPDATE work_item SET due_at = now() - interval '1 hour', "
               "message_seen_at = now() - interval '1 hour' WHERE id = ANY($1::uuid[])",
               {pg_array(ids)});
}

/// Messages the sweeper sent, by stage, from its log lines.
std::map<std::string, int64_t> sent_by_sweeper(const std::string& log_path) {
  std::map<std::string, int64_t> out;
  std::ifstream in{log_path};
  for (std::string line; std::getline(in, line);) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("msg") || !doc["msg"].IsString()
        || std::string{doc["msg"].GetString()} != "sweeper sent stranded work again")
      continue;
    if (doc.HasMember("stage") && doc["stage"].IsString() && doc.HasMember("sent")
        && doc["sent"].IsNumber())
      out[doc["stage"].GetString()] += doc["sent"].GetInt64();
  }
  return out;
}

} // namespace

TEST(e2e_daemon_sweeper,
     work_whose_message_was_deleted_or_dead_lettered_is_sent_again_and_completes_once) {
  e2e_setup s;
  auto ids = s.add_documents(4, doc_kind::text_pdf);
  const auto& purged = ids[0];        // its message deleted by hand
  const auto& dead_lettered = ids[1]; // its message in the ingest queue's dead-letter queue
  const auto& matched = ids[2];       // ingested; its matching's message dead-lettered
  const auto& waiting = ids[3];       // its message waits in the queue: not stranded

  // The third ingested first, by a node that serves the ingest stage only: its completion adds
  // the document's match work item with its message.
  s.enqueue({matched});
  {
    auto ingest
        = s.start({{"INGESTD_STAGES__SERVE", "ingest"}, {"INGESTD_WORKER__ID", "e2e-ingest"}});
    ASSERT_TRUE(await_completed(s, 1, 120s));
    ingest->signal(SIGTERM);
    auto rc = ingest->wait_exit(60s);
    ASSERT_TRUE(rc.has_value()) << ingest->log_tail();
    EXPECT_EQ(*rc, 0) << ingest->log_tail();
  }
  auto document = s.db().scalar("SELECT document_id::text FROM ingestion WHERE id = $1", {matched});
  ASSERT_EQ(messages_naming(s, s.match_queue_name(), document), 1);

  // What the queue's redrive does to a message received too often (postgres_queue's receive):
  // the row moves to the dead-letter queue. Its work item is still in progress.
  s.enqueue({dead_lettered});
  s.db().query("UPDATE queue_message SET queue_name = $1, receipt = NULL, receive_count = 0 "
               "WHERE queue_name = $2 AND body = $3",
               {s.queue_name() + "-dlq", s.queue_name(), dead_lettered});
  s.db().query("UPDATE queue_message SET queue_name = $1, receipt = NULL, receive_count = 0 "
               "WHERE queue_name = $2 AND body = $3",
               {s.match_queue_name() + "-dlq", s.match_queue_name(), document});
  ASSERT_EQ(
      s.count(
          "SELECT count(*) FROM work_item WHERE status = 'in-progress' AND claim_token IS NULL"),
      4);
  // Every in-progress item long unseen, the waiting one included: its message in the queue is
  // what keeps the sweeper from sending it another.
  long_forgotten(s, {purged, dead_lettered, waiting, document});

  s.enqueue({waiting});
  auto d = s.start(
      {{"INGESTD_WORKER__ID", "e2e-sweeper"}, {"INGESTD_WORKER__SWEEPER_INTERVAL_SECONDS", "1"}});
  ASSERT_TRUE(await_completed(s, 4, 120s));
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM document_matching WHERE matching_status = 'succeeded'")
               == 4;
      },
      120s))
      << s.logs();
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 30s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();

  expect_completed_exactly_once(s, ids);
  // The sweeper sent the three stranded items again, on their stages' queues, and nothing else:
  // the waiting item got no second message.
  auto sent = sent_by_sweeper(d->log_path());
  EXPECT_EQ(sent["ingest"], 2) << d->log_tail();
  EXPECT_EQ(sent["match"], 1) << d->log_tail();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = 'completed' "
                    "AND attempt_count = 0"),
            4);
  // The dead letters stay where the redrive put them, for an operator to look at.
  EXPECT_EQ(messages_naming(s, s.queue_name() + "-dlq", dead_lettered), 1);
  EXPECT_EQ(messages_naming(s, s.match_queue_name() + "-dlq", document), 1);
}
