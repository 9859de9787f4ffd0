// Reconciliation and the result: missing figures derived from the other two, line items kept
// only when they add up, honest confidence, and the JSON that matches the extraction schema.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/local/document.hpp"

namespace ingestd::local_rules {

void run_state::reconcile() {
  double items_sum = 0;
  for (const auto& it : items_)
    items_sum += it.amount.value_or(0);
  items_sum = round2(items_sum);
  double item_tol = 0.02 + 0.01 * static_cast<double>(items_.size());
  // Fill a missing figure only from the other two (derived, never "by label").
  if (total_.found() && subtotal_.found() && !vat_.found()
      && !near(*total_.value, *subtotal_.value))
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
  // Labelled figures that add up, with a tax no VAT rate gives, were paired wrongly.
  bool sound = subtotal_.found() && vat_.found() && total_.found()
               && near(*subtotal_.value + *vat_.value, *total_.value, 0.02)
               && std::fabs(*vat_.value) <= std::fabs(*subtotal_.value) * 0.28;
  if (!receipt_ && !sound)
    find_printed_sum();
  if (subtotal_.found() && vat_.found() && total_.found()) {
    totals_reconcile_ = near(*subtotal_.value + *vat_.value, *total_.value, 0.02);
    totals_contradict_ = !totals_reconcile_;
  } else if (!subtotal_.found() && !vat_.found() && total_.found() && !items_.empty()) {
    totals_reconcile_ = near(items_sum, *total_.value, item_tol);
  }
  if (!items_.empty()) {
    std::optional<double> target
        = subtotal_.found() ? subtotal_.value : (!vat_.found() ? total_.value : std::nullopt);
    items_reconcile_ = target && near(items_sum, *target, item_tol);
    if (target && !items_reconcile_) {
      // Lines that do not add up were misread: keep none rather than wrong ones.
      items_.clear();
    }
  }
}

void run_state::find_printed_sum() {
  // The figures as OCR often gives a column of amounts apart from its labels: the last three
  // amounts in a row of which the first two add up to the third, the second (the tax) at most
  // the highest VAT rate of the first (the net), are the net, the tax and the total.
  std::vector<double> xs;
  for (const auto& m : masked_)
    for (const auto& a : find_amounts(m))
      if (a.decimals && !a.percent)
        xs.push_back(a.value);
  for (size_t i = xs.size(); i-- > 2;) {
    double net = xs[i - 2], tax = xs[i - 1], gross = xs[i];
    if (net > 0 && tax > 0 && tax <= net * 0.28 && near(round2(net + tax), gross, 0.011)) {
      subtotal_.set(net, source::derived);
      vat_.set(tax, source::derived);
      total_.set(gross, source::derived);
      return;
    }
  }
}

namespace {

void write_nullable(rapidjson::Writer<rapidjson::StringBuffer>& w,
                    const std::optional<std::string>& v) {
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
} // namespace

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
  find_stacked_values();
  find_keyed_fields();
  find_vat_id();
  find_currency();
  find_parties();
  if (looks_like_receipt())
    read_receipt();
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
  if (receipt_) {
    // A receipt has no invoice number: "medium" when its total passed two of the receipt's own
    // checks (a label and the arithmetic, or two sums), with its date and merchant found.
    if (total_.found() && receipt_total_support_ >= 4 && invoice_date_.found()
        && supplier_name_.found() && currency_.found())
      confidence = "medium";
  } else if (!doubtful && key_by_label && reconciles && subtotal_.src != source::derived
             && vat_.src != source::derived && supplier_name_.found() && currency_.found())
    confidence = "high";
  else if (!doubtful
           && (total_.src == source::label || (total_.src == source::derived && reconciles))
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

} // namespace ingestd::local_rules
