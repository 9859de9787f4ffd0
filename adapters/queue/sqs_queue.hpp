// Amazon SQS over the process's HTTP engine (JSON protocol, SigV4): the queue port for one queue
// (sqs_queue), and the account-level calls that set queues up (sqs_client).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/aws/aws_credentials.hpp"
#include "adapters/http/http_client.hpp"
#include "adapters/queue/queue.hpp"

namespace ingestd {

namespace detail {
struct sqs_queue_state;
} // namespace detail

/// Where and as whom to talk to SQS.
struct sqs_connection {
  /// Keys (and a default region), e.g. from aws::credentials_from_env().
  aws::aws_credentials credentials;
  /// Overrides credentials.region when not empty.
  std::string region;
  /// Base URL override, e.g. "http://127.0.0.1:54566" for fauxqs; empty means
  /// https://sqs.{region}.amazonaws.com.
  std::string endpoint;
  std::chrono::milliseconds connect_timeout{5'000};
  /// Total timeout of every call except ReceiveMessage.
  std::chrono::milliseconds call_timeout{20'000};
  /// ReceiveMessage's HTTP timeout is its long-poll wait plus this margin, so that a long poll
  /// that runs its full course never times out on our side.
  std::chrono::milliseconds receive_margin{10'000};
};

/// Attributes of a queue that sqs_client::create_queue sets.
struct sqs_queue_settings {
  std::optional<int> visibility_timeout_seconds;
  std::optional<int> message_retention_seconds;
  std::optional<int> receive_wait_seconds;
  /// Dead-letter redrive: after `max_receive_count` receives a message moves to this queue.
  std::string dead_letter_arn;
  int max_receive_count = 5;
  /// Anything else, verbatim (names as SQS spells them).
  std::map<std::string, std::string> extra;
};

/// Queue-level SQS calls that are not part of the queue port: create, look up, delete, inspect.
/// Cheap to copy; asynchronous like the ports (callback exactly once, from the engine thread or
/// another thread, never from inside the call).
class sqs_client {
public:
  /// `http` must stay alive until every callback has run; it is shared for that reason.
  sqs_client(std::shared_ptr<http_client> http, sqs_connection connection);

  /// The queue's URL; "sqs.QueueDoesNotExist" (or "sqs.NonExistentQueue") when it does not exist.
  void get_queue_url(const std::string& name, callback<std::string> done) const;
  /// Creates the queue (idempotent when the attributes match) and returns its URL.
  void create_queue(const std::string& name, sqs_queue_settings settings,
                    callback<std::string> done) const;
  /// Creates `dead_letter_name`, then `name` redriving to it after `max_receive_count` receives.
  /// Returns {queue URL, dead-letter queue URL}.
  void create_queue_with_dead_letter(std::string name, const std::string& dead_letter_name,
                                     int max_receive_count, sqs_queue_settings settings,
                                     callback<std::pair<std::string, std::string>> done) const;
  void delete_queue(const std::string& url, callback<void> done) const;
  /// GetQueueAttributes with these names ("All" for every attribute).
  void queue_attributes(const std::string& url, const std::vector<std::string>& names,
                        callback<std::map<std::string, std::string>> done) const;
  void queue_arn(const std::string& url, callback<std::string> done) const;

  /// One signed JSON-protocol call: `operation` such as "ReceiveMessage", `body` a JSON object.
  /// Gives the answer's body for a 2xx status, else the parsed, classified error.
  void call(const std::string& operation, std::string body, std::chrono::milliseconds timeout,
            callback<std::string> done) const;

  const sqs_connection& connection() const { return *connection_; }

private:
  std::shared_ptr<http_client> http_;
  std::shared_ptr<const sqs_connection> connection_;
  std::string endpoint_;
  std::string region_;
};

/// Which queue an sqs_queue works on.
struct sqs_queue_options {
  sqs_connection connection;
  /// Used as is when set.
  std::string queue_url;
  /// Otherwise the URL is looked up once (GetQueueUrl) on first use and kept.
  std::string queue_name;
};

/// The queue port over SQS. Batches are split into calls of at most 10 entries (and at most
/// 1 MiB of bodies); results come back in input order, one per input. A delete whose receipt is
/// no longer valid counts as done (the message is gone or will come back); a visibility change
/// with such a receipt fails permanently with "sqs.ReceiptHandleIsInvalid" or
/// "sqs.MessageNotInflight": the caller no longer holds the message. Thread-safe; safe to
/// destroy while calls are in flight (their callbacks still run).
class sqs_queue final : public queue {
public:
  sqs_queue(std::shared_ptr<http_client> http, sqs_queue_options options);

  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
               callback<std::vector<queue_message>> done) override;
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override;
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override;
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override;
  /// Visible, in flight and delayed counts; SQS does not report the oldest message's age (that
  /// is a CloudWatch metric), so oldest_age_seconds stays 0.
  void stats(callback<queue_stats> done) override;
  std::string name() const override { return "sqs"; }

  /// The queue URL (looked up on first use when only a name was given).
  void queue_url(callback<std::string> done);

  const sqs_client& client() const { return client_; }

private:
  sqs_client client_;
  std::shared_ptr<detail::sqs_queue_state> state_;
};

} // namespace ingestd
