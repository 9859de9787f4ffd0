// RapidJSON (de)serialisation of messages/transcription.hpp for the stored transcription output.
// Strict on read: a stored file that does not round-trip is reported, never half-used.

#include "adapters/ocr/transcription_json.hpp"

#include <cmath>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ingestd {

namespace {

using writer_t = rapidjson::Writer<rapidjson::StringBuffer>;

void put_string(writer_t& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

error bad(std::string what) {
  return error::make_permanent(std::string{bad_transcription_json},
                               "stored transcription is not valid: " + std::move(what));
}

// Small typed getters that name the member on failure.
struct reader {
  const rapidjson::Value& obj;
  std::string where;
  std::string problem;

  const rapidjson::Value* member(const char* key) {
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd()) {
      fail(std::string{"missing member \""} + key + "\"");
      return nullptr;
    }
    return &it->value;
  }
  void fail(std::string what) {
    if (problem.empty())
      problem = where.empty() ? std::move(what) : where + ": " + what;
  }
  std::string str(const char* key) {
    auto* v = member(key);
    if (v == nullptr)
      return {};
    if (!v->IsString()) {
      fail(std::string{"\""} + key + "\" is not a string");
      return {};
    }
    return {v->GetString(), v->GetStringLength()};
  }
  bool boolean(const char* key) {
    auto* v = member(key);
    if (v == nullptr)
      return false;
    if (!v->IsBool()) {
      fail(std::string{"\""} + key + "\" is not a boolean");
      return false;
    }
    return v->GetBool();
  }
  int64_t integer(const char* key) {
    auto* v = member(key);
    if (v == nullptr)
      return 0;
    if (!v->IsInt64()) {
      fail(std::string{"\""} + key + "\" is not an integer");
      return 0;
    }
    return v->GetInt64();
  }
  double score(const char* key) {
    auto* v = member(key);
    if (v == nullptr)
      return 0;
    if (!v->IsNumber()) {
      fail(std::string{"\""} + key + "\" is not a number");
      return 0;
    }
    double d = v->GetDouble();
    if (!(d >= 0 && d <= 1))
      fail(std::string{"\""} + key + "\" is outside [0, 1]");
    return d;
  }
};

void put_pages(writer_t& w, const std::vector<transcription_page>& pages) {
  w.StartArray();
  for (const auto& p : pages) {
    w.StartObject();
    w.Key("number");
    w.Int(p.number);
    w.Key("quality_score");
    w.Double(p.quality_score);
    w.Key("defects");
    w.StartArray();
    for (const auto& d : p.defects) {
      w.StartObject();
      put_string(w, "type", d.type);
      w.Key("confidence");
      w.Double(d.confidence);
      w.EndObject();
    }
    w.EndArray();
    put_string(w, "text", p.text);
    if (!p.words.empty()) {
      w.Key("words");
      auto words = to_json(p.words);
      w.RawValue(words.data(), words.size(), rapidjson::kArrayType);
    }
    w.EndObject();
  }
  w.EndArray();
}

} // namespace

std::string to_json(const std::vector<page_word>& words) {
  rapidjson::StringBuffer buf;
  writer_t w{buf};
  w.StartArray();
  for (const auto& word : words) {
    w.StartArray();
    w.String(word.text.data(), static_cast<rapidjson::SizeType>(word.text.size()));
    for (float v : {word.left, word.top, word.right, word.bottom})
      w.Double(std::round(static_cast<double>(v) * 10000.0) / 10000.0);
    w.EndArray();
  }
  w.EndArray();
  return {buf.GetString(), buf.GetSize()};
}

namespace {

/// The stored form when `whole`, else its summary (see to_summary_json).
std::string write_json(const transcription& x, bool whole) {
  rapidjson::StringBuffer buf;
  writer_t w{buf};
  w.StartObject();
  if (whole) {
    w.Key("version");
    w.Int(transcription_json_version);
  }
  put_string(w, "provider", x.provider);
  w.Key("page_count");
  w.Int(x.page_count);
  w.Key("quality_score");
  w.Double(x.quality_score);
  w.Key("native_text");
  w.Bool(x.native_text);
  w.Key("preprocessed");
  w.Bool(x.preprocessed);
  if (whole)
    put_string(w, "preprocessed_ext", x.derived_ext);
  w.Key("duration_ms");
  w.Int64(x.duration_ms);
  w.Key("warnings");
  w.StartArray();
  for (const auto& warning : x.warnings)
    w.String(warning.data(), static_cast<rapidjson::SizeType>(warning.size()));
  w.EndArray();
  if (whole) {
    w.Key("metadata");
    w.StartObject();
    for (const auto& [name, value] : x.metadata)
      put_string(w, name.c_str(), value);
    w.EndObject();
    put_string(w, "text", x.text);
    w.Key("pages");
    put_pages(w, x.pages);
  }
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

} // namespace

std::string to_json(const transcription& x) {
  return write_json(x, true);
}

std::string to_summary_json(const transcription& x) {
  return write_json(x, false);
}

result<transcription> transcription_from_json(std::string_view json) {
  rapidjson::Document doc;
  // Iterative: nesting costs heap, not stack.
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError())
    return bad(std::string{"not JSON ("} + rapidjson::GetParseError_En(doc.GetParseError())
               + " at offset " + std::to_string(doc.GetErrorOffset()) + ")");
  if (!doc.IsObject())
    return bad("top level is not an object");
  reader r{doc, {}, {}};
  auto version = r.integer("version");
  if (r.problem.empty() && version != transcription_json_version)
    return bad("unknown version " + std::to_string(version));
  transcription t;
  t.provider = r.str("provider");
  auto page_count = r.integer("page_count");
  t.quality_score = r.score("quality_score");
  t.native_text = r.boolean("native_text");
  t.preprocessed = r.boolean("preprocessed");
  t.derived_ext = r.str("preprocessed_ext");
  t.duration_ms = r.integer("duration_ms");
  t.text = r.str("text");
  auto* pages = r.member("pages");
  if (!r.problem.empty())
    return bad(r.problem);
  // Optional: transcriptions stored before warnings existed have none.
  if (auto it = doc.FindMember("warnings"); it != doc.MemberEnd()) {
    if (!it->value.IsArray())
      return bad("\"warnings\" is not an array");
    for (const auto& wv : it->value.GetArray()) {
      if (!wv.IsString())
        return bad("\"warnings\" holds a value that is not a string");
      t.warnings.emplace_back(wv.GetString(), wv.GetStringLength());
    }
  }
  // Optional: transcriptions stored before metadata existed have none.
  if (auto it = doc.FindMember("metadata"); it != doc.MemberEnd()) {
    if (!it->value.IsObject())
      return bad("\"metadata\" is not an object");
    for (const auto& m : it->value.GetObject()) {
      if (!m.value.IsString())
        return bad("\"metadata\" holds a value that is not a string");
      t.metadata.emplace_back(std::string{m.name.GetString(), m.name.GetStringLength()},
                              std::string{m.value.GetString(), m.value.GetStringLength()});
    }
  }
  if (!pages->IsArray())
    return bad("\"pages\" is not an array");
  if (page_count < 0 || page_count != static_cast<int64_t>(pages->Size()))
    return bad("page_count " + std::to_string(page_count) + " does not match "
               + std::to_string(pages->Size()) + " pages");
  t.page_count = static_cast<int32_t>(page_count);
  for (rapidjson::SizeType i = 0; i < pages->Size(); ++i) {
    const auto& pv = (*pages)[i];
    std::string where = "pages[" + std::to_string(i) + "]";
    if (!pv.IsObject())
      return bad(where + " is not an object");
    reader pr{pv, where, {}};
    transcription_page p;
    p.number = static_cast<int32_t>(pr.integer("number"));
    p.quality_score = pr.score("quality_score");
    p.text = pr.str("text");
    auto* defects = pr.member("defects");
    if (!pr.problem.empty())
      return bad(pr.problem);
    if (!defects->IsArray())
      return bad(where + ": \"defects\" is not an array");
    for (rapidjson::SizeType j = 0; j < defects->Size(); ++j) {
      const auto& dv = (*defects)[j];
      auto dwhere = where + ".defects[" + std::to_string(j) + "]";
      if (!dv.IsObject())
        return bad(dwhere + " is not an object");
      reader dr{dv, dwhere, {}};
      quality_defect d;
      d.type = dr.str("type");
      d.confidence = dr.score("confidence");
      if (!dr.problem.empty())
        return bad(dr.problem);
      p.defects.push_back(std::move(d));
    }
    // Optional: pages of providers that give no boxes (and those stored before) have none.
    if (auto it = pv.FindMember("words"); it != pv.MemberEnd()) {
      if (!it->value.IsArray() || it->value.Size() > max_page_words)
        return bad(where + ": \"words\" is not an array of at most "
                   + std::to_string(max_page_words) + " words");
      for (const auto& wv : it->value.GetArray()) {
        if (!wv.IsArray() || wv.Size() != 5 || !wv[0].IsString()
            || wv[0].GetStringLength() > max_word_bytes)
          return bad(where + ": a word is not [text, left, top, right, bottom]");
        page_word word;
        word.text.assign(wv[0].GetString(), wv[0].GetStringLength());
        float* parts[] = {&word.left, &word.top, &word.right, &word.bottom};
        for (rapidjson::SizeType k = 1; k < 5; ++k) {
          if (!wv[k].IsNumber() || !(wv[k].GetDouble() >= 0 && wv[k].GetDouble() <= 1))
            return bad(where + ": a word's box is not within the page");
          *parts[k - 1] = static_cast<float>(wv[k].GetDouble());
        }
        p.words.push_back(std::move(word));
      }
    }
    t.pages.push_back(std::move(p));
  }
  return t;
}

} // namespace ingestd
