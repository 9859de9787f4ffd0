// The local extractor's hand-written pattern scanners (dates, VAT identifiers) against the regular
// expressions they were written from, run here by std::regex: the same matches on every line of
// the hand-made texts and on many generated lines built from the pieces the patterns look for.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "adapters/extraction/local/dates.hpp"
#include "adapters/extraction/local/identifiers.hpp"
#include "adapters/extraction/local/text.hpp"
#include "tests/support/slow_build.hpp"

using namespace ingestd::local_rules;

namespace {

// -- the regular expressions ----------------------------------------------------------------

std::string month_alternation() {
  std::string out = "(";
  for (const auto& [name, m] : month_spellings())
    out += (out.size() > 1 ? "|" : "") + name;
  return out + ")";
}

/// find_dates as it was written with std::regex.
std::vector<date_hit> find_dates_by_regex(const std::string& low, bool day_first) {
  static const std::regex ymd{R"((^|[^0-9])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![0-9]))"};
  static const std::regex dmy_dot{R"((^|[^0-9.])(\d{1,2})\. ?(\d{1,2})\. ?(\d{4}|\d{2})(?![0-9]))"};
  static const std::regex slash{R"((^|[^0-9/])(\d{1,2})([/-])(\d{1,2})[/-](\d{4}|\d{2})(?![0-9]))"};
  static const std::regex d_month{
      std::string{R"((^|[^0-9])(\d{1,2})(?:st|nd|rd|th|er)?\.?[ -]?(?:of |de )?)"}
      + month_alternation() + R"((?![a-z])\.?,?[ -]?(?:de )?(\d{4}))"};
  static const std::regex month_d{std::string{R"((^|[^a-z]))"} + month_alternation()
                                  + R"((?![a-z])\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}))"};
  std::vector<date_hit> out;
  size_t run = 0, longest_run = 0;
  for (char c : low) {
    run = is_digit(c) ? run + 1 : 0;
    longest_run = std::max(longest_run, run);
  }
  if (longest_run == 0)
    return out;
  auto add_at = [&](size_t begin, size_t end, int y, int mo, int d, bool ambiguous, int a, int b) {
    if (!valid_date(y, mo, d))
      return;
    for (const auto& h : out)
      if (begin < h.end && h.begin < end)
        return;
    out.push_back(date_hit{iso(y, mo, d), begin, end, ambiguous, a, b, y});
  };
  auto add = [&](const std::smatch& m, int y, int mo, int d, bool ambiguous, int a, int b) {
    add_at(static_cast<size_t>(m.position(0) + m.length(1)),
           static_cast<size_t>(m.position(0) + m.length(0)), y, mo, d, ambiguous, a, b);
  };
  auto each = [](const std::string& s, const std::regex& re, auto fn) {
    for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
      fn(*it);
  };
  auto num = [](const std::ssub_match& s) { return std::stoi(s.str()); };
  auto part = [](const std::ssub_match& s, int limit) {
    int v = std::stoi(s.str());
    return v > limit && s.length() == 2 && s.str()[0] == '9' ? v - 90 : v;
  };
  each(low, ymd,
       [&](const std::smatch& m) { add(m, num(m[2]), num(m[3]), num(m[4]), false, 0, 0); });
  if (longest_run >= 4) {
    std::string folded;
    std::vector<size_t> origin;
    for (size_t i = 0; i < low.size(); ++i) {
      origin.push_back(i);
      if (i + 1 < low.size())
        if (char b = ascii_base(low[i], low[i + 1]); b != 0) {
          folded += b;
          ++i;
          continue;
        }
      folded += low[i];
    }
    origin.push_back(low.size());
    auto add_folded = [&](const std::smatch& m, int y, int mo, int d) {
      add_at(origin[static_cast<size_t>(m.position(0) + m.length(1))],
             origin[static_cast<size_t>(m.position(0) + m.length(0))], y, mo, d, false, 0, 0);
    };
    each(folded, d_month, [&](const std::smatch& m) {
      add_folded(m, num(m[4]), month_number(m[3].str()), num(m[2]));
    });
    each(folded, month_d, [&](const std::smatch& m) {
      add_folded(m, num(m[4]), month_number(m[2].str()), num(m[3]));
    });
  }
  each(low, dmy_dot, [&](const std::smatch& m) {
    add(m, full_year(num(m[4])), part(m[3], 12), part(m[2], 31), false, 0, 0);
  });
  each(low, slash, [&](const std::smatch& m) {
    int a = part(m[2], 31), b = part(m[4], 31), y = full_year(num(m[5]));
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

std::vector<std::string> vat_ids_by_regex(const std::string& up) {
  static const std::regex id{
      R"((^|[^A-Z0-9])((?:DE|ATU|GB|FR|NL|BE|IT|ES|LU|DK|SE|FI|IE|PL|CZ|PT|AT)(?: ?[0-9A-Z]){8,12}|CHE[- ]?\d{3}\.?\d{3}\.?\d{3}(?: ?(?:MWST|TVA|IVA))?))"};
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(up.begin(), up.end(), id); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[2].str());
  return out;
}

// -- the lines ------------------------------------------------------------------------------

std::string describe(const std::vector<date_hit>& hits) {
  std::string out;
  for (const auto& h : hits)
    out += h.iso + " [" + std::to_string(h.begin) + "," + std::to_string(h.end) + ")"
           + (h.ambiguous ? " ambiguous " : " ") + std::to_string(h.a) + "/" + std::to_string(h.b)
           + "/" + std::to_string(h.y) + "; ";
  return out;
}

/// Every line of the hand-made texts of tests/unit/extraction.
std::vector<std::string> text_lines() {
  std::vector<std::string> lines;
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  EXPECT_NE(src, nullptr) << "INGESTD_SOURCE_DIR is not set (run through ctest)";
  if (src == nullptr)
    return lines;
  for (const char* folder : {"texts", "texts_multilingual", "texts_receipts"}) {
    auto dir = std::filesystem::path{src} / "tests/unit/extraction" / folder;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() != ".txt")
        continue;
      std::ifstream in{e.path()};
      std::stringstream ss;
      ss << in.rdbuf();
      for (auto& line : split_lines(ss.str()))
        lines.push_back(std::move(line));
    }
  }
  return lines;
}

/// Seeded lines built from `shapes`: each letter of a shape a random piece of its kind ('d' a
/// run of 1 to 5 digits, mostly a day or a month, now and then ending in a 9 as OCR reads a
/// slashed zero; any other letter a piece of `pieces[letter]`), one or two shapes a line, each
/// after a piece of text ('t').
std::vector<std::string> generated_lines(const std::vector<std::string>& shapes,
                                         const std::map<char, std::vector<std::string>>& pieces,
                                         int count, uint32_t seed) {
  std::mt19937 rng{seed};
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>{0, n - 1}(rng); };
  std::vector<std::string> lines;
  for (int n = 0; n < count; ++n) {
    std::string line;
    for (size_t k = pick(2) + 1; k > 0; --k) {
      line += pieces.at('t')[pick(pieces.at('t').size())];
      for (char slot : shapes[pick(shapes.size())]) {
        if (slot == 'd') {
          // A day or a month mostly; now and then a longer run.
          static constexpr int lengths[] = {1, 1, 2, 2, 2, 2, 3, 5};
          int length = lengths[pick(std::size(lengths))];
          if (length == 1)
            line += static_cast<char>('1' + pick(9));
          else if (length == 2)
            line += std::to_string(10 + pick(22)).substr(pick(4) == 0 ? 1 : 0);
          else
            for (int d = length; d > 0; --d)
              line += static_cast<char>('0' + pick(10));
          if (pick(20) == 0)
            line.back() = '9';
        } else if (auto of = pieces.find(slot); of != pieces.end()) {
          line += of->second[pick(of->second.size())];
        } else {
          line += slot;
        }
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

/// Generated lines per test: std::regex, the reference here, is slow in the sanitizer build,
/// which checks the scanners' memory accesses rather than their answers.
constexpr int generated_count = 4'000 / ingestd::test::build_slowdown();

} // namespace

TEST(local_patterns, dates_as_the_regular_expressions_find_them) {
  std::vector<std::string> months;
  for (const auto& [name, m] : month_spellings()) {
    months.push_back(name);
    if (months.size() % 3 == 0) {
      months.push_back(name.substr(0, name.size() - 1)); // cut short
      months.push_back(name + "s");                      // inside a longer word
    }
  }
  std::map<char, std::vector<std::string>> pieces{
      {'s', {".", "-", "/", ".", "-", "/", " ", ". ", ",", "", "--"}},
      {'x', {"", "", " ", " ", "-", "st", "nd", "th", "er", "of ", "de ", ".", ",", ", ", ". "}},
      {'m', months},
      {'y', {"2024", "2024", "1999", "24", "99", "2200", "2201", "1899", "20245", "202"}},
      {'t',
       {"", " ", " ", "x ", "a.", "-", "/", "9", "1.", "\xC3\xA4", "\xC3\xA9 ", "\xC5\x82",
        "\xC2\xB0", "\xC3", "A", "\n", "date: ", "le "}}};
  auto lines
      = generated_lines({"d.d.y",  "d. d. y", "y-d-d",   "d/d/y", "d-d-y", "d m y",   "d. m y",
                         "m d, y", "m. d y",  "dsdsy",   "ysdsd", "dsds",  "dxmxy",   "dxxmxxy",
                         "mxdxy",  "mxdxxy",  "dsdxmxy", "mxd",   "d",     "dsdsysd", "dsdsd"},
                        pieces, generated_count, 20261207);
  for (const auto& line : text_lines())
    lines.push_back(lower(line));
  // What the scanner has to get right at the edges: the start of a line, a match's end as the
  // next one's context, longer digit runs, month names inside words.
  for (const char* line : {"2024-01-02",
                           "2024-01-022024-01-03",
                           "x2024.1.2-2024.12.31",
                           "12.03.2024 13.04.24",
                           "1.2.2024.3.4.2025",
                           "03/04/2024-05/06/24",
                           "15 march 2024",
                           "15th of march, 2024",
                           "15 de marzo de 2024",
                           "1er ao\xC3\xBBt 2024",
                           "march 15th, 2024",
                           "marchs 15, 2024",
                           "mar. 5, 20245",
                           "15-mar-2024",
                           "5. m\xC3\xA4rz 2024",
                           "97.01.2024 25.98.2024",
                           "12345.12.2024",
                           "1.2. 2024",
                           "sept. 3, 2024 and 3 sept 2024",
                           "3 septembre2024"})
    lines.emplace_back(line);
  int with_dates = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    bool day_first = i % 2 == 0;
    auto expected = find_dates_by_regex(lines[i], day_first);
    with_dates += expected.empty() ? 0 : 1;
    ASSERT_EQ(describe(find_dates(lines[i], day_first)), describe(expected))
        << "line \"" << lines[i] << "\", day first " << day_first;
  }
  // The generated lines must reach the patterns, not only miss them.
  std::printf("%d of %zu lines with dates\n", with_dates, lines.size());
  EXPECT_GT(with_dates * 10, static_cast<int>(lines.size()));
}

TEST(local_patterns, vat_identifiers_as_the_regular_expression_finds_them) {
  std::map<char, std::vector<std::string>> pieces{
      {'p', {"DE", "ATU", "AT", "GB", "FR", "NL", "BE", "IT",  "ES", "LU",
             "DK", "SE",  "FI", "IE", "PL", "CZ", "PT", "CHE", "CH", "C"}},
      {'s', {"", " ", "-", ".", "  ", "A", "Z", "U", " X"}},
      {'w', {"", " MWST", "TVA", " IVA", " TV", "MWS", " X"}},
      {'t', {"", " ", "x", "-", "A", "1", "\xC3\x84", ":", "VAT "}}};
  auto lines = generated_lines({"pdsdsdsd", "pdd", "pdsdsw", "psdsdsdw", "pdsdsdsdsdsd", "pd"},
                               pieces, generated_count, 7);
  for (const auto& line : text_lines()) {
    std::string up = line;
    for (auto& c : up)
      if (c >= 'a' && c <= 'z')
        c = static_cast<char>(c - 'a' + 'A');
    lines.push_back(up);
  }
  for (const char* line : {"DE123456789", "ATU12345678", "ATU1234567", "AT U12345678",
                           "CHE-123.456.789 MWST", "CHE123456789TVA", "CHE 123.456.789 IVA x",
                           "XDE123456789", "DE 12 34 56 78 9 DE 987654321", "GB1234567890123"})
    lines.emplace_back(line);
  int with_ids = 0;
  for (const auto& line : lines) {
    auto expected = vat_ids_by_regex(line);
    with_ids += expected.empty() ? 0 : 1;
    std::vector<std::string> found;
    for (auto v : vat_id_candidates(line))
      found.emplace_back(v);
    ASSERT_EQ(found, expected) << "line \"" << line << "\"";
  }
  std::printf("%d of %zu lines with identifiers\n", with_ids, lines.size());
  EXPECT_GT(with_ids * 10, static_cast<int>(lines.size()));
}
