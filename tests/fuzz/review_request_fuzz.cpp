// Fuzz target: review/review_request (parse_review_request, apply_review_fields), which read the
// JSON bodies of the review desk's POSTs (check, approve, reject, reprocess: versions, reasons,
// providers, and the reviewer's corrected fields with their line items) and merge the fields into
// a document's data.
// Input: the action up to the first '\n' ("check", "approve", "reject", "reprocess"; anything
// else is read as an action too), then the body.
#include <algorithm>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "review/review_request.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ingestd;

namespace {

/// A document's data as the extractor stores it.
constexpr std::string_view invoice
    = R"({"invoice_number":"INV-1","invoice_date":"2024-03-01","due_date":"2024-03-31",)"
      R"("supplier_name":"Acme GmbH","supplier_address":"Main St 1, Berlin",)"
      R"("supplier_vat_id":"DE123456789","customer_name":"Beta Ltd","currency":"EUR",)"
      R"("line_items":[{"description":"Widget","quantity":1,"unit_price":100,"amount":100}],)"
      R"("subtotal":100,"vat_amount":19,"total":119,"extraction_successful":true,)"
      R"("confidence":"medium","missing_fields":[]})";

bool one_of_the_messages(const std::string& m) {
  for (std::string_view known :
       {"the body is not a JSON object", "the body nests deeper than 16 levels",
        "\"version\" (the document's version you reviewed) is required",
        "the fields hold text that cannot be stored", "the reason holds text that cannot be stored",
        "name the providers as \"transcription_provider\"",
        "\"transcription_provider\" must be a provider's name or null",
        "\"extraction_provider\" must be a provider's name or null"})
    if (m.rfind(known, 0) == 0)
      return true;
  return false;
}

/// Whether every string and name in `v` is text PostgreSQL stores (jsonb, text): well-formed
/// UTF-8 without NUL.
bool storable(const rapidjson::Value& v) {
  auto text = [](const rapidjson::Value& s) {
    std::string_view t{s.GetString(), s.GetStringLength()};
    return fuzz::valid_utf8(t) && t.find('\0') == std::string_view::npos;
  };
  if (v.IsString())
    return text(v);
  if (v.IsArray())
    return std::all_of(v.Begin(), v.End(), [](const rapidjson::Value& x) { return storable(x); });
  if (v.IsObject())
    for (auto& m : v.GetObject())
      if (!text(m.name) || !storable(m.value))
        return false;
  return true;
}

void check_applied(std::string_view data, const std::string& fields) {
  auto applied = apply_review_fields(data, fields);
  if (!applied) {
    const auto& e = applied.error();
    FUZZ_CHECK(e.code == "review.invalid" && e.permanent());
    FUZZ_CHECK(
        e.message == "\"fields\" must be a JSON object"
        || (e.message.rfind("unknown field '", 0) == 0 && e.message.size() <= fields.size() + 20));
    return;
  }
  // Bounded: the data grows by what the fields bring and the list of missing fields; each change
  // holds the value before (the data's, or an earlier duplicate's) and after.
  FUZZ_CHECK(applied->data.size()
             <= std::max(data.size(), size_t{1024}) + 2 * fields.size() + 1024);
  FUZZ_CHECK(applied->changes.size()
             <= std::max(data.size(), size_t{1024}) + 8 * fields.size() + 64);
  rapidjson::Document out;
  out.Parse<rapidjson::kParseIterativeFlag>(applied->data.data(), applied->data.size());
  FUZZ_CHECK(!out.HasParseError() && out.IsObject());
  // What an approval stores as the reviewed data (jsonb).
  FUZZ_CHECK(fuzz::valid_utf8(applied->data) && storable(out));
  rapidjson::Document changes;
  changes.Parse<rapidjson::kParseIterativeFlag>(applied->changes.data(), applied->changes.size());
  FUZZ_CHECK(!changes.HasParseError() && changes.IsObject());
  FUZZ_CHECK(fuzz::valid_utf8(applied->changes) && storable(changes));
  rapidjson::Document given;
  if (!fields.empty())
    given.Parse<rapidjson::kParseIterativeFlag>(fields.data(), fields.size());
  for (auto& c : changes.GetObject()) {
    // Only fields the reviewer gave change, and each is in the data now.
    FUZZ_CHECK(given.IsObject() && given.HasMember(c.name));
    FUZZ_CHECK(out.HasMember(c.name));
    FUZZ_CHECK(c.value.IsObject() && c.value.HasMember("from") && c.value.HasMember("to"));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::as_view(data, size);
  auto nl = in.find('\n');
  auto action = in.substr(0, nl);
  auto body = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);

  auto req = parse_review_request(action, body);
  if (!req) {
    // A clear error: the desk answers it 400 as is.
    FUZZ_CHECK(req.error().code == "review.invalid" && req.error().permanent());
    FUZZ_CHECK(one_of_the_messages(req.error().message));
    return 0;
  }
  FUZZ_CHECK(action == "check" || req->version.has_value());
  // Bounded by the body: a reason or a provider's name is a string of it; the fields are its
  // JSON written again (a number may grow: 1e21 is written 1000000000000000000000.0).
  FUZZ_CHECK(req->reason.size() <= body.size());
  FUZZ_CHECK(req->providers.transcription.size() + req->providers.extraction.size() <= body.size());
  FUZZ_CHECK(req->fields.size() <= 8 * body.size() + 8);
  FUZZ_CHECK(fuzz::valid_utf8(req->fields));
  // A reason is stored whole, as a text column takes it: no NUL, well-formed UTF-8.
  FUZZ_CHECK(fuzz::valid_utf8(req->reason) && req->reason.find('\0') == std::string::npos);
  if (action != "reject")
    FUZZ_CHECK(req->reason.empty());
  if (action != "reprocess")
    FUZZ_CHECK(req->providers.transcription.empty() && req->providers.extraction.empty());

  // The reviewer's fields on a document with data, and on one without (an empty invoice).
  check_applied(invoice, req->fields);
  check_applied("", req->fields);
  return 0;
}
