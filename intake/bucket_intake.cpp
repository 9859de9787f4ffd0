#include "intake/bucket_intake.hpp"

#include <rapidjson/document.h>

#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "intake/intake_service.hpp"
#include "messages/error_codes.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

std::string text_of(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject())
    return {};
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsString()
             ? std::string{it->value.GetString(), it->value.GetStringLength()}
             : std::string{};
}

const rapidjson::Value* object_of(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject())
    return nullptr;
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsObject() ? &it->value : nullptr;
}

/// The last part of a key, for the document's file name.
std::string base_name(const std::string& key) {
  auto slash = key.rfind('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

} // namespace

std::optional<std::vector<s3_object_event>> parse_s3_notification(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject())
    return std::nullopt;
  // Delivered through SNS: the notification is the text of its "Message".
  rapidjson::Document delivered;
  const rapidjson::Value* root = &doc;
  if (text_of(doc, "Type") == "Notification") {
    auto message = doc.FindMember("Message");
    if (message == doc.MemberEnd() || !message->value.IsString())
      return std::nullopt;
    delivered.Parse(message->value.GetString(), message->value.GetStringLength());
    if (delivered.HasParseError() || !delivered.IsObject())
      return std::nullopt;
    root = &delivered;
  }
  if (text_of(*root, "Event") == "s3:TestEvent")
    return std::vector<s3_object_event>{};
  auto records = root->FindMember("Records");
  if (records == root->MemberEnd() || !records->value.IsArray())
    return std::nullopt;
  std::vector<s3_object_event> out;
  for (const auto& r : records->value.GetArray()) {
    const auto* s3 = object_of(r, "s3");
    const auto* bucket = s3 != nullptr ? object_of(*s3, "bucket") : nullptr;
    const auto* object = s3 != nullptr ? object_of(*s3, "object") : nullptr;
    if (text_of(r, "eventSource") != "aws:s3" || bucket == nullptr || object == nullptr)
      return std::nullopt;
    s3_object_event e;
    e.event = text_of(r, "eventName");
    e.bucket = text_of(*bucket, "name");
    e.key = percent_decode(text_of(*object, "key"), true);
    e.etag = text_of(*object, "eTag");
    auto size = object->FindMember("size");
    if (size != object->MemberEnd() && size->value.IsInt64())
      e.size = size->value.GetInt64();
    if (e.bucket.empty() || e.key.empty())
      return std::nullopt;
    out.push_back(std::move(e));
  }
  return out;
}

bucket_intake::bucket_intake(std::shared_ptr<intake_service> intake,
                             std::vector<inbound_bucket> buckets, std::chrono::milliseconds timeout)
    : intake_(std::move(intake)), buckets_(std::move(buckets)), timeout_(timeout) {}

bucket_intake::~bucket_intake() = default;

result<bool> bucket_intake::pass() {
  auto r = read();
  log_pass("buckets read", r);
  return r.more;
}

acquisition_report bucket_intake::read() {
  acquisition_report report;
  for (const auto& b : buckets_)
    if (!stopping_)
      read(b, report);
  return report;
}

result<intake_outcome> bucket_intake::take_in(const inbound_bucket& b,
                                              const s3_object_event& object) {
  auto bytes = blocking_call<std::string>(timeout_, "intake.timeout", "storage", [&](auto cb) {
    b.objects->get(object.key, intake_->options().max_bytes, cb);
  });
  if (!bytes)
    return bytes.error();
  intake_item item;
  item.tenant_id = b.tenant_id;
  item.source.uploaded_by = uuid{};
  item.channel = "s3";
  item.name = base_name(object.key);
  item.metadata = {{"bucket", b.bucket}, {"key", object.key}, {"etag", object.etag}};
  // The key and its version's ETag: the same object announced twice is one document, a new
  // object written under the key is another.
  item.source_key = "s3://" + b.bucket + "/" + object.key + "#" + object.etag;
  item.bytes = std::move(*bytes);
  return intake_->submit(item);
}

void bucket_intake::read(const inbound_bucket& b, acquisition_report& report) {
  auto where = "s3://" + b.bucket + "/" + b.prefix;
  auto failed = [&](const error& e, std::string_view doing) {
    ++report.failed;
    log::warn("bucket not read",
              {{"bucket", where}, {"while", std::string{doing}}, {"error", e.describe()}});
  };
  constexpr int batch = 10;
  // Hidden from other readers for as long as the batch may take.
  auto visibility = std::chrono::duration_cast<std::chrono::seconds>(timeout_ * (batch + 1))
                    + std::chrono::seconds{1};
  auto received = blocking_call<std::vector<queue_message>>(
      timeout_ + std::chrono::seconds{5}, "intake.timeout", "the notification queue",
      [&](auto cb) { b.notifications->receive(batch, std::chrono::seconds{0}, visibility, cb); });
  if (!received)
    return failed(received.error(), "receiving notifications");
  report.more = report.more || static_cast<int>(received->size()) >= batch;
  std::vector<std::string> done;
  std::optional<error> stopped;
  for (const auto& m : *received) {
    // Stopping: what is not taken in comes back after its visibility timeout.
    if (stopped || stopping_)
      break;
    auto objects = parse_s3_notification(m.body);
    if (!objects) {
      ++report.ignored;
      log::warn("bucket notification is no S3 event; deleted",
                {{"bucket", where}, {"message_id", m.id}, {"body", m.body.substr(0, 200)}});
      done.push_back(m.receipt);
      continue;
    }
    for (const auto& o : *objects) {
      if (o.event.rfind("ObjectCreated:", 0) != 0 || o.bucket != b.bucket
          || o.key.rfind(b.prefix, 0) != 0 || (!o.key.empty() && o.key.back() == '/')) {
        ++report.ignored;
        continue;
      }
      auto taken = take_in(b, o);
      if (!taken && taken.error().transient()) {
        stopped = taken.error();
        break;
      }
      if (!taken) {
        ++report.refused;
        log::warn(taken.error().code == errc::storage_not_found ? "bucket object gone"
                                                                : "bucket object refused",
                  {{"bucket", b.bucket}, {"key", o.key}, {"error", taken.error().describe()}});
        continue;
      }
      ++(taken->status == intake_status::duplicate ? report.duplicates : report.taken);
      log::info("bucket object taken in", {{"bucket", b.bucket},
                                           {"key", o.key},
                                           {"status", std::string{to_string(taken->status)}},
                                           {"document_id", taken->document_id.str()},
                                           {"ingestion_id", taken->ingestion_id.str()}});
    }
    // Every object it names is in (or refused): now the notification may go.
    if (!stopped)
      done.push_back(m.receipt);
  }
  // What was taken in goes even when the pass stops early; the rest comes back.
  if (stopped)
    failed(*stopped, "taking an object in");
  if (done.empty())
    return;
  auto removed = blocking_call<std::vector<batch_entry_result>>(
      timeout_, "intake.timeout", "the notification queue",
      [&](auto cb) { b.notifications->remove(done, cb); });
  if (!removed)
    return failed(removed.error(), "deleting notifications");
  for (const auto& r : *removed)
    if (r.failed)
      // Read again after its visibility timeout: its objects are duplicates then.
      log::warn("bucket notification not deleted",
                {{"bucket", where}, {"error", r.error.describe()}});
}

} // namespace ingestd
