// Matching's pre-processing: fields from the extraction (or, when it is missing or malformed,
// from the local extraction rules over the text), the kind and the references from labels in
// the text, and the normalizers. Works on a lower-cased copy of the text whose bytes line up
// with the original (ASCII and Latin-1 lower-casing keeps every byte count).
#include "adapters/matching/features.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <openssl/evp.h>
#include <rapidjson/document.h>

#include "adapters/extraction/local_extractor.hpp"
#include "messages/hex.hpp"
#include "messages/text.hpp"

namespace ingestd {

namespace {

/// Only this much of a transcription is read for kind and references (a number label beyond
/// the first 200 kB of a document is not a header).
constexpr size_t max_scanned_bytes = 200'000;
/// The header: the lines a title is looked for in.
constexpr size_t header_lines = 30;
constexpr size_t max_references = 32;
constexpr size_t max_number_bytes = 64;
constexpr size_t max_counterparty_bytes = 300;

bool is_ascii_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// A byte of a word: ASCII letters and digits, and every byte of a non-ASCII character (letters
/// such as é, ü in the languages matching reads).
bool is_word_byte(unsigned char c) {
  return is_ascii_alnum(c) || c >= 0x80;
}

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// ASCII and Latin-1 (U+00C0..U+00DE except U+00D7) lower-casing, byte length unchanged.
std::string lower(std::string_view s) {
  std::string out{s};
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = static_cast<unsigned char>(out[i]);
    if (c >= 'A' && c <= 'Z') {
      out[i] = static_cast<char>(c + 32);
    } else if (c == 0xC3 && i + 1 < out.size()) {
      auto d = static_cast<unsigned char>(out[i + 1]);
      if (d >= 0x80 && d <= 0x9E && d != 0x97)
        out[i + 1] = static_cast<char>(d + 32);
      ++i;
    }
  }
  return out;
}

// --- JSON fields ---------------------------------------------------------------------------------

struct fields {
  std::string number;
  std::string counterparty;
  std::optional<double> total;
  std::string currency;
  std::string date;
  std::string document_type;
};

std::string string_field(const rapidjson::Value& obj, const char* key, size_t limit) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString())
    return {};
  std::string_view v{it->value.GetString(), it->value.GetStringLength()};
  return clean_text(utf8_prefix(v, limit));
}

bool valid_iso_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-')
    return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9')
      return false;
  int month = (s[5] - '0') * 10 + (s[6] - '0');
  int day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

std::string currency_code(std::string_view s) {
  if (s.size() == 3 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
      })) {
    std::string out{s};
    for (auto& c : out)
      if (c >= 'a' && c <= 'z')
        c = static_cast<char>(c - 32);
    return out;
  }
  if (s.empty() || s.size() > 40)
    return {};
  return local_rules::find_currency(s).value_or("");
}

/// The fields of an extraction; nullopt when `json` is not a JSON object.
std::optional<fields> read_fields(std::string_view json) {
  if (json.empty())
    return std::nullopt;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject())
    return std::nullopt;
  fields f;
  f.number = string_field(doc, "invoice_number", max_number_bytes);
  f.counterparty = string_field(doc, "supplier_name", max_counterparty_bytes);
  f.document_type = string_field(doc, "document_type", 40);
  if (auto t = doc.FindMember("total"); t != doc.MemberEnd()) {
    if (t->value.IsNumber() && std::isfinite(t->value.GetDouble()))
      f.total = t->value.GetDouble();
    else if (t->value.IsString() && t->value.GetStringLength() <= 64)
      f.total = local_rules::parse_amount({t->value.GetString(), t->value.GetStringLength()});
  }
  f.currency = currency_code(string_field(doc, "currency", 40));
  auto date = string_field(doc, "invoice_date", 64);
  if (valid_iso_date(date))
    f.date = date;
  else if (!date.empty())
    f.date = local_rules::parse_date(date).value_or("");
  return f;
}

// --- labels in the text --------------------------------------------------------------------------

/// Whether `phrase` occurs in `s` at `pos` as a word start (and, unless `prefix`, a word end).
bool word_at(std::string_view s, size_t pos, std::string_view phrase, bool prefix) {
  if (pos > 0 && is_word_byte(static_cast<unsigned char>(s[pos - 1])))
    return false;
  size_t end = pos + phrase.size();
  if (!prefix && end < s.size() && is_word_byte(static_cast<unsigned char>(s[end])))
    return false;
  // A phrase ending in punctuation ("p.o.") needs no boundary after it.
  return true;
}

/// Every position where `phrase` starts a word in `s`.
template <class F>
void for_each_word(std::string_view s, std::string_view phrase, bool prefix, F&& f) {
  for (size_t p = s.find(phrase); p != std::string_view::npos; p = s.find(phrase, p + 1))
    if (word_at(s, p, phrase, prefix || !is_ascii_alnum(static_cast<unsigned char>(phrase.back()))))
      if (!f(p))
        return;
}

bool contains_word(std::string_view s, std::string_view phrase, bool prefix = false) {
  bool found = false;
  for_each_word(s, phrase, prefix, [&](size_t) {
    found = true;
    return false;
  });
  return found;
}

/// Words between a label and its value that are part of the label ("no.", "number", "n°").
bool is_filler(std::string_view w) {
  static const std::array<std::string_view, 16> fillers{
      "no",     "nr",     "n",      "no.", "nr.",  "number",    "num", "nummer",
      "numéro", "numero", "número", "ref", "ref.", "reference", "id",  "#"};
  while (!w.empty() && (w.back() == ':' || w.back() == '.' || w.back() == '#'))
    w.remove_suffix(1);
  if (w.empty())
    return true;
  return std::find(fillers.begin(), fillers.end(), w) != fillers.end() || w == "n\xC2\xB0"
         || w == "n\xC2\xBA" || w == "\xC2\xB0" || w == "\xC2\xBA";
}

/// "15.03.2024", "03/15/2024", "2024-03-15": a date, not a document number.
bool looks_like_date(std::string_view t) {
  int groups = 0;
  size_t digits = 0;
  std::array<size_t, 3> sizes{};
  char sep = 0;
  for (char c : t) {
    if (c >= '0' && c <= '9') {
      ++digits;
      continue;
    }
    if (c != '.' && c != '/' && c != '-')
      return false;
    if (sep && c != sep)
      return false;
    sep = c;
    if (groups >= 2 || digits == 0)
      return false;
    sizes[static_cast<size_t>(groups++)] = digits;
    digits = 0;
  }
  if (groups != 2 || digits == 0)
    return false;
  sizes[2] = digits;
  bool year_first = sizes[0] == 4 && sizes[1] <= 2 && sizes[2] <= 2;
  bool year_last = sizes[0] <= 2 && sizes[1] <= 2 && (sizes[2] == 2 || sizes[2] == 4);
  return year_first || year_last;
}

/// The document number that follows a label ending at `pos` in the lowered text, on the same
/// line (a line break ends the search: the next line of a column layout is usually another
/// field): separators and filler words skipped, then one token with a digit that is not a date,
/// normalized. Empty when there is none.
std::string number_after(std::string_view s, size_t pos) {
  for (int words = 0; words < 4; ++words) {
    while (pos < s.size()) {
      auto c = static_cast<unsigned char>(s[pos]);
      if (c == '\n' || c == '\r')
        return {};
      if (is_space(c) || c == ':' || c == '#' || c == '.' || c == '-' || c == '(')
        ++pos;
      else if (c == 0xC2 && pos + 1 < s.size()
               && (static_cast<unsigned char>(s[pos + 1]) == 0xB0
                   || static_cast<unsigned char>(s[pos + 1]) == 0xBA))
        pos += 2; // ° º
      else
        break;
    }
    size_t end = pos;
    while (end < s.size() && !is_space(static_cast<unsigned char>(s[end])))
      ++end;
    std::string_view token = s.substr(pos, end - pos);
    if (token.empty())
      return {};
    if (is_filler(token)) {
      pos = end;
      continue;
    }
    while (!token.empty()
           && std::string_view{".,;:)]"}.find(token.back()) != std::string_view::npos)
      token.remove_suffix(1);
    if (token.empty() || token.size() > max_number_bytes)
      return {};
    if (std::none_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return {};
    if (looks_like_date(token))
      return {};
    auto n = normalize_number(token);
    return n.size() >= 3 ? n : std::string{};
  }
  return {};
}

/// Labels after which a number is the credit note's own.
constexpr std::array<std::string_view, 9> credit_note_titles{"credit note",
                                                             "credit memo",
                                                             "creditnote",
                                                             "credit-note",
                                                             "gutschrift",
                                                             "avoir",
                                                             "creditnota",
                                                             "nota de cr\xC3\xA9"
                                                             "dito",
                                                             "nota di credito"};

/// Header words that make a document a credit note (the ambiguous "avoir" only at a line's
/// start or before a number label).
constexpr std::array<std::string_view, 14> credit_note_words{"credit note",
                                                             "credit memo",
                                                             "creditnote",
                                                             "credit-note",
                                                             "gutschrift",
                                                             "creditnota",
                                                             "credit nota",
                                                             "nota de cr\xC3\xA9"
                                                             "dito",
                                                             "nota de credito",
                                                             "nota di credito",
                                                             "nota credito",
                                                             "rechnungskorrektur",
                                                             "stornorechnung",
                                                             "facture d'avoir"};

constexpr std::array<std::string_view, 8> invoice_words{
    "invoice", "rechnung", "facture", "factuur", "factura", "fattura", "faktura", "tax invoice"};

constexpr std::array<std::string_view, 8> purchase_order_titles{
    "purchase order",    "bestellung",  "bon de commande",   "orden de compra",
    "ordine d'acquisto", "inkooporder", "zam\xC3\xB3wienie", "order confirmation"};

constexpr std::array<std::string_view, 10> receipt_titles{
    "receipt",     "payment receipt", "sales receipt",    "quittung", "kassenbon",
    "kassenbeleg", "re\xC3\xA7u",     "ticket de caisse", "recibo",   "ricevuta"};

/// Labels before the number of an invoice a document refers to.
constexpr std::array<std::string_view, 48> invoice_reference_labels{"original invoice",
                                                                    "credit note for invoice",
                                                                    "for invoice",
                                                                    "refers to invoice",
                                                                    "referring to invoice",
                                                                    "relating to invoice",
                                                                    "related invoice",
                                                                    "against invoice",
                                                                    "re: invoice",
                                                                    "re invoice",
                                                                    "regarding invoice",
                                                                    "corrected invoice",
                                                                    "cancelled invoice",
                                                                    "invoice no",
                                                                    "invoice number",
                                                                    "invoice nr",
                                                                    "invoice #",
                                                                    "invoice ref",
                                                                    "invoice id",
                                                                    "zu rechnung",
                                                                    "zur rechnung",
                                                                    "bezug: rechnung",
                                                                    "bezug rechnung",
                                                                    "rechnung nr",
                                                                    "rechnung-nr",
                                                                    "rechnungsnummer",
                                                                    "rechnungs-nr",
                                                                    "rechnungsnr",
                                                                    "ursprungsrechnung",
                                                                    "originalrechnung",
                                                                    "korrektur zu rechnung",
                                                                    "storno zu rechnung",
                                                                    "facture n",
                                                                    "facture no",
                                                                    "facture d'origine",
                                                                    "facture initiale",
                                                                    "sur facture",
                                                                    "num\xC3\xA9ro de facture",
                                                                    "n\xC2\xB0 de facture",
                                                                    "factuurnummer",
                                                                    "factuur nr",
                                                                    "originele factuur",
                                                                    "op factuur",
                                                                    "factura n",
                                                                    "factura original",
                                                                    "fattura n",
                                                                    "riferimento fattura",
                                                                    "faktura nr"};

/// Labels before a purchase order's or an order's number.
constexpr std::array<std::string_view, 32> order_reference_labels{"po",
                                                                  "p.o.",
                                                                  "po no",
                                                                  "po number",
                                                                  "po #",
                                                                  "p.o. number",
                                                                  "purchase order",
                                                                  "purchase order no",
                                                                  "purchase order number",
                                                                  "order no",
                                                                  "order number",
                                                                  "order #",
                                                                  "order ref",
                                                                  "order id",
                                                                  "your order",
                                                                  "customer order",
                                                                  "bestellnummer",
                                                                  "bestell-nr",
                                                                  "bestellung nr",
                                                                  "ihre bestellung",
                                                                  "auftragsnummer",
                                                                  "auftrags-nr",
                                                                  "auftrag nr",
                                                                  "bon de commande",
                                                                  "commande n",
                                                                  "num\xC3\xA9ro de commande",
                                                                  "n\xC2\xB0 de commande",
                                                                  "bestelnummer",
                                                                  "inkoopordernummer",
                                                                  "n\xC3\xBAmero de pedido",
                                                                  "pedido n",
                                                                  "ordine n"};

struct text_view {
  std::string low;
  std::vector<std::string_view> header; // the first non-empty lines, trimmed
};

text_view view_of(std::string_view text) {
  text_view v;
  v.low = lower(utf8_prefix(text, max_scanned_bytes));
  std::string_view rest{v.low};
  while (!rest.empty() && v.header.size() < header_lines) {
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    while (!line.empty() && is_space(static_cast<unsigned char>(line.front())))
      line.remove_prefix(1);
    while (!line.empty() && is_space(static_cast<unsigned char>(line.back())))
      line.remove_suffix(1);
    if (!line.empty())
      v.header.push_back(line);
  }
  return v;
}

/// The index of the first header line that holds one of `words` (as a word, or a word start
/// when `prefix`), or header.size().
template <size_t N>
size_t first_line_with(const text_view& v, const std::array<std::string_view, N>& words,
                       bool prefix) {
  for (size_t i = 0; i < v.header.size(); ++i)
    for (auto w : words)
      if (contains_word(v.header[i], w, prefix))
        return i;
  return v.header.size();
}

/// A title: the line is the phrase, or the phrase and a number ("PURCHASE ORDER PO-2024-42",
/// "Receipt #1187"); "Purchase order no.: 4711" in an invoice's header is a reference and
/// "Bestellung vom 12.03." a sentence, neither a title.
template <size_t N>
size_t first_title(const text_view& v, const std::array<std::string_view, N>& titles) {
  for (size_t i = 0; i < v.header.size(); ++i)
    for (auto t : titles) {
      auto line = v.header[i];
      if (line.substr(0, t.size()) != t || !word_at(line, 0, t, false))
        continue;
      auto rest = line.substr(t.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '#'))
        rest.remove_prefix(1);
      auto next = rest.substr(0, rest.find(' '));
      if (rest.empty()
          || std::any_of(next.begin(), next.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return i;
    }
  return v.header.size();
}

bool is_credit_note_header(const text_view& v) {
  if (first_line_with(v, credit_note_words, true) < v.header.size())
    return true;
  for (auto line : v.header)
    if (line.substr(0, 5) == "avoir" && word_at(line, 0, "avoir", false))
      return true;
  return false;
}

/// Whether a label found at `p` really ends there: "PO-88172" is a number, not the label "po".
bool label_ends(std::string_view low, size_t end) {
  return end >= low.size() || std::string_view{"-/_"}.find(low[end]) == std::string_view::npos;
}

using positioned = std::vector<std::pair<size_t, std::string>>;

/// Normalized numbers after each of `labels` in the text, with their positions.
template <size_t N>
positioned numbers_after(std::string_view low, const std::array<std::string_view, N>& labels) {
  positioned hits;
  for (auto label : labels)
    for_each_word(low, label, false, [&](size_t p) {
      if (!label_ends(low, p + label.size()))
        return true;
      // "PO Box 12" is an address.
      if (label == "po" || label == "p.o.") {
        auto after = low.substr(p + label.size(), 5);
        if (after.find("box") != std::string_view::npos)
          return true;
      }
      if (auto n = number_after(low, p + label.size()); !n.empty())
        hits.emplace_back(p, std::move(n));
      return hits.size() < 4 * max_references;
    });
  std::stable_sort(hits.begin(), hits.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return hits;
}

/// The numbers of `hits` in order of appearance, without duplicates.
std::vector<std::string> in_order(positioned hits) {
  std::stable_sort(hits.begin(), hits.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [pos, n] : hits)
    if (std::find(out.begin(), out.end(), n) == out.end())
      out.push_back(std::move(n));
  return out;
}

/// The first number after a credit-note title ("Credit note no. CN-1", "Gutschrift Nr. G-7").
std::string credit_note_number(std::string_view low) {
  std::pair<size_t, std::string> best{std::string_view::npos, {}};
  for (auto t : credit_note_titles)
    for_each_word(low, t, true, [&](size_t p) {
      // A compound: "gutschriftsnummer", "creditnotanummer" end in their own label word.
      size_t end = p + t.size();
      while (end < low.size() && is_word_byte(static_cast<unsigned char>(low[end])))
        ++end;
      auto n = label_ends(low, end) ? number_after(low, end) : std::string{};
      if (n.empty())
        return true;
      if (p < best.first)
        best = {p, std::move(n)};
      return false;
    });
  return best.second;
}

void add_unique(std::vector<std::string>& to, const std::vector<std::string>& from,
                const std::string& own) {
  for (const auto& n : from)
    if (to.size() < max_references && n != own && std::find(to.begin(), to.end(), n) == to.end())
      to.push_back(n);
}

} // namespace

std::string normalize_number(std::string_view number) {
  std::string out;
  out.reserve(number.size());
  for (char c : number) {
    if (c >= 'a' && c <= 'z')
      out.push_back(static_cast<char>(c - 32));
    else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      out.push_back(c);
  }
  return out;
}

std::string normalize_counterparty(std::string_view name) {
  auto low = lower(clean_text(utf8_prefix(name, max_counterparty_bytes)));
  // Dots go (abbreviations: "s.a." -> "sa"), other punctuation separates words.
  std::string spaced;
  spaced.reserve(low.size());
  for (size_t i = 0; i < low.size(); ++i) {
    auto c = static_cast<unsigned char>(low[i]);
    if (c == '.')
      continue;
    if (c >= 0x80) {
      // U+00A0 (no-break space) and U+2019 (’) separate; other non-ASCII characters are letters.
      if (c == 0xC2 && i + 1 < low.size() && static_cast<unsigned char>(low[i + 1]) == 0xA0) {
        spaced.push_back(' ');
        ++i;
        continue;
      }
      spaced.push_back(static_cast<char>(c));
      continue;
    }
    spaced.push_back(is_ascii_alnum(c) ? static_cast<char>(c) : ' ');
  }
  std::vector<std::string> words;
  size_t i = 0;
  while (i < spaced.size()) {
    while (i < spaced.size() && spaced[i] == ' ')
      ++i;
    size_t j = i;
    while (j < spaced.size() && spaced[j] != ' ')
      ++j;
    if (j > i)
      words.emplace_back(spaced.substr(i, j - i));
    i = j;
  }
  static const std::set<std::string, std::less<>> legal{
      "gmbh", "mbh",          "ag",   "kg",
      "ohg",  "gbr",          "ug",   "ek",
      "se",   "kgaa",         "ltd",  "limited",
      "inc",  "incorporated", "llc",  "llp",
      "lp",   "plc",          "corp", "corporation",
      "co",   "company",      "sa",   "sas",
      "sarl", "sàrl",         "sl",   "slu",
      "spa",  "srl",          "bv",   "nv",
      "vof",  "ab",           "as",   "asa",
      "oy",   "oyj",          "aps",  "pty",
      "pvt",  "sro",          "kft",  "haftungsbeschränkt"};
  auto drop_tail = [&]() {
    if (words.size() >= 4 && words[words.size() - 3] == "sp" && words[words.size() - 2] == "z"
        && words.back() == "oo") {
      words.resize(words.size() - 3);
      return true;
    }
    // A document title printed beside the name ("Acme Inc. CREDIT NOTE") is not part of it.
    static const std::array<std::vector<std::string_view>, 12> titles{{{"credit", "note"},
                                                                       {"credit", "memo"},
                                                                       {"tax", "invoice"},
                                                                       {"invoice"},
                                                                       {"rechnung"},
                                                                       {"gutschrift"},
                                                                       {"facture"},
                                                                       {"avoir"},
                                                                       {"factuur"},
                                                                       {"receipt"},
                                                                       {"purchase", "order"},
                                                                       {"creditnota"}}};
    for (const auto& t : titles)
      if (words.size() > t.size()
          && std::equal(t.begin(), t.end(), words.end() - static_cast<long>(t.size()))) {
        words.resize(words.size() - t.size());
        return true;
      }
    if (words.size() >= 2 && legal.count(words.back()) > 0) {
      words.pop_back();
      return true;
    }
    return false;
  };
  while (drop_tail()) {
  }
  std::string out;
  for (const auto& w : words) {
    if (!out.empty())
      out.push_back(' ');
    out += w;
  }
  return out;
}

std::string searchable_text(std::string_view text) {
  // Clean first (at most a little longer than the limit we keep: U+FFFD is 3 bytes).
  auto clean = clean_text(utf8_prefix(text, max_searchable_text_bytes * 4));
  auto low = lower(clean);
  std::string out;
  out.reserve(std::min(low.size(), max_searchable_text_bytes));
  bool space = false;
  for (char c : low) {
    if (is_space(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) {
      out.push_back(' ');
      space = false;
    }
    out.push_back(c);
    if (out.size() > max_searchable_text_bytes + 4)
      break;
  }
  out.resize(utf8_prefix(out, max_searchable_text_bytes).size());
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1)
    return {};
  return hex_encode({reinterpret_cast<const char*>(md.data()), len});
}

double counterparty_similarity(std::string_view a, std::string_view b) {
  auto trigrams = [](std::string_view s) {
    std::set<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && !is_word_byte(static_cast<unsigned char>(s[i])))
        ++i;
      // The word's characters (UTF-8 sequences kept whole), padded "  word ".
      std::vector<std::string_view> word{" ", " "};
      while (i < s.size() && is_word_byte(static_cast<unsigned char>(s[i]))) {
        size_t n = 1;
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0xC0)
          n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        n = std::min(n, s.size() - i);
        word.push_back(s.substr(i, n));
        i += n;
      }
      if (word.size() == 2)
        continue;
      word.emplace_back(" ");
      for (size_t k = 0; k + 2 < word.size(); ++k)
        out.insert(std::string{word[k]} + std::string{word[k + 1]} + std::string{word[k + 2]});
    }
    return out;
  };
  auto ta = trigrams(a);
  auto tb = trigrams(b);
  if (ta.empty() || tb.empty())
    return 0;
  size_t common = 0;
  for (const auto& t : ta)
    common += tb.count(t);
  return static_cast<double>(common) / static_cast<double>(ta.size() + tb.size() - common);
}

match_features describe_for_matching(std::string_view structured_data_json,
                                     std::string_view transcription_text) {
  match_features f;
  auto fl = read_fields(structured_data_json);
  if (!fl) {
    // No usable extraction: the local rules read the fields from the text.
    local_extractor rules;
    fl = read_fields(rules.run(utf8_prefix(transcription_text, max_scanned_bytes)).structured_data);
    if (!fl)
      fl = fields{};
  }
  auto view = view_of(transcription_text);
  const std::string_view low{view.low};

  f.counterparty = fl->counterparty;
  f.normalized_counterparty = normalize_counterparty(fl->counterparty);
  f.total = fl->total;
  f.currency = fl->currency;
  f.date = fl->date;
  auto extracted_number = normalize_number(fl->number);

  // Kind: an explicit document_type, else the header's words, else the sign of the total.
  auto invoice_line = first_line_with(view, invoice_words, true);
  auto po_line = first_title(view, purchase_order_titles);
  auto receipt_line = first_title(view, receipt_titles);
  auto type = lower(fl->document_type);
  if (type == "credit_note" || type == "invoice" || type == "receipt" || type == "purchase_order")
    f.kind = type;
  else if (is_credit_note_header(view) || (f.total && *f.total < 0))
    f.kind = "credit_note";
  else if (po_line < view.header.size() && po_line <= invoice_line)
    f.kind = "purchase_order";
  else if (receipt_line < view.header.size() && receipt_line <= invoice_line)
    f.kind = "receipt";
  else if (!extracted_number.empty() || invoice_line < view.header.size())
    f.kind = "invoice";
  else
    f.kind = "other";

  auto invoice_hits = numbers_after(low, invoice_reference_labels);
  auto order_hits = numbers_after(low, order_reference_labels);
  auto invoice_refs = in_order(invoice_hits);
  auto order_refs = in_order(order_hits);
  if (f.kind == "credit_note") {
    // Its own number follows its title; an extracted "invoice number" that is one of the
    // invoices it refers to is not its own.
    f.number = credit_note_number(low);
    if (f.number.empty()
        && std::find(invoice_refs.begin(), invoice_refs.end(), extracted_number)
               == invoice_refs.end())
      f.number = extracted_number;
  } else if (f.kind == "purchase_order") {
    f.number = !order_refs.empty() ? order_refs.front() : extracted_number;
  } else {
    f.number = extracted_number;
  }
  auto all = std::move(invoice_hits);
  all.insert(all.end(), order_hits.begin(), order_hits.end());
  add_unique(f.references, in_order(std::move(all)), f.number);

  f.searchable_text = searchable_text(transcription_text);
  if (!f.searchable_text.empty())
    f.text_hash = sha256_hex(f.searchable_text);
  return f;
}

} // namespace ingestd
