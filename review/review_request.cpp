// The desk's request bodies (version, fields, reason, providers) and the merge of a reviewer's
// fields into the document's data, with the changes recorded as {"from", "to"} per field.
#include "review/review_request.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/extraction_schema.hpp"
#include "messages/error_codes.hpp"
#include "messages/json_depth.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

std::string to_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

error invalid(std::string message) {
  return error::make_permanent(errc::review_invalid, std::move(message));
}

/// A reprocess's choice from its body: "transcription_provider" and "extraction_provider", each a
/// provider's name, or absent, null or "" for the configured one.
result<provider_choice> choice_of(const rapidjson::Document& body) {
  if (body.HasMember("provider"))
    return invalid("name the providers as \"transcription_provider\" and \"extraction_provider\" "
                   "(either may be left out for the configured one), not \"provider\"");
  provider_choice out;
  for (auto [key, slot] : {std::pair{"transcription_provider", &out.transcription},
                           std::pair{"extraction_provider", &out.extraction}}) {
    auto it = body.FindMember(key);
    if (it == body.MemberEnd() || it->value.IsNull())
      continue;
    if (!it->value.IsString())
      return invalid(std::string{"\""} + key + "\" must be a provider's name or null");
    slot->assign(it->value.GetString(), it->value.GetStringLength());
  }
  return out;
}

/// The schema's top-level property names, in the schema's order.
const std::vector<std::string>& schema_fields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    rapidjson::Document schema;
    auto text = extraction_schema_json();
    schema.Parse(text.data(), text.size());
    if (!schema.HasParseError() && schema.HasMember("required") && schema["required"].IsArray())
      for (auto& n : schema["required"].GetArray())
        if (n.IsString())
          out.emplace_back(n.GetString(), n.GetStringLength());
    return out;
  }();
  return names;
}

bool is_flag_field(std::string_view name) {
  return name == "extraction_successful" || name == "confidence" || name == "missing_fields";
}

bool empty_value(const rapidjson::Value& v) {
  return v.IsNull() || (v.IsString() && v.GetStringLength() == 0) || (v.IsArray() && v.Empty());
}

} // namespace

result<review_request> parse_review_request(std::string_view action, std::string_view body_text) {
  rapidjson::Document body;
  if (body_text.empty())
    body.SetObject();
  else
    body.Parse<rapidjson::kParseIterativeFlag>(body_text.data(), body_text.size());
  if (body.HasParseError() || !body.IsObject())
    return invalid("the body is not a JSON object");
  // The fields are walked recursively (written, compared): an invoice nests three levels.
  if (json_deeper_than(body, 16))
    return invalid("the body nests deeper than 16 levels");
  review_request out;
  if (body.HasMember("fields")) {
    out.fields = to_text(body["fields"]);
    // Approved, the fields become jsonb, which refuses some of what RapidJSON reads (a \u0000, a
    // lone surrogate, bytes that are not UTF-8): the reviewer hears it now, not as a 500.
    if (clean_json(out.fields) != out.fields)
      return invalid("the fields hold text that cannot be stored: a \\u0000, a lone surrogate "
                     "or bytes that are not UTF-8");
  }
  if (action == "check")
    return out;
  if (!body.HasMember("version") || !body["version"].IsInt64())
    return invalid("\"version\" (the document's version you reviewed) is required");
  out.version = body["version"].GetInt64();
  if (action == "reject") {
    if (body.HasMember("reason") && body["reason"].IsString()) {
      auto& reason = body["reason"];
      out.reason.assign(reason.GetString(), reason.GetStringLength());
      if (clean_text(out.reason) != out.reason)
        return invalid("the reason holds text that cannot be stored: a \\u0000, a lone "
                       "surrogate or bytes that are not UTF-8");
    }
  } else if (action == "reprocess") {
    auto choice = choice_of(body);
    if (!choice)
      return choice.error();
    out.providers = std::move(*choice);
  }
  return out;
}

result<review_fields_applied> apply_review_fields(std::string_view structured_data,
                                                  std::string_view fields_json) {
  rapidjson::Document data;
  data.Parse(structured_data.data(), structured_data.size());
  if (structured_data.empty() || data.HasParseError() || !data.IsObject()) {
    // No usable machine data: start from an empty invoice.
    data.SetObject();
    auto& a = data.GetAllocator();
    for (auto& name : schema_fields()) {
      rapidjson::Value key{name.c_str(), a};
      rapidjson::Value v;
      if (name == "line_items" || name == "missing_fields")
        v.SetArray();
      else if (name == "extraction_successful")
        v.SetBool(true);
      else if (name == "confidence")
        v.SetString("high");
      data.AddMember(key, v, a);
    }
  }
  auto& a = data.GetAllocator();
  rapidjson::Document fields;
  bool changed = false;
  rapidjson::Document changes{rapidjson::kObjectType};
  if (!fields_json.empty()) {
    fields.Parse(fields_json.data(), fields_json.size());
    if (fields.HasParseError() || !fields.IsObject())
      return invalid("\"fields\" must be a JSON object");
    auto& known = schema_fields();
    for (auto& m : fields.GetObject()) {
      std::string name{m.name.GetString(), m.name.GetStringLength()};
      if (std::find(known.begin(), known.end(), name) == known.end())
        return invalid("unknown field '" + name + "'");
      auto old = data.FindMember(name.c_str());
      std::string before = old == data.MemberEnd() ? "null" : to_text(old->value);
      if (before == to_text(m.value))
        continue;
      changed = true;
      rapidjson::Value change{rapidjson::kObjectType};
      rapidjson::Value from;
      if (old != data.MemberEnd())
        from.CopyFrom(old->value, changes.GetAllocator());
      rapidjson::Value to;
      to.CopyFrom(m.value, changes.GetAllocator());
      change.AddMember("from", from, changes.GetAllocator());
      change.AddMember("to", to, changes.GetAllocator());
      changes.AddMember(rapidjson::Value{name.c_str(), changes.GetAllocator()}, change,
                        changes.GetAllocator());
      rapidjson::Value copy;
      copy.CopyFrom(m.value, a);
      if (old != data.MemberEnd())
        old->value = copy;
      else
        data.AddMember(rapidjson::Value{name.c_str(), a}, copy, a);
    }
  }
  // A corrected document says what it still lacks, unless the reviewer said so themselves.
  if (changed && !(fields.IsObject() && fields.HasMember("missing_fields"))) {
    rapidjson::Value missing{rapidjson::kArrayType};
    for (auto& name : schema_fields()) {
      if (is_flag_field(name) || name == "line_items")
        continue;
      auto it = data.FindMember(name.c_str());
      if (it == data.MemberEnd() || empty_value(it->value))
        missing.PushBack(rapidjson::Value{name.c_str(), a}, a);
    }
    auto it = data.FindMember("missing_fields");
    if (it != data.MemberEnd())
      it->value = missing;
  }
  review_fields_applied out;
  out.data = to_text(data);
  out.changes = to_text(changes);
  return out;
}

} // namespace ingestd
