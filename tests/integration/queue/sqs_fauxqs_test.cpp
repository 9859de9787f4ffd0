// The SQS client against the fauxqs emulator over the real HTTP engine: the whole message
// lifecycle, partial batch failures, delays, dead-letter redrive, and interoperation with boto3.
#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/aws/encoding.hpp"
#include "adapters/queue/priority_queues.hpp"
#include "tests/support/await.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::run_python;

namespace {

using messages = std::vector<queue_message>;
using entries = std::vector<batch_entry_result>;

result<messages> receive(queue& q, int n, std::chrono::seconds wait,
                         std::chrono::seconds visibility) {
  return await<messages>([&](auto cb) { q.receive(n, wait, visibility, std::move(cb)); });
}

/// Receives until `want` messages came in or the deadline passed (short long-polls, so that a
/// message whose visibility or delay expires is picked up as soon as it is back).
messages receive_until(queue& q, size_t want, std::chrono::seconds visibility,
                       std::chrono::steady_clock::duration deadline = 20s) {
  messages out;
  auto until = std::chrono::steady_clock::now() + deadline;
  while (out.size() < want && std::chrono::steady_clock::now() < until) {
    auto r = receive(q, static_cast<int>(std::min<size_t>(10, want - out.size())), 1s, visibility);
    if (!r) {
      ADD_FAILURE() << r.error().describe();
      break;
    }
    out.insert(out.end(), r->begin(), r->end());
  }
  return out;
}

result<queue_stats> stats(queue& q) {
  return await<queue_stats>([&](auto cb) { q.stats(std::move(cb)); });
}

entries send(queue& q, std::vector<outgoing_message> m) {
  auto r = await<entries>([&](auto cb) { q.send(std::move(m), std::move(cb)); });
  EXPECT_TRUE(r);
  return r ? *r : entries{};
}

entries remove(queue& q, std::vector<std::string> receipts) {
  auto r = await<entries>([&](auto cb) { q.remove(std::move(receipts), std::move(cb)); });
  EXPECT_TRUE(r);
  return r ? *r : entries{};
}

entries change(queue& q, std::vector<visibility_change> c) {
  auto r = await<entries>([&](auto cb) { q.change_visibility(std::move(c), std::move(cb)); });
  EXPECT_TRUE(r);
  return r ? *r : entries{};
}

} // namespace

class sqs_fauxqs : public ingestd::test::fauxqs_test {};

TEST_F(sqs_fauxqs, message_lifecycle_with_redelivery_visibility_change_and_delete) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  auto sent = send(*q, {{"ingestion 0190a", 0s}});
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_FALSE(sent[0].failed) << sent[0].error.describe();
  EXPECT_FALSE(sent[0].ref.empty()) << "the new message id";

  // First delivery, hidden for 1 s.
  auto first = receive_until(*q, 1, 1s);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].id, sent[0].ref);
  EXPECT_EQ(first[0].body, "ingestion 0190a");
  EXPECT_EQ(first[0].receive_count, 1);
  EXPECT_GT(first[0].sent_at_ms, 0);

  // It comes back once the visibility runs out, with a higher count and a new receipt.
  auto second = receive_until(*q, 1, 30s);
  ASSERT_EQ(second.size(), 1u) << "redelivered after the 1 s visibility";
  EXPECT_EQ(second[0].id, first[0].id);
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_NE(second[0].receipt, first[0].receipt);
  EXPECT_EQ(second[0].sent_at_ms, first[0].sent_at_ms);

  // Held for 30 s now: nothing to receive.
  auto none = receive(*q, 10, 1s, 30s);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  // The first receipt is stale: a visibility change with it fails, the message stays ours.
  auto stale = change(*q, {{first[0].receipt, 0s}});
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_TRUE(stale[0].failed);
  EXPECT_TRUE(stale[0].error.permanent());
  EXPECT_EQ(stale[0].error.code, "sqs.ReceiptHandleIsInvalid");

  // Extending with the current receipt works; visibility 0 releases it at once.
  auto extended = change(*q, {{second[0].receipt, 60s}});
  ASSERT_EQ(extended.size(), 1u);
  EXPECT_FALSE(extended[0].failed) << extended[0].error.describe();
  auto released = change(*q, {{second[0].receipt, 0s}});
  EXPECT_FALSE(released.at(0).failed) << released.at(0).error.describe();
  auto third = receive_until(*q, 1, 30s, 5s);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].receive_count, 3);

  // Deleting with a stale receipt is not an error (and does not delete); the current one does.
  auto stale_delete = remove(*q, {second[0].receipt});
  EXPECT_FALSE(stale_delete.at(0).failed);
  auto st = stats(*q);
  ASSERT_TRUE(st) << st.error().describe();
  EXPECT_EQ(st->in_flight, 1);
  auto deleted = remove(*q, {third[0].receipt});
  EXPECT_FALSE(deleted.at(0).failed) << deleted.at(0).error.describe();
  st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->visible, 0);
  EXPECT_EQ(st->in_flight, 0);
  auto empty = receive(*q, 10, 1s, 30s);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST_F(sqs_fauxqs, batches_with_one_bad_entry_fail_only_that_entry) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  std::vector<outgoing_message> out;
  out.reserve(12);
  for (int i = 0; i < 12; ++i)
    out.push_back({"message " + std::to_string(i), 0s});
  out[5].body = "control \x01 character"; // SQS's character set refuses it
  auto sent = send(*q, out);
  ASSERT_EQ(sent.size(), 12u);
  for (size_t i = 0; i < sent.size(); ++i) {
    if (i == 5) {
      EXPECT_TRUE(sent[i].failed);
      EXPECT_EQ(sent[i].error.code, "sqs.InvalidMessageContents");
      EXPECT_TRUE(sent[i].error.permanent());
    } else {
      EXPECT_FALSE(sent[i].failed) << i << ": " << sent[i].error.describe();
    }
  }
  auto got = receive_until(*q, 11, 60s);
  ASSERT_EQ(got.size(), 11u);
  std::set<std::string> bodies;
  for (auto& m : got)
    bodies.insert(m.body);
  EXPECT_EQ(bodies.size(), 11u);
  EXPECT_EQ(bodies.count("control \x01 character"), 0u);

  // Visibility batch: 11 good receipts and one malformed one.
  std::vector<visibility_change> changes;
  for (auto& m : got)
    changes.push_back({m.receipt, 120s});
  changes.insert(changes.begin() + 3, {"not-a-receipt-handle", 120s});
  auto changed = change(*q, changes);
  ASSERT_EQ(changed.size(), 12u);
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_EQ(changed[i].ref, changes[i].receipt);
    EXPECT_EQ(changed[i].failed, i == 3) << i << ": " << changed[i].error.describe();
  }
  EXPECT_EQ(changed[3].error.code, "sqs.ReceiptHandleIsInvalid");

  // Delete batch with the same bad entry: the bad receipt counts as gone, the rest are deleted.
  std::vector<std::string> receipts;
  for (auto& m : got)
    receipts.push_back(m.receipt);
  receipts.push_back("not-a-receipt-handle");
  auto deleted = remove(*q, receipts);
  ASSERT_EQ(deleted.size(), 12u);
  for (auto& d : deleted)
    EXPECT_FALSE(d.failed) << d.error.describe();
  auto st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->visible, 0);
  EXPECT_EQ(st->in_flight, 0);
}

TEST_F(sqs_fauxqs, many_messages_in_several_batch_calls) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  std::vector<outgoing_message> out;
  out.reserve(35);
  for (int i = 0; i < 35; ++i)
    out.push_back({"m" + std::to_string(i), 0s});
  auto sent = send(*q, out);
  ASSERT_EQ(sent.size(), 35u);
  std::set<std::string> ids;
  for (auto& s : sent) {
    EXPECT_FALSE(s.failed);
    ids.insert(s.ref);
  }
  EXPECT_EQ(ids.size(), 35u);
  auto st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->visible, 35);
  auto got = receive_until(*q, 35, 60s);
  ASSERT_EQ(got.size(), 35u);
  st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->in_flight, 35);
  std::vector<std::string> receipts;
  for (auto& m : got)
    receipts.push_back(m.receipt);
  for (auto& d : remove(*q, receipts))
    EXPECT_FALSE(d.failed);
  st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->visible + st->in_flight, 0);
}

TEST_F(sqs_fauxqs, delayed_message_arrives_after_its_delay) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  // The delay starts when the emulator has the message, after `before_send`: an answer the test
  // has before before_send + delay was given while the message was still delayed. Three round
  // trips to a busy emulator can take longer than that, and then there is nothing to check.
  constexpr auto delay = 5s;
  auto before_send = std::chrono::steady_clock::now();
  auto still_delayed = [&] { return std::chrono::steady_clock::now() < before_send + delay; };
  auto sent = send(*q, {{"later", delay}});
  ASSERT_FALSE(sent.at(0).failed);
  auto st = stats(*q);
  ASSERT_TRUE(st);
  if (still_delayed()) {
    EXPECT_EQ(st->delayed, 1);
    EXPECT_EQ(st->visible, 0);
  }
  auto now = receive(*q, 1, 0s, 30s);
  ASSERT_TRUE(now);
  if (still_delayed()) {
    EXPECT_TRUE(now->empty()) << "not visible before its delay";
  }
  // (Received at once only when the delay had run out: that is its arrival.)
  auto later = now->empty() ? receive_until(*q, 1, 30s, 15s) : *now;
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].body, "later");
}

TEST_F(sqs_fauxqs, long_poll_returns_when_a_message_arrives) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  std::thread sender([&] {
    // Gives the long poll a head start; correctness does not depend on it (a message that
    // arrives first is simply received at once), only what the test exercises.
    std::this_thread::sleep_for(500ms);
    send(*q, {{"wake up", 0s}});
  });
  auto start = std::chrono::steady_clock::now();
  auto got = receive(*q, 10, 20s, 30s);
  auto took = std::chrono::steady_clock::now() - start;
  sender.join();
  ASSERT_TRUE(got) << got.error().describe();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_LT(took, 10s) << "the long poll woke on the message, not at the end of its wait";
}

TEST_F(sqs_fauxqs, empty_long_poll_runs_its_course_without_a_timeout) {
  auto q = make_queue();
  ASSERT_TRUE(q);
  auto start = std::chrono::steady_clock::now();
  auto got = receive(*q, 10, 2s, 30s);
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_TRUE(got->empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1900ms);
}

TEST_F(sqs_fauxqs, queue_found_by_name_and_missing_queue_is_permanent) {
  std::string url;
  auto created = make_queue({}, &url);
  ASSERT_TRUE(created);
  auto name = url.substr(url.rfind('/') + 1);
  sqs_queue_options by_name;
  by_name.connection = connection();
  by_name.queue_name = name;
  sqs_queue q{engine_, by_name};
  auto resolved = await<std::string>([&](auto cb) { q.queue_url(std::move(cb)); });
  ASSERT_TRUE(resolved) << resolved.error().describe();
  EXPECT_EQ(*resolved, url);
  EXPECT_FALSE(send(q, {{"by name", 0s}}).at(0).failed);

  sqs_queue_options missing;
  missing.connection = connection();
  missing.queue_name = ingestd::test::unique_name("missing");
  sqs_queue gone{engine_, missing};
  auto r = receive(gone, 1, 0s, 30s);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().permanent());
  EXPECT_TRUE(r.error().code == "sqs.NonExistentQueue" || r.error().code == "sqs.QueueDoesNotExist")
      << r.error().code;
}

TEST_F(sqs_fauxqs, redrive_moves_a_message_to_the_dead_letter_queue) {
  auto name = ingestd::test::unique_name("q");
  auto pair = await<std::pair<std::string, std::string>>([&](auto cb) {
    sqs_->create_queue_with_dead_letter(name, name + "_dlq", 1, {}, std::move(cb));
  });
  ASSERT_TRUE(pair) << pair.error().describe();
  adopt_queue(pair->first);
  adopt_queue(pair->second);
  auto attrs = await<std::map<std::string, std::string>>(
      [&](auto cb) { sqs_->queue_attributes(pair->first, {"RedrivePolicy"}, std::move(cb)); });
  ASSERT_TRUE(attrs);
  EXPECT_NE((*attrs)["RedrivePolicy"].find("deadLetterTargetArn"), std::string::npos);

  sqs_queue_options main_opts;
  main_opts.connection = connection();
  main_opts.queue_url = pair->first;
  sqs_queue main_q{engine_, main_opts};
  sqs_queue_options dlq_opts = main_opts;
  dlq_opts.queue_url = pair->second;
  sqs_queue dlq{engine_, dlq_opts};

  ASSERT_FALSE(send(main_q, {{"poison", 0s}}).at(0).failed);
  auto first = receive_until(main_q, 1, 1s);
  ASSERT_EQ(first.size(), 1u);
  // After its one allowed receive, the message goes to the dead-letter queue once its
  // visibility ran out; SQS (and fauxqs) move it when the main queue is polled again.
  messages dead;
  auto until = std::chrono::steady_clock::now() + 20s;
  while (dead.empty() && std::chrono::steady_clock::now() < until) {
    auto again = receive(main_q, 1, 1s, 1s);
    ASSERT_TRUE(again) << again.error().describe();
    EXPECT_TRUE(again->empty()) << "received beyond max_receive_count";
    auto d = receive(dlq, 1, 0s, 30s);
    ASSERT_TRUE(d) << d.error().describe();
    dead = *d;
  }
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].body, "poison");
}

TEST_F(sqs_fauxqs, interop_message_sent_by_boto3_is_received_extended_and_deleted) {
  std::string url;
  auto q = make_queue({}, &url);
  ASSERT_TRUE(q);
  auto sent = run_python(boto3_preamble() + R"(
r = sqs.send_message(QueueUrl=sys.argv[1], MessageBody='from boto3 \u2713 {"k": [1, 2]}')
print(r['MessageId'])
)",
                         {url});
  ASSERT_EQ(sent.exit_code, 0) << sent.output;
  auto message_id = sent.output.substr(0, sent.output.find('\n'));

  auto got = receive_until(*q, 1, 30s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, message_id);
  EXPECT_EQ(got[0].body, "from boto3 \xE2\x9C\x93 {\"k\": [1, 2]}");
  EXPECT_EQ(got[0].receive_count, 1);
  auto extended = change(*q, {{got[0].receipt, 300s}});
  EXPECT_FALSE(extended.at(0).failed) << extended.at(0).error.describe();
  auto deleted = remove(*q, {got[0].receipt});
  EXPECT_FALSE(deleted.at(0).failed) << deleted.at(0).error.describe();

  // boto3 sees an empty queue: nothing visible, nothing in flight.
  auto check = run_python(boto3_preamble() + R"(
a = sqs.get_queue_attributes(QueueUrl=sys.argv[1], AttributeNames=['All'])['Attributes']
print(a['ApproximateNumberOfMessages'], a['ApproximateNumberOfMessagesNotVisible'])
)",
                          {url});
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "0 0\n");
}

TEST_F(sqs_fauxqs, a_standard_queue_takes_the_tenant_as_message_group_and_delivers_it) {
  // SQS fair queues: a standard queue accepts a MessageGroupId and uses it as the tenant.
  auto q = make_queue();
  ASSERT_TRUE(q);
  outgoing_message m{"of a tenant", 0s};
  m.tenant = "0193a000-0000-7000-8000-00000000000a";
  auto sent = send(*q, {m, outgoing_message{"of none", 0s}});
  ASSERT_FALSE(sent.at(0).failed) << sent.at(0).error.describe();
  ASSERT_FALSE(sent.at(1).failed) << sent.at(1).error.describe();
  std::set<std::string> bodies;
  for (int i = 0; i < 10 && bodies.size() < 2; ++i) {
    auto got = await<std::vector<queue_message>>([&](auto cb) { q->receive(10, 1s, 30s, cb); });
    ASSERT_TRUE(got) << got.error().describe();
    for (auto& r : *got)
      bodies.insert(r.body);
  }
  EXPECT_EQ(bodies, (std::set<std::string>{"of a tenant", "of none"}));
}

TEST_F(sqs_fauxqs, interop_message_attributes_sent_by_ingestd_are_received_by_boto3) {
  std::string url;
  auto q = make_queue({}, &url);
  ASSERT_TRUE(q);
  outgoing_message m{"{}", 0s};
  m.attributes = {{"type", "INGESTION_COMPLETED"}, {"tenant_id", "t-\xC3\xA9"}, {"empty", ""}};
  auto sent = send(*q, {m});
  ASSERT_FALSE(sent.at(0).failed) << sent.at(0).error.describe();
  // boto3 checks MD5OfMessageAttributes itself; an empty value is not sent.
  auto got = run_python(boto3_preamble() + R"(
r = sqs.receive_message(QueueUrl=sys.argv[1], WaitTimeSeconds=5, MessageAttributeNames=['All'])
a = r['Messages'][0]['MessageAttributes']
print(sorted((k, v['DataType'], v['StringValue'].encode('utf-8').hex()) for k, v in a.items()))
)",
                        {url});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_EQ(got.output, "[('tenant_id', 'String', '" + ingestd::aws::hex_encode("t-\xC3\xA9")
                            + "'), ('type', 'String', '"
                            + ingestd::aws::hex_encode("INGESTION_COMPLETED") + "')]\n");
}

TEST_F(sqs_fauxqs, interop_message_sent_by_ingestd_is_received_by_boto3) {
  std::string url;
  auto q = make_queue({}, &url);
  ASSERT_TRUE(q);
  std::string body = "from ingestd \xC3\xA9\xE2\x82\xAC \"quoted\"\ttab";
  auto sent = send(*q, {{body, 0s}});
  ASSERT_FALSE(sent.at(0).failed);
  // boto3 checks MD5OfBody itself; print the body as hex to compare bytes exactly.
  auto got = run_python(boto3_preamble() + R"(
r = sqs.receive_message(QueueUrl=sys.argv[1], WaitTimeSeconds=5, MaxNumberOfMessages=10,
                        MessageSystemAttributeNames=['ApproximateReceiveCount'])
m = r['Messages']
assert len(m) == 1, m
print(m[0]['MessageId'])
print(m[0]['Body'].encode('utf-8').hex())
print(m[0]['Attributes']['ApproximateReceiveCount'])
sqs.delete_message(QueueUrl=sys.argv[1], ReceiptHandle=m[0]['ReceiptHandle'])
)",
                        {url});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_EQ(got.output, sent[0].ref + "\n" + ingestd::aws::hex_encode(body) + "\n1\n");
  auto st = stats(*q);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->visible + st->in_flight, 0) << "boto3 deleted it";
}

// Priority classes on SQS: one real queue per class, each message in its class's
// queue, the most urgent class served first, receipts that find their class's queue again.
TEST_F(sqs_fauxqs,
       priority_classes_route_each_message_to_its_class_queue_and_serve_the_urgent_first) {
  std::shared_ptr<queue> high = make_queue();
  std::shared_ptr<queue> normal = make_queue();
  std::shared_ptr<queue> low = make_queue();
  priority_queues q{{{29, 6, high}, {69, 3, normal}, {100, 1, low}}};
  std::vector<outgoing_message> batch;
  batch.reserve(13);
  for (int i = 0; i < 8; ++i)
    batch.push_back({"low-" + std::to_string(i), 0s, 90});
  for (int i = 0; i < 2; ++i)
    batch.push_back({"normal-" + std::to_string(i), 0s, 50});
  for (int i = 0; i < 3; ++i)
    batch.push_back({"high-" + std::to_string(i), 0s, 10});
  auto sent = send(q, batch);
  ASSERT_EQ(sent.size(), batch.size());
  for (auto& e : sent)
    EXPECT_FALSE(e.failed) << e.error.describe();
  // Each in its class's own queue.
  EXPECT_EQ(stats(*high)->visible, 3);
  EXPECT_EQ(stats(*normal)->visible, 2);
  EXPECT_EQ(stats(*low)->visible, 8);
  auto all = stats(q);
  ASSERT_TRUE(all) << all.error().describe();
  EXPECT_EQ(all->visible, 13);

  // The first receive starts with the class of the largest weight, the urgent one, and answers
  // from it alone.
  auto first = receive(q, 10, 1s, 30s);
  ASSERT_TRUE(first) << first.error().describe();
  ASSERT_FALSE(first->empty());
  for (auto& m : *first) {
    EXPECT_EQ(m.body.rfind("high-", 0), 0u) << m.body;
    EXPECT_EQ(m.priority, 0) << "a class's message reads as the class's most urgent priority";
  }
  // Everything else comes through too, each once; the class receipts delete from the right queue.
  auto rest = receive_until(q, 13 - first->size(), 30s);
  std::set<std::string> bodies;
  std::vector<std::string> receipts;
  for (auto* part : {&*first, &rest})
    for (auto& m : *part) {
      EXPECT_TRUE(bodies.insert(m.body).second) << "received twice: " << m.body;
      receipts.push_back(m.receipt);
    }
  EXPECT_EQ(bodies.size(), 13u);
  // A visibility change through a class receipt reaches its queue (made visible again, then
  // deleted).
  auto released = change(q, {{receipts.front(), 0s}});
  ASSERT_EQ(released.size(), 1u);
  EXPECT_FALSE(released[0].failed) << released[0].error.describe();
  auto again = receive_until(q, 1, 30s, 10s);
  ASSERT_EQ(again.size(), 1u);
  receipts.front() = again[0].receipt;
  auto deleted = remove(q, receipts);
  ASSERT_EQ(deleted.size(), receipts.size());
  for (auto& e : deleted)
    EXPECT_FALSE(e.failed) << e.error.describe();
  for (auto* one : {&high, &normal, &low}) {
    auto st = stats(**one);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->visible + st->in_flight, 0);
  }
}
