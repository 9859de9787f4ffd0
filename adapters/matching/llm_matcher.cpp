// The LLM match decision: the prompt (the document and its candidates as JSON), the answer's
// schema, and its validation against the candidates; the call is chat_client's.
#include "adapters/matching/llm_matcher.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/matching/local_matcher.hpp"
#include "messages/json_depth.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

constexpr std::string_view schema_text = R"({
  "type": "object",
  "additionalProperties": false,
  "required": ["matches"],
  "properties": {
    "matches": {
      "type": "array",
      "description": "One entry per candidate the document belongs with; empty when none.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["document_id", "kind", "confidence", "reason"],
        "properties": {
          "document_id": {"type": "string", "description": "A candidate's document_id, exactly as given."},
          "kind": {"type": "string", "enum": ["duplicate", "same_invoice", "credit_note", "purchase_order", "related"]},
          "confidence": {"type": "number", "description": "0 to 1."},
          "reason": {"type": "string", "description": "Why, in one short sentence for a person."}
        }
      }
    }
  }
})";

constexpr std::string_view default_prompt
    = "You link business documents (invoices, credit notes, receipts, purchase orders) of one "
      "company. The user message is a JSON object: \"document\" is the document to match, "
      "\"candidates\" are documents that might belong with it, each with its document_id, the "
      "features read from it (kind, own number, referenced numbers, counterparty, total, currency, "
      "date), its extracted structured data and an excerpt of its text (OCR errors possible). "
      "Answer with one JSON object that matches the schema: a match for each candidate that "
      "belongs with the document, none for the others. Kinds: \"duplicate\" the same content sent "
      "twice; \"same_invoice\" the same invoice (e.g. a PDF and a scan of it: number, counterparty "
      "and total agree); \"credit_note\" a credit note and the invoice it refers to, either way "
      "round; \"purchase_order\" an invoice and the purchase order or order it fulfils; "
      "\"related\" the same counterparty with amounts and dates close, nothing more certain. "
      "document_id must be a candidate's id exactly as given, each at most once. confidence from 0 "
      "to 1. reason: one short sentence naming the evidence. When nothing matches, answer "
      "{\"matches\": []}.";

constexpr const char* kinds[]
    = {match_kind::duplicate, match_kind::same_invoice, match_kind::credit_note,
       match_kind::purchase_order, match_kind::related};

using writer = rapidjson::Writer<rapidjson::StringBuffer>;

void put(writer& w, std::string_view s) {
  auto clean = clean_text(s);
  w.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
}

void write_document(writer& w, const match_document& d, size_t excerpt_bytes) {
  const auto& f = d.features;
  w.StartObject();
  w.Key("document_id");
  put(w, d.id.str());
  w.Key("file_name");
  put(w, d.file_name);
  w.Key("kind");
  put(w, f.kind);
  w.Key("number");
  put(w, f.number);
  w.Key("references");
  w.StartArray();
  for (const auto& r : f.references)
    put(w, r);
  w.EndArray();
  w.Key("counterparty");
  put(w, f.counterparty);
  w.Key("total");
  if (f.total && std::isfinite(*f.total))
    w.Double(*f.total);
  else
    w.Null();
  w.Key("currency");
  put(w, f.currency);
  w.Key("date");
  put(w, f.date);
  w.Key("structured_data");
  // Shown as text: its shape is the extraction's, not ours to vouch for.
  put(w, utf8_prefix(d.structured_data, 4'096));
  w.Key("text_excerpt");
  put(w, utf8_prefix(f.searchable_text, excerpt_bytes));
  w.EndObject();
}

error schema_invalid(std::string message) {
  return error::make_transient("llm.schema_invalid",
                               "the match decision violates the schema: " + std::move(message));
}

} // namespace

std::string_view match_decision_schema_json() {
  return schema_text;
}

namespace {

/// The schema as each request carries it, made compact once.
std::string_view request_schema() {
  static const std::string compact = compact_json(schema_text);
  return compact;
}

} // namespace

chat_prompt build_match_prompt(const llm_matcher_options& opts, const match_document& doc,
                               const std::vector<match_document>& candidates) {
  rapidjson::StringBuffer buf;
  writer w{buf};
  w.StartObject();
  w.Key("document");
  write_document(w, doc, opts.text_excerpt_bytes * 4);
  w.Key("candidates");
  w.StartArray();
  size_t shown = 0;
  for (const auto& c : candidates) {
    if (shown == opts.max_candidates)
      break;
    write_document(w, c, opts.text_excerpt_bytes);
    ++shown;
  }
  w.EndArray();
  w.EndObject();
  chat_prompt p;
  p.system = std::make_shared<const std::string>(
      opts.system_prompt.empty() ? std::string{default_prompt} : opts.system_prompt);
  p.user.assign(buf.GetString(), buf.GetSize());
  p.schema_name = "match_decision";
  p.schema_json = request_schema();
  return p;
}

result<std::vector<match_edge>> parse_match_answer(std::string_view content,
                                                   const std::vector<match_document>& candidates,
                                                   double min_confidence) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(content.data(),
                                                                                    content.size());
  if (doc.HasParseError())
    return error::make_transient("llm.invalid_json", "the match decision is not JSON");
  if (!doc.IsObject())
    return schema_invalid("not a JSON object");
  if (json_deeper_than(doc, 8))
    return schema_invalid("nested too deeply");
  for (const auto& m : doc.GetObject())
    if (std::string_view{m.name.GetString(), m.name.GetStringLength()} != "matches")
      return schema_invalid(
          "unknown property '"
          + clean_text(utf8_prefix({m.name.GetString(), m.name.GetStringLength()}, 60)) + "'");
  auto matches = doc.FindMember("matches");
  if (matches == doc.MemberEnd() || !matches->value.IsArray())
    return schema_invalid("'matches' is missing or not an array");
  std::map<std::string, uuid, std::less<>> ids;
  for (const auto& c : candidates)
    ids.emplace(c.id.str(), c.id);
  std::map<uuid, match_edge> best;
  size_t index = 0;
  for (const auto& item : matches->value.GetArray()) {
    auto at = "matches[" + std::to_string(index++) + "]";
    if (!item.IsObject())
      return schema_invalid(at + " is not an object");
    for (const auto& m : item.GetObject()) {
      std::string_view name{m.name.GetString(), m.name.GetStringLength()};
      if (name != "document_id" && name != "kind" && name != "confidence" && name != "reason")
        return schema_invalid(at + " has an unknown property '" + clean_text(utf8_prefix(name, 60))
                              + "'");
    }
    auto id_it = item.FindMember("document_id");
    auto kind_it = item.FindMember("kind");
    auto conf_it = item.FindMember("confidence");
    auto reason_it = item.FindMember("reason");
    if (id_it == item.MemberEnd() || !id_it->value.IsString())
      return schema_invalid(at + ".document_id is missing or not a string");
    if (kind_it == item.MemberEnd() || !kind_it->value.IsString())
      return schema_invalid(at + ".kind is missing or not a string");
    if (conf_it == item.MemberEnd() || !conf_it->value.IsNumber())
      return schema_invalid(at + ".confidence is missing or not a number");
    if (reason_it == item.MemberEnd() || !reason_it->value.IsString())
      return schema_invalid(at + ".reason is missing or not a string");
    std::string_view id_text{id_it->value.GetString(), id_it->value.GetStringLength()};
    auto id = ids.find(id_text);
    if (id == ids.end())
      return schema_invalid(at + ".document_id '" + clean_text(utf8_prefix(id_text, 60))
                            + "' is not a candidate");
    std::string_view kind{kind_it->value.GetString(), kind_it->value.GetStringLength()};
    const char* known = nullptr;
    for (const char* k : kinds)
      if (kind == k)
        known = k;
    if (!known)
      return schema_invalid(at + ".kind '" + clean_text(utf8_prefix(kind, 60))
                            + "' is not one of the kinds");
    double confidence = conf_it->value.GetDouble();
    if (!std::isfinite(confidence) || confidence < 0 || confidence > 1)
      return schema_invalid(at + ".confidence " + std::to_string(confidence) + " is outside 0..1");
    if (confidence < min_confidence)
      continue;
    match_edge e{id->second, known, confidence,
                 clean_text(utf8_prefix(
                     {reason_it->value.GetString(), reason_it->value.GetStringLength()}, 500))};
    auto [it, inserted] = best.try_emplace(e.other, e);
    if (!inserted) {
      auto rank = match_kind_rank(e.kind);
      auto cur = match_kind_rank(it->second.kind);
      if (rank > cur || (rank == cur && e.confidence > it->second.confidence))
        it->second = std::move(e);
    }
  }
  std::vector<match_edge> out;
  out.reserve(best.size());
  for (auto& [id, e] : best)
    out.push_back(std::move(e));
  std::stable_sort(out.begin(), out.end(), [](const match_edge& a, const match_edge& b) {
    if (a.confidence != b.confidence)
      return a.confidence > b.confidence;
    return a.other < b.other;
  });
  return out;
}

llm_matcher::llm_matcher(http_client& http, timer& retry_timer, llm_matcher_options opts)
    : opts_(std::move(opts)), client_(http, retry_timer, opts_, "match decision") {}

llm_matcher::~llm_matcher() = default;

void llm_matcher::decide(match_document doc, std::vector<match_document> candidates,
                         callback<std::vector<match_edge>> done) {
  decide_with(std::move(doc), std::move(candidates), {}, std::move(done));
}

void llm_matcher::decide_with(match_document doc, std::vector<match_document> candidates,
                              call_context context, callback<std::vector<match_edge>> done) {
  // A document of its own candidates is not one; nothing to compare is a real answer.
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](const match_document& c) { return c.id == doc.id; }),
                   candidates.end());
  if (candidates.size() > opts_.max_candidates)
    candidates.resize(opts_.max_candidates);
  if (candidates.empty()) {
    done(std::vector<match_edge>{});
    return;
  }
  auto prompt = build_match_prompt(opts_, doc, candidates);
  auto out = std::make_shared<std::vector<match_edge>>();
  auto shown = std::make_shared<const std::vector<match_document>>(std::move(candidates));
  double min_confidence = opts_.min_confidence;
  client_.complete(
      std::move(prompt),
      [out, shown, min_confidence](const chat_answer& a) -> result<void> {
        auto edges = parse_match_answer(a.content, *shown, min_confidence);
        if (!edges)
          return edges.error();
        *out = std::move(*edges);
        return {};
      },
      [out, done = std::move(done)](result<chat_usage> usage) {
        if (!usage) {
          done(usage.error());
          return;
        }
        done(std::move(*out));
      },
      std::move(context));
}

chat_stats llm_matcher::stats() const {
  return client_.stats();
}

} // namespace ingestd
