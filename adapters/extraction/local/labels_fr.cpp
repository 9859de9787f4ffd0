// French labels (France, Belgium, Switzerland, Luxembourg, Canada).
// Data only: a label's kind says what the value after it is (see labels.hpp). Accents are
// optional in the text ("numero" matches "numéro"), so each label is listed once.
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_fr() {
  static const std::vector<label> all{
      // invoice number
      {"facture n\xC2\xB0", kind::invoice_number},
      {"facture no", kind::invoice_number},
      {"facture n.", kind::invoice_number},
      {"facture num\xC3\xA9ro", kind::invoice_number},
      {"n\xC2\xB0 de facture", kind::invoice_number},
      {"n\xC2\xB0 facture", kind::invoice_number},
      {"num\xC3\xA9ro de facture", kind::invoice_number},
      {"num\xC3\xA9ro facture", kind::invoice_number},
      {"r\xC3\xA9"
       "f. facture",
       kind::invoice_number},
      {"r\xC3\xA9"
       "f\xC3\xA9rence facture",
       kind::invoice_number},
      {"facture", kind::invoice_title},
      {"facture acquitt\xC3\xA9"
       "e",
       kind::invoice_title},
      {"n\xC2\xB0 de commande", kind::order_number},
      {"num\xC3\xA9ro de commande", kind::order_number},
      {"r\xC3\xA9"
       "f. commande",
       kind::order_number},
      {"num\xC3\xA9ro de r\xC3\xA9servation", kind::order_number},
      {"n\xC2\xB0 de r\xC3\xA9servation", kind::order_number},
      {"n\xC2\xB0 de re\xC3\xA7u", kind::invoice_number},
      // dates
      {"date de facture", kind::invoice_date},
      {"date de facturation", kind::invoice_date},
      {"date d\x27\xC3\xA9mission", kind::invoice_date},
      {"\xC3\xA9mise le", kind::invoice_date},
      {"date facture", kind::invoice_date},
      {"fait le", kind::invoice_date},
      {"date d\x27\xC3\xA9"
       "ch\xC3\xA9"
       "ance",
       kind::due_date},
      {"\xC3\xA9"
       "ch\xC3\xA9"
       "ance",
       kind::due_date},
      {"\xC3\xA0 payer avant le", kind::due_date},
      {"payable avant le", kind::due_date},
      {"date limite de paiement", kind::due_date},
      {"date de livraison", kind::other_date},
      {"date de commande", kind::other_date},
      {"date de prestation", kind::other_date},
      {"p\xC3\xA9riode", kind::other_date},
      {"date d\x27\x61rriv\xC3\xA9"
       "e",
       kind::other_date},
      {"date de d\xC3\xA9part", kind::other_date},
      // other numbers
      {"n\xC2\xB0 client", kind::other_number},
      {"num\xC3\xA9ro client", kind::other_number},
      {"code client", kind::other_number},
      {"siret", kind::other_number},
      {"siren", kind::other_number},
      {"rcs", kind::other_number},
      // amounts
      {"total ht", kind::subtotal},
      {"montant ht", kind::subtotal},
      {"sous-total ht", kind::subtotal},
      {"sous-total", kind::subtotal},
      {"sous total", kind::subtotal},
      {"total hors taxes", kind::subtotal},
      {"tva", kind::vat},
      {"montant tva", kind::vat},
      {"montant de la tva", kind::vat},
      {"total tva", kind::vat},
      {"total ttc", kind::total},
      {"montant ttc", kind::total},
      {"montant total ttc", kind::total},
      {"net \xC3\xA0 payer", kind::total},
      {"montant total", kind::total},
      {"montant pay\xC3\xA9", kind::total},
      {"montant r\xC3\xA9gl\xC3\xA9", kind::total},
      {"total \xC3\xA0 payer", kind::total},
      {"reste \xC3\xA0 payer", kind::total},
      {"montant d\xC3\xBB", kind::total},
      {"montant", kind::total_weak},
      // ids, currency, parties
      {"n\xC2\xB0 tva", kind::vat_id},
      {"tva intracom.", kind::vat_id},
      {"tva intracommunautaire", kind::vat_id},
      {"n\xC2\xB0 de tva", kind::vat_id},
      {"num\xC3\xA9ro de tva", kind::vat_id},
      {"n\xC2\xB0 tva intracom.", kind::vat_id},
      {"devise", kind::currency},
      {"monnaie", kind::currency},
      {"factur\xC3\xA9 \xC3\xA0", kind::customer},
      {"client", kind::customer},
      {"adresse de facturation", kind::customer},
      {"destinataire", kind::customer},
      {"fournisseur", kind::supplier},
      {"vendeur", kind::supplier},
      {"conditions de paiement", kind::terms},
      {"hors taxes", kind::net_qualifier},
      {"ht", kind::net_qualifier},
      {"ttc", kind::qualifier},
      {"dont tva", kind::qualifier},
      {"t\xC3\xA9l.", kind::contact},
      {"t\xC3\xA9l", kind::contact},
      {"t\xC3\xA9l\xC3\xA9phone", kind::contact},
      {"adresse de livraison", kind::contact},
      {"capital", kind::contact},
      // till receipts: the tender, the change and the cash rounding (receipts.cpp)
      {"esp\xC3\xA8"
       "ces",
       kind::tender},
      {"especes", kind::tender},
      {"carte bancaire", kind::tender},
      {"carte", kind::tender},
      {"cb", kind::tender},
      {"re\xC3\xA7u", kind::tender},
      {"paiement cb", kind::tender},
      {"rendu", kind::change},
      {"monnaie rendue", kind::change},
      {"rendu monnaie", kind::change},
      {"arrondi", kind::rounding},
      {"\xC3\xA0 payer", kind::total},
  };
  static const label_table table{"fr", &all};
  return table;
}

} // namespace ingestd::local_rules
