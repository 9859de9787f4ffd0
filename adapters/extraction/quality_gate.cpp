// Quality gate checks over the extraction's JSON. Arithmetic uses the numbers as the extraction
// reports them; a missing figure skips the check that needs it (missing_fields covers absence).
#include "adapters/extraction/quality_gate.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <regex>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <rapidjson/document.h>

namespace ingestd {

namespace {

std::optional<double> number(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsNumber())
    return std::nullopt;
  return it->value.GetDouble();
}

std::optional<std::string> text(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString())
    return std::nullopt;
  return std::string{it->value.GetString(), it->value.GetStringLength()};
}

gate_verdict fail(std::string reason) {
  return gate_verdict{false, std::move(reason)};
}

gate_verdict implausible(const char* check, const std::string& detail) {
  return fail(fmt::format("plausibility check {} failed: {}", check, detail));
}

/// Days since 1970-01-01 for a YYYY-MM-DD string; nullopt when it is not one.
std::optional<long> day_number(const std::string& iso) {
  static const std::regex re{R"((\d{4})-(\d{2})-(\d{2}))"};
  std::smatch m;
  if (!std::regex_match(iso, m, re))
    return std::nullopt;
  auto ymd
      = std::chrono::year{std::stoi(m[1].str())} / std::stoi(m[2].str()) / std::stoi(m[3].str());
  if (!ymd.ok())
    return std::nullopt;
  return static_cast<long>(std::chrono::sys_days{ymd}.time_since_epoch().count());
}

long today_number(const gate_options& opts) {
  if (auto t = day_number(opts.today))
    return *t;
  auto now = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  return static_cast<long>(now.time_since_epoch().count());
}

std::string upper_alnum(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'a' && c <= 'z')
      out += static_cast<char>(c - 'a' + 'A');
    else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      out += c;
  }
  return out;
}

/// Signs: an invoice has no negative figure; a credit note has no positive one.
std::optional<gate_verdict> check_signs(std::optional<double> subtotal, std::optional<double> vat,
                                        std::optional<double> total) {
  const std::array<std::pair<const char*, std::optional<double>>, 3> figures{
      {{"subtotal", subtotal}, {"vat", vat}, {"total", total}}};
  bool any_negative = false;
  bool any_positive = false;
  for (const auto& [name, v] : figures) {
    any_negative = any_negative || (v && *v < -0.005);
    any_positive = any_positive || (v && *v > 0.005);
  }
  if (!any_negative || !any_positive)
    return std::nullopt; // an invoice, or a credit note with every figure negative
  for (const auto& [name, v] : figures)
    if (v && *v < -0.005)
      return implausible(gate_check::negative_amount,
                         fmt::format("{} {:.2f} is negative on an invoice whose other figures are "
                                     "positive (a credit note has every figure negative)",
                                     name, *v));
  return std::nullopt;
}

std::optional<gate_verdict> check_amounts(const rapidjson::Document& doc,
                                          const gate_options& opts) {
  auto subtotal = number(doc, "subtotal");
  auto vat = number(doc, "vat_amount");
  auto total = number(doc, "total");
  if (auto v = check_signs(subtotal, vat, total))
    return v;
  for (const auto& [name, v] : std::array<std::pair<const char*, std::optional<double>>, 3>{
           {{"subtotal", subtotal}, {"vat", vat}, {"total", total}}})
    if (v && std::fabs(*v) > opts.max_amount)
      return implausible(gate_check::amount_magnitude,
                         fmt::format("{} {:.2f} is beyond {:.0f}", name, *v, opts.max_amount));
  auto items = doc.FindMember("line_items");
  if (items != doc.MemberEnd() && items->value.IsArray())
    for (const auto& item : items->value.GetArray())
      if (auto a = item.IsObject() ? number(item, "amount") : std::nullopt;
          a && std::fabs(*a) > opts.max_amount)
        return implausible(gate_check::amount_magnitude,
                           fmt::format("line amount {:.2f} is beyond {:.0f}", *a, opts.max_amount));
  if (vat && total && std::fabs(*vat) > std::fabs(*total) + opts.tolerance)
    return implausible(gate_check::vat_exceeds_total,
                       fmt::format("vat {:.2f} is more than the total {:.2f}", *vat, *total));
  // The rate: VAT over the net amount (the subtotal, else the total less VAT).
  std::optional<double> net = subtotal;
  if (!net && vat && total)
    net = *total - *vat;
  if (vat && net && std::fabs(*net) > 0.005) {
    double rate = *vat / *net * 100.0;
    // Rounding to cents moves a small invoice's rate: allow one cent of slack on the VAT.
    double slack = 0.01 / std::fabs(*net) * 100.0;
    if (rate < -slack || rate > opts.max_vat_rate + slack)
      return implausible(
          gate_check::vat_rate,
          fmt::format("vat {:.2f} on a net amount of {:.2f} is {:.1f}%, outside 0-{:g}%", *vat,
                      *net, rate, opts.max_vat_rate));
  }
  return std::nullopt;
}

std::optional<gate_verdict> check_dates(const rapidjson::Document& doc, const gate_options& opts) {
  auto invoice_date = text(doc, "invoice_date");
  auto due_date = text(doc, "due_date");
  auto inv = invoice_date ? day_number(*invoice_date) : std::nullopt;
  auto due = due_date ? day_number(*due_date) : std::nullopt;
  auto earliest = day_number(opts.earliest_date).value_or(0);
  long today = today_number(opts);
  constexpr long three_years = 3L * 366;
  if (inv && (*inv < earliest || *inv > today + 366))
    return implausible(gate_check::date_range,
                       fmt::format("invoice date {} is not between {} and a year from today",
                                   *invoice_date, opts.earliest_date));
  if (inv && due && *due < *inv)
    return implausible(
        gate_check::due_before_invoice,
        fmt::format("due date {} is before the invoice date {}", *due_date, *invoice_date));
  if (due
      && (*due < earliest || (inv && *due > *inv + three_years)
          || (!inv && *due > today + three_years)))
    return implausible(
        gate_check::date_range,
        fmt::format("due date {} is not between {} and three years after the invoice", *due_date,
                    opts.earliest_date));
  return std::nullopt;
}

bool looks_like_date(const std::string& s) {
  static const std::regex re{
      R"((\d{4}[-./]\d{1,2}[-./]\d{1,2})|(\d{1,2}[-./]\d{1,2}[-./](\d{4}|\d{2})))"};
  return std::regex_match(s, re);
}

bool looks_like_phone(const std::string& s) {
  // "+49 30 1234567", "0049-30-1234567", "(030) 123 4567", "030/1234567": an international
  // prefix, or a trunk zero with the area code set apart by a space, slash or parentheses.
  static const std::regex re{
      R"((\+|00)\d{1,3}[ \-/(]*\d[\d \-/().]{5,}|\(0\d{1,5}\) ?\d[\d \-]{3,}|0\d{1,5}[ /]\d[\d \-]{3,})"};
  auto digits = std::count_if(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits >= 7 && std::regex_match(s, re);
}

bool looks_like_vat_id(const std::string& s) {
  static const std::regex re{
      R"(DE\d{9}|ATU\d{8}|GB(\d{9}|\d{12})|FR[0-9A-Z]{2}\d{9}|NL\d{9}B\d{2}|BE[01]\d{9}|IT\d{11}|)"
      R"(ES[0-9A-Z]\d{7}[0-9A-Z]|PL\d{10}|CHE\d{9}(MWST|TVA|IVA)?|\d{2}[A-Z]{5}\d{4}[A-Z][0-9A-Z]Z[0-9A-Z])"};
  return std::regex_match(upper_alnum(s), re);
}

bool looks_like_postcode(const std::string& number, const std::optional<std::string>& address) {
  // UK ("RG1 3AA") and Dutch ("1016 DV") postcodes; US ZIP+4; any number that stands as a word
  // in the supplier's address next to letters (the German "80331 München").
  static const std::regex pattern{
      R"([A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|\d{4} ?[A-Z]{2}|\d{5}-\d{4})"};
  if (std::regex_match(number, pattern))
    return true;
  if (!address || number.empty())
    return false;
  for (size_t p = address->find(number); p != std::string::npos; p = address->find(number, p + 1)) {
    size_t end = p + number.size();
    auto boundary = [&](size_t i) {
      char c = (*address)[i];
      return !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
    };
    if ((p == 0 || boundary(p - 1)) && (end == address->size() || boundary(end)))
      return true;
  }
  return false;
}

std::optional<gate_verdict> check_invoice_number(const rapidjson::Document& doc) {
  auto n = text(doc, "invoice_number");
  if (!n || n->empty())
    return std::nullopt;
  if (looks_like_date(*n))
    return implausible(gate_check::invoice_number_is_date,
                       fmt::format("invoice number '{}' is a date", *n));
  if (looks_like_phone(*n))
    return implausible(gate_check::invoice_number_is_phone,
                       fmt::format("invoice number '{}' is a phone number", *n));
  auto vat_id = text(doc, "supplier_vat_id");
  if (looks_like_vat_id(*n)
      || (vat_id && !vat_id->empty() && upper_alnum(*vat_id) == upper_alnum(*n)))
    return implausible(gate_check::invoice_number_is_vat_id,
                       fmt::format("invoice number '{}' is a VAT id", *n));
  if (looks_like_postcode(*n, text(doc, "supplier_address")))
    return implausible(gate_check::invoice_number_is_postcode,
                       fmt::format("invoice number '{}' is a postcode", *n));
  return std::nullopt;
}

} // namespace

namespace {

gate_verdict evaluate_checks(const extraction& x, const gate_options& opts);

/// A critical field the extraction names missing, or that its data lacks (absent, null, empty).
bool critical_field_missing(const extraction& x) {
  for (auto* field : critical_fields)
    if (std::find(x.missing_fields.begin(), x.missing_fields.end(), field)
        != x.missing_fields.end())
      return true;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(x.structured_data.data(), x.structured_data.size());
  if (doc.HasParseError() || !doc.IsObject())
    return false; // unreadable output, not a document without the fields: a retry may read it
  for (auto* field : critical_fields) {
    auto m = doc.FindMember(field);
    if (m == doc.MemberEnd() || m->value.IsNull()
        || (m->value.IsString() && m->value.GetStringLength() == 0))
      return true;
  }
  return false;
}

} // namespace

gate_verdict evaluate(const extraction& x, const gate_options& opts) {
  auto verdict = evaluate_checks(x, opts);
  if (!verdict.passed)
    verdict.critical_fields_missing = critical_field_missing(x);
  return verdict;
}

namespace {

gate_verdict evaluate_checks(const extraction& x, const gate_options& opts) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(x.structured_data.data(), x.structured_data.size());
  if (doc.HasParseError() || !doc.IsObject())
    return fail("structured data is not a JSON object");
  if (!x.extraction_successful)
    return fail("extraction not successful"
                + (x.missing_fields.empty()
                       ? std::string{}
                       : fmt::format(" (missing: {})", fmt::join(x.missing_fields, ", "))));
  if (x.confidence != "high" && x.confidence != "medium" && x.confidence != "low")
    return fail(fmt::format("unknown confidence '{}'", x.confidence));
  if (x.confidence == "low" && !opts.accept_low_confidence)
    return fail("confidence is low"
                + (x.missing_fields.empty()
                       ? std::string{}
                       : fmt::format(" (missing: {})", fmt::join(x.missing_fields, ", "))));
  auto subtotal = number(doc, "subtotal");
  auto vat = number(doc, "vat_amount");
  auto total = number(doc, "total");
  if (opts.check_totals && subtotal && vat && total
      && std::fabs(*subtotal + *vat - *total) > opts.tolerance + 1e-9)
    return fail(fmt::format("totals do not reconcile: subtotal {:.2f} + vat {:.2f} != total {:.2f}",
                            *subtotal, *vat, *total));
  if (opts.check_line_items) {
    auto items = doc.FindMember("line_items");
    if (items != doc.MemberEnd() && items->value.IsArray() && !items->value.Empty()) {
      double sum = 0;
      size_t n = 0;
      bool complete = true;
      for (const auto& item : items->value.GetArray()) {
        auto amount = item.IsObject() ? number(item, "amount") : std::nullopt;
        if (!amount) {
          complete = false;
          break;
        }
        sum += *amount;
        ++n;
      }
      // Compare with the subtotal, or with the total when the invoice shows neither subtotal nor
      // VAT (the lines then are the whole amount).
      std::optional<double> target;
      const char* what = "subtotal";
      if (subtotal) {
        target = subtotal;
      } else if (!vat && total) {
        target = total;
        what = "total";
      }
      double tol = opts.tolerance + opts.tolerance_per_line * static_cast<double>(n);
      if (complete && target && std::fabs(sum - *target) > tol + 1e-9)
        return fail(
            fmt::format("line items do not reconcile: {} line amounts sum to {:.2f} != {} {:.2f}",
                        n, sum, what, *target));
    }
  }
  if (opts.check_plausibility) {
    if (auto v = check_amounts(doc, opts))
      return *v;
    if (auto v = check_dates(doc, opts))
      return *v;
    if (auto v = check_invoice_number(doc))
      return *v;
  }
  return gate_verdict{true, {}};
}

} // namespace

error gate_error(const gate_verdict& verdict, bool retry_can_help) {
  if (verdict.critical_fields_missing)
    return error::make_permanent("extraction.gate_failed",
                                 "critical fields missing: " + verdict.reason);
  if (retry_can_help)
    return error::make_transient("extraction.gate_failed", verdict.reason);
  return error::make_permanent("extraction.gate_failed",
                               "extraction incomplete: " + verdict.reason);
}

} // namespace ingestd
