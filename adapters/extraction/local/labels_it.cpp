// Italian labels (Italy, Switzerland).
// Data only: a label's kind says what the value after it is (see labels.hpp). Accents are
// optional in the text ("numero" matches "numéro"), so each label is listed once.
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_it() {
  static const std::vector<label> all{
      // invoice number
      {"numero fattura", kind::invoice_number},
      {"fattura n.", kind::invoice_number},
      {"fattura n\xC2\xB0", kind::invoice_number},
      {"fattura nr.", kind::invoice_number},
      {"fattura numero", kind::invoice_number},
      {"n. fattura", kind::invoice_number},
      {"nr. fattura", kind::invoice_number},
      {"numero documento", kind::invoice_number},
      {"documento n.", kind::invoice_number},
      {"fattura", kind::invoice_title},
      {"fattura elettronica", kind::invoice_title},
      {"ricevuta n.", kind::invoice_number},
      {"numero ordine", kind::order_number},
      {"ordine n.", kind::order_number},
      {"numero prenotazione", kind::order_number},
      {"prenotazione n.", kind::order_number},
      // dates
      {"data fattura", kind::invoice_date},
      {"data emissione", kind::invoice_date},
      {"data documento", kind::invoice_date},
      {"data", kind::invoice_date},
      {"del", kind::invoice_date},
      {"scadenza", kind::due_date},
      {"data scadenza", kind::due_date},
      {"scadenza pagamento", kind::due_date},
      {"data consegna", kind::other_date},
      {"data ordine", kind::other_date},
      {"data di consegna", kind::other_date},
      {"periodo", kind::other_date},
      {"arrivo", kind::other_date},
      {"partenza", kind::other_date},
      // other numbers
      {"codice cliente", kind::other_number},
      {"codice fiscale", kind::other_number},
      {"pagina", kind::other_number},
      // amounts
      {"imponibile", kind::subtotal},
      {"totale imponibile", kind::subtotal},
      {"totale netto", kind::subtotal},
      {"iva", kind::vat},
      {"totale iva", kind::vat},
      {"imposta", kind::vat},
      {"totale fattura", kind::total},
      {"totale documento", kind::total},
      {"netto a pagare", kind::total},
      {"importo pagato", kind::total},
      {"totale pagato", kind::total},
      {"totale da pagare", kind::total},
      {"totale complessivo", kind::total},
      {"totale", kind::total_weak},
      {"importo", kind::total_weak},
      // ids, currency, parties
      {"p.iva", kind::vat_id},
      {"p. iva", kind::vat_id},
      {"partita iva", kind::vat_id},
      {"p.iva/c.f.", kind::vat_id},
      {"valuta", kind::currency},
      {"intestatario", kind::customer},
      {"cliente", kind::customer},
      {"spett.le", kind::customer},
      {"destinatario", kind::customer},
      {"fornitore", kind::supplier},
      {"cedente", kind::supplier},
      {"modalit\xC3\xA0 di pagamento", kind::terms},
      {"iva inclusa", kind::qualifier},
      {"iva esclusa", kind::net_qualifier},
      {"tel.", kind::contact},
      {"telefono", kind::contact},
      {"destinazione merce", kind::contact},
      // till receipts: the tender, the change and the cash rounding (receipts.cpp)
      {"contanti", kind::tender},
      {"contante", kind::tender},
      {"pagamento contante", kind::tender},
      {"carta", kind::tender},
      {"bancomat", kind::tender},
      {"pagamento elettronico", kind::tender},
      {"resto", kind::change},
      {"arrotondamento", kind::rounding},
      {"da pagare", kind::total},
      {"totale euro", kind::total},
      {"totale dovuto", kind::total},
  };
  static const label_table table{"it", &all};
  return table;
}

} // namespace ingestd::local_rules
