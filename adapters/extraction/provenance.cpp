#include "adapters/extraction/provenance.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/local/amounts.hpp"
#include "adapters/extraction/local/dates.hpp"
#include "adapters/extraction/local/text.hpp"

namespace ingestd {
namespace {

enum class kind { text, amount, date };

struct field_spec {
  const char* name;
  kind how;
};

constexpr field_spec located[] = {
    {"invoice_number", kind::text},   {"invoice_date", kind::date},
    {"due_date", kind::date},         {"supplier_name", kind::text},
    {"supplier_address", kind::text}, {"supplier_vat_id", kind::text},
    {"customer_name", kind::text},    {"currency", kind::text},
    {"subtotal", kind::amount},       {"vat_amount", kind::amount},
    {"total", kind::amount},
};

/// At most this many words make one value (an address over several lines).
constexpr size_t max_span_words = 12;

/// Letters and digits only, lowered: "INV-2024/01" and "inv 2024 01" are the same value.
std::string letters_and_digits(std::string_view s) {
  std::string out;
  for (char c : local_rules::lower(s))
    if (local_rules::is_word(c))
      out += c;
  return out;
}

/// The window [first, first + n) of a page's words as one source.
page_word span_of(const std::vector<page_word>& words, size_t first, size_t n) {
  page_word out = words[first];
  for (size_t i = first + 1; i < first + n; ++i) {
    out.text += ' ';
    out.text += words[i].text;
    out.left = std::min(out.left, words[i].left);
    out.top = std::min(out.top, words[i].top);
    out.right = std::max(out.right, words[i].right);
    out.bottom = std::max(out.bottom, words[i].bottom);
  }
  return out;
}

/// Whether the whole of `text` is one amount equal to `value` (currency signs and codes, a
/// colon or a closing bracket around it aside).
bool is_amount(std::string_view text, double value) {
  auto hits = local_rules::find_amounts(text);
  if (hits.size() != 1 || hits[0].percent)
    return false;
  // No digit outside the amount ("1100.00" is not 100.00).
  for (size_t i = 0; i < text.size(); ++i)
    if ((i < hits[0].begin || i >= hits[0].end) && local_rules::is_digit(text[i]))
      return false;
  return std::fabs(hits[0].value - value) < 0.005;
}

/// Whether `text` names the day `iso` (YYYY-MM-DD), in either order of day and month.
bool is_date(std::string_view text, const std::string& iso) {
  auto low = local_rules::lower(text);
  for (bool day_first : {true, false})
    for (auto& hit : local_rules::find_dates(low, day_first))
      if (hit.iso == iso)
        return true;
  return false;
}

/// The first (or last) window of words on a page of `t` that `matches`, up to `max_words` long;
/// shortest windows first at each start.
/// `matches(words, first, n)` is 1 for a match, 0 for none, -1 when no longer window from
/// `first` can match.
template <typename Match>
std::optional<field_source> find(const transcription& t, size_t max_words, bool last,
                                 Match matches) {
  std::optional<field_source> found;
  for (const auto& page : t.pages) {
    const auto& words = page.words;
    for (size_t first = 0; first < words.size(); ++first)
      for (size_t n = 1; n <= max_words && first + n <= words.size(); ++n) {
        auto verdict = matches(words, first, n);
        if (verdict < 0)
          break; // no longer window from here can match
        if (verdict == 0)
          continue;
        found = field_source{{}, page.number, span_of(words, first, n)};
        if (!last)
          return found;
        first += n - 1;
        break;
      }
  }
  return found;
}

std::optional<field_source> locate(const transcription& t, const rapidjson::Value& v, kind how) {
  if (how == kind::amount) {
    if (!v.IsNumber())
      return std::nullopt;
    double value = v.GetDouble();
    // One word, or two when a space groups the thousands ("1 234,56": one to three digits,
    // then a word that starts with digits).
    return find(t, 2, true, [&](const std::vector<page_word>& words, size_t first, size_t n) {
      if (n == 1)
        return is_amount(words[first].text, value) ? 1 : 0;
      const auto& a = words[first].text;
      const auto& b = words[first + 1].text;
      auto digits = std::count_if(a.begin(), a.end(), local_rules::is_digit);
      if (a.empty() || !local_rules::is_digit(a.back()) || digits > 3 || b.empty()
          || !local_rules::is_digit(b.front()))
        return -1;
      return is_amount(a + ' ' + b, value) ? 1 : 0;
    });
  }
  if (!v.IsString() || v.GetStringLength() == 0)
    return std::nullopt;
  std::string value{v.GetString(), v.GetStringLength()};
  if (how == kind::date)
    return find(t, 3, false, [&](const std::vector<page_word>& words, size_t first, size_t n) {
      // A date starts with a digit or a month's name ("15.03.2024", "March 15, 2024").
      const auto& head = words[first].text;
      if (n == 1
          && (head.empty()
              || (!local_rules::is_digit(head.front())
                  && local_rules::month_number(letters_and_digits(head)) == 0)))
        return -1;
      return is_date(span_of(words, first, n).text, value) ? 1 : 0;
    });
  auto target = letters_and_digits(value);
  if (target.size() < 2)
    return std::nullopt;
  return find(t, max_span_words, false,
              [&, joined = std::string{}](const std::vector<page_word>& words, size_t first,
                                          size_t n) mutable {
                if (n == 1)
                  joined.clear();
                joined += letters_and_digits(words[first + n - 1].text);
                if (joined == target)
                  return 1;
                return target.starts_with(joined) ? 0 : -1;
              });
}

} // namespace

std::vector<field_source> locate_fields(std::string_view structured_data, const transcription& t) {
  std::vector<field_source> out;
  rapidjson::Document doc;
  doc.Parse(structured_data.data(), structured_data.size());
  if (doc.HasParseError() || !doc.IsObject())
    return out;
  for (const auto& spec : located) {
    auto it = doc.FindMember(spec.name);
    if (it == doc.MemberEnd())
      continue;
    if (auto source = locate(t, it->value, spec.how)) {
      source->field = spec.name;
      out.push_back(std::move(*source));
    }
  }
  return out;
}

std::string to_json(const std::vector<field_source>& sources) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  for (const auto& s : sources) {
    w.Key(s.field.c_str());
    w.StartObject();
    w.Key("page");
    w.Int(s.page);
    w.Key("box");
    w.StartArray();
    for (float v : {s.span.left, s.span.top, s.span.right, s.span.bottom})
      w.Double(std::round(static_cast<double>(v) * 10000.0) / 10000.0);
    w.EndArray();
    w.Key("text");
    w.String(s.span.text.c_str(), static_cast<rapidjson::SizeType>(s.span.text.size()));
    w.EndObject();
  }
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

} // namespace ingestd
