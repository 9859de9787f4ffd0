// Bucket intake (acquisition.buckets): objects that arrive in an S3 bucket (where a mail gateway
// such as SES writes raw e-mails, or a scanner or a partner drops files), announced by the
// bucket's event notifications on an SQS queue. Each pass receives the queue's notifications;
// every object created under the bucket's prefix is read and taken in, through the intake
// service, as a document of the bucket's tenant (an e-mail or an archive as a container), with
// s3://BUCKET/KEY as its source. A notification is deleted only after every object it names is
// taken in or refused: a crash before reads it again, and intake finds each object by its source
// key (the key and its ETag) or its content, so it is taken once; S3's duplicate deliveries meet
// the same way. An object intake refuses (its type, its size) or that is gone is named in the log
// and not retried; a notification that is no S3 event is deleted with a warning. A storage,
// queue or database failure ends that bucket's pass, its notifications coming back after their
// visibility timeout. The node's periodic actor runs the passes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "intake/acquisition.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

class intake_service;
class object_store;
class queue;
struct intake_outcome;

struct inbound_bucket {
  uuid tenant_id;
  std::string bucket;
  /// Only keys that start with it are taken ("" : every key).
  std::string prefix;
  /// The queue the bucket's notifications arrive on.
  std::shared_ptr<queue> notifications;
  /// The bucket's objects.
  std::shared_ptr<object_store> objects;
};

/// One object an S3 event notification names.
struct s3_object_event {
  /// "ObjectCreated:Put", "ObjectRemoved:Delete", ...
  std::string event;
  std::string bucket;
  /// Decoded (S3 sends it URL-encoded, a space as '+').
  std::string key;
  std::string etag;
  int64_t size = 0;
};

/// The objects of an S3 event notification (also when SNS delivered it, wrapped in its
/// "Message"); an s3:TestEvent has none. nullopt when the body is no S3 event notification.
std::optional<std::vector<s3_object_event>> parse_s3_notification(std::string_view body);

class bucket_intake {
public:
  /// Every call to storage or the queue within `timeout`.
  bucket_intake(std::shared_ptr<intake_service> intake, std::vector<inbound_bucket> buckets,
                std::chrono::milliseconds timeout);
  ~bucket_intake();
  bucket_intake(const bucket_intake&) = delete;
  bucket_intake& operator=(const bucket_intake&) = delete;

  /// One pass, logged: true when a bucket may have more waiting (the periodic actor's task).
  result<bool> pass();
  /// One pass, not logged.
  acquisition_report read();
  /// Ends a pass that runs after the item in hand, and every later one at once: the node is
  /// stopping (what is not read stays where it is for the next node). Thread-safe.
  void stop() { stopping_ = true; }

private:
  void read(const inbound_bucket& b, acquisition_report& report);
  result<intake_outcome> take_in(const inbound_bucket& b, const s3_object_event& object);

  std::shared_ptr<intake_service> intake_;
  std::vector<inbound_bucket> buckets_;
  std::chrono::milliseconds timeout_;
  std::atomic<bool> stopping_{false};
};

} // namespace ingestd
