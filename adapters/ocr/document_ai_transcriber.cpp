// Document AI adapter: request building (base64 rawDocument, ocrConfig), response parsing that
// tolerates proto3 JSON (int64 as strings, omitted defaults, enum names or numbers, the legacy
// quality entity), and error classification by HTTP code, error status and the service's messages.

#include "adapters/ocr/document_ai_transcriber.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "messages/file_type.hpp"

namespace ingestd {

namespace {

std::string base64(std::string_view in) {
  static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8)
                 | uint8_t(in[i + 2]);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size())
      v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += i + 1 < in.size() ? tbl[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

/// proto3 int64/int32: a number or a decimal string; absent = 0.
int64_t get_int(const rapidjson::Value& obj, const char* key, int64_t fallback = 0) {
  if (!obj.IsObject())
    return fallback;
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd())
    return fallback;
  const auto& v = it->value;
  if (v.IsInt64())
    return v.GetInt64();
  if (v.IsNumber()) {
    // A double beyond int64_t's range (or NaN) does not convert: such a value is unreadable.
    double d = v.GetDouble();
    if (!(d > -9.2e18 && d < 9.2e18))
      return fallback;
    return static_cast<int64_t>(d);
  }
  if (v.IsString()) {
    char* end = nullptr;
    long long x = std::strtoll(v.GetString(), &end, 10);
    if (end != v.GetString())
      return x;
  }
  return fallback;
}

/// proto3 float/double: a number, or a string ("NaN", "Infinity", "0.5"); absent = 0.
double get_double(const rapidjson::Value& obj, const char* key, double fallback = 0) {
  if (!obj.IsObject())
    return fallback;
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd())
    return fallback;
  const auto& v = it->value;
  if (v.IsNumber())
    return v.GetDouble();
  if (v.IsString()) {
    char* end = nullptr;
    double x = std::strtod(v.GetString(), &end);
    if (end != v.GetString())
      return x;
  }
  return fallback;
}

std::string get_string(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject())
    return {};
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString())
    return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

const rapidjson::Value* get(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject())
    return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

double clamp01(double x) {
  return x >= 0 && x <= 1 ? x : (x > 1 ? 1 : 0);
}

/// Byte offset of code point `cp` in UTF-8 `s` (Document AI's text indices count characters).
size_t utf8_offset(const std::string& s, int64_t cp) {
  size_t i = 0;
  int64_t n = 0;
  while (i < s.size() && n < cp) {
    auto c = static_cast<unsigned char>(s[i]);
    i += c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    ++n;
  }
  return std::min(i, s.size());
}

/// Document AI names nine defect types; a page keeps at most this many defects, so that an entity
/// copied to every page cannot multiply a long list by a long page list.
constexpr size_t max_defects = 32;

std::vector<quality_defect> parse_defects(const rapidjson::Value* arr) {
  std::vector<quality_defect> out;
  if (arr == nullptr || !arr->IsArray())
    return out;
  for (const auto& d : arr->GetArray()) {
    auto type = get_string(d, "type");
    if (type.empty())
      continue;
    if (out.size() == max_defects)
      break;
    out.push_back({map_document_ai_defect(type), clamp01(get_double(d, "confidence"))});
  }
  return out;
}

std::string lowercase(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

std::string map_document_ai_defect(std::string_view type) {
  constexpr std::string_view prefix = "quality/defect_";
  if (type.substr(0, prefix.size()) == prefix)
    type.remove_prefix(prefix.size());
  return std::string{type};
}

std::string document_ai_request_body(std::string_view bytes, std::string_view mime_type,
                                     const document_ai_options& options) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto content = base64(bytes);
  w.StartObject();
  w.Key("rawDocument");
  w.StartObject();
  w.Key("content");
  w.String(content.data(), static_cast<rapidjson::SizeType>(content.size()));
  w.Key("mimeType");
  w.String(mime_type.data(), static_cast<rapidjson::SizeType>(mime_type.size()));
  w.EndObject();
  w.Key("processOptions");
  w.StartObject();
  w.Key("ocrConfig");
  w.StartObject();
  w.Key("enableNativePdfParsing");
  w.Bool(options.enable_native_pdf_parsing);
  w.Key("enableImageQualityScores");
  w.Bool(options.enable_image_quality_scores);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

namespace {

/// A page's tokens as words with their boxes: each token's text (its anchor's segments) and the
/// box around its layout's normalized vertices. Tokens without either are left out.
std::vector<page_word> parse_tokens(const rapidjson::Value* tokens, const std::string& text) {
  std::vector<page_word> out;
  if (tokens == nullptr || !tokens->IsArray())
    return out;
  for (const auto& token : tokens->GetArray()) {
    if (out.size() >= max_page_words)
      break;
    const auto* layout = get(token, "layout");
    if (layout == nullptr)
      continue;
    std::string word;
    if (const auto* anchor = get(*layout, "textAnchor"))
      if (const auto* segs = get(*anchor, "textSegments"); segs && segs->IsArray())
        for (const auto& s : segs->GetArray()) {
          auto b = utf8_offset(text, get_int(s, "startIndex"));
          auto e = utf8_offset(text, get_int(s, "endIndex"));
          if (e > b && word.size() + (e - b) <= max_word_bytes)
            word.append(text, b, e - b);
        }
    while (!word.empty() && std::isspace(static_cast<unsigned char>(word.back())))
      word.pop_back();
    auto first = word.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
      continue;
    word.erase(0, first);
    const auto* poly = get(*layout, "boundingPoly");
    const auto* vertices = poly != nullptr ? get(*poly, "normalizedVertices") : nullptr;
    if (vertices == nullptr || !vertices->IsArray() || vertices->Empty())
      continue;
    page_word w{std::move(word), 1, 1, 0, 0};
    for (const auto& v : vertices->GetArray()) {
      // A coordinate omitted is 0 (proto3 default).
      auto x = static_cast<float>(clamp01(get_double(v, "x")));
      auto y = static_cast<float>(clamp01(get_double(v, "y")));
      w.left = std::min(w.left, x);
      w.top = std::min(w.top, y);
      w.right = std::max(w.right, x);
      w.bottom = std::max(w.bottom, y);
    }
    if (w.left < w.right && w.top < w.bottom)
      out.push_back(std::move(w));
  }
  return out;
}

} // namespace

result<transcription> parse_document_ai_response(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject())
    return error::make_transient("docai.bad_response", "Document AI response is not JSON");
  const auto* d = get(doc, "document");
  if (d == nullptr || !d->IsObject())
    return error::make_transient("docai.bad_response", "Document AI response has no document");
  transcription t;
  t.provider = "document_ai";
  t.text = get_string(*d, "text");
  const auto* pages = get(*d, "pages");
  std::vector<bool> has_quality;
  // The pages' segments partition the document's text: together they never hold more than it.
  // (Segments repeated or overlapping would otherwise multiply the text by the segment count.)
  size_t text_budget = t.text.size();
  if (pages != nullptr && pages->IsArray()) {
    int idx = 0;
    for (const auto& p : pages->GetArray()) {
      transcription_page page;
      auto number = get_int(p, "pageNumber", idx + 1);
      page.number = number > 0 && number <= INT32_MAX ? static_cast<int32_t>(number) : idx + 1;
      // Page text from the layout's text anchor; startIndex is omitted when 0.
      if (const auto* layout = get(p, "layout")) {
        if (const auto* anchor = get(*layout, "textAnchor")) {
          if (const auto* segs = get(*anchor, "textSegments"); segs && segs->IsArray()) {
            for (const auto& s : segs->GetArray()) {
              auto b = utf8_offset(t.text, get_int(s, "startIndex"));
              auto e = utf8_offset(t.text, get_int(s, "endIndex"));
              if (e > b) {
                auto n = std::min(e - b, text_budget);
                page.text.append(t.text, b, n);
                text_budget -= n;
              }
            }
          }
        }
      }
      page.words = parse_tokens(get(p, "tokens"), t.text);
      const auto* iqs = get(p, "imageQualityScores");
      // qualityScore omitted inside imageQualityScores means 0.0 (proto3 default); no
      // imageQualityScores at all means the service reported none (scored 1 below).
      has_quality.push_back(iqs != nullptr && iqs->IsObject());
      page.quality_score = has_quality.back() ? clamp01(get_double(*iqs, "qualityScore")) : 1.0;
      if (has_quality.back())
        page.defects = parse_defects(get(*iqs, "detectedDefects"));
      t.pages.push_back(std::move(page));
      ++idx;
    }
  }
  // The older quality processor: an entity {"type":"quality_score","confidence":...,
  // "properties":[defects]} anchored to pages (pageRefs[].page, 0-based, omitted = 0).
  if (const auto* entities = get(*d, "entities"); entities && entities->IsArray()) {
    for (const auto& e : entities->GetArray()) {
      if (get_string(e, "type") != "quality_score")
        continue;
      double score = clamp01(get_double(e, "confidence"));
      auto defects = parse_defects(get(e, "properties"));
      std::vector<int64_t> refs;
      if (const auto* pa = get(e, "pageAnchor"))
        if (const auto* prs = get(*pa, "pageRefs"); prs && prs->IsArray())
          for (const auto& r : prs->GetArray())
            refs.push_back(get_int(r, "page"));
      if (t.pages.empty()) {
        transcription_page page;
        page.text = t.text;
        t.pages.push_back(page);
        has_quality.push_back(false);
      }
      if (refs.empty())
        for (size_t i = 0; i < t.pages.size(); ++i)
          refs.push_back(static_cast<int64_t>(i));
      for (auto r : refs) {
        if (r < 0 || r >= static_cast<int64_t>(t.pages.size()) || has_quality[size_t(r)])
          continue;
        t.pages[size_t(r)].quality_score = score;
        t.pages[size_t(r)].defects = defects;
        has_quality[size_t(r)] = true;
      }
    }
  }
  if (t.pages.empty() && !t.text.empty()) {
    transcription_page page;
    page.text = t.text;
    t.pages.push_back(page);
  }
  t.page_count = static_cast<int32_t>(t.pages.size());
  t.quality_score = t.pages.empty() ? 0 : 1;
  for (const auto& p : t.pages)
    t.quality_score = std::min(t.quality_score, p.quality_score);
  return t;
}

error classify_document_ai_error(const http_response& response) {
  std::string message, status;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(response.body.data(), response.body.size());
  if (!doc.HasParseError() && doc.IsObject())
    if (const auto* e = get(doc, "error"); e && e->IsObject()) {
      message = get_string(*e, "message");
      // `status` is an enum: its name, or (from some proxies) its number.
      status = get_string(*e, "status");
      if (status.empty())
        if (auto n = get_int(*e, "status", -1); n >= 0)
          status = std::to_string(n);
    }
  auto code = response.status;
  std::string detail = "Document AI HTTP " + std::to_string(code)
                       + (status.empty() ? "" : " " + status)
                       + (message.empty() ? "" : ": " + message);
  auto lower = lowercase(message);
  if (lower.find("document size") != std::string::npos
      && lower.find("exceeds the limit") != std::string::npos)
    return error::make_permanent("docai.too_large", detail);
  if (lower.find("pages") != std::string::npos
      && lower.find("exceed the limit") != std::string::npos)
    return error::make_permanent("docai.too_many_pages", detail);
  if (code == 429 || status == "RESOURCE_EXHAUSTED" || status == "8" || code >= 500 || code == 408
      || status == "UNAVAILABLE" || status == "14") {
    auto e = error::make_transient("docai.http_" + std::to_string(code), detail);
    e.retry_after_ms = parse_retry_after_seconds(response.header("retry-after"));
    return e;
  }
  if (code == 401)
    return error::make_permanent("docai.unauthenticated", detail);
  if (code == 403)
    return error::make_permanent("docai.permission_denied", detail);
  return error::make_permanent("docai.http_" + std::to_string(code), detail);
}

document_ai_transcriber::document_ai_transcriber(http_client& http, document_ai_options options)
    : http_(http), options_(std::move(options)) {}

void document_ai_transcriber::transcribe(transcription_request request,
                                         callback<transcription> done) {
  if (request.bytes.empty()) {
    done(error::make_permanent("ocr.empty_file", "the document is empty (0 bytes)"));
    return;
  }
  if (request.bytes.size() > options_.max_file_bytes) {
    done(error::make_permanent("ocr.too_large", "the document has "
                                                    + std::to_string(request.bytes.size())
                                                    + " bytes; Document AI accepts "
                                                    + std::to_string(options_.max_file_bytes)));
    return;
  }
  auto type = detect_file_type(request.bytes);
  if (!type) {
    done(error::make_permanent("ocr.unsupported_type",
                               "unsupported document type \"" + request.mime_type + "\""));
    return;
  }
  http_request req;
  req.method = "POST";
  req.url = options_.endpoint;
  req.headers = {{"Authorization", "Bearer " + options_.access_token},
                 {"Content-Type", "application/json; charset=utf-8"}};
  req.body = document_ai_request_body(request.bytes, type->mime, options_);
  req.total_timeout = request.timeout.count() > 0
                          ? std::chrono::duration_cast<std::chrono::milliseconds>(request.timeout)
                          : options_.timeout;
  req.context = std::move(request.context);
  auto start = std::chrono::steady_clock::now();
  http_.submit(std::move(req), [done = std::move(done), start](result<http_response> r) {
    if (!r) {
      done(r.error());
      return;
    }
    if (r->status != 200) {
      done(classify_document_ai_error(*r));
      return;
    }
    auto t = parse_document_ai_response(r->body);
    if (t)
      t->duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    done(std::move(t));
  });
}

} // namespace ingestd
