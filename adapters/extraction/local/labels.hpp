// Labels: the words that introduce a field ("Invoice No.", "Rechnungsnummer", "N° de facture"),
// one table per language (labels_<lang>.cpp), found per line on word boundaries.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace ingestd::local_rules {

enum class kind {
  invoice_number,
  invoice_title, // "Invoice" / "Rechnung" alone: a weak invoice-number label
  invoice_date,
  due_date,
  other_date,   // delivery, order, service dates: consumed so they are not read as invoice dates
  other_number, // customer, order, PO numbers
  subtotal,
  vat,
  total,
  total_weak, // "Total", "Summe": the gross total when nothing stronger is there
  vat_id,
  currency,
  customer,
  supplier,
  terms,
  qualifier,     // "incl. VAT", "zzgl.": transparent, does not end the previous label's value
  net_qualifier, // "excl. VAT", "net": turns a total into a subtotal
  contact,       // phone, e-mail, IBAN: ends an address block
  order_number,  // "Order ID", "Booking number": the invoice number when no invoice label is there
  // Till receipts (receipts.cpp): what was handed over, what came back, and the cash rounding.
  tender,   // "Cash", "Card", "Bar", "Espèces", "Pin": the amount paid with
  change,   // "Change", "Rückgeld", "Rendu", "Wisselgeld", "Cambio", "Resto", "Reszta"
  rounding, // "Rounding", "Rundung", "Arrondi", "Afronding": the cash rounding of the total
};

struct label {
  std::string_view text; ///< lower case; accents are optional in the text (see match_folded)
  kind k;
  std::string_view language{}; ///< set from the table when the tables are merged
};

/// One language's labels (a table per language in labels_<lang>.cpp).
struct label_table {
  std::string_view language;
  const std::vector<label>* labels;
};

const label_table& labels_en();
const label_table& labels_de();
const label_table& labels_fr();
const label_table& labels_nl();
const label_table& labels_es();
const label_table& labels_it();
const label_table& labels_pl();

/// Every table, English first.
const std::vector<const label_table*>& label_tables();

/// Every label of every language, longest first (so "invoice number" wins over "invoice").
const std::vector<label>& labels();

struct hit {
  kind k;
  size_t begin;
  size_t end;
  std::string_view language{};
};

/// Label hits in a lowered line, longest label first at each position, on word boundaries.
std::vector<hit> find_labels(std::string_view low);

} // namespace ingestd::local_rules
