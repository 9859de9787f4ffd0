// The review desk's logic: the document's data with a reviewer's fields merged in
// (review_request.cpp) validated against the extraction schema, the gate's checks as warnings,
// the decisions through the repository, page images rendered on the CPU pool and cached in object
// storage.
#include "review/review_service.hpp"

#include <algorithm>
#include <future>
#include <set>
#include <utility>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/provenance.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/sandbox/decoder.hpp"
#include "adapters/storage/object_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "adapters/support/log.hpp"
#include "config/providers.hpp"
#include "messages/cpu_job.hpp"
#include "messages/error_codes.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

std::string json_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  json_writer w{buf};
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

void put(json_writer& w, std::string_view key, std::string_view value) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

/// `raw` is JSON text (already valid); empty writes null.
void put_raw(json_writer& w, std::string_view key, std::string_view raw) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  if (raw.empty())
    w.Null();
  else
    w.RawValue(raw.data(), raw.size(), rapidjson::kObjectType);
}

/// The fields each plausibility check concerns.
std::vector<std::string> fields_of_check(std::string_view check) {
  if (check == gate_check::negative_amount || check == gate_check::amount_magnitude)
    return {"subtotal", "vat_amount", "total"};
  if (check == gate_check::vat_exceeds_total)
    return {"vat_amount", "total"};
  if (check == gate_check::vat_rate)
    return {"vat_amount", "subtotal"};
  if (check == gate_check::due_before_invoice || check == gate_check::date_range)
    return {"invoice_date", "due_date"};
  if (check.starts_with("invoice_number_is_"))
    return {"invoice_number"};
  return {};
}

/// The gate's sums and plausibility checks that fail on `data`, one after another: each failed
/// group of checks is switched off to find the next (the gate itself stops at the first).
std::vector<review_finding> gate_findings(const std::string& data, gate_options opts) {
  std::vector<review_finding> out;
  extraction x;
  x.structured_data = data;
  // The reviewer vouches for the data: only the checks on its content matter here.
  x.extraction_successful = true;
  x.confidence = "high";
  for (int round = 0; round < 4; ++round) {
    auto v = evaluate(x, opts);
    if (v.passed)
      break;
    review_finding f;
    f.message = v.reason;
    constexpr std::string_view plausibility = "plausibility check ";
    if (v.reason.starts_with("totals")) {
      f.check = "totals";
      f.fields = {"subtotal", "vat_amount", "total"};
      opts.check_totals = false;
    } else if (v.reason.starts_with("line items")) {
      f.check = "line_items";
      f.fields = {"line_items", "subtotal", "total"};
      opts.check_line_items = false;
    } else if (v.reason.starts_with(plausibility)) {
      auto rest = std::string_view{v.reason}.substr(plausibility.size());
      f.check = std::string{rest.substr(0, rest.find(' '))};
      f.fields = fields_of_check(f.check);
      opts.check_plausibility = false;
    } else {
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// The approved data says a person verified it: extraction_successful true and confidence
/// "high", unless the reviewer's own fields set them. `data` is a valid JSON object.
std::string human_verified(const std::string& data, std::string_view fields_json) {
  rapidjson::Document doc;
  doc.Parse(data.data(), data.size());
  rapidjson::Document fields;
  if (!fields_json.empty())
    fields.Parse(fields_json.data(), fields_json.size());
  auto set_by_reviewer
      = [&fields](const char* name) { return fields.IsObject() && fields.HasMember(name); };
  if (doc.HasParseError() || !doc.IsObject())
    return data;
  auto set = [&doc, &set_by_reviewer](const char* name, rapidjson::Value value) {
    if (set_by_reviewer(name))
      return;
    if (auto it = doc.FindMember(name); it != doc.MemberEnd())
      it->value = value;
    else
      doc.AddMember(rapidjson::StringRef(name), value, doc.GetAllocator());
  };
  set("extraction_successful", rapidjson::Value{true});
  set("confidence", rapidjson::Value{rapidjson::StringRef("high")});
  return json_text(doc);
}

/// A reprocess's choice of one kind of provider: empty (as configured), or one of `known` (listed
/// in `names`) that this node runs (`here`).
template <size_t N>
result<void> check_choice(std::string_view kind, const std::string& name,
                          const std::string_view (&known)[N], const std::string& names,
                          const std::vector<std::string>& here) {
  if (name.empty())
    return {};
  if (std::find(std::begin(known), std::end(known), name) == std::end(known))
    return error::make_permanent(errc::review_unknown_provider,
                                 "unknown " + std::string{kind} + "_provider \"" + name
                                     + "\": one of " + names + ", or none for the configured one");
  if (std::find(here.begin(), here.end(), name) == here.end()) {
    std::string runs;
    for (auto& h : here)
      runs.append(runs.empty() ? "" : ", ").append(h);
    auto needs = provider_requirement(name);
    return error::make_permanent(
        "review.provider_unavailable",
        "this node cannot run the " + std::string{kind} + " provider \"" + name + "\""
            + (needs.empty() ? std::string{} : ": it needs " + std::string{needs})
            + (runs.empty() ? std::string{" (it runs only its configured one)"}
                            : " (it runs " + runs + ")"));
  }
  return {};
}

error database_error(const error& e, std::chrono::milliseconds t) {
  if (e.code == errc::db_timeout)
    return timeout_error("review.timeout", "the database", t);
  return e;
}

} // namespace

std::string findings_json(const std::vector<review_finding>& findings) {
  rapidjson::StringBuffer buf;
  json_writer w{buf};
  w.StartArray();
  for (auto& f : findings) {
    w.StartObject();
    put(w, "check", f.check);
    put(w, "message", f.message);
    w.Key("fields");
    w.StartArray();
    for (auto& name : f.fields)
      w.String(name.data(), static_cast<rapidjson::SizeType>(name.size()));
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  return {buf.GetString(), buf.GetSize()};
}

review_service::review_service(std::shared_ptr<review_repository> db,
                               std::shared_ptr<object_store> storage,
                               std::shared_ptr<cpu_executor> cpu, review_options opts)
    : db_(std::move(db)), storage_(std::move(storage)), cpu_(std::move(cpu)),
      opts_(std::move(opts)) {}

review_service::~review_service() = default;

result<review_queue> review_service::queue(const review_queue_filter& filter) {
  auto r = db_->queue(filter, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<std::optional<review_document>> review_service::document(const std::vector<uuid>& tenants,
                                                                uuid id) {
  auto r = db_->document(tenants, id, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<std::vector<learned_fact>> review_service::learned(const std::vector<uuid>& tenants) {
  auto r = db_->learned(tenants, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  return r;
}

result<void> review_service::forget(const reviewer& who, uuid tenant, const std::string& supplier,
                                    const std::string& field) {
  if (std::find(who.tenants.begin(), who.tenants.end(), tenant) == who.tenants.end())
    return error::make_permanent(errc::review_not_found, "no such fact");
  auto r = db_->forget(tenant, supplier, field, opts_.call_timeout);
  if (!r)
    return database_error(r.error(), opts_.call_timeout);
  if (!*r)
    return error::make_permanent(errc::review_not_found, "no such fact");
  log::info("review: forgot a supplier fact", {{"tenant_id", tenant.str()},
                                               {"supplier", supplier},
                                               {"field", field},
                                               {"reviewer", who.name}});
  return {};
}

std::string review_service::learned_json(const std::vector<learned_fact>& facts) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("facts");
  w.StartArray();
  for (auto& f : facts) {
    w.StartObject();
    w.Key("tenant_id");
    w.String(f.tenant_id.str().c_str());
    w.Key("supplier");
    w.String(f.fact.supplier.c_str());
    w.Key("field");
    w.String(f.fact.field.c_str());
    w.Key("value");
    w.String(f.fact.value.c_str());
    w.Key("reviews");
    w.Int64(f.fact.reviews);
    w.Key("learned_by");
    w.String(f.learned_by.c_str());
    w.Key("learned_at");
    w.String(f.learned_at.c_str());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

result<std::string> review_service::fetch(const std::string& key, size_t max_bytes) {
  return blocking_call<std::string>(opts_.call_timeout, "review.timeout", "the object store",
                                    [&](auto cb) { storage_->get(key, max_bytes, cb); });
}

result<transcription> review_service::reading(const review_document& doc) {
  if (doc.transcription_file_path.empty())
    return transcription{};
  auto bytes = fetch(doc.transcription_file_path, opts_.max_file_bytes);
  if (!bytes) {
    if (bytes.error().code == errc::storage_not_found)
      return transcription{};
    return bytes.error();
  }
  return transcription_from_json(*bytes);
}

std::vector<review_finding> review_service::findings(const std::string& structured_data) const {
  std::vector<review_finding> out;
  rapidjson::Document doc;
  doc.Parse(structured_data.data(), structured_data.size());
  if (doc.HasParseError() || !doc.IsObject())
    return out;
  std::vector<std::string> missing;
  if (doc.HasMember("missing_fields") && doc["missing_fields"].IsArray())
    for (auto& m : doc["missing_fields"].GetArray())
      if (m.IsString())
        missing.emplace_back(m.GetString(), m.GetStringLength());
  if (doc.HasMember("extraction_successful") && doc["extraction_successful"].IsFalse())
    out.push_back(
        {"extraction_not_successful", "the extractor could not read the document", missing});
  if (doc.HasMember("confidence") && doc["confidence"].IsString()
      && std::string_view{doc["confidence"].GetString()} == "low")
    out.push_back({"low_confidence", "the extractor's confidence is low", missing});
  for (auto& f : gate_findings(structured_data, opts_.gate))
    out.push_back(std::move(f));
  return out;
}

result<review_check> review_service::check(const review_document& doc,
                                           std::string_view fields_json) const {
  auto applied = apply_review_fields(doc.structured_data, fields_json);
  if (!applied)
    return applied.error();
  review_check out;
  out.data = std::move(applied->data);
  out.changes = std::move(applied->changes);
  if (auto valid = validate_extraction_json(out.data); !valid)
    out.schema_error = valid.error().message;
  out.warnings = gate_findings(out.data, opts_.gate);
  return out;
}

result<review_document> review_service::load(const reviewer& who, uuid id, int64_t version) {
  auto doc = document(who.tenants, id);
  if (!doc)
    return doc.error();
  if (!*doc)
    return error::make_permanent(errc::review_not_found, "no such document");
  if ((*doc)->processing)
    return error::make_permanent(errc::review_conflict,
                                 "the document is being processed again; reload it when the "
                                 "ingestion has finished");
  if ((*doc)->version != version)
    return error::make_permanent(
        "review.conflict", "the document changed since you opened it (version "
                               + std::to_string(version) + ", now "
                               + std::to_string((*doc)->version)
                               + (((*doc)->reviewed_by.empty())
                                      ? std::string{}
                                      : ": " + (*doc)->review_status + " by " + (*doc)->reviewed_by)
                               + "); nothing was saved. Reload to see the current version.");
  return std::move(**doc);
}

result<review_done> review_service::approve(const reviewer& who, uuid id, int64_t version,
                                            std::string_view fields_json) {
  auto doc = load(who, id, version);
  if (!doc)
    return doc.error();
  auto checked = check(*doc, fields_json);
  if (!checked)
    return checked.error();
  if (!checked->schema_error.empty())
    return error::make_permanent(errc::review_schema_invalid,
                                 "the data does not match the extraction schema: "
                                     + checked->schema_error);
  review_decision d;
  d.tenant_id = doc->tenant_id;
  d.document_id = id;
  d.expected_version = version;
  d.action = "approve";
  d.reviewer = who.name;
  d.reviewed_data = human_verified(checked->data, fields_json);
  d.changes = checked->changes;
  d.warnings = findings_json(checked->warnings);
  // A corrected invoice number's label and the supplier's decimal separator are learned from the
  // transcription; without one (none stored, the store down) the rest is still learned.
  std::string text;
  if (checked->changes != "{}")
    if (auto r = reading(*doc))
      text = std::move(r->text);
  d.learned = facts_json(learn(doc->structured_data, checked->data, text));
  auto saved = db_->save(d, opts_.call_timeout);
  if (!saved)
    return database_error(saved.error(), opts_.call_timeout);
  log::info("review: approved",
            {{"document_id", id.str()}, {"reviewer", who.name}, {"version", saved->version}});
  return review_done{
      "approve", saved->version, std::move(checked->warnings), checked->changes, {}, true, {}};
}

result<review_done> review_service::reject(const reviewer& who, uuid id, int64_t version,
                                           std::string reason) {
  if (reason.find_first_not_of(" \t\r\n") == std::string::npos)
    return error::make_permanent(errc::review_invalid, "a rejection needs a reason");
  auto doc = load(who, id, version);
  if (!doc)
    return doc.error();
  review_decision d;
  d.tenant_id = doc->tenant_id;
  d.document_id = id;
  d.expected_version = version;
  d.action = "reject";
  d.reviewer = who.name;
  d.reason = std::move(reason);
  auto saved = db_->save(d, opts_.call_timeout);
  if (!saved)
    return database_error(saved.error(), opts_.call_timeout);
  log::info("review: rejected", {{"document_id", id.str()}, {"reviewer", who.name}});
  return review_done{"reject", saved->version, {}, "{}", {}, true, {}};
}

result<review_done> review_service::reprocess(const reviewer& who, uuid id, int64_t version,
                                              const provider_choice& choice) {
  if (auto ok = check_choice("transcription", choice.transcription, transcription_provider_names,
                             transcription_provider_list(), opts_.providers.transcription);
      !ok)
    return ok.error();
  if (auto ok = check_choice("extraction", choice.extraction, extraction_provider_names,
                             extraction_provider_list(), opts_.providers.extraction);
      !ok)
    return ok.error();
  auto doc = load(who, id, version);
  if (!doc)
    return doc.error();
  review_decision d;
  d.tenant_id = doc->tenant_id;
  d.document_id = id;
  d.expected_version = version;
  d.action = "reprocess";
  d.reviewer = who.name;
  d.new_ingestion_id = uuid::v7();
  d.transcription_provider = choice.transcription;
  d.extraction_provider = choice.extraction;
  auto saved = db_->save(d, opts_.call_timeout);
  if (!saved)
    return database_error(saved.error(), opts_.call_timeout);
  review_done out{"reprocess", saved->version, {}, "{}", saved->ingestion_id, true, choice};
  if (!saved->ingestion_id)
    return out;
  log::info("review: reprocessing", {{"document_id", id.str()},
                                     {"reviewer", who.name},
                                     {"ingestion_id", saved->ingestion_id->str()},
                                     {"transcription_provider", choice.transcription},
                                     {"extraction_provider", choice.extraction}});
  return out;
}

result<page_image> review_service::render_on_pool(const std::shared_ptr<const std::string>& bytes,
                                                  const std::string& mime, int index) {
  if (!cpu_)
    return render_page(*bytes, mime, index);
  auto done = std::make_shared<std::promise<result<page_image>>>();
  auto f = done->get_future();
  cpu_job job;
  auto decoder = cpu_->decoder();
  auto limit = opts_.max_file_bytes;
  auto deadline = std::chrono::steady_clock::now() + opts_.call_timeout;
  job.run = [done, bytes, mime, index, decoder, limit, deadline] {
    // A decoder helper renders the page when the pool has them: a PDF that crashes poppler
    // costs that helper, not the node, however often a reviewer opens it.
    if (decoder)
      return done->set_value(
          sandbox::render_page(*decoder, *bytes, mime, index, 110, 1800, limit, deadline));
    done->set_value(render_page(*bytes, mime, index));
  };
  job.expired = [done] {
    done->set_value(error::make_transient("review.busy", "the CPU pool is busy; try again"));
  };
  job.deadline = deadline;
  cpu_->submit(std::move(job));
  // The pool answers by the deadline (run or expired); the margin covers a render under way.
  if (f.wait_for(opts_.call_timeout * 2) != std::future_status::ready)
    return timeout_error("review.timeout", "the page render", opts_.call_timeout * 2);
  return f.get();
}

result<page_image> review_service::page(const std::vector<uuid>& tenants, uuid id, int index,
                                        std::string_view variant) {
  auto doc = document(tenants, id);
  if (!doc)
    return doc.error();
  if (!*doc)
    return error::make_permanent(errc::review_not_found, "no such document");
  auto& d = **doc;
  // An office document's pages are its PDF's (the conversion, kept as its preprocessed file).
  auto file_path = d.file_path;
  auto mime = d.mime_type;
  if (auto type = file_type_of_mime(mime); type && needs_conversion(type->kind)) {
    if (!d.preprocessed_file_path.ends_with(".pdf"))
      return error::make_permanent(errc::review_page_out_of_range,
                                   "the document has not been converted to PDF yet");
    file_path = d.preprocessed_file_path;
    mime = "application/pdf";
  } else if (variant == "preprocessed") {
    if (d.preprocessed_file_path.empty() || index != 0)
      return error::make_permanent(errc::review_page_out_of_range, "no preprocessed image");
    auto bytes = fetch(d.preprocessed_file_path, opts_.max_file_bytes);
    if (!bytes)
      return bytes.error();
    auto type = d.preprocessed_file_path.ends_with(".png") ? "image/png" : "image/jpeg";
    return page_image{std::move(*bytes), type, 1};
  }
  if (mime != "application/pdf") {
    auto bytes = fetch(file_path, opts_.max_file_bytes);
    if (!bytes)
      return bytes.error();
    // A PNG or JPEG is shown as stored; a TIFF is decoded (libtiff): on the pool, in a helper.
    if (mime == "image/tiff")
      return render_on_pool(std::make_shared<const std::string>(std::move(*bytes)), mime, index);
    return render_page(*bytes, mime, index);
  }
  // Cached renders: a page is rendered once, whichever node asks first.
  auto key = storage_keys::page_render(d.tenant_id.str(), id.str(), index);
  if (auto cached = fetch(key, opts_.max_file_bytes); cached)
    return page_image{std::move(*cached), "image/png", 0};
  auto bytes = fetch(file_path, opts_.max_file_bytes);
  if (!bytes)
    return bytes.error();
  auto rendered
      = render_on_pool(std::make_shared<const std::string>(std::move(*bytes)), mime, index);
  if (!rendered)
    return rendered.error();
  auto stored
      = blocking_call<void>(opts_.call_timeout, "review.timeout", "the object store",
                            [&](auto cb) { storage_->put(key, rendered->bytes, "image/png", cb); });
  if (!stored)
    log::warn("review: a rendered page could not be cached",
              {{"key", key}, {"error", stored.error().describe()}});
  return rendered;
}

std::string review_service::document_json(const review_document& doc,
                                          const transcription& reading) {
  rapidjson::StringBuffer buf;
  json_writer w{buf};
  w.StartObject();
  put(w, "id", doc.id.str());
  put(w, "tenant_id", doc.tenant_id.str());
  put(w, "file_name", doc.file_name);
  put(w, "mime_type", doc.mime_type);
  w.Key("version");
  w.Int64(doc.version);
  w.Key("needs_human_review");
  w.Bool(doc.needs_human_review);
  w.Key("processing");
  w.Bool(doc.processing);
  put_raw(w, "review_status", doc.review_status.empty() ? "" : "\"" + doc.review_status + "\"");
  put(w, "reviewed_by", doc.reviewed_by);
  put_raw(w, "fields", doc.structured_data);
  put_raw(w, "machine_fields", doc.machine_data);
  put(w, "latest_ingestion_id", doc.latest_ingestion_id ? doc.latest_ingestion_id->str() : "");
  put(w, "latest_status", doc.latest_status);
  put(w, "last_error", doc.last_error);
  put_raw(w, "failed_checks", findings_json(findings(doc.structured_data)));
  put(w, "transcription", reading.text);
  w.Key("page_count");
  w.Int(std::max<int>(1, static_cast<int>(reading.pages.size())));
  put_raw(w, "provenance", to_json(locate_fields(doc.structured_data, reading)));
  put_raw(w, "events", doc.events_json);
  put_raw(w, "matches", doc.matches_json);
  put_raw(w, "cluster_id", doc.cluster_id.empty() ? "" : "\"" + doc.cluster_id + "\"");
  put_raw(w, "cluster", doc.cluster_json);
  put_raw(w, "reviews", doc.reviews_json);
  put_raw(w, "metadata", doc.metadata_json);
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

} // namespace ingestd
