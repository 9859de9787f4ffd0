// Validation of extraction JSON against the embedded schema with RapidJSON's draft-04 validator.
// The compiled schema is built once and shared: a SchemaDocument is immutable after construction.
#include "adapters/extraction/extraction_schema.hpp"

#include "messages/json_depth.hpp"

#include <string>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "messages/text.hpp"

namespace ingestd {

namespace {

const rapidjson::SchemaDocument& compiled_schema() {
  static const rapidjson::SchemaDocument schema = [] {
    rapidjson::Document doc;
    auto text = extraction_schema_json();
    doc.Parse(text.data(), text.size());
    // The schema is part of the binary and covered by a unit test; a broken one is a build bug.
    if (doc.HasParseError())
      doc.SetObject();
    return rapidjson::SchemaDocument{doc};
  }();
  return schema;
}

result<void> validate_document(const rapidjson::Document& doc) {
  if (!doc.IsObject())
    return error::make_transient("llm.schema_invalid", "the answer is not a JSON object");
  rapidjson::SchemaValidator validator{compiled_schema()};
  if (doc.Accept(validator))
    return {};
  // The plain form, not StringifyUriFragment: RapidJSON's percent-encoding reads past the end of
  // a member name that ends inside a UTF-8 sequence (a heap over-read found by fuzzing).
  rapidjson::StringBuffer where;
  validator.GetInvalidDocumentPointer().Stringify(where);
  std::string msg = "answer violates the schema: keyword '";
  msg += validator.GetInvalidSchemaKeyword();
  msg += "' at #";
  msg += clean_text({where.GetString(), where.GetSize()});
  return error::make_transient("llm.schema_invalid", std::move(msg));
}

/// Deeper than any answer the schema allows (an invoice is 3 levels deep); the validator and the
/// writer walk a document recursively, so a deeper one is refused before they see it.
constexpr int max_depth = 32;

result<void> parse(std::string_view json, rapidjson::Document& doc) {
  // Iterative: the nesting depth of an answer costs heap, not stack. JSON is UTF-8: anything else
  // is refused here, so that no malformed text reaches the validator or the database.
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(json.data(),
                                                                                    json.size());
  if (doc.HasParseError()) {
    std::string msg = "answer is not valid JSON: ";
    msg += rapidjson::GetParseError_En(doc.GetParseError());
    msg += " at offset " + std::to_string(doc.GetErrorOffset());
    return error::make_transient("llm.invalid_json", std::move(msg));
  }
  if (json_deeper_than(doc, max_depth))
    return error::make_transient("llm.invalid_json", "answer nests deeper than "
                                                         + std::to_string(max_depth) + " levels");
  return {};
}

} // namespace

result<void> validate_extraction_json(std::string_view json) {
  rapidjson::Document doc;
  if (auto r = parse(json, doc); !r)
    return r;
  return validate_document(doc);
}

result<extraction> extraction_from_json(std::string_view json) {
  rapidjson::Document doc;
  if (auto r = parse(json, doc); !r)
    return r.error();
  if (auto r = validate_document(doc); !r)
    return r.error();
  extraction out;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  doc.Accept(writer);
  out.structured_data.assign(buf.GetString(), buf.GetSize());
  out.extraction_successful = doc["extraction_successful"].GetBool();
  out.confidence = doc["confidence"].GetString();
  for (const auto& f : doc["missing_fields"].GetArray())
    out.missing_fields.emplace_back(f.GetString(), f.GetStringLength());
  return out;
}

} // namespace ingestd
