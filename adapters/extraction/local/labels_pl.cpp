// Polish labels.
// Data only: a label's kind says what the value after it is (see labels.hpp). Accents are
// optional in the text ("numero" matches "numéro"), so each label is listed once.
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_pl() {
  static const std::vector<label> all{
      // invoice number
      {"faktura nr", kind::invoice_number},
      {"faktura vat nr", kind::invoice_number},
      {"nr faktury", kind::invoice_number},
      {"numer faktury", kind::invoice_number},
      {"faktura numer", kind::invoice_number},
      {"faktura", kind::invoice_title},
      {"faktura vat", kind::invoice_title},
      {"paragon nr", kind::invoice_number},
      {"rachunek nr", kind::invoice_number},
      {"nr zam\xC3\xB3wienia", kind::order_number},
      {"numer zam\xC3\xB3wienia", kind::order_number},
      {"numer rezerwacji", kind::order_number},
      {"nr rezerwacji", kind::order_number},
      // dates
      {"data wystawienia", kind::invoice_date},
      {"data faktury", kind::invoice_date},
      {"termin p\xC5\x82"
       "atno\xC5\x9B"
       "ci",
       kind::due_date},
      {"termin zap\xC5\x82"
       "aty",
       kind::due_date},
      {"data sprzeda\xC5\xBCy", kind::other_date},
      {"data dostawy", kind::other_date},
      {"data wykonania us\xC5\x82ugi", kind::other_date},
      {"okres", kind::other_date},
      {"przyjazd", kind::other_date},
      {"wyjazd", kind::other_date},
      // other numbers
      {"regon", kind::other_number},
      {"krs", kind::other_number},
      {"strona", kind::other_number},
      // amounts
      {"warto\xC5\x9B\xC4\x87 netto", kind::subtotal},
      {"razem netto", kind::subtotal},
      {"suma netto", kind::subtotal},
      {"kwota netto", kind::subtotal},
      {"kwota vat", kind::vat},
      {"podatek vat", kind::vat},
      {"razem do zap\xC5\x82"
       "aty",
       kind::total},
      {"do zap\xC5\x82"
       "aty",
       kind::total},
      {"warto\xC5\x9B\xC4\x87 brutto", kind::total},
      {"razem brutto", kind::total},
      {"kwota brutto", kind::total},
      {"zap\xC5\x82"
       "acono",
       kind::total},
      {"suma brutto", kind::total},
      {"razem", kind::total_weak},
      {"suma", kind::total_weak},
      // ids, currency, parties
      {"nip", kind::vat_id},
      {"nip ue", kind::vat_id},
      {"waluta", kind::currency},
      {"nabywca", kind::customer},
      {"odbiorca", kind::customer},
      {"kupuj\xC4\x85"
       "cy",
       kind::customer},
      {"sprzedawca", kind::supplier},
      {"sprzedaj\xC4\x85"
       "cy",
       kind::supplier},
      {"spos\xC3\xB3"
       "b p\xC5\x82"
       "atno\xC5\x9B"
       "ci",
       kind::terms},
      {"tel.", kind::contact},
      {"telefon", kind::contact},
      // till receipts: the tender, the change and the cash rounding (receipts.cpp)
      {"got\xC3\xB3wka", kind::tender},
      {"karta", kind::tender},
      {"karta p\xC5\x82"
       "atnicza",
       kind::tender},
      {"reszta", kind::change},
      {"zaokr\xC4\x85glenie", kind::rounding},
      {"suma pln", kind::total},
  };
  static const label_table table{"pl", &all};
  return table;
}

} // namespace ingestd::local_rules
