// Intake: validation, deduplication under the repository's per-content lock, store-before-rows,
// the rows with their work item and queue message; and the document and ingestion look-ups that
// the HTTP server shows.
#include "intake/intake_service.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/aws/encoding.hpp"
#include "adapters/db/intake_repository.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

std::string source_metadata(const intake_item& item, size_t size, std::string_view mime) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  if (!item.name.empty()) {
    w.Key("file_name");
    w.String(item.name.c_str(), static_cast<rapidjson::SizeType>(item.name.size()));
  }
  if (!item.channel.empty()) {
    w.Key("channel");
    w.String(item.channel.c_str(), static_cast<rapidjson::SizeType>(item.channel.size()));
  }
  if (!item.source_key.empty()) {
    w.Key("source_key");
    w.String(item.source_key.c_str(), static_cast<rapidjson::SizeType>(item.source_key.size()));
  }
  w.Key("size");
  w.Uint64(size);
  w.Key("mime_type");
  w.String(mime.data(), static_cast<rapidjson::SizeType>(mime.size()));
  if (!item.metadata.empty()) {
    w.Key("metadata");
    w.StartObject();
    for (const auto& [name, value] : item.metadata) {
      w.Key(name.c_str(), static_cast<rapidjson::SizeType>(name.size()));
      w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
    }
    w.EndObject();
  }
  w.EndObject();
  return buf.GetString();
}

/// The database's deadline keeps the code and text that intake gives every port's deadline.
error database_error(error e, std::chrono::milliseconds timeout) {
  if (e.code == intake_repository::timeout_code)
    return timeout_error("intake.timeout", "database", timeout);
  return e;
}

} // namespace

std::string_view to_string(intake_status s) {
  switch (s) {
  case intake_status::created:
    return "new";
  case intake_status::reprocessing:
    return "reprocessing";
  case intake_status::duplicate:
    return "duplicate";
  }
  return "unknown";
}

std::optional<int32_t> parse_priority(std::string_view text) {
  if (text.empty() || text.size() > 3)
    return std::nullopt;
  int32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > 100)
    return std::nullopt;
  return value;
}

intake_service::intake_service(std::shared_ptr<intake_repository> db,
                               std::shared_ptr<object_store> storage, intake_options opts)
    : db_(std::move(db)), storage_(std::move(storage)), opts_(std::move(opts)) {}

intake_service::~intake_service() = default;

result<intake_outcome> intake_service::submit(const intake_item& item) {
  if (item.bytes.empty())
    return error::make_permanent(errc::intake_empty, "the file is empty");
  if (item.bytes.size() > opts_.max_bytes)
    return error::make_permanent(errc::intake_too_large,
                                 "the file has " + std::to_string(item.bytes.size())
                                     + " bytes; the limit is " + std::to_string(opts_.max_bytes));
  // A document the ingest stage reads, or a container the unpack stage takes apart.
  auto type = detect_file_type(item.bytes);
  std::optional<container_type> container;
  if (!type) {
    container = detect_container_type(item.bytes);
    if (!container)
      return error::make_permanent(
          errc::intake_unsupported_type,
          "not a PDF, PNG, JPEG, TIFF, DOCX, XLSX, ODT, ODS, RTF or HTML file, nor a ZIP, TAR, "
          ".tar.gz, 7z, e-mail (.eml, .msg) or mbox (by its first bytes)");
    if (opts_.unpack_queue.empty())
      return error::make_permanent(
          errc::intake_containers_disabled,
          "a container (" + std::string{container->ext}
              + ") needs the unpack stage: add unpack to stages.enabled and run "
                "`ingestd queues create`");
  }
  std::string_view mime = type ? type->mime : container->mime;
  std::string_view ext = type ? type->ext : container->ext;
  if (item.source.uploaded_by.has_value() == item.source.doc_source_id.has_value())
    return error::make_permanent(errc::intake_invalid_source,
                                 "exactly one of uploaded_by and doc_source_id must be given");
  if (item.priority < 0 || item.priority > 100)
    return error::make_permanent(errc::intake_invalid_priority,
                                 "priority must be 0..100 (lower first), not "
                                     + std::to_string(item.priority));
  auto timeout = opts_.call_timeout;
  intake_outcome out;
  out.mime_type = mime;
  // A document that is live (in progress, or completed) for it is a duplicate.
  auto duplicate_of = [&](const known_document& known) -> result<intake_outcome> {
    out.status = intake_status::duplicate;
    out.document_id = known.document_id;
    out.file_path = known.file_path;
    if (!known.mime_type.empty())
      out.mime_type = known.mime_type;
    out.ingestion_id = *known.live_ingestion_id;
    out.ingestion_status = known.live_ingestion_status;
    if (item.batch_id)
      if (auto noted = db_->note_duplicate(*item.batch_id, out.ingestion_id, timeout); !noted)
        return database_error(noted.error(), timeout);
    return out;
  };
  if (!item.source_key.empty()) {
    auto delivered = db_->find_by_source_key(item.tenant_id, item.source_key, timeout);
    if (!delivered)
      return database_error(delivered.error(), timeout);
    if (*delivered && (*delivered)->live_ingestion_id)
      return duplicate_of(**delivered);
  }
  auto hash = aws::sha256_hex(item.bytes);

  // Held until the end: a concurrent intake of the same content waits, then finds these rows.
  auto lock = db_->lock_content(item.tenant_id, hash, timeout);
  if (!lock)
    return database_error(lock.error(), timeout);
  auto existing = (*lock)->find_document(timeout);
  if (!existing)
    return database_error(existing.error(), timeout);

  intake_request req;
  req.tenant_id = item.tenant_id;
  req.content_hash = hash;
  req.content_md5 = aws::md5_hex(item.bytes);
  req.mime_type = mime;
  req.doc_source_id = item.source.doc_source_id;
  req.uploaded_by = item.source.uploaded_by;
  req.source_metadata = source_metadata(item, item.bytes.size(), mime);
  req.stage = container ? "unpack" : "ingest";
  req.ingestion_id = uuid::v7();
  req.priority = item.priority;
  req.batch_id = item.batch_id;

  // Writes the object unless it is there already (same content hash, so same bytes).
  auto ensure_stored = [&](const std::string& key) -> result<void> {
    auto there = blocking_call<bool>(timeout, "intake.timeout", "storage",
                                     [&](auto cb) { storage_->exists(key, cb); });
    if (!there)
      return there.error();
    if (*there)
      return {};
    log::warn("intake: restoring a missing document object", {{"file_path", key}});
    return blocking_call<void>(timeout, "intake.timeout", "storage", [&](auto cb) {
      storage_->put(key, item.bytes, std::string{mime}, cb);
    });
  };

  if (*existing) {
    auto& known = **existing;
    if (auto ok = ensure_stored(known.file_path); !ok)
      return ok.error();
    if (known.live_ingestion_id)
      return duplicate_of(known);
    out.document_id = known.document_id;
    out.file_path = known.file_path;
    if (!known.mime_type.empty())
      out.mime_type = known.mime_type;
    out.status = intake_status::reprocessing;
    req.document_id = out.document_id;
    req.file_path = out.file_path;
  } else {
    // Store before the rows exist: a row never points at a missing object.
    out.status = intake_status::created;
    req.document_id = uuid::v7();
    req.file_path
        = storage_keys::document(req.tenant_id.str(), req.document_id.str(), std::string{ext});
    auto put = blocking_call<void>(timeout, "intake.timeout", "storage", [&](auto cb) {
      storage_->put(req.file_path, item.bytes, std::string{mime}, cb);
    });
    if (!put)
      return put.error();
  }

  // A container has no size class of its own: its documents get theirs when it is unpacked.
  req.size_class = container ? "small" : size_class_of(opts_, item.bytes, mime);
  req.queue = container                   ? opts_.unpack_queue
              : req.size_class == "large" ? opts_.large_queue
                                          : opts_.ingest_queue;
  auto created = db_->create_ingestion(req, timeout);
  if (!created)
    return database_error(created.error(), timeout);
  if (out.status == intake_status::created && !created->document_created)
    // Someone inserted the document without this lock (another tool): theirs wins.
    log::warn("intake: the document appeared meanwhile; its stored object is used",
              {{"document_id", created->document_id.str()}, {"orphan", req.file_path}});
  out.document_id = created->document_id;
  out.ingestion_id = created->ingestion_id;
  out.file_path = created->file_path;

  return out;
}

result<std::unique_ptr<intake_repository::content_lock>>
intake_service::take_turn(uuid tenant_id, const std::string& key) {
  // The content locks' space: a content hash is 64 hex digits, never a key with a colon.
  auto lock = db_->lock_content(tenant_id, key, opts_.call_timeout);
  if (!lock)
    return database_error(lock.error(), opts_.call_timeout);
  return lock;
}

std::string size_class_of(const intake_options& opts, std::string_view bytes,
                          std::string_view mime) {
  if (opts.large_queue.empty())
    return "small";
  if (bytes.size() >= opts.large_min_bytes)
    return "large";
  // An office document's pages are known once it is converted; its size decides.
  if (auto type = file_type_of_mime(mime); type && needs_conversion(type->kind))
    return "small";
  if (opts.count_pages && opts.count_pages(bytes, mime) >= opts.large_min_pages)
    return "large";
  return "small";
}

result<std::optional<std::string>> intake_service::document_json(uuid tenant_id, uuid document_id) {
  auto r = db_->document_json(tenant_id, document_id, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<std::vector<retried_item>> intake_service::retry(uuid tenant_id, uuid ingestion_id,
                                                        const std::string& who) {
  retry_request req;
  req.ids = {ingestion_id};
  req.tenant = tenant_id;
  req.queues = opts_.stage_queues;
  req.via_outbox = opts_.via_outbox;
  req.who = who;
  auto r = db_->retry_failed(req, opts_.call_timeout);
  if (r)
    for (const auto& item : *r)
      log::info("retry requested", {{"work_item", item.id.str()},
                                    {"stage", item.stage},
                                    {"sent", item.sent ? "yes" : "no: its stage has no queue here"},
                                    {"by", who}});
  return r;
}

result<cancel_result> intake_service::cancel(std::optional<uuid> tenant_id, uuid ingestion_id,
                                             const std::string& who) {
  auto r = db_->cancel_ingestion(ingestion_id, tenant_id, who, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  if (r->outcome == cancel_outcome::cancelled || r->outcome == cancel_outcome::cancelling)
    log::info("ingestion cancel",
              {{"ingestion_id", ingestion_id.str()},
               {"outcome", r->outcome == cancel_outcome::cancelled ? "cancelled" : "cancelling"},
               {"by", who}});
  return r;
}

result<batch_info> intake_service::open_batch(uuid tenant_id, const std::string& name) {
  if (!valid_batch_name(name))
    return error::make_permanent(errc::intake_invalid_batch,
                                 "a batch name is 1 to 200 characters of printable text");
  auto r = db_->open_batch(tenant_id, name, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<std::optional<batch_info>> intake_service::seal_batch(std::optional<uuid> tenant_id,
                                                             uuid batch_id) {
  auto r = db_->seal_batch(batch_id, tenant_id, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<std::optional<batch_info>> intake_service::batch(std::optional<uuid> tenant_id,
                                                        uuid batch_id) {
  auto r = db_->find_batch(batch_id, tenant_id, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

bool valid_batch_name(std::string_view name) {
  if (name.empty() || name.size() > 200)
    return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      return false;
  return true;
}

result<std::optional<std::string>> intake_service::ingestion_json(uuid tenant_id,
                                                                  uuid ingestion_id) {
  auto r = db_->ingestion_json(tenant_id, ingestion_id, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

} // namespace ingestd
