#include "adapters/extraction/supplier_knowledge.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/local/amounts.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

constexpr std::string_view day_month_swapped = "day_month_swapped";
constexpr const char* amount_fields[] = {"subtotal", "vat_amount", "total"};
constexpr auto npos = std::string_view::npos;
/// The longest label and invoice number taken from a text (a document's text may hold anything).
constexpr size_t max_label_bytes = 64;
constexpr size_t max_value_bytes = 64;
/// What is looked at around a label or a value, and how many places they are looked for at: the
/// work stays linear in the text's size whatever the text repeats.
constexpr size_t near_bytes = 256;
constexpr size_t max_places = 64;

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError() || !d.IsObject())
    d.SetObject();
  return d;
}

std::string string_of(const rapidjson::Document& d, const char* name) {
  auto it = d.FindMember(name);
  if (it == d.MemberEnd() || !it->value.IsString())
    return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

/// Letters and digits only (ASCII lowered or raised; other bytes, such as UTF-8's, kept).
std::string folded(std::string_view s, bool upper) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80)
      out += c;
    else if (std::isalnum(u) != 0)
      out += static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

/// The supplier's keys, its VAT id's first: either may be read the same way on its next document.
std::vector<std::string> keys_of(const rapidjson::Document& d) {
  std::vector<std::string> out;
  auto vat = folded(string_of(d, "supplier_vat_id"), true);
  if (vat.size() >= 4)
    out.push_back("vat:" + vat);
  auto name = folded(string_of(d, "supplier_name"), false);
  if (name.size() >= 3)
    out.push_back("name:" + name);
  return out;
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

/// A byte of a word: an ASCII letter or digit, or any byte of a UTF-8 sequence.
bool word_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) != 0;
}

bool ascii_alnum(char c) {
  auto u = static_cast<unsigned char>(c);
  return u < 0x80 && std::isalnum(u) != 0;
}

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

std::string lowered(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trimmed(std::string_view s, std::string_view chars = " \t\r") {
  auto b = s.find_first_not_of(chars);
  if (b == npos)
    return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

/// The words without digits at the end of `prefix` (a line up to a value), at most three, within
/// one column (two spaces or a tab end it), without a closing ':', '#' or '.'. `whole`: set to
/// whether they are all of `prefix`.
std::string label_words(std::string_view prefix, bool& whole) {
  auto rest = trimmed(prefix, " \t\r:#.");
  std::vector<std::string_view> words;
  while (!rest.empty() && words.size() < 3) {
    auto sp = rest.find_last_of(" \t");
    auto word = sp == npos ? rest : rest.substr(sp + 1);
    if (std::any_of(word.begin(), word.end(), is_digit))
      break;
    words.insert(words.begin(), word);
    if (sp == npos) {
      rest = {};
      break;
    }
    auto gap = rest.substr(0, sp + 1);
    rest = rest.substr(0, sp);
    if (gap.ends_with("  ") || gap.back() == '\t' || rest.empty() || blank(rest.back()))
      break;
  }
  whole = trimmed(rest).empty();
  std::string out;
  for (auto w : words)
    out += (out.empty() ? "" : " ") + std::string{w};
  auto letters = std::count_if(out.begin(), out.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x80 || std::isalpha(static_cast<unsigned char>(c));
  });
  // A label is a few words: a longer run is some other text.
  return letters >= 2 && out.size() <= max_label_bytes ? std::string{trimmed(out, " \t:#.")}
                                                       : std::string{};
}

/// The first token of `s` (up to a blank) without a leading '#' or a closing ',', ';' or ':'.
std::string_view first_token(std::string_view s) {
  s = trimmed(s, " \t\r:#.");
  auto token = s.substr(0, s.find_first_of(" \t\r\n"));
  return trimmed(token, ",;:");
}

/// The runs of digits with '.', ',' or '\'' between them in `text`: how amounts are printed.
std::vector<std::string_view> number_tokens(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    if (!is_digit(text[i]) || (i > 0 && ascii_alnum(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size()
           && (is_digit(text[j]) || text[j] == '.' || text[j] == ',' || text[j] == '\''))
      ++j;
    size_t end = j;
    while (end > i && !is_digit(text[end - 1]))
      --end;
    // Not part of a word or code ("DE123", "12kg"); a currency sign may touch it.
    if (j >= text.size() || !ascii_alnum(text[j]) || end < j)
      out.push_back(text.substr(i, end - i));
    i = j;
  }
  return out;
}

bool same_amount(double a, double b) {
  return std::fabs(a - b) < 0.005;
}

/// The number `raw` the local rules read, and what it is with `decimal` as the separator (none
/// when either is too large for a double: no amount is).
std::optional<std::pair<double, double>> readings(std::string_view raw, char decimal) {
  auto machine = local_rules::interpret_number(raw);
  auto other = number_with(raw, decimal);
  if (!machine || !other || !std::isfinite(machine->first) || !std::isfinite(*other))
    return std::nullopt;
  return std::make_pair(machine->first, *other);
}

std::optional<double> number_of(const rapidjson::Document& d, const char* name) {
  auto it = d.FindMember(name);
  if (it == d.MemberEnd() || !it->value.IsNumber())
    return std::nullopt;
  return it->value.GetDouble();
}

/// 2.075 as "2.075", 1250 as "1250".
std::string amount_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  std::string out{buf};
  out.erase(out.find_last_not_of('0') + 1);
  if (out.back() == '.')
    out.pop_back();
  return out;
}

/// A byte that joins a value's parts ("RG/4711-A_2"), so that no value starts or ends beside it.
bool value_byte(char c) {
  return word_byte(c) || c == '-' || c == '/' || c == '_';
}

/// Levenshtein's distance between `a` and `b`.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// Whether the VAT id the machine read is another one than the learned: a whole id more than two
/// characters away from it. One that is missing, misread by a character or two, or cut short is
/// the learned one read badly, which the learned one corrects.
bool another_vat_id(std::string_view read, std::string_view learned) {
  auto a = folded(read, true);
  auto b = folded(learned, true);
  if (a.size() > max_value_bytes || b.size() > max_value_bytes)
    return a != b; // no VAT id is that long
  return !a.empty() && a.size() + 2 >= b.size() && edit_distance(a, b) > 2;
}

/// "2024-03-05" → "2024-05-03"; empty when it is not a date or swapping makes none.
std::string swapped(const std::string& date) {
  if (date.size() != 10 || date[4] != '-' || date[7] != '-')
    return {};
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (std::isdigit(static_cast<unsigned char>(date[i])) == 0)
      return {};
  int month = std::stoi(date.substr(5, 2));
  int day = std::stoi(date.substr(8, 2));
  if (day < 1 || day > 12 || month < 1 || month > 12 || day == month)
    return {};
  return date.substr(0, 5) + date.substr(8, 2) + "-" + date.substr(5, 2);
}

} // namespace

std::vector<std::string> supplier_keys(const std::string& structured_data) {
  return keys_of(parse(structured_data));
}

std::vector<supplier_fact> learn(const std::string& machine_data, const std::string& reviewed_data,
                                 std::string_view text) {
  std::vector<supplier_fact> out;
  auto machine = parse(machine_data);
  auto reviewed = parse(reviewed_data);
  // What the text shows: the label of the reviewer's invoice number, and the decimal separator
  // that reads a printed amount as the reviewer's value where the machine read another.
  std::string label;
  if (auto number = string_of(reviewed, "invoice_number");
      !number.empty() && number != string_of(machine, "invoice_number"))
    label = clean_text(label_before(text, number));
  std::string separator;
  for (const char* field : amount_fields) {
    auto before = number_of(machine, field);
    auto after = number_of(reviewed, field);
    if (!before || !after || same_amount(*before, *after) || !separator.empty())
      continue;
    for (auto token : number_tokens(text))
      for (char decimal : {'.', ','})
        if (auto r = readings(token, decimal); separator.empty() && r
                                               && same_amount(r->first, *before)
                                               && same_amount(r->second, *after))
          separator = std::string(1, decimal);
  }
  for (auto& key : keys_of(machine)) {
    for (const char* field : {"supplier_name", "supplier_vat_id"}) {
      auto before = string_of(machine, field);
      auto after = string_of(reviewed, field);
      if (!after.empty() && after != before)
        out.push_back({key, field, after, 1});
    }
    auto date = string_of(machine, "invoice_date");
    if (auto s = swapped(date); !s.empty() && s == string_of(reviewed, "invoice_date"))
      out.push_back({key, "date_order", std::string{day_month_swapped}, 1});
    if (!label.empty())
      out.push_back({key, "invoice_number_label", label, 1});
    if (!separator.empty())
      out.push_back({key, "decimal_separator", separator, 1});
  }
  return out;
}

std::string facts_json(const std::vector<supplier_fact>& facts) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartArray();
  for (auto& f : facts) {
    w.StartObject();
    w.Key("supplier");
    w.String(f.supplier.c_str(), static_cast<rapidjson::SizeType>(f.supplier.size()));
    w.Key("field");
    w.String(f.field.c_str(), static_cast<rapidjson::SizeType>(f.field.size()));
    w.Key("value");
    w.String(f.value.c_str(), static_cast<rapidjson::SizeType>(f.value.size()));
    w.EndObject();
  }
  w.EndArray();
  return {buf.GetString(), buf.GetSize()};
}

std::vector<std::string> apply_knowledge(const std::vector<supplier_fact>& facts, extraction& x,
                                         std::string_view text) {
  std::vector<std::string> applied;
  if (facts.empty())
    return applied;
  auto d = parse(x.structured_data);
  auto keys = keys_of(d);
  // One fact per field: the one under the first key that has it (the VAT id's).
  std::vector<const supplier_fact*> chosen;
  for (auto& key : keys)
    for (auto& f : facts)
      if (f.supplier == key
          && std::none_of(chosen.begin(), chosen.end(),
                          [&](const supplier_fact* c) { return c->field == f.field; }))
        chosen.push_back(&f);
  auto& a = d.GetAllocator();
  auto set = [&](const char* field, const std::string& value) {
    auto it = d.FindMember(field);
    if (it == d.MemberEnd())
      d.AddMember(rapidjson::Value{field, a}, rapidjson::Value{value.c_str(), a}, a);
    else
      it->value.SetString(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), a);
  };
  // Each entry names the field it changed first (learned_fields reads it back).
  auto said = [](const supplier_fact& f, std::string_view field, const std::string& what) {
    return std::string{field} + " " + what + " (learned from " + std::to_string(f.reviews)
           + (f.reviews == 1 ? " review)" : " reviews)");
  };
  for (const auto* fact : chosen) {
    const auto& f = *fact;
    if (f.field == "supplier_name" || f.field == "supplier_vat_id") {
      auto current = string_of(d, f.field.c_str());
      if (current == f.value || (f.field == "supplier_vat_id" && another_vat_id(current, f.value)))
        continue;
      set(f.field.c_str(), f.value);
      applied.push_back(said(f, f.field, "'" + f.value + "'"));
    } else if (f.field == "date_order" && f.value == day_month_swapped) {
      for (const char* field : {"invoice_date", "due_date"})
        if (auto s = swapped(string_of(d, field)); !s.empty()) {
          set(field, s);
          applied.push_back(said(f, field, "day and month swapped"));
        }
    } else if (f.field == "invoice_number_label") {
      auto number = clean_text(value_after(text, f.value));
      if (number.empty() || number == string_of(d, "invoice_number"))
        continue;
      set("invoice_number", number);
      applied.push_back(
          said(f, "invoice_number", "'" + number + "' printed after '" + f.value + "'"));
    } else if (f.field == "decimal_separator" && f.value.size() == 1) {
      auto tokens = number_tokens(text);
      for (const char* field : amount_fields) {
        auto before = number_of(d, field);
        if (!before)
          continue;
        for (auto token : tokens)
          if (auto r = readings(token, f.value[0]);
              r && same_amount(r->first, *before) && !same_amount(r->second, *before)) {
            d[field].SetDouble(r->second);
            applied.push_back(
                said(f, field,
                     amount_text(r->second) + " with '" + f.value + "' as the decimal separator"));
            break;
          }
      }
    }
  }
  if (applied.empty())
    return applied;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  d.Accept(w);
  x.structured_data.assign(buf.GetString(), buf.GetSize());
  return applied;
}

std::string learned_detail(const std::vector<std::string>& applied) {
  std::string out;
  for (auto& a : applied)
    out += (out.empty() ? "" : "; ") + a;
  return out;
}

std::vector<std::pair<std::string, std::string>> learned_fields(std::string_view detail) {
  std::vector<std::pair<std::string, std::string>> out;
  // An entry ends with its "(learned from N review(s))"; a value may hold "; " itself.
  while (!detail.empty()) {
    auto end = detail.find(" review");
    if (end == npos)
      break;
    end = detail.find(')', end);
    if (end == npos)
      break;
    auto entry = trimmed(detail.substr(0, end + 1), " ;");
    detail = detail.substr(end + 1);
    auto sp = entry.find(' ');
    if (sp != npos && sp > 0)
      out.emplace_back(std::string{entry.substr(0, sp)}, std::string{entry});
  }
  return out;
}

std::string label_before(std::string_view text, std::string_view value) {
  if (value.empty())
    return {};
  size_t places = 0;
  for (auto at = text.find(value); at != npos && places < max_places;
       at = text.find(value, at + 1)) {
    auto end = at + value.size();
    if ((at > 0 && value_byte(text[at - 1])) || (end < text.size() && value_byte(text[end])))
      continue;
    ++places;
    auto nl = text.rfind('\n', at);
    size_t line_start = nl == npos ? 0 : nl + 1;
    // Only the line's last bytes before the value can be its label.
    size_t from = at - line_start > near_bytes ? at - near_bytes : line_start;
    bool whole = false;
    auto label = label_words(text.substr(from, at - from), whole);
    if (!label.empty())
      return label;
    // The value starts its line: a label alone on the line above.
    if (!whole || from != line_start || line_start == 0)
      continue;
    auto above = text.substr(0, line_start - 1);
    auto above_nl = above.rfind('\n');
    auto line = above.substr(above_nl == npos ? 0 : above_nl + 1);
    if (line.size() > near_bytes)
      continue;
    label = label_words(line, whole);
    if (!label.empty() && whole)
      return label;
  }
  return {};
}

std::string value_after(std::string_view text, std::string_view label) {
  if (label.empty())
    return {};
  auto low_text = lowered(text);
  auto low_label = lowered(label);
  /// At most near_bytes of the line that starts at `from`.
  auto near_line = [&](size_t from) {
    auto nl = text.find('\n', from);
    return text.substr(from, std::min(nl == npos ? text.size() : nl, from + near_bytes) - from);
  };
  size_t places = 0;
  for (auto at = low_text.find(low_label); at != npos && places < max_places;
       at = low_text.find(low_label, at + 1)) {
    auto end = at + label.size();
    if ((at > 0 && !blank(text[at - 1]) && text[at - 1] != '\n')
        || (end < text.size() && word_byte(text[end])))
      continue;
    ++places;
    auto token = first_token(near_line(end));
    if (auto nl = text.find('\n', end); token.empty() && nl != npos && nl - end <= near_bytes)
      // Nothing after it on its line: the value is under it.
      token = first_token(near_line(nl + 1));
    if (token.size() <= max_value_bytes && std::any_of(token.begin(), token.end(), is_digit))
      return std::string{token};
  }
  return {};
}

std::optional<double> number_with(std::string_view raw, char decimal) {
  if (raw.empty() || !is_digit(raw.front()) || !is_digit(raw.back()))
    return std::nullopt;
  auto point = raw.find(decimal);
  if (point != npos && raw.find(decimal, point + 1) != npos)
    return std::nullopt;
  auto whole = raw.substr(0, point);
  std::string digits;
  size_t group = 0;
  bool grouped = false;
  for (char c : whole) {
    if (is_digit(c)) {
      digits += c;
      ++group;
      continue;
    }
    if (c != '.' && c != ',' && c != '\'' && c != ' ')
      return std::nullopt;
    // Every group after the first has three digits; the first one to three.
    if ((grouped && group != 3) || (!grouped && (group < 1 || group > 3)))
      return std::nullopt;
    grouped = true;
    group = 0;
  }
  if (grouped && group != 3)
    return std::nullopt;
  if (point != npos) {
    auto fraction = raw.substr(point + 1);
    if (fraction.empty() || fraction.size() > 4
        || !std::all_of(fraction.begin(), fraction.end(), is_digit))
      return std::nullopt;
    digits += ".";
    digits += fraction;
  }
  return std::strtod(digits.c_str(), nullptr);
}

} // namespace ingestd
