// Intake: validation, deduplication under a per-content advisory lock, store-before-rows, enqueue;
// and the read-only look-ups that the HTTP server and `ingestd status` show.
#include "app/intake.hpp"

#include <openssl/evp.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/repository.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

// Session-level, so that it is held across the repository's own connection's statements; the
// server drops it if this connection dies. Two statements (not one): a statement's snapshot is
// taken before it waits for the lock and would miss what the previous holder committed.
constexpr pg::statement lock_sql{"ingestd_intake_lock",
                                 "SELECT pg_advisory_lock(hashtextextended($1 || ':' || $2, 0))"};
constexpr pg::statement unlock_sql{"ingestd_intake_unlock",
                                   "SELECT pg_advisory_unlock(hashtextextended($1 || ':' || $2, 0))"};

constexpr pg::statement existing_sql{"ingestd_intake_existing", R"sql(
SELECT d.id, d.file_path, COALESCE(d.mime_type, ''), live.id, live.status
  FROM document AS d
  LEFT JOIN LATERAL (
    SELECT i.id, i.status FROM ingestion AS i
     WHERE i.document_id = d.id AND i.status IN ('in-progress', 'completed')
     ORDER BY i.status = 'in-progress' DESC, i.created_at DESC, i.id DESC
     LIMIT 1) AS live ON true
 WHERE d.tenant_id = $1 AND d.content_hash = $2
)sql"};

constexpr const char* document_json_sql = R"sql(
SELECT json_build_object(
  'id', d.id, 'tenant_id', d.tenant_id, 'content_hash', d.content_hash,
  'file_path', d.file_path, 'mime_type', d.mime_type,
  'state', CASE
    WHEN EXISTS (SELECT 1 FROM ingestion AS i
                  WHERE i.document_id = d.id AND i.status = 'in-progress') THEN 'processing'
    WHEN d.needs_human_review THEN 'needs_review'
    WHEN d.structured_data IS NOT NULL THEN 'ready'
    ELSE 'unprocessed' END,
  'needs_human_review', d.needs_human_review,
  'structured_data', d.structured_data,
  'created_at', d.created_at, 'updated_at', d.updated_at,
  'ingestions', COALESCE((
    SELECT json_agg(json_build_object('id', i.id, 'status', i.status,
                                      'attempt_count', i.attempt_count,
                                      'created_at', i.created_at,
                                      'completed_at', i.completed_at)
                    ORDER BY i.created_at, i.id)
      FROM ingestion AS i WHERE i.document_id = d.id), '[]'::json))::text
  FROM document AS d WHERE d.id = $1
)sql";

constexpr const char* ingestion_json_sql = R"sql(
SELECT json_build_object(
  'id', i.id, 'document_id', i.document_id, 'status', i.status,
  'attempt_count', i.attempt_count,
  'uploaded_by', i.uploaded_by, 'doc_source_id', i.doc_source_id,
  'source_metadata', i.source_metadata,
  'last_error', i.last_error, 'error_class', i.error_class,
  'claimed_by', i.claimed_by,
  'claimed', i.claim_token IS NOT NULL AND i.lease_expires_at >= now(),
  'transcription_file_path', i.transcription_file_path,
  'preprocessed_file_path', i.preprocessed_file_path,
  'transcription_quality_score', i.transcription_quality_score,
  'structured_data', i.structured_data,
  'valid_structured_data', i.valid_structured_data,
  'extraction_model', i.extraction_model,
  'extraction_input_tokens', i.extraction_input_tokens,
  'extraction_output_tokens', i.extraction_output_tokens,
  'created_at', i.created_at, 'started_at', i.started_at, 'completed_at', i.completed_at,
  'due_at', i.due_at,
  'events', COALESCE((
    SELECT json_agg(json_build_object('step', e.step, 'outcome', e.outcome, 'detail', e.detail,
                                      'duration_ms', e.duration_ms, 'worker_id', e.worker_id,
                                      'at', e.at)
                    ORDER BY e.at, e.id)
      FROM ingestion_event AS e WHERE e.ingestion_id = i.id), '[]'::json))::text
  FROM ingestion AS i WHERE i.id = $1
)sql";

constexpr const char* review_json_sql = R"sql(
SELECT COALESCE(json_agg(json_build_object(
         'document_id', r.id, 'tenant_id', r.tenant_id, 'file_name', r.file_name,
         'last_error', r.last_error, 'updated_at', r.updated_at) ORDER BY r.updated_at, r.id),
       '[]'::json)::text
  FROM (SELECT d.id, d.tenant_id, d.updated_at,
               (SELECT i.source_metadata->>'file_name' FROM ingestion AS i
                 WHERE i.document_id = d.id ORDER BY i.created_at DESC LIMIT 1) AS file_name,
               (SELECT i.last_error FROM ingestion AS i
                 WHERE i.document_id = d.id ORDER BY i.created_at DESC LIMIT 1) AS last_error
          FROM document AS d WHERE d.needs_human_review
         ORDER BY d.updated_at DESC, d.id DESC LIMIT $1) AS r
)sql";

constexpr const char* documents_json_sql = R"sql(
SELECT COALESCE(json_agg(json_build_object(
         'document_id', r.id, 'file_name', r.file_name, 'state', r.state,
         'needs_human_review', r.needs_human_review, 'last_error', r.last_error,
         'invoice_number', r.sd->'invoice_number', 'invoice_date', r.sd->'invoice_date',
         'supplier_name', r.sd->'supplier_name', 'customer_name', r.sd->'customer_name',
         'currency', r.sd->'currency', 'total', r.sd->'total',
         'confidence', r.sd->'confidence') ORDER BY r.created_at, r.id), '[]'::json)::text
  FROM (SELECT d.id, d.created_at, d.needs_human_review, d.structured_data AS sd,
               latest.file_name, latest.last_error,
               CASE WHEN EXISTS (SELECT 1 FROM ingestion AS i
                                  WHERE i.document_id = d.id AND i.status = 'in-progress')
                      THEN 'processing'
                    WHEN d.needs_human_review THEN 'needs_review'
                    WHEN d.structured_data IS NOT NULL THEN 'ready'
                    ELSE 'unprocessed' END AS state
          FROM document AS d
          LEFT JOIN LATERAL (
            SELECT i.source_metadata->>'file_name' AS file_name, i.last_error
              FROM ingestion AS i WHERE i.document_id = d.id
             ORDER BY i.created_at DESC LIMIT 1) AS latest ON true
         ORDER BY d.created_at DESC, d.id DESC LIMIT $1) AS r
)sql";

constexpr pg::statement ping_sql{"ingestd_intake_ping", "SELECT 1"};

std::string source_metadata(const intake_item& item, size_t size, const file_type& type) {
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
  w.Key("size");
  w.Uint64(size);
  w.Key("mime_type");
  w.String(type.mime.data(), static_cast<rapidjson::SizeType>(type.mime.size()));
  w.EndObject();
  return buf.GetString();
}

} // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xF];
  }
  return out;
}

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

intake_service::intake_service(std::shared_ptr<repository> db, std::shared_ptr<queue> q,
                               std::shared_ptr<object_store> storage, std::string database_url,
                               intake_options opts)
  : db_(std::move(db)), queue_(std::move(q)), storage_(std::move(storage)),
    database_url_(std::move(database_url)), opts_(opts) {
}

intake_service::~intake_service() = default;

std::unique_ptr<pg::connection> intake_service::borrow() {
  {
    std::lock_guard guard{mtx_};
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  return std::make_unique<pg::connection>(database_url_);
}

void intake_service::give_back(std::unique_ptr<pg::connection> conn) {
  std::lock_guard guard{mtx_};
  idle_.push_back(std::move(conn));
}

/// A borrowed connection holding the advisory lock of one (tenant, content hash).
class intake_service::lease {
public:
  lease(intake_service& owner, std::string tenant, std::string hash)
    : owner_(owner), conn_(owner.borrow()), tenant_(std::move(tenant)), hash_(std::move(hash)) {
  }
  ~lease() {
    if (locked_ && !conn_->exec(unlock_sql, {tenant_, hash_}))
      conn_->drop();  // the server releases a dead session's locks
    owner_.give_back(std::move(conn_));
  }
  result<void> lock() {
    if (auto ok = conn_->ensure(true); !ok)
      return ok.error();
    auto res = conn_->exec(lock_sql, {tenant_, hash_});
    if (!res)
      return res.error();
    locked_ = true;
    return {};
  }
  pg::connection& conn() { return *conn_; }

private:
  intake_service& owner_;
  std::unique_ptr<pg::connection> conn_;
  std::string tenant_;
  std::string hash_;
  bool locked_ = false;
};

result<intake_outcome> intake_service::submit(const intake_item& item) {
  if (item.bytes.empty())
    return error::make_permanent("intake.empty", "the file is empty");
  if (item.bytes.size() > opts_.max_bytes)
    return error::make_permanent("intake.too_large",
                                 "the file has " + std::to_string(item.bytes.size())
                                   + " bytes; the limit is " + std::to_string(opts_.max_bytes));
  auto type = detect_file_type(item.bytes);
  if (!type)
    return error::make_permanent("intake.unsupported_type",
                                 "not a PDF, PNG, JPEG or TIFF file (by its first bytes)");
  if (item.source.uploaded_by.has_value() == item.source.doc_source_id.has_value())
    return error::make_permanent("intake.invalid_source",
                                 "exactly one of uploaded_by and doc_source_id must be given");
  auto hash = sha256_hex(item.bytes);
  auto tenant = item.tenant_id.str();
  auto timeout = opts_.call_timeout;

  lease guard{*this, tenant, hash};
  if (auto ok = guard.lock(); !ok)
    return ok.error();
  auto existing = guard.conn().exec(existing_sql, {tenant, hash});
  if (!existing)
    return existing.error();

  intake_outcome out;
  out.mime_type = type->mime;
  intake_request req;
  req.tenant_id = item.tenant_id;
  req.content_hash = hash;
  req.mime_type = type->mime;
  req.doc_source_id = item.source.doc_source_id;
  req.uploaded_by = item.source.uploaded_by;
  req.source_metadata = source_metadata(item, item.bytes.size(), *type);
  req.ingestion_id = uuid::v7();

  // Writes the object unless it is there already (same content hash, so same bytes).
  auto ensure_stored = [&](const std::string& key) -> result<void> {
    auto there = blocking_call<bool>(timeout, "intake.timeout", "storage", [&](auto cb) { storage_->exists(key, cb); });
    if (!there)
      return there.error();
    if (*there)
      return {};
    log::warn("intake: restoring a missing document object", {{"file_path", key}});
    return blocking_call<void>(timeout, "intake.timeout", "storage",
                        [&](auto cb) { storage_->put(key, item.bytes, std::string{type->mime}, cb); });
  };

  if (existing->size() > 0) {
    auto& rows = *existing;
    out.document_id = uuid::parse(rows.text(0, 0)).value_or(uuid{});
    out.file_path = rows.str(0, 1);
    if (!rows.str(0, 2).empty())
      out.mime_type = rows.str(0, 2);
    if (auto ok = ensure_stored(out.file_path); !ok)
      return ok.error();
    if (!rows.is_null(0, 3)) {
      out.status = intake_status::duplicate;
      out.ingestion_id = uuid::parse(rows.text(0, 3)).value_or(uuid{});
      out.ingestion_status = rows.str(0, 4);
      return out;
    }
    out.status = intake_status::reprocessing;
    req.document_id = out.document_id;
    req.file_path = out.file_path;
  } else {
    // Store before the rows exist: a row never points at a missing object.
    out.status = intake_status::created;
    req.document_id = uuid::v7();
    req.file_path = storage_keys::document(req.document_id.str(), std::string{type->ext});
    auto put = blocking_call<void>(timeout, "intake.timeout", "storage", [&](auto cb) {
      storage_->put(req.file_path, item.bytes, std::string{type->mime}, cb);
    });
    if (!put)
      return put.error();
  }

  auto created = blocking_call<intake_result>(timeout, "intake.timeout", "database",
                                      [&](auto cb) { db_->create_ingestion(req, cb); });
  if (!created)
    return created.error();
  if (out.status == intake_status::created && !created->document_created)
    // Someone inserted the document without this lock (another tool): theirs wins.
    log::warn("intake: the document appeared meanwhile; its stored object is used",
              {{"document_id", created->document_id.str()}, {"orphan", req.file_path}});
  out.document_id = created->document_id;
  out.ingestion_id = created->ingestion_id;
  out.file_path = created->file_path;

  auto sent = blocking_call<std::vector<batch_entry_result>>(timeout, "intake.timeout", "queue", [&](auto cb) {
    queue_->send({outgoing_message{out.ingestion_id.str(), std::chrono::seconds{0}}}, cb);
  });
  if (!sent || sent->empty() || sent->front().failed) {
    // The ingestion stays due in the database: the sweeper re-enqueues it once it is overdue.
    out.enqueued = false;
    out.enqueue_error = !sent ? sent.error().describe()
                              : sent->empty() ? std::string{"no result"}
                                              : sent->front().error.describe();
    log::warn("intake: enqueue failed; the sweeper will re-enqueue the ingestion",
              {{"ingestion_id", out.ingestion_id.str()}, {"error", out.enqueue_error}});
  }
  return out;
}

result<std::optional<std::string>>
intake_service::json_query(const char* statement_name, const char* sql,
                           const std::vector<std::optional<std::string>>& params) {
  auto conn = borrow();
  struct back {
    intake_service& self;
    std::unique_ptr<pg::connection>& conn;
    ~back() { self.give_back(std::move(conn)); }
  } give{*this, conn};
  if (auto ok = conn->ensure(false); !ok)
    return ok.error();
  auto res = conn->exec(pg::statement{statement_name, sql}, params);
  if (!res)
    return res.error();
  if (res->size() == 0 || res->is_null(0, 0))
    return std::optional<std::string>{};
  return std::optional<std::string>{res->str(0, 0)};
}

result<std::optional<std::string>> intake_service::document_json(uuid document_id) {
  return json_query("ingestd_intake_document", document_json_sql, {document_id.str()});
}

result<std::optional<std::string>> intake_service::ingestion_json(uuid ingestion_id) {
  return json_query("ingestd_intake_ingestion", ingestion_json_sql, {ingestion_id.str()});
}

result<std::string> intake_service::review_json(int limit) {
  auto r = json_query("ingestd_intake_review", review_json_sql, {std::to_string(limit)});
  if (!r)
    return r.error();
  return r->value_or("[]");
}

result<std::string> intake_service::documents_json(int limit) {
  auto r = json_query("ingestd_intake_documents", documents_json_sql, {std::to_string(limit)});
  if (!r)
    return r.error();
  return r->value_or("[]");
}

result<void> intake_service::ping_database() {
  auto conn = borrow();
  if (auto ok = conn->ensure(false); !ok) {
    give_back(std::move(conn));
    return ok.error();
  }
  auto res = conn->exec(ping_sql, {});
  give_back(std::move(conn));
  if (!res)
    return res.error();
  return {};
}

} // namespace ingestd
