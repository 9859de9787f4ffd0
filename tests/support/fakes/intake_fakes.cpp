// The fake intake repository (intake_fakes.hpp).
#include "tests/support/fakes/intake_fakes.hpp"

namespace ingestd::test {

/// Holds one (tenant, content) until destroyed, as pg_intake_repository's transaction does.
class fake_intake_repository::lock : public intake_repository::content_lock {
public:
  lock(fake_intake_repository* repo, key k) : repo_(repo), key_(std::move(k)) {}
  ~lock() override { repo_->release(key_); }
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;

  result<std::optional<known_document>> find_document(timeout) override {
    return repo_->find(key_);
  }

private:
  fake_intake_repository* repo_;
  key key_;
};

result<std::unique_ptr<intake_repository::content_lock>>
fake_intake_repository::lock_content(uuid tenant_id, const std::string& content_hash, timeout) {
  std::unique_lock guard{mtx_};
  if (auto err = take_failure("lock_content"))
    return *err;
  key k{tenant_id.str(), content_hash};
  released_.wait(guard, [&] { return locked_.count(k) == 0; });
  locked_.insert(k);
  return std::unique_ptr<content_lock>{std::make_unique<lock>(this, std::move(k))};
}

void fake_intake_repository::release(const key& k) {
  {
    std::lock_guard guard{mtx_};
    locked_.erase(k);
  }
  released_.notify_all();
}

result<std::optional<known_document>> fake_intake_repository::find(const key& k) {
  std::lock_guard guard{mtx_};
  if (auto err = take_failure("find_document"))
    return *err;
  auto doc = documents_.find(k);
  if (doc == documents_.end())
    return std::optional<known_document>{};
  known_document known;
  known.document_id = doc->second.document_id;
  known.file_path = doc->second.file_path;
  known.mime_type = doc->second.mime_type;
  // Its in-progress ingestion, else its latest completed one.
  for (const auto& id : ingestion_order_) {
    const auto& row = ingestions_.at(id);
    if (row.document_id != known.document_id)
      continue;
    if (row.status == "in-progress") {
      known.live_ingestion_id = row.request.ingestion_id;
      known.live_ingestion_status = row.status;
      break;
    }
    if (row.status == "completed") {
      known.live_ingestion_id = row.request.ingestion_id;
      known.live_ingestion_status = row.status;
    }
  }
  return std::optional<known_document>{std::move(known)};
}

result<intake_result> fake_intake_repository::create_ingestion(const intake_request& request,
                                                               timeout) {
  std::lock_guard guard{mtx_};
  requests_.push_back(request);
  if (auto err = take_failure("create_ingestion"))
    return *err;
  key k{request.tenant_id.str(), request.content_hash};
  if (locked_.count(k) == 0)
    violations_.push_back("create_ingestion without the content's lock: "
                          + request.ingestion_id.str());
  if (request.queue.empty())
    violations_.push_back("create_ingestion without a queue: " + request.ingestion_id.str());
  intake_result out;
  auto doc = documents_.find(k);
  if (doc == documents_.end()) {
    doc = documents_
              .emplace(k, document_row{request.document_id, request.file_path, request.mime_type})
              .first;
    out.document_created = true;
  }
  out.document_id = doc->second.document_id;
  out.file_path = doc->second.file_path;
  out.ingestion_id = request.ingestion_id;
  if (ingestions_.count(request.ingestion_id.str()) == 0) {
    ingestions_.emplace(request.ingestion_id.str(), ingestion_row{request, out.document_id});
    ingestion_order_.push_back(request.ingestion_id.str());
    out.ingestion_created = true;
  }
  return out;
}

error fake_intake_repository::unsupported(const char* call) {
  std::lock_guard guard{mtx_};
  violations_.push_back(std::string{"not faked: "} + call);
  return error::make_permanent("fake.unsupported", call);
}

result<std::optional<std::string>> fake_intake_repository::document_json(uuid, uuid, timeout) {
  return unsupported("document_json");
}

result<std::optional<std::string>> fake_intake_repository::ingestion_json(uuid, uuid, timeout) {
  return unsupported("ingestion_json");
}

result<std::string> fake_intake_repository::review_json(int, timeout) {
  return unsupported("review_json");
}

result<std::string> fake_intake_repository::documents_json(int, timeout) {
  return unsupported("documents_json");
}

result<std::optional<ingestion_status>> fake_intake_repository::find_ingestion(uuid, timeout) {
  return unsupported("find_ingestion");
}

result<status_summary> fake_intake_repository::summarize(timeout) {
  return unsupported("summarize");
}

result<cancel_result> fake_intake_repository::cancel_ingestion(uuid, std::optional<uuid>,
                                                               const std::string&, timeout) {
  return unsupported("cancel_ingestion");
}

result<std::vector<retried_item>> fake_intake_repository::retry_failed(const retry_request&,
                                                                       timeout) {
  return unsupported("retry_failed");
}

// Batches live in the database's triggers: their tests run against PostgreSQL.
result<batch_info> fake_intake_repository::open_batch(uuid, const std::string&, timeout) {
  return unsupported("open_batch");
}

result<std::optional<batch_info>> fake_intake_repository::seal_batch(uuid, std::optional<uuid>,
                                                                     timeout) {
  return unsupported("seal_batch");
}

result<void> fake_intake_repository::note_duplicate(uuid, uuid, timeout) {
  return unsupported("note_duplicate");
}

result<std::optional<known_document>>
fake_intake_repository::find_by_source_key(uuid, const std::string&, timeout) {
  return unsupported("find_by_source_key");
}

result<std::optional<batch_info>> fake_intake_repository::find_batch(uuid, std::optional<uuid>,
                                                                     timeout) {
  return unsupported("find_batch");
}

result<std::vector<batch_info>> fake_intake_repository::list_batches(std::optional<uuid>, int,
                                                                     timeout) {
  return unsupported("list_batches");
}

result<std::vector<uuid>> fake_intake_repository::batch_in_progress(uuid, timeout) {
  return unsupported("batch_in_progress");
}

result<void> fake_intake_repository::ping(timeout) {
  return {};
}

void fake_intake_repository::set_status(uuid ingestion_id, const std::string& status) {
  std::lock_guard guard{mtx_};
  if (auto i = ingestions_.find(ingestion_id.str()); i != ingestions_.end())
    i->second.status = status;
  else
    violations_.push_back("set_status of an unknown ingestion: " + ingestion_id.str());
}

std::vector<intake_request> fake_intake_repository::requests() {
  std::lock_guard guard{mtx_};
  return requests_;
}

size_t fake_intake_repository::documents() {
  std::lock_guard guard{mtx_};
  return documents_.size();
}

size_t fake_intake_repository::ingestions() {
  std::lock_guard guard{mtx_};
  return ingestions_.size();
}

std::vector<std::string> fake_intake_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

} // namespace ingestd::test
