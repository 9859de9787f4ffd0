// Dutch labels (the Netherlands, Belgium).
// Data only: a label's kind says what the value after it is (see labels.hpp). Accents are
// optional in the text ("numero" matches "numéro"), so each label is listed once.
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_nl() {
  static const std::vector<label> all{
      // invoice number
      {"factuurnummer", kind::invoice_number},
      {"factuur nr.", kind::invoice_number},
      {"factuur nr", kind::invoice_number},
      {"factuurnr.", kind::invoice_number},
      {"factuurnr", kind::invoice_number},
      {"factuur nummer", kind::invoice_number},
      {"factuur no", kind::invoice_number},
      {"factuur", kind::invoice_title},
      {"bonnummer", kind::invoice_number},
      {"kassabon", kind::invoice_title},
      {"bestelnummer", kind::order_number},
      {"ordernummer", kind::order_number},
      {"reserveringsnummer", kind::order_number},
      {"boekingsnummer", kind::order_number},
      // dates
      {"factuurdatum", kind::invoice_date},
      {"datum factuur", kind::invoice_date},
      {"vervaldatum", kind::due_date},
      {"te betalen v\xC3\xB3\xC3\xB3r", kind::due_date},
      {"uiterste betaaldatum", kind::due_date},
      {"betalen voor", kind::due_date},
      {"leverdatum", kind::other_date},
      {"besteldatum", kind::other_date},
      {"periode", kind::other_date},
      {"aankomst", kind::other_date},
      {"vertrek", kind::other_date},
      // other numbers
      {"klantnummer", kind::other_number},
      {"debiteurnummer", kind::other_number},
      {"kvk", kind::other_number},
      {"kvk-nummer", kind::other_number},
      {"pagina", kind::other_number},
      // amounts
      {"subtotaal", kind::subtotal},
      {"totaal excl. btw", kind::subtotal},
      {"totaal excl btw", kind::subtotal},
      {"bedrag excl. btw", kind::subtotal},
      {"netto bedrag", kind::subtotal},
      {"totaal exclusief btw", kind::subtotal},
      {"btw", kind::vat},
      {"btw-bedrag", kind::vat},
      {"totaal btw", kind::vat},
      {"totaal incl. btw", kind::total},
      {"totaal incl btw", kind::total},
      {"te betalen", kind::total},
      {"totaalbedrag", kind::total},
      {"totaal inclusief btw", kind::total},
      {"betaald", kind::total},
      {"totaal te betalen", kind::total},
      {"totaal", kind::total_weak},
      // ids, currency, parties
      {"btw-nr.", kind::vat_id},
      {"btw-nr", kind::vat_id},
      {"btw nr", kind::vat_id},
      {"btw-nummer", kind::vat_id},
      {"btw nummer", kind::vat_id},
      {"btw-id", kind::vat_id},
      {"btw-identificatienummer", kind::vat_id},
      {"valuta", kind::currency},
      {"factuuradres", kind::customer},
      {"klant", kind::customer},
      {"aan:", kind::customer},
      {"leverancier", kind::supplier},
      {"betalingsvoorwaarden", kind::terms},
      {"excl. btw", kind::net_qualifier},
      {"incl. btw", kind::qualifier},
      {"telefoon", kind::contact},
      {"afleveradres", kind::contact},
      // till receipts: the tender, the change and the cash rounding (receipts.cpp)
      {"contant", kind::tender},
      {"betaald contant", kind::tender},
      {"pin", kind::tender},
      {"pinnen", kind::tender},
      {"maestro", kind::tender},
      {"creditcard", kind::tender},
      {"wisselgeld", kind::change},
      {"terug", kind::change},
      {"afronding", kind::rounding},
  };
  static const label_table table{"nl", &all};
  return table;
}

} // namespace ingestd::local_rules
