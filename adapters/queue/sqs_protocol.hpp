// The Amazon SQS JSON protocol (awsJson1_0) without any I/O: request bodies, response parsing,
// error parsing and transient/permanent classification. sqs_queue sends what this builds.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/http/http_client.hpp"
#include "adapters/queue/queue.hpp"
#include "messages/queue_message.hpp"
#include "messages/result.hpp"

namespace ingestd::sqs {

/// SQS limits that the client enforces before sending.
inline constexpr size_t max_batch_entries = 10;
inline constexpr size_t max_entry_id_length = 80;
/// Largest message body and largest sum of bodies in one batch call (1 MiB since August 2025;
/// a queue may be configured lower, which the server then reports per entry).
inline constexpr size_t max_message_bytes = 1'048'576;
inline constexpr int max_wait_seconds = 20;
inline constexpr int max_visibility_seconds = 43'200;
inline constexpr int max_delay_seconds = 900;

inline constexpr std::string_view content_type = "application/x-amz-json-1.0";

/// The value of the X-Amz-Target header for an operation, e.g. "AmazonSQS.ReceiveMessage".
std::string target(std::string_view operation);

/// A batch entry id is 1-80 characters of [A-Za-z0-9_-].
bool valid_entry_id(std::string_view id);

/// Checks a message body before sending: well-formed UTF-8 (the JSON protocol needs it) and at
/// most max_message_bytes. The restricted character set is left to the server, which reports it
/// per entry.
result<void> validate_body(std::string_view body);

// ---- request bodies (JSON text) -----------------------------------------------------------

std::string receive_request(std::string_view queue_url, int max_messages, int wait_seconds,
                            int visibility_seconds);

struct receipt_entry {
  std::string id;
  std::string receipt;
};
std::string delete_batch_request(std::string_view queue_url,
                                 const std::vector<receipt_entry>& entries);

struct visibility_entry {
  std::string id;
  std::string receipt;
  int timeout_seconds = 0;
};
std::string change_visibility_batch_request(std::string_view queue_url,
                                            const std::vector<visibility_entry>& entries);

struct send_entry {
  std::string id;
  std::string body;
  int delay_seconds = 0;
  /// String message attributes (name, value); an empty value is left out (SQS refuses it).
  std::vector<std::pair<std::string, std::string>> attributes = {};
  /// MessageGroupId (empty: none): on a standard queue, the tenant for SQS fair queues.
  std::string group = {};
};
std::string send_batch_request(std::string_view queue_url, const std::vector<send_entry>& entries);

/// GetQueueAttributes for the given attribute names.
std::string get_attributes_request(std::string_view queue_url,
                                   const std::vector<std::string>& names);

std::string get_queue_url_request(std::string_view queue_name);

/// CreateQueue with string attributes (VisibilityTimeout, RedrivePolicy, ...).
std::string create_queue_request(std::string_view queue_name,
                                 const std::map<std::string, std::string>& attributes);

std::string delete_queue_request(std::string_view queue_url);

/// The RedrivePolicy attribute value that moves a message to `dead_letter_arn` after it was
/// received `max_receive_count` times.
std::string redrive_policy(std::string_view dead_letter_arn, int max_receive_count);

// ---- responses --------------------------------------------------------------------------

/// ReceiveMessage's answer. No `Messages` key (or null, or []) means no message. Attribute values
/// are strings; a message without MessageId or ReceiptHandle, or whose body does not match its
/// MD5OfBody, makes the whole answer a transient "sqs.bad_response".
result<std::vector<queue_message>> parse_receive(std::string_view body);

/// One entry of a batch answer (from `Successful` or `Failed`).
struct batch_answer {
  std::string id;
  bool ok = false;
  /// Successful send: the new MessageId.
  std::string message_id;
  /// Failed: Code, Message, SenderFault.
  std::string code;
  std::string message;
  bool sender_fault = true;
};

/// A batch call's HTTP-200 answer: `Successful[]` and `Failed[]`, either may be absent.
result<std::vector<batch_answer>> parse_batch(std::string_view body);

/// The error of one failed batch entry, classified like a whole-call error.
error entry_error(const batch_answer& failed);

/// GetQueueAttributes' `Attributes` map (values are strings).
result<std::map<std::string, std::string>> parse_attributes(std::string_view body);

/// Depth figures from GetQueueAttributes' answer; missing figures count as 0.
result<queue_stats> parse_stats(std::string_view body);

/// The `QueueUrl` of a GetQueueUrl or CreateQueue answer.
result<std::string> parse_queue_url(std::string_view body);

// ---- errors -------------------------------------------------------------------------------

/// The error of a non-2xx answer. The code comes from the `x-amzn-query-error` header when
/// present ("AWS.SimpleQueueService.NonExistentQueue;Sender" -> "NonExistentQueue"), else from
/// `__type` after '#'; the message from `message` or `Message`. The result's code is
/// "sqs.<Code>" (or "sqs.http_<status>" when the body says nothing).
error parse_error(const http_response& response);

/// Classification of an SQS error code: throttling, server faults and 5xx are transient;
/// a missing queue, access and signature problems and invalid parameters are permanent.
/// `sender_fault` is the header's or entry's Sender/Receiver hint when known.
error classify(const std::string& code, std::string message, long status,
               std::optional<bool> sender_fault = std::nullopt);

/// True for the codes that mean "this receipt handle no longer names an in-flight message".
bool is_stale_receipt(std::string_view code);

/// Retry-After in milliseconds from a response (seconds form only); -1 when absent.
int64_t retry_after_ms(const http_response& response);

} // namespace ingestd::sqs
