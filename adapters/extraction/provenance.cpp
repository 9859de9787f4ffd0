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

enum class kind { text, amount, date, currency };

struct field_spec {
  const char* name;
  kind how;
};

constexpr field_spec located[] = {
    {"invoice_number", kind::text},   {"invoice_date", kind::date},
    {"due_date", kind::date},         {"supplier_name", kind::text},
    {"supplier_address", kind::text}, {"supplier_vat_id", kind::text},
    {"customer_name", kind::text},    {"currency", kind::currency},
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
/// The sign a currency code is printed as, where it has one of its own.
std::string_view currency_sign(std::string_view code) {
  static constexpr std::pair<std::string_view, std::string_view> signs[]
      = {{"EUR", "€"},  {"GBP", "£"}, {"USD", "$"}, {"INR", "₹"},   {"JPY", "¥"},
         {"PLN", "zł"}, {"CNY", "¥"}, {"KRW", "₩"}, {"RUB", "₽"}, {"TRY", "₺"}};
  for (auto [c, sign] : signs)
    if (c == code)
      return sign;
  return {};
}

/// Words [first, first + n) of page index `page`.
struct hit {
  size_t page = 0;
  size_t first = 0;
  size_t n = 0;
};

field_source source_of(const transcription& t, const hit& h) {
  const auto& page = t.pages[h.page];
  return field_source{{}, page.number, span_of(page.words, h.first, h.n)};
}

/// The first (or last) window of words in `t` from `from` on that `matches`, up to `max_words`
/// long, shortest windows first at each start. `matches(words, first, n)` is 1 for a match, 0
/// for none, -1 when no longer window from `first` can match.
template <typename Match>
std::optional<hit> find(const transcription& t, size_t max_words, bool last, Match matches,
                        hit from = {}) {
  std::optional<hit> found;
  for (size_t p = from.page; p < t.pages.size(); ++p) {
    const auto& words = t.pages[p].words;
    for (size_t first = p == from.page ? from.first : 0; first < words.size(); ++first)
      for (size_t n = 1; n <= max_words && first + n <= words.size(); ++n) {
        auto verdict = matches(words, first, n);
        if (verdict < 0)
          break; // no longer window from here can match
        if (verdict == 0)
          continue;
        found = hit{p, first, n};
        if (!last)
          return found;
        first += n - 1;
        break;
      }
  }
  return found;
}

/// Matches windows whose letters and digits are `target`'s.
auto text_matcher(std::string target) {
  return [target = std::move(target), joined = std::string{}](const std::vector<page_word>& words,
                                                              size_t first, size_t n) mutable {
    if (n == 1)
      joined.clear();
    joined += letters_and_digits(words[first + n - 1].text);
    if (joined == target)
      return 1;
    return target.starts_with(joined) ? 0 : -1;
  };
}

/// Matches one word that is the amount `value`, or two when a space groups the thousands
/// ("1 234,56": one to three digits, then a word that starts with digits).
auto amount_matcher(double value) {
  return [value](const std::vector<page_word>& words, size_t first, size_t n) {
    if (n == 1)
      return is_amount(words[first].text, value) ? 1 : 0;
    const auto& a = words[first].text;
    const auto& b = words[first + 1].text;
    auto digits = std::count_if(a.begin(), a.end(), local_rules::is_digit);
    if (a.empty() || !local_rules::is_digit(a.back()) || digits > 3 || b.empty()
        || !local_rules::is_digit(b.front()))
      return -1;
    return is_amount(a + ' ' + b, value) ? 1 : 0;
  };
}

std::optional<field_source> locate(const transcription& t, const rapidjson::Value& v, kind how) {
  std::optional<hit> found;
  if (how == kind::amount) {
    if (v.IsNumber())
      found = find(t, 2, true, amount_matcher(v.GetDouble()));
  } else if (v.IsString() && v.GetStringLength() > 0) {
    std::string value{v.GetString(), v.GetStringLength()};
    if (how == kind::date) {
      found = find(t, 3, false, [&](const std::vector<page_word>& words, size_t first, size_t n) {
        // A date starts with a digit or a month's name ("15.03.2024", "March 15, 2024").
        const auto& head = words[first].text;
        if (n == 1
            && (head.empty()
                || (!local_rules::is_digit(head.front())
                    && local_rules::month_number(letters_and_digits(head)) == 0)))
          return -1;
        return is_date(span_of(words, first, n).text, value) ? 1 : 0;
      });
    } else if (auto target = letters_and_digits(value); target.size() >= 2) {
      found = find(t, max_span_words, false, text_matcher(std::move(target)));
    }
    // A currency printed as its sign only ("€ 44.507,04", "₹1,435.35"): the first word with it.
    if (!found && how == kind::currency)
      if (auto sign = currency_sign(value); !sign.empty())
        found = find(t, 1, false, [&](const std::vector<page_word>& words, size_t first, size_t) {
          return words[first].text.find(sign) != std::string::npos ? 1 : 0;
        });
  }
  if (!found)
    return std::nullopt;
  return source_of(t, *found);
}

/// At most this many line items are located, each number among this many words after its
/// description.
constexpr size_t max_located_lines = 200;
constexpr size_t max_line_look_ahead = 400;

/// Each line item's description, in order down the document, and its numbers on the
/// description's line: the amount the rightmost word of its value, the unit price the leftmost
/// (a line of one piece shows the same value twice), the quantity the leftmost of its own.
void locate_lines(const transcription& t, const rapidjson::Value& items,
                  std::vector<field_source>& out) {
  if (!items.IsArray())
    return;
  hit from;
  rapidjson::SizeType index = 0;
  for (const auto& item : items.GetArray()) {
    auto row = index++;
    if (row >= max_located_lines)
      break;
    if (!item.IsObject())
      continue;
    auto description = item.FindMember("description");
    if (description == item.MemberEnd() || !description->value.IsString())
      continue;
    auto target = letters_and_digits(
        {description->value.GetString(), description->value.GetStringLength()});
    if (target.size() < 2)
      continue;
    auto found = find(t, max_span_words, false, text_matcher(target), from);
    if (!found)
      continue;
    from = hit{found->page, found->first + found->n, 0};
    auto prefix = "line_items[" + std::to_string(row) + "].";
    auto line = source_of(t, *found);
    line.field = prefix + "description";
    // The words whose middle is within the description's line.
    const auto& words = t.pages[found->page].words;
    auto on_line = [&](const page_word& w) {
      float middle = (w.top + w.bottom) / 2;
      return middle >= line.span.top && middle <= line.span.bottom;
    };
    std::optional<size_t> amount_word;
    for (const char* column : {"amount", "unit_price", "quantity"}) {
      auto v = item.FindMember(column);
      if (v == item.MemberEnd() || !v->value.IsNumber())
        continue;
      bool rightmost = std::string_view{column} == "amount";
      std::optional<size_t> pick;
      // (A table's numbers may come a column later in reading order: a bounded look ahead.)
      auto stop = std::min(words.size(), found->first + found->n + max_line_look_ahead);
      for (size_t i = found->first + found->n; i < stop; ++i) {
        if (!on_line(words[i]) || (amount_word && i == *amount_word)
            || !is_amount(words[i].text, v->value.GetDouble()))
          continue;
        if (!pick || (rightmost && words[i].left > words[*pick].left)
            || (!rightmost && words[i].left < words[*pick].left))
          pick = i;
      }
      if (!pick)
        continue;
      if (rightmost)
        amount_word = pick;
      out.push_back(field_source{prefix + column, line.page, words[*pick]});
    }
    out.push_back(std::move(line));
  }
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
  if (auto items = doc.FindMember("line_items"); items != doc.MemberEnd())
    locate_lines(t, items->value, out);
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
