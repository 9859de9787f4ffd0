// Quality gate checks over the extraction's JSON. Arithmetic uses the numbers as the extraction
// reports them; a missing figure skips the check that needs it (missing_fields covers absence).
#include "adapters/llm/quality_gate.hpp"

#include <cmath>
#include <optional>
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

gate_verdict fail(std::string reason) { return gate_verdict{false, std::move(reason)}; }

} // namespace

gate_verdict evaluate(const extraction& x, const gate_options& opts) {
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
        return fail(fmt::format("line items do not reconcile: {} line amounts sum to {:.2f} != {} {:.2f}",
                                n, sum, what, *target));
    }
  }
  return gate_verdict{true, {}};
}

error gate_error(const gate_verdict& verdict) {
  return error::make_transient("extraction.gate_failed", verdict.reason);
}

} // namespace ingestd
