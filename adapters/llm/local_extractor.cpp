// Rule-based invoice extraction: label hits per line (English and German), values read from the
// rest of the line, the cell below, or the next line; numbers, dates and currencies normalised.
#include "adapters/llm/local_extractor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "messages/text.hpp"

namespace ingestd {

namespace {

// --- text helpers ---------------------------------------------------------------------------

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha_ascii(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// Bytes >= 0x80 belong to UTF-8 letters (umlauts, ß) as far as these rules are concerned.
bool is_letter(char c) { return is_alpha_ascii(c) || static_cast<unsigned char>(c) >= 0x80; }
bool is_word(char c) { return is_letter(c) || is_digit(c); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// ASCII lower case plus the German capitals Ä Ö Ü (same byte length, so offsets stay valid).
std::string lower(std::string_view s) {
  std::string out{s};
  for (size_t i = 0; i < out.size(); ++i) {
    char& c = out[i];
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    } else if (static_cast<unsigned char>(c) == 0xC3 && i + 1 < out.size()) {
      auto& n = reinterpret_cast<unsigned char&>(out[i + 1]);
      if (n == 0x84 || n == 0x96 || n == 0x9C)
        n = static_cast<unsigned char>(n + 0x20);
      ++i;
    }
  }
  return out;
}

/// Collapses runs of spaces and strips separators at both ends.
std::string clean_value(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space)
      out += ' ';
    space = false;
    out += c;
  }
  while (!out.empty() && (out.back() == ',' || out.back() == ';' || out.back() == ':'))
    out.pop_back();
  size_t start = 0;
  while (start < out.size() && (out[start] == ':' || out[start] == '-' || out[start] == ' '))
    ++start;
  return out.substr(start);
}

std::string join_spaced_title(std::string line);

constexpr size_t max_line_bytes = 2'000;
constexpr size_t max_lines = 20'000;

/// The text normalised to '\n'-separated lines: CR dropped, form feeds (page breaks) and
/// tabs made into layout the rules understand, non-breaking and thin spaces made plain.
std::vector<std::string> split_lines(std::string_view text) {
  std::string norm;
  norm.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\r')
      continue;
    if (c == '\f') {
      norm += '\n';
    } else if (c == '\t') {
      norm += "  ";
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xA0) {
      norm += ' ';
      ++i;
    } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80
               && (static_cast<unsigned char>(text[i + 2]) == 0xAF
                   || static_cast<unsigned char>(text[i + 2]) == 0x89)) {
      norm += ' ';
      i += 2;
    } else {
      norm += static_cast<char>(c);
    }
  }
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= norm.size()) {
    auto nl = norm.find('\n', pos);
    if (nl == std::string::npos)
      nl = norm.size();
    std::string line = norm.substr(pos, nl - pos);
    while (!line.empty() && (line.back() == ' '))
      line.pop_back();
    // No invoice row is this long; the cap bounds the regex work on garbage input.
    if (line.size() > max_line_bytes)
      line.resize(utf8_prefix(line, max_line_bytes).size());
    lines.push_back(join_spaced_title(std::move(line)));
    if (lines.size() >= max_lines)
      break;
    pos = nl + 1;
  }
  return lines;
}

/// OCR splits large letter-spaced titles ("REC HNUNG", "INVO IC E"): join them again when the
/// letters at the start of a line spell a title word.
std::string join_spaced_title(std::string line) {
  for (std::string_view title : {"invoice", "rechnung"}) {
    size_t k = 0;
    size_t i = 0;
    bool spaced = false;
    while (i < line.size() && k < title.size()) {
      char c = line[i];
      if (c == ' ' && k > 0 && i + 1 < line.size() && line[i + 1] != ' ') {
        spaced = true;
        ++i;
        continue;
      }
      char lc = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      if (lc != title[k])
        break;
      ++k;
      ++i;
    }
    if (k == title.size() && spaced && (i == line.size() || line[i] == ' ')) {
      std::string word{title};
      for (auto& c : word)
        c = static_cast<char>(c - 'a' + 'A');
      return word + line.substr(i);
    }
  }
  return line;
}

/// Cells of a line: runs separated by two or more spaces, with their byte offsets.
struct cell {
  size_t begin;
  std::string text;
};

std::vector<cell> cells_of(std::string_view line) {
  std::vector<cell> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    if (i >= line.size())
      break;
    size_t start = i;
    while (i < line.size() && !(line[i] == ' ' && i + 1 < line.size() && line[i + 1] == ' '))
      ++i;
    out.push_back(cell{start, std::string{trim(line.substr(start, i - start))}});
  }
  return out;
}

// --- currencies -----------------------------------------------------------------------------

struct currency_marker {
  std::string_view text;
  std::string_view code;
  bool word; // needs word boundaries (codes), symbols do not
};

constexpr std::array<currency_marker, 14> currency_markers{{
  {"\xE2\x82\xAC", "EUR", false}, // €
  {"\xC2\xA3", "GBP", false},     // £
  {"us$", "USD", false},
  {"$", "USD", false},
  {"eur", "EUR", true},
  {"euro", "EUR", true},
  {"usd", "USD", true},
  {"gbp", "GBP", true},
  {"chf", "CHF", true},
  {"sfr", "CHF", true},
  {"fr.", "CHF", true},
  {"jpy", "JPY", true},
  {"sek", "SEK", true},
  {"pln", "PLN", true},
}};

/// Currency markers in a lowered string, with their offsets.
std::vector<std::pair<size_t, std::string_view>> currency_hits(std::string_view low) {
  std::vector<std::pair<size_t, std::string_view>> out;
  for (size_t i = 0; i < low.size(); ++i) {
    for (const auto& m : currency_markers) {
      if (low.compare(i, m.text.size(), m.text) != 0)
        continue;
      if (m.word) {
        bool before_ok = i == 0 || !is_letter(low[i - 1]);
        size_t end = i + m.text.size();
        bool after_ok = end >= low.size() || !is_letter(low[end]) || m.text.back() == '.';
        if (!before_ok || !after_ok)
          continue;
      }
      out.emplace_back(i, m.code);
      i += m.text.size() - 1;
      break;
    }
  }
  return out;
}

// --- amounts --------------------------------------------------------------------------------

struct amount_hit {
  double value = 0;
  size_t begin = 0;
  size_t end = 0;
  bool decimals = false;
  bool percent = false;
};

/// Interprets the digits-and-separators run `raw`; nullopt when it is not a well-formed number
/// (a date like 15.03.2024 is not).
std::optional<std::pair<double, bool>> interpret_number(std::string_view raw) {
  std::vector<size_t> seps;
  for (size_t i = 0; i < raw.size(); ++i)
    if (!is_digit(raw[i]))
      seps.push_back(i);
  auto to_double = [](const std::string& digits) { return std::strtod(digits.c_str(), nullptr); };
  std::string digits;
  for (char c : raw)
    if (is_digit(c))
      digits += c;
  if (seps.empty())
    return std::make_pair(to_double(digits), false);
  char last = raw[seps.back()];
  size_t after_last = raw.size() - seps.back() - 1;
  bool has_dot = raw.find('.') != std::string_view::npos;
  bool has_comma = raw.find(',') != std::string_view::npos;
  char decimal = 0;
  if (last == ' ' || last == '\'') {
    decimal = 0;
  } else if (has_dot && has_comma) {
    decimal = last;
  } else {
    size_t count = static_cast<size_t>(std::count(raw.begin(), raw.end(), last));
    // A single separator is a decimal point unless three digits follow it (a thousands
    // separator), except after a lone leading zero: 0,125.
    if (count == 1 && (after_last != 3 || (seps.back() == 1 && raw[0] == '0')))
      decimal = last;
    else
      decimal = 0;
  }
  // Every grouping separator must be followed by exactly three digits before the next separator,
  // and the first group has one to three digits.
  size_t prev = 0;
  bool first = true;
  for (size_t k = 0; k < seps.size(); ++k) {
    size_t p = seps[k];
    bool is_decimal = decimal != 0 && k + 1 == seps.size();
    if (first) {
      if (p == 0 || (p > 3 && !is_decimal))
        return std::nullopt;
      first = false;
    } else if (p - prev - 1 != 3) {
      return std::nullopt;
    }
    if (!is_decimal && raw[p] == decimal)
      return std::nullopt;
    prev = p;
  }
  if (decimal != 0 && (after_last == 0 || after_last > 4))
    return std::nullopt;
  if (decimal == 0 && after_last != 3)
    return std::nullopt;
  // A space only groups thousands in the comma-decimal style ("1 234,56"); "10 100.00" is two
  // table cells.
  if (raw.find(' ') != std::string_view::npos && decimal != ',')
    return std::nullopt;
  if (decimal == 0)
    return std::make_pair(to_double(digits), false);
  std::string num = digits.substr(0, digits.size() - after_last) + "." + digits.substr(digits.size() - after_last);
  return std::make_pair(to_double(num), true);
}

/// True when a currency symbol (€, £) ends right before offset `i`.
bool symbol_before(std::string_view s, size_t i) {
  return (i >= 3 && s.substr(i - 3, 3) == "\xE2\x82\xAC") || (i >= 2 && s.substr(i - 2, 2) == "\xC2\xA3");
}

/// Every number in `s` (a line with dates already blanked out). `space_groups`: read
/// "1 234,56" as one number (off when a table row's "1 238,40" is a quantity and a price).
std::vector<amount_hit> find_amounts(std::string_view s, bool space_groups = true) {
  std::vector<amount_hit> out;
  size_t i = 0;
  while (i < s.size()) {
    if (!is_digit(s[i])
        || (i > 0 && ((is_word(s[i - 1]) && !symbol_before(s, i)) || s[i - 1] == '.' || s[i - 1] == ','))) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t j = i;
    while (j < s.size()) {
      char c = s[j];
      // The number goes on over a digit, a separator followed by a digit, and (space_groups) a
      // space followed by exactly three digits.
      bool separator = (c == '.' || c == ',' || c == '\'') && j + 1 < s.size() && is_digit(s[j + 1]);
      bool space_group = space_groups && c == ' ' && j + 3 < s.size() && is_digit(s[j + 1])
                         && is_digit(s[j + 2]) && is_digit(s[j + 3])
                         && (j + 4 >= s.size() || !is_digit(s[j + 4]));
      if (!is_digit(c) && !separator && !space_group)
        break;
      ++j;
    }
    size_t end = j;
    // A number glued to letters ("DE123456789", "INV-2024") is an identifier, not an amount.
    if (end < s.size() && is_letter(s[end]) && !(end + 1 < s.size() && s[end] == 'x')) {
      i = end;
      continue;
    }
    auto raw = s.substr(start, end - start);
    auto num = interpret_number(raw);
    if (!num) {
      // Retry without space grouping: "10 100.00" is 10 then 100.00.
      auto sp = raw.find(' ');
      if (sp != std::string_view::npos) {
        end = start + sp;
        num = interpret_number(s.substr(start, end - start));
      }
    }
    if (!num) {
      // e.g. a dotted identifier; skip the whole run
      i = j;
      continue;
    }
    amount_hit hit{num->first, start, end, num->second, false};
    size_t k = end;
    while (k < s.size() && s[k] == ' ')
      ++k;
    if (k < s.size() && s[k] == '%')
      hit.percent = true;
    // A leading minus ("-50.00", "- 50,00 €") makes the amount negative.
    size_t b = start;
    while (b > 0 && s[b - 1] == ' ')
      --b;
    if (b > 0 && s[b - 1] == '-' && (b < 2 || !is_word(s[b - 2])))
      hit.value = -hit.value;
    out.push_back(hit);
    i = end;
  }
  return out;
}

// --- dates ----------------------------------------------------------------------------------

int month_number(std::string_view name) {
  static const std::array<std::pair<std::string_view, int>, 34> names{{
    {"january", 1},  {"januar", 1},    {"jan", 1},     {"february", 2}, {"februar", 2},
    {"feb", 2},      {"march", 3},     {"m\xC3\xA4rz", 3}, {"maerz", 3}, {"mar", 3},
    {"m\xC3\xA4r", 3}, {"mrz", 3},     {"april", 4},   {"apr", 4},      {"may", 5},
    {"mai", 5},      {"june", 6},      {"juni", 6},    {"jun", 6},      {"july", 7},
    {"juli", 7},     {"jul", 7},       {"august", 8},  {"aug", 8},      {"september", 9},
    {"sept", 9},     {"sep", 9},       {"october", 10}, {"oktober", 10}, {"oct", 10},
    {"okt", 10},     {"november", 11}, {"nov", 11},    {"dec", 12},
  }};
  for (const auto& [n, m] : names)
    if (name == n)
      return m;
  if (name == "december" || name == "dezember" || name == "dez")
    return 12;
  return 0;
}

const char* month_alternation() {
  return "(january|february|march|april|may|june|july|august|september|october|november|"
         "december|januar|februar|m\xC3\xA4rz|maerz|mai|juni|juli|oktober|dezember|sept|jan|feb|"
         "mar|m\xC3\xA4r|mrz|apr|jun|jul|aug|sep|oct|okt|nov|dec|dez)";
}

bool valid_date(int y, int m, int d) {
  if (y < 1900 || y > 2200 || m < 1 || m > 12 || d < 1)
    return false;
  static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > days[m - 1])
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return !(m == 2 && d == 29 && !leap);
}

std::string iso(int y, int m, int d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", y, m, d);
  return buf;
}

int full_year(int y) {
  if (y >= 100)
    return y;
  return y < 70 ? 2000 + y : 1900 + y;
}

struct date_hit {
  std::string iso;
  size_t begin = 0;
  size_t end = 0;
  /// Numeric with both parts <= 12 and '/' or '-': read by the document's preference.
  bool ambiguous = false;
  int a = 0, b = 0, y = 0;
};

/// Every date in a lowered line. Ambiguous slash dates are read with `day_first`.
std::vector<date_hit> find_dates(const std::string& low, bool day_first) {
  static const std::regex ymd{R"((^|[^0-9])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![0-9]))"};
  static const std::regex dmy_dot{R"((^|[^0-9.])(\d{1,2})\. ?(\d{1,2})\. ?(\d{4}|\d{2})(?![0-9]))"};
  static const std::regex slash{R"((^|[^0-9/])(\d{1,2})([/-])(\d{1,2})[/-](\d{4}|\d{2})(?![0-9]))"};
  static const std::regex d_month{std::string{R"((^|[^0-9])(\d{1,2})(?:st|nd|rd|th)?\.? ?(?:of )?)"}
                                  + month_alternation() + R"((?![a-z])\.?,? ?(\d{4}))"};
  static const std::regex month_d{std::string{R"((^|[^a-z]))"} + month_alternation()
                                  + R"((?![a-z])\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}))"};
  std::vector<date_hit> out;
  auto add = [&](const std::smatch& m, int y, int mo, int d, bool ambiguous, int a, int b) {
    if (!valid_date(y, mo, d))
      return;
    size_t begin = static_cast<size_t>(m.position(0) + m.length(1));
    size_t end = static_cast<size_t>(m.position(0) + m.length(0));
    for (const auto& h : out)
      if (begin < h.end && h.begin < end)
        return;
    out.push_back(date_hit{iso(y, mo, d), begin, end, ambiguous, a, b, y});
  };
  auto each = [&](const std::regex& re, auto fn) {
    for (auto it = std::sregex_iterator(low.begin(), low.end(), re); it != std::sregex_iterator(); ++it)
      fn(*it);
  };
  auto num = [](const std::ssub_match& s) { return std::stoi(s.str()); };
  each(ymd, [&](const std::smatch& m) { add(m, num(m[2]), num(m[3]), num(m[4]), false, 0, 0); });
  each(d_month, [&](const std::smatch& m) {
    add(m, num(m[4]), month_number(m[3].str()), num(m[2]), false, 0, 0);
  });
  each(month_d, [&](const std::smatch& m) {
    add(m, num(m[4]), month_number(m[2].str()), num(m[3]), false, 0, 0);
  });
  each(dmy_dot, [&](const std::smatch& m) {
    add(m, full_year(num(m[4])), num(m[3]), num(m[2]), false, 0, 0);
  });
  each(slash, [&](const std::smatch& m) {
    int a = num(m[2]), b = num(m[4]), y = full_year(num(m[5]));
    bool dash = m[3].str() == "-";
    if (a > 12)
      add(m, y, b, a, false, a, b);
    else if (b > 12)
      add(m, y, a, b, false, a, b);
    else if (day_first || dash)
      add(m, y, b, a, true, a, b);
    else
      add(m, y, a, b, true, a, b);
  });
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
  return out;
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm), for "payable within 30 days".
long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::string civil_from_days(long z) {
  z += 719468;
  const long era = (z >= 0 ? z : z - 146096) / 146097;
  const long doe = z - era * 146097;
  const long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long y = yoe + era * 400;
  const long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long mp = (5 * doy + 2) / 153;
  const long d = doy - (153 * mp + 2) / 5 + 1;
  const long m = mp + (mp < 10 ? 3 : -9);
  return iso(static_cast<int>(y + (m <= 2)), static_cast<int>(m), static_cast<int>(d));
}

// --- labels ---------------------------------------------------------------------------------

enum class kind {
  invoice_number,
  invoice_title, // "Invoice" / "Rechnung" alone: a weak invoice-number label
  invoice_date,
  due_date,
  other_date,    // delivery, order, service dates: consumed so they are not read as invoice dates
  other_number,  // customer, order, PO numbers
  subtotal,
  vat,
  total,
  total_weak,    // "Total", "Summe": the gross total when nothing stronger is there
  vat_id,
  currency,
  customer,
  supplier,
  terms,
  qualifier,     // "incl. VAT", "zzgl.": transparent, does not end the previous label's value
  net_qualifier, // "excl. VAT", "net": turns a total into a subtotal
  contact,       // phone, e-mail, IBAN: ends an address block
};

struct label {
  std::string_view text;
  kind k;
};

const std::vector<label>& labels() {
  static const std::vector<label> all = [] {
    std::vector<label> v{
      // invoice number
      {"invoice number", kind::invoice_number}, {"invoice no.", kind::invoice_number},
      {"invoice no", kind::invoice_number}, {"invoice nr.", kind::invoice_number},
      {"invoice nr", kind::invoice_number}, {"invoice #", kind::invoice_number},
      {"invoice id", kind::invoice_number}, {"invoice ref", kind::invoice_number},
      {"inv. no.", kind::invoice_number}, {"inv no", kind::invoice_number},
      {"inv #", kind::invoice_number}, {"inv. #", kind::invoice_number},
      {"bill number", kind::invoice_number}, {"bill no", kind::invoice_number},
      {"rechnungsnummer", kind::invoice_number}, {"rechnungs-nr.", kind::invoice_number},
      {"rechnungs-nr", kind::invoice_number}, {"rechnungsnr.", kind::invoice_number},
      {"rechnungsnr", kind::invoice_number}, {"rechnung nr.", kind::invoice_number},
      {"rechnung nr", kind::invoice_number}, {"rechnung-nr.", kind::invoice_number},
      {"rechnung-nr", kind::invoice_number}, {"rechnung no", kind::invoice_number},
      {"re-nr.", kind::invoice_number}, {"re.-nr.", kind::invoice_number},
      {"belegnummer", kind::invoice_number}, {"beleg-nr.", kind::invoice_number},
      {"invoice", kind::invoice_title}, {"tax invoice", kind::invoice_title},
      {"rechnung", kind::invoice_title},
      // dates
      {"invoice date", kind::invoice_date}, {"date of invoice", kind::invoice_date},
      {"date of issue", kind::invoice_date}, {"issue date", kind::invoice_date},
      {"issued on", kind::invoice_date}, {"date issued", kind::invoice_date},
      {"invoice dated", kind::invoice_date}, {"billing date", kind::invoice_date},
      {"rechnungsdatum", kind::invoice_date}, {"belegdatum", kind::invoice_date},
      {"ausstellungsdatum", kind::invoice_date}, {"datum", kind::invoice_date},
      {"date", kind::invoice_date}, {"dated", kind::invoice_date},
      {"due date", kind::due_date}, {"payment due", kind::due_date}, {"due by", kind::due_date},
      {"due on", kind::due_date}, {"date due", kind::due_date}, {"due", kind::due_date},
      {"payable by", kind::due_date}, {"pay by", kind::due_date},
      {"f\xC3\xA4lligkeitsdatum", kind::due_date}, {"f\xC3\xA4llig am", kind::due_date},
      {"f\xC3\xA4llig bis", kind::due_date}, {"f\xC3\xA4llig", kind::due_date},
      {"faellig", kind::due_date}, {"fallig am", kind::due_date}, {"fallig", kind::due_date},
      {"falligkeitsdatum", kind::due_date}, {"zahlbar bis", kind::due_date},
      {"zahlungsziel", kind::due_date}, {"zahlungsfrist", kind::due_date},
      {"delivery date", kind::other_date}, {"date of delivery", kind::other_date},
      {"date of supply", kind::other_date}, {"service date", kind::other_date},
      {"order date", kind::other_date}, {"service period", kind::other_date},
      {"lieferdatum", kind::other_date}, {"leistungsdatum", kind::other_date},
      {"leistungszeitraum", kind::other_date}, {"bestelldatum", kind::other_date},
      {"auftragsdatum", kind::other_date}, {"period", kind::other_date},
      {"zeitraum", kind::other_date},
      // other numbers
      {"customer no", kind::other_number}, {"customer number", kind::other_number},
      {"customer id", kind::other_number}, {"account no", kind::other_number},
      {"account number", kind::other_number}, {"order no", kind::other_number},
      {"order number", kind::other_number}, {"po number", kind::other_number},
      {"p.o. number", kind::other_number}, {"purchase order", kind::other_number},
      {"po no", kind::other_number}, {"p.o. #", kind::other_number}, {"po #", kind::other_number},
      {"p.o.", kind::other_number}, {"reference", kind::other_number},
      {"kundennummer", kind::other_number}, {"kunden-nr.", kind::other_number},
      {"kunden-nr", kind::other_number}, {"kundennr", kind::other_number},
      {"auftragsnummer", kind::other_number}, {"auftrags-nr.", kind::other_number},
      {"bestellnummer", kind::other_number}, {"bestell-nr.", kind::other_number},
      {"lieferschein", kind::other_number}, {"ihre referenz", kind::other_number},
      {"steuernummer", kind::other_number}, {"st.-nr.", kind::other_number},
      {"page", kind::other_number}, {"seite", kind::other_number},
      // amounts
      {"subtotal", kind::subtotal}, {"sub-total", kind::subtotal}, {"sub total", kind::subtotal},
      {"net amount", kind::subtotal}, {"net total", kind::subtotal}, {"total net", kind::subtotal},
      {"total (net)", kind::subtotal}, {"net value", kind::subtotal},
      {"total excl. vat", kind::subtotal}, {"total excl vat", kind::subtotal},
      {"total before tax", kind::subtotal}, {"amount before tax", kind::subtotal},
      {"total before vat", kind::subtotal}, {"zwischensumme", kind::subtotal},
      {"nettobetrag", kind::subtotal}, {"nettosumme", kind::subtotal},
      {"summe netto", kind::subtotal}, {"gesamt netto", kind::subtotal},
      {"netto gesamt", kind::subtotal}, {"gesamtbetrag netto", kind::subtotal},
      {"rechnungsbetrag netto", kind::subtotal}, {"warenwert", kind::subtotal},
      {"netto", kind::subtotal},
      {"vat amount", kind::vat}, {"vat", kind::vat}, {"tax amount", kind::vat},
      {"sales tax", kind::vat}, {"total tax", kind::vat}, {"total vat", kind::vat},
      {"tax", kind::vat}, {"gst", kind::vat}, {"mwst.", kind::vat}, {"mwst", kind::vat},
      {"ust.", kind::vat}, {"ust", kind::vat}, {"umsatzsteuer", kind::vat},
      {"mehrwertsteuer", kind::vat}, {"mwst.-betrag", kind::vat}, {"steuer", kind::vat},
      {"grand total", kind::total}, {"total due", kind::total}, {"amount due", kind::total},
      {"balance due", kind::total}, {"total amount due", kind::total},
      {"total amount", kind::total}, {"invoice total", kind::total},
      {"total payable", kind::total}, {"amount payable", kind::total},
      {"total incl. vat", kind::total}, {"total incl vat", kind::total},
      {"total including vat", kind::total}, {"total gross", kind::total},
      {"total (gross)", kind::total}, {"gross total", kind::total}, {"gross amount", kind::total},
      {"gesamtbetrag", kind::total}, {"rechnungsbetrag", kind::total},
      {"gesamtsumme", kind::total}, {"endbetrag", kind::total}, {"zahlbetrag", kind::total},
      {"zu zahlen", kind::total}, {"zu zahlender betrag", kind::total},
      {"bruttobetrag", kind::total}, {"gesamt brutto", kind::total},
      {"summe brutto", kind::total}, {"brutto gesamt", kind::total},
      {"gesamtbetrag brutto", kind::total}, {"rechnungsbetrag brutto", kind::total},
      {"brutto", kind::total}, {"total", kind::total_weak}, {"summe", kind::total_weak},
      {"gesamt", kind::total_weak},
      // ids, currency, parties
      {"vat id", kind::vat_id}, {"vat-id", kind::vat_id}, {"vat no", kind::vat_id},
      {"vat number", kind::vat_id}, {"vat reg", kind::vat_id}, {"vat registration", kind::vat_id},
      {"vat reg. no.", kind::vat_id}, {"tax id", kind::vat_id}, {"tax no", kind::vat_id},
      {"ust-idnr.", kind::vat_id}, {"ust-idnr", kind::vat_id}, {"ust-id-nr.", kind::vat_id},
      {"ust-id", kind::vat_id}, {"ust.-id", kind::vat_id}, {"ust id", kind::vat_id},
      {"ust-identifikationsnummer", kind::vat_id}, {"umsatzsteuer-id", kind::vat_id},
      {"umsatzsteuer-identifikationsnummer", kind::vat_id}, {"uid", kind::vat_id},
      {"uid-nr.", kind::vat_id}, {"mwst-nr.", kind::vat_id},
      {"currency", kind::currency}, {"w\xC3\xA4hrung", kind::currency},
      {"wahrung", kind::currency},
      {"bill to", kind::customer}, {"billed to", kind::customer}, {"invoice to", kind::customer},
      {"invoiced to", kind::customer}, {"sold to", kind::customer}, {"customer", kind::customer},
      {"client", kind::customer}, {"buyer", kind::customer}, {"recipient", kind::customer},
      {"rechnungsempf\xC3\xA4nger", kind::customer}, {"rechnungsadresse", kind::customer},
      {"kunde", kind::customer}, {"rechnungsempfanger", kind::customer},
      {"rechnungsempfaenger", kind::customer}, {"empf\xC3\xA4nger", kind::customer},
      {"leistungsempf\xC3\xA4nger", kind::customer}, {"to:", kind::customer},
      {"an:", kind::customer},
      {"from:", kind::supplier}, {"supplier", kind::supplier}, {"seller", kind::supplier},
      {"vendor", kind::supplier}, {"issued by", kind::supplier}, {"lieferant", kind::supplier},
      {"rechnungssteller", kind::supplier}, {"verk\xC3\xA4ufer", kind::supplier},
      {"von:", kind::supplier},
      {"payment terms", kind::terms}, {"terms", kind::terms}, {"zahlungsbedingungen", kind::terms},
      {"zahlbar", kind::terms},
      {"incl. vat", kind::qualifier}, {"incl vat", kind::qualifier},
      {"including vat", kind::qualifier}, {"incl. tax", kind::qualifier},
      {"inkl. mwst.", kind::qualifier}, {"inkl. mwst", kind::qualifier},
      {"inkl. ust.", kind::qualifier}, {"inkl.", kind::qualifier}, {"incl.", kind::qualifier},
      {"zzgl.", kind::qualifier}, {"zuzgl.", kind::qualifier}, {"plus", kind::qualifier},
      {"davon", kind::qualifier},
      {"excl. vat", kind::net_qualifier}, {"excl vat", kind::net_qualifier},
      {"excluding vat", kind::net_qualifier}, {"exkl. mwst.", kind::net_qualifier},
      {"(net)", kind::net_qualifier}, {"net", kind::net_qualifier},
      {"ship to", kind::contact}, {"deliver to", kind::contact}, {"delivery address", kind::contact},
      {"lieferadresse", kind::contact}, {"lieferanschrift", kind::contact},
      {"phone", kind::contact}, {"tel", kind::contact}, {"tel.", kind::contact},
      {"telefon", kind::contact}, {"fax", kind::contact}, {"e-mail", kind::contact},
      {"email", kind::contact}, {"web", kind::contact}, {"www", kind::contact},
      {"iban", kind::contact}, {"bic", kind::contact}, {"swift", kind::contact},
      {"bank", kind::contact}, {"mobile", kind::contact}, {"mobil", kind::contact},
      {"geschäftsführer", kind::contact}, {"amtsgericht", kind::contact},
      {"registered", kind::contact}, {"company no", kind::contact},
    };
    std::stable_sort(v.begin(), v.end(),
                     [](const label& a, const label& b) { return a.text.size() > b.text.size(); });
    return v;
  }();
  return all;
}

struct hit {
  kind k;
  size_t begin;
  size_t end;
};

/// Label hits in a lowered line, longest label first at each position, on word boundaries.
std::vector<hit> find_labels(std::string_view low) {
  std::vector<hit> out;
  for (size_t i = 0; i < low.size();) {
    bool matched = false;
    if (i == 0 || !is_word(low[i - 1])) {
      for (const auto& l : labels()) {
        if (low.compare(i, l.text.size(), l.text) != 0)
          continue;
        size_t end = i + l.text.size();
        char last = l.text.back();
        bool after_ok = end >= low.size() || !is_letter(low[end]) || !is_letter(last);
        if (!after_ok)
          continue;
        out.push_back(hit{l.k, i, end});
        i = end;
        matched = true;
        break;
      }
    }
    if (!matched)
      ++i;
  }
  return out;
}

// --- the extraction -------------------------------------------------------------------------

enum class source { none, label, guess, derived };

template <class T>
struct field {
  std::optional<T> value;
  source src = source::none;
  void set(T v, source s) {
    value = std::move(v);
    src = s;
  }
  bool found() const { return value.has_value(); }
};

struct item {
  std::string description;
  std::optional<double> quantity;
  std::optional<double> unit_price;
  std::optional<double> amount;
};

bool near(double a, double b, double tol = 0.015) { return std::fabs(a - b) <= tol; }

double round2(double v) { return std::round(v * 100.0) / 100.0; }

class run_state {
public:
  run_state(std::string_view text, const local_extractor_options& opts)
    : opts_(opts), raw_(split_lines(text)) {
    for (const auto& l : raw_)
      low_.push_back(lower(l));
    decide_conventions();
    for (size_t i = 0; i < raw_.size(); ++i) {
      dates_.push_back(find_dates(low_[i], day_first_));
      // Amounts are read with dates blanked out, so 15.03.2024 never becomes 15.03.
      std::string masked = low_[i];
      for (const auto& d : dates_.back())
        std::fill(masked.begin() + static_cast<long>(d.begin), masked.begin() + static_cast<long>(d.end), ' ');
      masked_.push_back(masked);
      hits_.push_back(find_labels(low_[i]));
    }
  }

  extraction finish();

private:
  void decide_conventions();
  void find_keyed_fields();
  void find_parties();
  void find_vat_id();
  void find_currency();
  void find_line_items();
  void reconcile();
  std::string to_json(bool successful, const std::string& confidence,
                      const std::vector<std::string>& missing) const;

  /// The value segment of hit `h` on line `i`: up to the next label that is not a qualifier.
  std::pair<size_t, size_t> segment(size_t i, size_t h) const {
    const auto& hs = hits_[i];
    size_t begin = hs[h].end;
    size_t end = raw_[i].size();
    for (size_t k = h + 1; k < hs.size(); ++k) {
      if (hs[k].k == kind::qualifier || hs[k].k == kind::net_qualifier)
        continue;
      end = hs[k].begin;
      break;
    }
    return {begin, end};
  }

  /// The cell below the label on a later line (column layouts), or the next non-empty line's
  /// text when the label stands alone.
  std::optional<std::pair<size_t, std::string>> below(size_t i, size_t column, size_t max_down = 2) const {
    for (size_t j = i + 1; j < raw_.size() && j <= i + max_down; ++j) {
      if (trim(raw_[j]).empty())
        continue;
      auto cs = cells_of(raw_[j]);
      const cell* best = nullptr;
      size_t best_dist = SIZE_MAX;
      for (const auto& c : cs) {
        size_t dist = c.begin > column ? c.begin - column : column - c.begin;
        if (dist < best_dist) {
          best = &c;
          best_dist = dist;
        }
      }
      if (best && best_dist <= 12)
        return std::make_pair(j, best->text);
      return std::nullopt;
    }
    return std::nullopt;
  }

  std::string prefix_before_label(size_t i) const;
  bool starts_with_label(size_t i) const;

  /// A row of column headings ("Invoice Date   Invoice #   Terms"): values are in the row below.
  bool header_row(size_t i) const {
    size_t labels = 0;
    for (const auto& h : hits_[i])
      labels += h.k != kind::qualifier && h.k != kind::net_qualifier ? 1 : 0;
    return labels >= 2 && dates_[i].empty() && find_amounts(masked_[i]).empty()
           && cells_of(raw_[i]).size() >= 2;
  }

  bool line_has_only_label(size_t i, size_t h) const {
    auto [b, e] = segment(i, h);
    auto rest = trim(std::string_view{raw_[i]}.substr(b, e - b));
    return rest.empty() || rest == ":" || rest == "#";
  }

  const local_extractor_options& opts_;
  std::vector<std::string> raw_;
  std::vector<std::string> low_;
  std::vector<std::string> masked_;
  std::vector<std::vector<date_hit>> dates_;
  std::vector<std::vector<hit>> hits_;
  bool day_first_ = false;
  bool german_ = false;

  field<std::string> invoice_number_, invoice_date_, due_date_, supplier_name_, supplier_address_,
    supplier_vat_id_, customer_name_, currency_;
  field<double> subtotal_, vat_, total_;
  std::vector<item> items_;
  std::optional<int> terms_days_;
  bool items_reconcile_ = false;
  bool totals_reconcile_ = false;
  bool totals_contradict_ = false;
};

void run_state::decide_conventions() {
  std::string all;
  for (const auto& l : low_)
    all += l + "\n";
  for (std::string_view w : {"rechnung", "datum", "mwst", "ust", "betrag", "summe", "netto", "f\xC3\xA4llig"})
    if (all.find(w) != std::string::npos)
      german_ = true;
  // Ambiguous numeric dates: British (GBP) and German documents put the day first, American
  // ones the month; an English document in euros is read as the options say.
  size_t usd = 0, gbp = 0;
  for (const auto& [pos, code] : currency_hits(all)) {
    usd += code == "USD" ? 1 : 0;
    gbp += code == "GBP" ? 1 : 0;
  }
  day_first_ = opts_.ambiguous_dates_day_first;
  if (usd > gbp)
    day_first_ = false;
  else if (gbp > usd || german_)
    day_first_ = true;
  // A slash date whose first part exceeds 12 settles the order for the whole document.
  static const std::regex slash{R"((^|[^0-9])(\d{1,2})/(\d{1,2})/(\d{2,4}))"};
  for (auto it = std::sregex_iterator(all.begin(), all.end(), slash); it != std::sregex_iterator(); ++it) {
    int a = std::stoi((*it)[2].str()), b = std::stoi((*it)[3].str());
    if (a > 12 && b <= 12) {
      day_first_ = true;
      break;
    }
    if (b > 12 && a <= 12) {
      day_first_ = false;
      break;
    }
  }
}

void run_state::find_keyed_fields() {
  struct amount_candidate {
    double value;
    int rank;
    size_t line;
  };
  std::vector<amount_candidate> totals;
  std::vector<amount_candidate> subtotals;
  std::map<long, double> vat_by_rate; // rate in basis points (-1 when none) -> amount

  for (size_t i = 0; i < raw_.size(); ++i) {
    const auto& hs = hits_[i];
    for (size_t h = 0; h < hs.size(); ++h) {
      kind k = hs[h].k;
      auto [b, e] = segment(i, h);
      std::string_view seg_raw = std::string_view{raw_[i]}.substr(b, e - b);
      switch (k) {
        case kind::invoice_number:
        case kind::invoice_title: {
          if (invoice_number_.src == source::label && k == kind::invoice_title)
            break;
          if (invoice_number_.src == source::label)
            break;
          // The value: the first token with a digit, right after the label.
          auto value_of = [this](std::string_view s) -> std::optional<std::string> {
            auto v = clean_value(s);
            size_t start = 0;
            while (start < v.size() && (v[start] == '#' || v[start] == ':' || v[start] == '.'
                                        || v[start] == ' ' || v[start] == '-'))
              ++start;
            v = v.substr(start);
            auto sp = v.find(' ');
            std::string tok = v.substr(0, sp);
            while (!tok.empty() && (tok.back() == ',' || tok.back() == ';' || tok.back() == ')'))
              tok.pop_back();
            if (tok.empty() || tok.size() > 40)
              return std::nullopt;
            if (std::none_of(tok.begin(), tok.end(), is_digit))
              return std::nullopt;
            if (!find_dates(lower(tok), day_first_).empty())
              return std::nullopt;
            return tok;
          };
          auto v = value_of(seg_raw);
          if (!v && k == kind::invoice_number && (line_has_only_label(i, h) || header_row(i)))
            if (auto c = below(i, hs[h].begin))
              v = value_of(c->second);
          if (!v)
            break;
          // "INVOICE TVC/2024/031" at the start of a line is as good as a label.
          bool title_first = k == kind::invoice_title && hs[h].begin == 0
                             && (h + 1 >= hs.size() || hs[h + 1].begin > hs[h].end + v->size());
          if (k == kind::invoice_number || title_first)
            invoice_number_.set(*v, source::label);
          else if (!invoice_number_.found())
            invoice_number_.set(*v, source::guess);
          break;
        }
        case kind::invoice_date:
        case kind::due_date:
        case kind::other_date: {
          auto& target = k == kind::invoice_date ? invoice_date_ : due_date_;
          std::optional<std::string> v;
          for (const auto& d : dates_[i])
            if (d.begin >= b && d.begin < e) {
              v = d.iso;
              break;
            }
          if (!v && (line_has_only_label(i, h) || header_row(i)))
            if (auto c = below(i, hs[h].begin))
              if (auto d = find_dates(lower(c->second), day_first_); !d.empty())
                v = d.front().iso;
          if (k == kind::due_date && !v) {
            // "Due: within 30 days" / "fällig innerhalb von 14 Tagen"
            static const std::regex days{R"((\d{1,3}) ?(days|tage|tagen))"};
            std::smatch m;
            std::string seg_low = low_[i].substr(b, e - b);
            if (std::regex_search(seg_low, m, days))
              terms_days_ = std::stoi(m[1].str());
          }
          if (v && k != kind::other_date && target.src != source::label)
            target.set(*v, source::label);
          break;
        }
        case kind::terms: {
          static const std::regex days{R"((\d{1,3}) ?(days|tage|tagen)|net ?(\d{1,3}))"};
          std::smatch m;
          std::string seg_low = low_[i].substr(b);
          if (header_row(i))
            if (auto c = below(i, hs[h].begin))
              seg_low = lower(c->second);
          if (std::regex_search(seg_low, m, days))
            terms_days_ = std::stoi(m[1].matched ? m[1].str() : m[3].str());
          break;
        }
        case kind::subtotal:
        case kind::vat:
        case kind::total:
        case kind::total_weak: {
          kind eff = k;
          // "Total excl. VAT" / "Summe netto": a net figure.
          if ((k == kind::total || k == kind::total_weak) && h + 1 < hs.size()
              && hs[h + 1].k == kind::net_qualifier && hs[h + 1].begin - hs[h].end <= 3)
            eff = kind::subtotal;
          if (k == kind::vat && h > 0 && hs[h - 1].k == kind::net_qualifier)
            break; // "excl. VAT" alone is not a VAT line
          std::string_view seg = std::string_view{masked_[i]}.substr(b, e - b);
          auto amounts = find_amounts(seg);
          std::optional<double> value;
          std::optional<double> rate;
          for (const auto& a : amounts) {
            if (a.percent)
              rate = a.value;
            else
              value = a.value; // the last amount on the segment
          }
          if (!value && line_has_only_label(i, h)) {
            // The amount below the label (column layouts) or alone on the next line.
            if (auto c = below(i, hs[h].begin, 1)) {
              auto as = find_amounts(c->second);
              if (as.size() == 1 && !as[0].percent && find_labels(lower(c->second)).empty())
                value = as[0].value;
            }
          }
          if (!value)
            break;
          if (eff == kind::subtotal) {
            subtotals.push_back({*value, 0, i});
          } else if (eff == kind::vat) {
            long key = rate ? std::lround(*rate * 100) : -1;
            vat_by_rate[key] = *value;
          } else {
            totals.push_back({*value, eff == kind::total ? 2 : 1, i});
          }
          break;
        }
        default:
          break;
      }
    }
  }

  if (!subtotals.empty())
    subtotal_.set(subtotals.front().value, source::label);
  if (!vat_by_rate.empty()) {
    double sum = 0;
    if (vat_by_rate.size() > 1)
      vat_by_rate.erase(-1); // a rate-less line next to per-rate lines is their sum
    for (const auto& [rate, v] : vat_by_rate)
      sum += v;
    vat_.set(round2(sum), source::label);
  }
  if (!totals.empty()) {
    int best_rank = 0;
    for (const auto& t : totals)
      best_rank = std::max(best_rank, t.rank);
    double best = 0;
    bool has_best = false;
    for (const auto& t : totals)
      if (t.rank == best_rank && (!has_best || t.value > best)) {
        best = t.value;
        has_best = true;
      }
    // A weak "Total" equal to the subtotal is the net sum of a table, not the gross total.
    if (best_rank == 1 && subtotal_.found() && vat_.found() && near(best, *subtotal_.value)
        && vat_.value.value() > 0) {
      double max_weak = best;
      has_best = false;
      for (const auto& t : totals)
        if (!near(t.value, max_weak) && (!has_best || t.value > best)) {
          best = t.value;
          has_best = true;
        }
    }
    if (has_best)
      total_.set(best, source::label);
  }
  if (!due_date_.found() && terms_days_ && invoice_date_.found()) {
    const auto& d = *invoice_date_.value;
    int y = std::stoi(d.substr(0, 4)), m = std::stoi(d.substr(5, 2)), dd = std::stoi(d.substr(8, 2));
    due_date_.set(civil_from_days(days_from_civil(y, m, dd) + *terms_days_), source::derived);
  }
  if (!invoice_date_.found()) {
    // The first date in the upper part of the document that no label claims for something else.
    for (size_t i = 0; i < raw_.size() && i < 40 && !invoice_date_.found(); ++i) {
      bool other = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& x) {
        return x.k == kind::due_date || x.k == kind::other_date;
      });
      if (!other && !dates_[i].empty())
        invoice_date_.set(dates_[i].front().iso, source::guess);
    }
  }
}

/// Words that mark a line as a title rather than a party's name.
bool is_title_line(std::string_view low) {
  auto t = trim(low);
  for (std::string_view w : {"invoice", "tax invoice", "rechnung", "commercial invoice", "bill",
                             "faktura", "proforma invoice", "credit note", "gutschrift", "receipt",
                             "quittung", "original", "copy", "kopie"})
    if (t == w)
      return true;
  return false;
}

bool is_salutation(std::string_view s) {
  auto l = lower(trim(s));
  for (std::string_view w : {"frau", "herr", "herrn", "firma", "mr", "mr.", "mrs", "mrs.", "ms", "ms.",
                             "attn", "attn:", "z. hd.", "z.hd."})
    if (l == w)
      return true;
  return false;
}

bool looks_like_contact(std::string_view low) {
  return low.find('@') != std::string_view::npos || low.find("www.") != std::string_view::npos
         || low.find("http") != std::string_view::npos;
}

/// Splits "Muster GmbH · Hauptstr. 1 · 10115 Berlin" (a DIN 5008 sender line) into parts.
std::vector<std::string> split_sender_line(std::string_view line) {
  std::vector<std::string> parts;
  for (std::string_view sep : {std::string_view{" \xC2\xB7 "}, std::string_view{" | "},
                               std::string_view{" \xE2\x80\xA2 "}, std::string_view{" - "}}) {
    if (line.find(sep) == std::string_view::npos)
      continue;
    size_t pos = 0;
    while (pos <= line.size()) {
      auto next = line.find(sep, pos);
      if (next == std::string_view::npos)
        next = line.size();
      auto p = clean_value(line.substr(pos, next - pos));
      if (!p.empty())
        parts.push_back(p);
      pos = next + sep.size();
    }
    if (parts.size() >= 3)
      return parts;
    parts.clear();
  }
  return parts;
}

bool has_postcode(std::string_view s) {
  static const std::regex pc{R"((^|[^0-9])\d{4,5} [A-Za-z\xC3]|[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|[A-Z]{2} \d{5}(-\d{4})?)"};
  std::string str{s};
  return std::regex_search(str, pc);
}

std::string run_state::prefix_before_label(size_t i) const {
  size_t end = raw_[i].size();
  for (const auto& h : hits_[i])
    if (h.k != kind::qualifier && h.k != kind::net_qualifier) {
      end = h.begin;
      break;
    }
  return clean_value(std::string_view{raw_[i]}.substr(0, end));
}

bool run_state::starts_with_label(size_t i) const {
  size_t first = raw_[i].find_first_not_of(' ');
  for (const auto& h : hits_[i])
    if (h.k != kind::qualifier && h.k != kind::net_qualifier)
      return h.begin == first;
  return false;
}

bool is_street_word(std::string_view tok) {
  auto l = lower(tok);
  for (std::string_view suffix : {"stra\xC3\x9F\x65" /* straße */, "strasse", "str.", "weg", "platz", "allee", "gasse",
                                  "ring", "damm", "ufer", "markt", "road", "street", "lane", "avenue",
                                  "ave.", "way", "drive", "square", "boulevard", "blvd."})
    if (l.size() >= suffix.size() && l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

bool is_house_number(std::string_view tok) {
  if (tok.empty() || tok.size() > 5 || !is_digit(tok[0]))
    return false;
  return std::all_of(tok.begin(), tok.end(), [](char c) { return is_digit(c) || is_alpha_ascii(c) || c == '-'; });
}

bool is_capitalised(std::string_view tok) {
  return !tok.empty() && ((tok[0] >= 'A' && tok[0] <= 'Z') || static_cast<unsigned char>(tok[0]) == 0xC3);
}

/// Two address blocks side by side joined into one row ("Hafenstraße 2 Feinkost Hoffmann OHG",
/// "20457 Hamburg, Deutschland Marktplatz 12"): splits the row where a street address ends or
/// begins. Nullopt when no street marks the split.
std::optional<std::pair<std::string, std::string>> split_two_blocks(std::string_view line) {
  std::vector<std::string> t;
  for (size_t p = 0; p < line.size();) {
    auto sp = line.find(' ', p);
    if (sp == std::string_view::npos)
      sp = line.size();
    if (sp > p)
      t.emplace_back(line.substr(p, sp - p));
    p = sp + 1;
  }
  auto join = [&](size_t from, size_t to) {
    std::string out;
    for (size_t k = from; k < to; ++k)
      out += (out.empty() ? "" : " ") + t[k];
    return out;
  };
  size_t n = t.size();
  if (n < 3)
    return std::nullopt;
  // The right block ends with a street: "... Marktplatz 12" or "... 18 Harbour Lane".
  if (is_house_number(t[n - 1]) && is_street_word(t[n - 2]) && n - 2 > 0)
    return std::make_pair(join(0, n - 2), join(n - 2, n));
  for (size_t k = n - 1; k >= 2; --k) {
    if (!is_street_word(t[k]) || k + 1 != n)
      break;
    size_t b = k;
    while (b > 0 && is_capitalised(t[b - 1]) && !is_house_number(t[b - 1]) && k - b < 3)
      --b;
    if (b > 0 && is_house_number(t[b - 1]) && b - 1 > 0)
      return std::make_pair(join(0, b - 1), join(b - 1, n));
    break;
  }
  // The left block starts with a street: "Hafenstraße 2 | ..." or "42 King's Road | ...".
  for (size_t k = 0; k + 1 < n; ++k) {
    if (!is_street_word(t[k]))
      continue;
    if (k + 2 < n && is_house_number(t[k + 1]) && is_capitalised(t[k + 2]))
      return std::make_pair(join(0, k + 2), join(k + 2, n));
    if (is_house_number(t[0]) && is_capitalised(t[k + 1]))
      return std::make_pair(join(0, k + 1), join(k + 1, n));
    break;
  }
  return std::nullopt;
}

void run_state::find_parties() {
  auto has_letters = [](const std::string& v) { return std::any_of(v.begin(), v.end(), is_letter); };
  // Address lines below a party's name: the text before any label, until a blank line, a
  // labelled line or contact details.
  auto address_below = [&](size_t i) {
    std::vector<std::string> lines;
    for (size_t j = i + 1; j < raw_.size() && lines.size() < 3; ++j) {
      if (trim(raw_[j]).empty())
        break;
      if (is_title_line(low_[j]))
        continue;
      if (starts_with_label(j) || looks_like_contact(low_[j]))
        break;
      auto p = prefix_before_label(j);
      if (p.empty())
        break;
      lines.push_back(p);
    }
    std::string addr;
    for (const auto& l : lines)
      addr += (addr.empty() ? "" : ", ") + l;
    return addr;
  };

  // Labelled blocks: "Bill to", "From:", "Rechnungsempfänger", ...
  for (size_t i = 0; i < raw_.size(); ++i) {
    const auto& hs = hits_[i];
    for (size_t h = 0; h < hs.size(); ++h) {
      if (hs[h].k != kind::customer && hs[h].k != kind::supplier)
        continue;
      bool at_start = hs[h].begin == raw_[i].find_first_not_of(' ');
      if (hs[h].k == kind::customer && !at_start && low_[i].compare(hs[h].begin, 3, "to:") == 0)
        continue;
      // "the property of the supplier" is prose: a single-word party label counts at the start
      // of a line or before a colon only.
      {
        auto lab = std::string_view{low_[i]}.substr(hs[h].begin, hs[h].end - hs[h].begin);
        size_t after = low_[i].find_first_not_of(' ', hs[h].end);
        bool colon = lab.back() == ':' || (after != std::string::npos && low_[i][after] == ':');
        bool specific = lab.find(' ') != std::string_view::npos || lab.size() >= 14;
        if (!at_start && !colon && !specific)
          continue;
        if (at_start && !colon && !specific && hs[h].end < low_[i].size()
            && is_letter(low_[i][low_[i].find_first_not_of(' ', hs[h].end) == std::string::npos ? 0 : low_[i].find_first_not_of(' ', hs[h].end)])
            && hs[h].k == kind::supplier)
          continue; // "Supplier agreement applies..."
      }
      auto& name = hs[h].k == kind::customer ? customer_name_ : supplier_name_;
      if (name.src == source::label)
        continue;
      auto [b, e] = segment(i, h);
      auto cs = cells_of(std::string_view{raw_[i]}.substr(b, e - b));
      std::string value = cs.empty() ? std::string{} : clean_value(cs.front().text);
      size_t block_line = i;
      if (value.empty() && hs[h].k == kind::customer && !at_start && cells_of(raw_[i]).size() == 1) {
        // The customer's block beside the issuer's, rows joined by single spaces: split each
        // row where a street address ends or begins.
        std::vector<std::string> left, right;
        for (size_t j = i + 1; j < raw_.size() && j <= i + 3; ++j) {
          if (starts_with_label(j))
            break;
          auto parts = split_two_blocks(trim(raw_[j]));
          if (!parts)
            break;
          left.push_back(clean_value(parts->first));
          right.push_back(clean_value(parts->second));
        }
        if (!right.empty() && find_labels(lower(right.front())).empty()
            && !is_house_number(right.front().substr(0, right.front().find(' ')))) {
          customer_name_.set(right.front(), source::guess);
          std::string addr;
          for (const auto& l : left)
            addr += (addr.empty() ? "" : ", ") + l;
          if (!supplier_address_.found())
            supplier_address_.set(addr, source::guess);
          continue;
        }
      }
      if (value.empty()) {
        // The name is on the next non-empty line: before any label when the party label starts
        // its line, or in the same column when the layout kept columns apart.
        for (size_t j = i + 1; j < raw_.size() && j <= i + 2; ++j) {
          if (trim(raw_[j]).empty())
            continue;
          if (at_start) {
            // The first cell: "Miller LLC        Miller LLC" is bill-to beside ship-to.
            auto first_cell = [this](size_t line) {
              size_t end = raw_[line].size();
              for (const auto& x : hits_[line])
                if (x.k != kind::qualifier && x.k != kind::net_qualifier) {
                  end = x.begin;
                  break;
                }
              auto cs = cells_of(std::string_view{raw_[line]}.substr(0, end));
              return cs.empty() ? std::string{} : clean_value(cs.front().text);
            };
            value = first_cell(j);
            block_line = j;
            // A salutation line ("Frau", "Herrn", "Mr") precedes the name.
            if (is_salutation(value) && j + 1 < raw_.size()) {
              value = first_cell(j + 1);
              block_line = j + 1;
            }
          } else if (cells_of(raw_[j]).size() >= 2) {
            if (auto c = below(i, hs[h].begin, 1)) {
              block_line = c->first;
              value = clean_value(c->second);
            }
          }
          break;
        }
      }
      if (value.empty() || !has_letters(value) || !find_labels(lower(value)).empty())
        continue;
      name.set(value, source::label);
      if (hs[h].k == kind::supplier && !supplier_address_.found())
        if (auto addr = address_below(block_line); !addr.empty())
          supplier_address_.set(addr, source::label);
    }
  }

  // The sender line of a German business letter names the supplier and its address.
  if (!supplier_name_.found()) {
    for (size_t i = 0; i < raw_.size() && i < 30; ++i) {
      auto parts = split_sender_line(trim(raw_[i]));
      if (parts.size() < 3 || !has_postcode(raw_[i]))
        continue;
      supplier_name_.set(parts[0], source::guess);
      std::string addr;
      for (size_t p = 1; p < parts.size(); ++p) {
        if (looks_like_contact(lower(parts[p])))
          break;
        addr += (addr.empty() ? "" : ", ") + parts[p];
      }
      if (!addr.empty())
        supplier_address_.set(addr, source::guess);
      // The recipient's block follows the sender line.
      if (!customer_name_.found())
        for (size_t j = i + 1; j < raw_.size() && j < i + 4; ++j)
          if (!trim(raw_[j]).empty()) {
            auto c = prefix_before_label(j);
            if (is_salutation(c))
              continue;
            if (has_letters(c))
              customer_name_.set(c, source::guess);
            break;
          }
      break;
    }
  }

  // The top block: the first cell that is neither a title nor starts with a label names the
  // issuer (text before a label in the same cell, e.g. "Acme Inc. INVOICE"); its address is in
  // the cells below on the same side (issuer blocks are often right-aligned beside the title).
  bool invoice_evidence = invoice_number_.src == source::label || invoice_date_.src == source::label
                          || total_.src == source::label;
  if (!supplier_name_.found() && invoice_evidence) {
    auto cell_prefix = [](const std::string& text) {
      auto low = lower(text);
      auto hs = find_labels(low);
      size_t end = text.size();
      for (const auto& h : hs)
        if (h.k != kind::qualifier && h.k != kind::net_qualifier) {
          end = h.begin;
          break;
        }
      return clean_value(std::string_view{text}.substr(0, end));
    };
    auto starts_labelled = [](const std::string& text) {
      auto hs = find_labels(lower(text));
      for (const auto& h : hs)
        if (h.k != kind::qualifier && h.k != kind::net_qualifier)
          return h.begin == 0;
      return false;
    };
    for (size_t i = 0; i < raw_.size() && i < 15 && !supplier_name_.found(); ++i) {
      auto cs = cells_of(raw_[i]);
      for (size_t c = 0; c < cs.size(); ++c) {
        auto text = cs[c].text;
        auto lc = lower(text);
        // "RECHNUNG Müller & Söhne GmbH" (OCR joined the title and the issuer's name): a title
        // followed by words without digits is the title and a name, not an invoice number.
        if (auto th = find_labels(lc); !th.empty() && th.front().k == kind::invoice_title
                                       && th.front().begin == 0) {
          auto rest = clean_value(std::string_view{text}.substr(th.front().end));
          if (!rest.empty() && std::none_of(rest.begin(), rest.end(), is_digit)
              && std::any_of(rest.begin(), rest.end(), is_letter)) {
            text = rest;
            lc = lower(text);
          }
        }
        if (is_title_line(lc) || starts_labelled(text) || looks_like_contact(lc))
          continue;
        auto name = cell_prefix(text);
        if (!has_letters(name))
          continue;
        if (customer_name_.found() && name == *customer_name_.value)
          return;
        bool right = c > 0 && c + 1 == cs.size();
        supplier_name_.set(name, source::guess);
        std::vector<std::string> lines;
        int blanks = 0;
        for (size_t j = i + 1; j < raw_.size() && lines.size() < 3; ++j) {
          auto cj = cells_of(raw_[j]);
          if (cj.empty()) {
            // OCR puts blank lines between the lines of one block; two end it.
            if (++blanks >= 2)
              break;
            continue;
          }
          blanks = 0;
          const auto& cell_j = right ? cj.back() : cj.front();
          auto lj = lower(cell_j.text);
          if (is_title_line(lj))
            continue;
          if (starts_labelled(cell_j.text) || looks_like_contact(lj))
            break;
          auto p = cell_prefix(cell_j.text);
          if (p.empty())
            break;
          lines.push_back(p);
        }
        if (!lines.empty() && !supplier_address_.found()) {
          std::string addr;
          for (const auto& l : lines)
            addr += (addr.empty() ? "" : ", ") + l;
          supplier_address_.set(addr, source::guess);
        }
        break;
      }
    }
  }
}

void run_state::find_vat_id() {
  // A labelled id is taken as printed (spaces inside digit groups removed), whatever its country:
  // "VAT ID US94-1234567", "USt-IdNr. DE 123 456 789".
  size_t first_customer = SIZE_MAX;
  size_t customer_column = 0;
  for (size_t i = 0; i < raw_.size() && first_customer == SIZE_MAX; ++i)
    for (const auto& h : hits_[i])
      if (h.k == kind::customer && first_customer == SIZE_MAX) {
        first_customer = i;
        customer_column = h.begin;
      }
  for (size_t i = 0; i < raw_.size() && !supplier_vat_id_.found(); ++i) {
    for (size_t h = 0; h < hits_[i].size(); ++h) {
      if (hits_[i][h].k != kind::vat_id)
        continue;
      // The customer's id sits in the customer's block (below its label, in its column).
      if (first_customer != SIZE_MAX && i > first_customer && i <= first_customer + 5
          && hits_[i][h].begin + 5 >= customer_column && hits_[i][h].begin <= customer_column + 5)
        continue;
      auto [b, e] = segment(i, h);
      std::string seg = clean_value(std::string_view{raw_[i]}.substr(b, e - b));
      std::vector<std::string> toks;
      for (size_t p = 0; p < seg.size();) {
        auto sp = seg.find(' ', p);
        if (sp == std::string::npos)
          sp = seg.size();
        if (sp > p)
          toks.push_back(seg.substr(p, sp - p));
        p = sp + 1;
      }
      std::string id;
      for (size_t t = 0; t < toks.size(); ++t) {
        const auto& tok = toks[t];
        bool digits = std::any_of(tok.begin(), tok.end(), is_digit);
        bool prefix = tok.size() <= 3 && std::all_of(tok.begin(), tok.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
        if (id.empty()) {
          if (digits || (prefix && t + 1 < toks.size() && is_digit(toks[t + 1][0])))
            id = tok;
          continue;
        }
        if (std::all_of(tok.begin(), tok.end(), is_digit) && tok.size() <= 4)
          id += tok;
        else
          break;
      }
      while (!id.empty() && (id.back() == ',' || id.back() == ';' || id.back() == '.'))
        id.pop_back();
      if (std::count_if(id.begin(), id.end(), is_digit) >= 6) {
        supplier_vat_id_.set(id, source::label);
        return;
      }
    }
  }
  static const std::regex id{
    R"((^|[^A-Z0-9])((?:DE|ATU|GB|FR|NL|BE|IT|ES|LU|DK|SE|FI|IE|PL|CZ|PT|AT)(?: ?[0-9A-Z]){8,12}|CHE[- ]?\d{3}\.?\d{3}\.?\d{3}(?: ?(?:MWST|TVA|IVA))?))"};
  struct candidate {
    std::string value;
    bool labelled;
    bool customer_block;
  };
  std::vector<candidate> found;
  size_t customer_line = SIZE_MAX;
  for (size_t i = 0; i < raw_.size(); ++i)
    for (const auto& h : hits_[i])
      if (h.k == kind::customer && customer_line == SIZE_MAX)
        customer_line = i;
  for (size_t i = 0; i < raw_.size(); ++i) {
    std::string up = raw_[i];
    for (auto& c : up)
      if (c >= 'a' && c <= 'z')
        c = static_cast<char>(c - 'a' + 'A');
    bool labelled = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& h) { return h.k == kind::vat_id; });
    // IBANs start with a country code too.
    if (low_[i].find("iban") != std::string::npos || low_[i].find("konto") != std::string::npos)
      continue;
    for (auto it = std::sregex_iterator(up.begin(), up.end(), id); it != std::sregex_iterator(); ++it) {
      std::string v;
      for (char c : (*it)[2].str())
        if (c != ' ' && c != '-' && c != '.')
          v += c;
      // Country prefix plus at least 8 characters of which most are digits.
      auto digits = std::count_if(v.begin(), v.end(), is_digit);
      if (digits < 8)
        continue;
      if (v.rfind("DE", 0) == 0 && v.size() != 11)
        continue;
      if (v.rfind("ATU", 0) == 0 && v.size() != 11)
        continue;
      bool in_customer = customer_line != SIZE_MAX && i >= customer_line && i <= customer_line + 6;
      found.push_back({v, labelled, in_customer});
    }
  }
  // The supplier's id: labelled and outside the customer's block first.
  for (int pass = 0; pass < 3 && !supplier_vat_id_.found(); ++pass)
    for (const auto& c : found) {
      bool ok = pass == 0 ? (c.labelled && !c.customer_block)
                          : pass == 1 ? !c.customer_block : true;
      if (ok) {
        supplier_vat_id_.set(c.value, pass == 0 ? source::label : source::guess);
        break;
      }
    }
}

void run_state::find_currency() {
  for (size_t i = 0; i < raw_.size() && !currency_.found(); ++i)
    for (size_t h = 0; h < hits_[i].size(); ++h)
      if (hits_[i][h].k == kind::currency) {
        auto [b, e] = segment(i, h);
        auto hitsc = currency_hits(std::string_view{low_[i]}.substr(b, e - b));
        if (!hitsc.empty()) {
          currency_.set(std::string{hitsc.front().second}, source::label);
          break;
        }
      }
  if (currency_.found())
    return;
  // The most frequent marker on lines with amounts; a tie goes to the first seen.
  std::map<std::string_view, int> counts;
  std::vector<std::string_view> order;
  for (size_t i = 0; i < raw_.size(); ++i) {
    if (find_amounts(masked_[i]).empty())
      continue;
    for (const auto& [pos, code] : currency_hits(low_[i])) {
      if (counts[code]++ == 0)
        order.push_back(code);
    }
  }
  std::string_view best;
  int best_count = 0;
  for (auto code : order)
    if (counts[code] > best_count) {
      best = code;
      best_count = counts[code];
    }
  if (!best.empty())
    currency_.set(std::string{best}, source::label);
}

bool is_unit_word(std::string_view w) {
  static const std::array<std::string_view, 24> units{
    "pcs", "pc", "pc.", "stk", "stk.", "st.", "stück", "h", "hrs", "hr", "hours", "std", "std.",
    "x", "ea", "each", "days", "day", "tage", "tag", "units", "unit", "m", "kg"};
  return std::find(units.begin(), units.end(), w) != units.end();
}

/// A leading position number ("1", "01", "1.") is not part of a line's description.
std::string strip_position(std::string desc) {
  size_t p = 0;
  while (p < desc.size() && is_digit(desc[p]))
    ++p;
  if (p > 0 && p <= 3 && p < desc.size()
      && (desc[p] == ' ' || (desc[p] == '.' && p + 1 < desc.size() && desc[p + 1] == ' ')))
    desc = clean_value(desc.substr(desc[p] == '.' ? p + 2 : p + 1));
  return desc;
}

void run_state::find_line_items() {
  // A header line names a description column and at least two of quantity, price and amount.
  size_t header = SIZE_MAX;
  for (size_t i = 0; i < raw_.size() && header == SIZE_MAX; ++i) {
    const auto& l = low_[i];
    auto has = [&](std::initializer_list<std::string_view> ws) {
      for (auto w : ws) {
        auto p = l.find(w);
        while (p != std::string::npos) {
          bool before = p == 0 || !is_letter(l[p - 1]);
          bool after = p + w.size() >= l.size() || !is_letter(l[p + w.size()]);
          if (before && after)
            return true;
          p = l.find(w, p + 1);
        }
      }
      return false;
    };
    bool desc = has({"description", "item", "items", "artikel", "bezeichnung", "beschreibung",
                     "leistung", "position", "service", "services", "product", "produkt",
                     "details", "artikelbezeichnung", "leistungsbeschreibung"});
    int others = (has({"qty", "quantity", "menge", "anzahl", "units", "hours", "stunden", "qty."}) ? 1 : 0)
                 + (has({"unit price", "price", "rate", "einzelpreis", "preis", "unit cost",
                         "e-preis", "ep", "stückpreis", "price/unit"}) ? 1 : 0)
                 + (has({"amount", "total", "line total", "betrag", "gesamt", "gesamtpreis",
                         "summe", "netto", "gesamtbetrag"}) ? 1 : 0);
    bool amount_col = has({"amount", "total", "line total", "betrag", "gesamt", "gesamtpreis", "summe",
                           "gesamtbetrag"});
    if (desc && (others >= 2 || (others == 1 && amount_col)) && find_amounts(masked_[i]).empty())
      header = i;
  }
  if (header == SIZE_MAX)
    return;
  int blank_run = 0;
  for (size_t i = header + 1; i < raw_.size(); ++i) {
    if (trim(raw_[i]).empty()) {
      if (++blank_run >= 3 && !items_.empty())
        break;
      continue;
    }
    blank_run = 0;
    bool ends = std::any_of(hits_[i].begin(), hits_[i].end(), [](const hit& h) {
      return h.k == kind::subtotal || h.k == kind::total || h.k == kind::total_weak
             || (h.k == kind::vat && h.begin < 3);
    });
    if (ends)
      break;
    // Walk back from the end over numbers, percentages, currencies and unit words.
    std::string_view line = masked_[i];
    std::vector<std::pair<size_t, size_t>> tokens;
    for (size_t p = 0; p < line.size();) {
      while (p < line.size() && line[p] == ' ')
        ++p;
      size_t s = p;
      while (p < line.size() && line[p] != ' ')
        ++p;
      if (p > s)
        tokens.emplace_back(s, p);
    }
    size_t first_trailing = tokens.size();
    for (size_t t = tokens.size(); t-- > 0;) {
      auto tok = line.substr(tokens[t].first, tokens[t].second - tokens[t].first);
      bool numeric = !tok.empty() && std::any_of(tok.begin(), tok.end(), is_digit)
                     && std::all_of(tok.begin(), tok.end(), [](char c) {
                          return is_digit(c) || c == '.' || c == ',' || c == '%' || c == '\''
                                 || c == '-' || static_cast<unsigned char>(c) >= 0x80 || c == '$';
                        });
      bool cur = !currency_hits(tok).empty() && std::none_of(tok.begin(), tok.end(), is_alpha_ascii);
      bool code = tok == "eur" || tok == "usd" || tok == "gbp" || tok == "chf";
      if (numeric || cur || code || tok == "%" || tok == "-" || is_unit_word(tok))
        first_trailing = t;
      else
        break;
    }
    if (first_trailing == tokens.size() || first_trailing == 0) {
      // No numbers (a wrapped description) or nothing but numbers.
      if (first_trailing == tokens.size() && !items_.empty() && tokens.size() <= 8
          && !looks_like_contact(low_[i]))
        items_.back().description += " " + clean_value(raw_[i]);
      continue;
    }
    size_t desc_end = tokens[first_trailing].first;
    std::string desc = strip_position(clean_value(std::string_view{raw_[i]}.substr(0, desc_end)));
    if (std::none_of(desc.begin(), desc.end(), is_letter))
      continue;
    auto numbers = [&](bool space_groups) {
      std::vector<amount_hit> nums;
      for (const auto& a : find_amounts(line.substr(desc_end), space_groups))
        if (!a.percent)
          nums.push_back(a);
      return nums;
    };
    auto reconciles = [](const std::vector<amount_hit>& nums) {
      for (size_t k = 2; k < nums.size(); ++k)
        if (near(round2(nums[k - 2].value * nums[k - 1].value), nums.back().value, 0.011))
          return true;
      return false;
    };
    auto nums = numbers(true);
    if (!reconciles(nums)) {
      // "1 238,40 EUR": a quantity and a price, not one grouped number.
      auto split = numbers(false);
      if (reconciles(split))
        nums = std::move(split);
    }
    if (nums.empty())
      continue;
    item it;
    it.description = desc;
    it.amount = nums.back().value;
    if (nums.size() >= 3) {
      bool paired = false;
      for (size_t k = nums.size() - 1; k >= 2 && !paired; --k) {
        double q = nums[k - 2].value, p = nums[k - 1].value;
        if (near(round2(q * p), *it.amount, 0.011 + std::fabs(*it.amount) * 1e-6)) {
          it.quantity = q;
          it.unit_price = p;
          paired = true;
          // Numbers before the quantity belong to the description ("Coffee beans 1 kg").
          if (k - 2 > 0) {
            auto d = clean_value(std::string_view{raw_[i]}.substr(0, desc_end + nums[k - 2].begin));
            if (std::any_of(d.begin(), d.end(), is_letter))
              it.description = strip_position(d);
          }
        }
      }
      if (!paired) {
        it.quantity = nums[nums.size() - 3].value;
        it.unit_price = nums[nums.size() - 2].value;
      }
    } else if (nums.size() == 2) {
      const auto& a = nums[0];
      if (!a.decimals && a.value > 0) {
        it.quantity = a.value;
        it.unit_price = round2(*it.amount / a.value);
      } else {
        it.unit_price = a.value;
        if (a.value != 0) {
          double q = *it.amount / a.value;
          if (near(q, std::round(q), 0.001))
            it.quantity = std::round(q);
        }
      }
    }
    items_.push_back(std::move(it));
  }
}

void run_state::reconcile() {
  double items_sum = 0;
  for (const auto& it : items_)
    items_sum += it.amount.value_or(0);
  items_sum = round2(items_sum);
  double item_tol = 0.02 + 0.01 * static_cast<double>(items_.size());
  // Fill a missing figure only from the other two (derived, never "by label").
  if (total_.found() && subtotal_.found() && !vat_.found() && !near(*total_.value, *subtotal_.value))
    vat_.set(round2(*total_.value - *subtotal_.value), source::derived);
  if (total_.found() && vat_.found() && !subtotal_.found())
    subtotal_.set(round2(*total_.value - *vat_.value), source::derived);
  if (!total_.found() && subtotal_.found() && vat_.found())
    total_.set(round2(*subtotal_.value + *vat_.value), source::derived);
  if (!total_.found()) {
    // A guess: the largest amount with decimals anywhere.
    double best = 0;
    bool has_best = false;
    for (const auto& m : masked_)
      for (const auto& a : find_amounts(m))
        if (a.decimals && !a.percent && (!has_best || a.value > best)) {
          best = a.value;
          has_best = true;
        }
    if (has_best)
      total_.set(best, source::guess);
  }
  if (subtotal_.found() && vat_.found() && total_.found()) {
    totals_reconcile_ = near(*subtotal_.value + *vat_.value, *total_.value, 0.02);
    totals_contradict_ = !totals_reconcile_;
  } else if (!subtotal_.found() && !vat_.found() && total_.found() && !items_.empty()) {
    totals_reconcile_ = near(items_sum, *total_.value, item_tol);
  }
  if (!items_.empty()) {
    std::optional<double> target = subtotal_.found() ? subtotal_.value
                                   : (!vat_.found() ? total_.value : std::nullopt);
    items_reconcile_ = target && near(items_sum, *target, item_tol);
    if (target && !items_reconcile_) {
      // Lines that do not add up were misread: keep none rather than wrong ones.
      items_.clear();
    }
  }
}

void write_nullable(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::optional<std::string>& v) {
  if (v)
    w.String(v->c_str(), static_cast<rapidjson::SizeType>(v->size()));
  else
    w.Null();
}

void write_nullable(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::optional<double>& v) {
  if (v)
    w.Double(*v);
  else
    w.Null();
}

std::string run_state::to_json(bool successful, const std::string& confidence,
                               const std::vector<std::string>& missing) const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.SetMaxDecimalPlaces(4);
  w.StartObject();
  auto str = [&](const char* key, const field<std::string>& f) {
    w.Key(key);
    write_nullable(w, f.value);
  };
  auto num = [&](const char* key, const field<double>& f) {
    w.Key(key);
    write_nullable(w, f.value);
  };
  str("invoice_number", invoice_number_);
  str("invoice_date", invoice_date_);
  str("due_date", due_date_);
  str("supplier_name", supplier_name_);
  str("supplier_address", supplier_address_);
  str("supplier_vat_id", supplier_vat_id_);
  str("customer_name", customer_name_);
  str("currency", currency_);
  w.Key("line_items");
  w.StartArray();
  for (const auto& it : items_) {
    w.StartObject();
    w.Key("description");
    write_nullable(w, std::optional<std::string>{it.description});
    w.Key("quantity");
    write_nullable(w, it.quantity);
    w.Key("unit_price");
    write_nullable(w, it.unit_price);
    w.Key("amount");
    write_nullable(w, it.amount);
    w.EndObject();
  }
  w.EndArray();
  num("subtotal", subtotal_);
  num("vat_amount", vat_);
  num("total", total_);
  w.Key("extraction_successful");
  w.Bool(successful);
  w.Key("confidence");
  w.String(confidence.c_str());
  w.Key("missing_fields");
  w.StartArray();
  for (const auto& m : missing)
    w.String(m.c_str());
  w.EndArray();
  w.EndObject();
  return std::string{buf.GetString(), buf.GetSize()};
}

extraction run_state::finish() {
  find_keyed_fields();
  find_vat_id();
  find_currency();
  find_parties();
  find_line_items();
  reconcile();

  std::vector<std::string> missing;
  auto check = [&](const char* name, bool found) {
    if (!found)
      missing.emplace_back(name);
  };
  check("invoice_number", invoice_number_.found());
  check("invoice_date", invoice_date_.found());
  check("due_date", due_date_.found());
  check("supplier_name", supplier_name_.found());
  check("supplier_address", supplier_address_.found());
  check("supplier_vat_id", supplier_vat_id_.found());
  check("customer_name", customer_name_.found());
  check("currency", currency_.found());
  check("line_items", !items_.empty());
  check("subtotal", subtotal_.found());
  check("vat_amount", vat_.found());
  check("total", total_.found());

  // Honest confidence: "high" needs the key fields by label and arithmetic that reconciles;
  // anything guessed, or a contradiction in the figures, is "low".
  bool key_by_label = invoice_number_.src == source::label && invoice_date_.src == source::label
                      && total_.src == source::label;
  bool reconciles = totals_reconcile_ || items_reconcile_;
  bool successful = total_.found() && (invoice_number_.found() || invoice_date_.found());
  bool doubtful = !successful || total_.src == source::guess || totals_contradict_
                  || (!invoice_number_.found() && !invoice_date_.found());
  std::string confidence = "low";
  if (!doubtful && key_by_label && reconciles && subtotal_.src != source::derived
      && vat_.src != source::derived && supplier_name_.found() && currency_.found())
    confidence = "high";
  else if (!doubtful && (total_.src == source::label || (total_.src == source::derived && reconciles))
           && invoice_number_.found() && invoice_date_.found())
    confidence = "medium";

  extraction out;
  out.structured_data = to_json(successful, confidence, missing);
  out.extraction_successful = successful;
  out.confidence = confidence;
  out.missing_fields = std::move(missing);
  out.model = "local-rules";
  return out;
}

} // namespace

local_extractor::local_extractor(local_extractor_options opts) : opts_(opts) {}

extraction local_extractor::run(std::string_view text) const {
  // Values are copied from the text into JSON: bytes that are not UTF-8 become U+FFFD first, so
  // that structured_data is always valid JSON text (a PDF's text layer may hold anything).
  auto clean = clean_text(text);
  run_state state{clean, opts_};
  return state.finish();
}

void local_extractor::extract(std::string text, callback<extraction> done) {
  result<extraction> r = [&]() -> result<extraction> {
    try {
      return run(text);
    } catch (const std::exception& e) {
      // std::regex may throw on pathological input (error_complexity / error_stack).
      return error::make_transient("extract.local_failed", e.what());
    }
  }();
  done(std::move(r));
}

namespace local_rules {

std::optional<double> parse_amount(std::string_view s) {
  std::string low = lower(trim(s));
  // Strip currency markers at either end.
  for (int pass = 0; pass < 2; ++pass) {
    auto hits = currency_hits(low);
    for (auto it = hits.rbegin(); it != hits.rend(); ++it) {
      size_t len = 0;
      for (const auto& m : currency_markers)
        if (m.code == it->second && low.compare(it->first, m.text.size(), m.text) == 0) {
          len = m.text.size();
          break;
        }
      if (it->first == 0 || it->first + len == low.size())
        low.erase(it->first, len);
    }
    low = std::string{trim(low)};
  }
  bool negative = false;
  if (!low.empty() && low.front() == '-') {
    negative = true;
    low = std::string{trim(std::string_view{low}.substr(1))};
  }
  auto hits = find_amounts(low);
  if (hits.size() != 1 || hits[0].begin != 0 || hits[0].end != low.size() || hits[0].percent)
    return std::nullopt;
  return negative ? -hits[0].value : hits[0].value;
}

std::optional<std::string> parse_date(std::string_view s, bool day_first) {
  auto hits = find_dates(lower(s), day_first);
  if (hits.empty())
    return std::nullopt;
  return hits.front().iso;
}

std::optional<std::string> find_currency(std::string_view s) {
  auto hits = currency_hits(lower(s));
  if (hits.empty())
    return std::nullopt;
  return std::string{hits.front().second};
}

} // namespace local_rules

} // namespace ingestd
