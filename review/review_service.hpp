// The review desk's business logic over ports only (review_repository, object_store,
// cpu_executor): the review queue, a document with its transcription, page images and
// the gate's failed checks, and the reviewer's decisions. Blocking: for the admin server's
// request threads, never inside an actor. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/db/review_repository.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "messages/result.hpp"
#include "messages/transcription.hpp"
#include "messages/uuid.hpp"
#include "review/page_images.hpp"
#include "review/review_request.hpp"

namespace ingestd {

class object_store;
class cpu_executor;

/// The providers this node runs (config/providers.hpp's names, the configured one first): a
/// reprocess may choose among them. Empty: only the configured ones ("as configured").
struct node_providers {
  std::vector<std::string> transcription;
  std::vector<std::string> extraction;
};

struct review_options {
  /// Deadline of each port call (database, storage, a page render).
  std::chrono::milliseconds call_timeout{std::chrono::seconds{20}};
  /// The gate whose sums and plausibility checks become the reviewer's warnings.
  gate_options gate;
  /// Larger stored documents are not rendered.
  size_t max_file_bytes = size_t{100} << 20;
  /// What a reprocess may choose on this node.
  node_providers providers;
};

/// A check of the quality gate that fails on some data, and the fields it concerns.
struct review_finding {
  /// "totals", "line_items", a plausibility check's name (gate_check), "extraction_not_successful"
  /// or "low_confidence".
  std::string check;
  std::string message;
  std::vector<std::string> fields;
};

/// The reviewer's fields applied to a document's data, validated.
struct review_check {
  /// The whole data after the change (JSON object text).
  std::string data;
  /// {"field": {"from":..., "to":...}} for the fields whose value changed.
  std::string changes = "{}";
  /// Empty when the data is valid against the extraction schema, else why not.
  std::string schema_error;
  /// The gate's sums and plausibility checks that fail on the data: warnings, not refusals.
  std::vector<review_finding> warnings;
};

/// Who acts, and for which tenants.
struct reviewer {
  std::string name;
  std::vector<uuid> tenants;
};

struct review_done {
  std::string action;
  int64_t version = 0;
  std::vector<review_finding> warnings;
  std::string changes = "{}";
  /// reprocess: the new ingestion (its queue message is written with it: enqueued).
  std::optional<uuid> ingestion_id;
  bool enqueued = true;
  /// reprocess: the providers chosen (empty: as configured).
  provider_choice providers;
};

class review_service {
public:
  review_service(std::shared_ptr<review_repository> db, std::shared_ptr<object_store> storage,
                 std::shared_ptr<cpu_executor> cpu, review_options opts = {});
  ~review_service();
  review_service(const review_service&) = delete;
  review_service& operator=(const review_service&) = delete;

  result<review_queue> queue(const review_queue_filter& filter);

  /// nullopt when unknown or not one of `tenants`'.
  result<std::optional<review_document>> document(const std::vector<uuid>& tenants, uuid id);

  /// The latest transcription with its pages' words (an empty one when there is none, or it is
  /// gone from the store).
  result<transcription> reading(const review_document& doc);

  /// The document as GET /review/api/documents/{id} answers it, with its transcription's text
  /// and where on its pages each field's value is (adapters/extraction/provenance.hpp).
  std::string document_json(const review_document& doc, const transcription& reading);

  /// The gate's checks that fail on the document's current data (for the page and the API).
  std::vector<review_finding> findings(const std::string& structured_data) const;

  /// Applies `fields_json` (a JSON object of schema fields, or empty) to the document's data
  /// and validates the result. Errors: "review.invalid" (not an object, an unknown field).
  result<review_check> check(const review_document& doc, std::string_view fields_json) const;

  /// Approve, as is or with fields changed. The approved data says a person verified it:
  /// extraction_successful true and confidence "high", unless `fields_json` sets them (the
  /// machine's own stay on its ingestion and in the review row). Errors: "review.not_found",
  /// "review.conflict", "review.invalid", "review.schema_invalid" (nothing saved), transient
  /// database errors.
  result<review_done> approve(const reviewer& who, uuid id, int64_t version,
                              std::string_view fields_json);
  /// Reject with a reason (not empty: "review.invalid").
  result<review_done> reject(const reviewer& who, uuid id, int64_t version, std::string reason);
  /// A new ingestion of the document, enqueued, with the providers of `choice`. Errors besides
  /// those of approve: "review.unknown_provider" (a name that is no provider),
  /// "review.provider_unavailable" (a provider this node's configuration cannot run).
  result<review_done> reprocess(const reviewer& who, uuid id, int64_t version,
                                const provider_choice& choice = {});

  /// What the reviewers of `tenants` taught about their suppliers (review.learn applies it).
  result<std::vector<learned_fact>> learned(const std::vector<uuid>& tenants);
  /// Deletes one fact of one of the reviewer's tenants: "review.not_found" when there is none
  /// (or the tenant is not theirs).
  result<void> forget(const reviewer& who, uuid tenant, const std::string& supplier,
                      const std::string& field);
  /// The facts as GET /review/api/knowledge answers them.
  static std::string learned_json(const std::vector<learned_fact>& facts);

  /// What a reprocess may choose on this node.
  const node_providers& providers() const { return opts_.providers; }

  /// Page `index` of the document ("original") or of the latest ingestion's preprocessed image
  /// ("preprocessed"); PDF pages are rendered on the CPU pool once and cached in object storage.
  result<page_image> page(const std::vector<uuid>& tenants, uuid id, int index,
                          std::string_view variant);

private:
  result<review_document> load(const reviewer& who, uuid id, int64_t version);
  result<std::string> fetch(const std::string& key, size_t max_bytes);
  result<page_image> render_on_pool(const std::shared_ptr<const std::string>& bytes,
                                    const std::string& mime, int index);

  std::shared_ptr<review_repository> db_;
  std::shared_ptr<object_store> storage_;
  std::shared_ptr<cpu_executor> cpu_;
  review_options opts_;
};

/// The findings as a JSON array text: [{"check", "message", "fields": [...]}].
std::string findings_json(const std::vector<review_finding>& findings);

} // namespace ingestd
