// `ingestd queues create` and a node's check of its queues, as a user runs them: on the Postgres
// queue (a fresh schema) and on SQS (the fauxqs emulator, with the redrive policy checked), twice
// each (idempotent); `ingestd run` refusing to start on a missing queue with a message naming it
// and the command; `--stages` checked before anything connects.
#include <filesystem>

#include <gtest/gtest.h>

#include "adapters/support/blocking_call.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

using run_result = test::cli_result;

/// Runs the binary with `args` and `env` ("KEY=value"), the configuration from the defaults.
run_result run(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return test::run_ingestd(args, env, 60);
}

} // namespace

TEST(e2e_queues, postgres_queues_are_created_idempotently_and_a_missing_one_stops_the_node) {
  test::pg_schema db{true};
  auto root = test::make_temp_dir("e2e_queues_root");
  std::vector<std::string> env{"INGESTD_DATABASE__URL=" + db.url(), "INGESTD_STORAGE__ROOT=" + root,
                               "INGESTD_ADMIN__PORT=0", "INGESTD_QUEUE__WAIT_TIME_SECONDS=1"};
  auto refused = run({"run"}, env);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("\"ingestd-ingest\" does not exist"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("ingestd queues create"), std::string::npos) << refused.err;

  for (int i = 0; i < 2; ++i) {
    auto made = run({"queues", "create"}, env);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    EXPECT_NE(made.out.find("ingest: ingestd-ingest (postgres)"), std::string::npos) << made.out;
    EXPECT_NE(
        made.out.find(
            "match: ingestd-match (postgres), dead letters to ingestd-match-dlq after 3 receives"),
        std::string::npos)
        << made.out;
    EXPECT_NE(made.out.find("unpack: ingestd-unpack (postgres), dead letters to "
                            "ingestd-unpack-dlq after 3 receives"),
              std::string::npos)
        << made.out;
  }
  EXPECT_EQ(db.scalar("SELECT string_agg(name || ':' || coalesce(dead_letter_queue, '-') || ':' || "
                      "max_receive_count, "
                      "' ' ORDER BY name) FROM queue"),
            "ingestd-ingest:ingestd-ingest-dlq:0 ingestd-ingest-dlq:-:0 "
            "ingestd-match:ingestd-match-dlq:3 "
            "ingestd-match-dlq:-:0 ingestd-unpack:ingestd-unpack-dlq:3 ingestd-unpack-dlq:-:0");

  // Matching turned off: its queue is neither made nor needed.
  auto off = run({"queues", "create"},
                 {env[0], "INGESTD_STAGES__ENABLED=ingest", "INGESTD_QUEUE__NAME=other"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find("match"), std::string::npos) << off.out;
  fs::remove_all(root);
}

TEST(e2e_queues, size_classes_get_the_large_queue_too) {
  test::pg_schema db{true};
  std::vector<std::string> env{"INGESTD_DATABASE__URL=" + db.url(),
                               "INGESTD_STAGES__ENABLED=ingest", "INGESTD_CLASSES__ENABLED=true"};
  auto made = run({"queues", "create"}, env);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("ingest.large: ingestd-ingest-large (postgres)"), std::string::npos)
      << made.out;
  EXPECT_EQ(db.scalar("SELECT string_agg(name, ' ' ORDER BY name) FROM queue"),
            "ingestd-ingest ingestd-ingest-dlq ingestd-ingest-large ingestd-ingest-large-dlq");
}

TEST(e2e_queues, stages_on_the_command_line_are_checked) {
  auto unknown = run({"run", "--stages", "ingest,bogus"}, {});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown stage \"bogus\""), std::string::npos) << unknown.err;
  auto disabled = run({"run", "--stages", "match"}, {"INGESTD_STAGES__ENABLED=ingest"});
  EXPECT_EQ(disabled.exit_code, 1);
  EXPECT_NE(disabled.err.find("match is not enabled"), std::string::npos) << disabled.err;
  auto missing = run({"run", "--stages"}, {});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  auto usage = run({"queues"}, {});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("usage: ingestd queues create"), std::string::npos) << usage.err;
}

class e2e_queues_sqs : public test::fauxqs_test {};

TEST_F(e2e_queues_sqs, sqs_queues_get_their_dead_letter_queue_and_redrive_policy) {
  auto name = test::unique_bucket_name("q");
  std::vector<std::string> env{"INGESTD_QUEUE__BACKEND=sqs",
                               "INGESTD_AWS__ENDPOINT=" + endpoint_,
                               "INGESTD_AWS__REGION=us-east-1",
                               "INGESTD_QUEUE__NAME=" + name,
                               "INGESTD_QUEUE__DEAD_LETTER_NAME=" + name + "-dlq",
                               "INGESTD_MATCHING__QUEUE_NAME=" + name + "-match",
                               "INGESTD_MATCHING__DEAD_LETTER_NAME=" + name + "-match-dlq",
                               "INGESTD_CONTAINERS__QUEUE_NAME=" + name + "-unpack",
                               "INGESTD_CONTAINERS__DEAD_LETTER_NAME=" + name + "-unpack-dlq"};
  for (int i = 0; i < 2; ++i) {
    auto made = run({"queues", "create"}, env);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    std::string expected = "match: ";
    expected.append(name)
        .append("-match (sqs), dead letters to ")
        .append(name)
        .append("-match-dlq after 3 receives");
    EXPECT_NE(made.out.find(expected), std::string::npos) << made.out;
  }
  for (auto q : {name, name + "-dlq", name + "-match", name + "-match-dlq", name + "-unpack",
                 name + "-unpack-dlq"}) {
    auto url = blocking_call<std::string>(30s, "t", "GetQueueUrl",
                                          [&](auto cb) { sqs_->get_queue_url(q, cb); });
    ASSERT_TRUE(url) << q << ": " << url.error().describe();
    adopt_queue(*url);
    if (q == name + "-match") {
      auto attrs = blocking_call<std::map<std::string, std::string>>(
          30s, "t", "GetQueueAttributes",
          [&](auto cb) { sqs_->queue_attributes(*url, {"RedrivePolicy"}, cb); });
      ASSERT_TRUE(attrs) << attrs.error().describe();
      auto policy = (*attrs)["RedrivePolicy"];
      EXPECT_NE(policy.find("\"maxReceiveCount\":\"3\""), std::string::npos) << policy;
      EXPECT_NE(policy.find(name + "-match-dlq"), std::string::npos) << policy;
    }
  }
}
