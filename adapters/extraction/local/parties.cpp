// Parties: supplier and customer names, the supplier's address.
#include "adapters/extraction/local/parties.hpp"

#include <algorithm>
#include <regex>

#include "adapters/extraction/local/document.hpp"

namespace ingestd::local_rules {

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
  for (std::string_view w : {"frau", "herr", "herrn", "firma", "mr", "mr.", "mrs", "mrs.", "ms",
                             "ms.", "attn", "attn:", "z. hd.", "z.hd."})
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
  static const std::regex pc{
      R"((^|[^0-9])\d{4,5} [A-Za-z\xC3]|[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|[A-Z]{2} \d{5}(-\d{4})?)"};
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
  for (std::string_view suffix : {"stra\xC3\x9F\x65" /* straße */,
                                  "strasse",
                                  "str.",
                                  "weg",
                                  "platz",
                                  "allee",
                                  "gasse",
                                  "ring",
                                  "damm",
                                  "ufer",
                                  "markt",
                                  "road",
                                  "street",
                                  "lane",
                                  "avenue",
                                  "ave.",
                                  "way",
                                  "drive",
                                  "square",
                                  "boulevard",
                                  "blvd."})
    if (l.size() >= suffix.size()
        && l.compare(l.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

bool is_house_number(std::string_view tok) {
  if (tok.empty() || tok.size() > 5 || !is_digit(tok[0]))
    return false;
  return std::all_of(tok.begin(), tok.end(),
                     [](char c) { return is_digit(c) || is_alpha_ascii(c) || c == '-'; });
}

bool is_capitalised(std::string_view tok) {
  return !tok.empty()
         && ((tok[0] >= 'A' && tok[0] <= 'Z') || static_cast<unsigned char>(tok[0]) == 0xC3);
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
  auto has_letters
      = [](const std::string& v) { return std::any_of(v.begin(), v.end(), is_letter); };
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
            && is_letter(low_[i][low_[i].find_first_not_of(' ', hs[h].end) == std::string::npos
                                     ? 0
                                     : low_[i].find_first_not_of(' ', hs[h].end)])
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
      if (value.empty() && hs[h].k == kind::customer && !at_start
          && cells_of(raw_[i]).size() == 1) {
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
        if (auto th = find_labels(lc);
            !th.empty() && th.front().k == kind::invoice_title && th.front().begin == 0) {
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

} // namespace ingestd::local_rules
