// German labels (Germany, Austria, Switzerland).
// Data only: a label's kind says what the value after it is (see labels.hpp).
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_de() {
  static const std::vector<label> all{
    {"rechnungsnummer", kind::invoice_number}, {"rechnungs-nr.", kind::invoice_number},
    {"rechnungs-nr", kind::invoice_number}, {"rechnungsnr.", kind::invoice_number},
    {"rechnungsnr", kind::invoice_number}, {"rechnung nr.", kind::invoice_number},
    {"rechnung nr", kind::invoice_number}, {"rechnung-nr.", kind::invoice_number},
    {"rechnung-nr", kind::invoice_number}, {"rechnung no", kind::invoice_number},
    {"re-nr.", kind::invoice_number}, {"re.-nr.", kind::invoice_number},
    {"belegnummer", kind::invoice_number}, {"beleg-nr.", kind::invoice_number},
    {"rechnung", kind::invoice_title}, {"rechnungsdatum", kind::invoice_date},
    {"belegdatum", kind::invoice_date}, {"ausstellungsdatum", kind::invoice_date},
    {"datum", kind::invoice_date}, {"f\xC3\xA4lligkeitsdatum", kind::due_date},
    {"f\xC3\xA4llig am", kind::due_date}, {"f\xC3\xA4llig bis", kind::due_date},
    {"f\xC3\xA4llig", kind::due_date}, {"faellig", kind::due_date}, {"fallig am", kind::due_date},
    {"fallig", kind::due_date}, {"falligkeitsdatum", kind::due_date},
    {"zahlbar bis", kind::due_date}, {"zahlungsziel", kind::due_date},
    {"zahlungsfrist", kind::due_date}, {"lieferdatum", kind::other_date},
    {"leistungsdatum", kind::other_date}, {"leistungszeitraum", kind::other_date},
    {"bestelldatum", kind::other_date}, {"auftragsdatum", kind::other_date},
    {"zeitraum", kind::other_date}, {"kundennummer", kind::other_number},
    {"kunden-nr.", kind::other_number}, {"kunden-nr", kind::other_number},
    {"kundennr", kind::other_number}, {"auftragsnummer", kind::other_number},
    {"auftrags-nr.", kind::other_number}, {"bestellnummer", kind::order_number},
    {"bestell-nr.", kind::other_number}, {"lieferschein", kind::other_number},
    {"ihre referenz", kind::other_number}, {"steuernummer", kind::other_number},
    {"st.-nr.", kind::other_number}, {"seite", kind::other_number},
    {"zwischensumme", kind::subtotal}, {"nettobetrag", kind::subtotal},
    {"nettosumme", kind::subtotal}, {"summe netto", kind::subtotal},
    {"gesamt netto", kind::subtotal}, {"netto gesamt", kind::subtotal},
    {"gesamtbetrag netto", kind::subtotal}, {"rechnungsbetrag netto", kind::subtotal},
    {"warenwert", kind::subtotal}, {"netto", kind::subtotal}, {"mwst.", kind::vat},
    {"mwst", kind::vat}, {"ust.", kind::vat}, {"ust", kind::vat}, {"umsatzsteuer", kind::vat},
    {"mehrwertsteuer", kind::vat}, {"mwst.-betrag", kind::vat}, {"steuer", kind::vat},
    {"gesamtbetrag", kind::total}, {"rechnungsbetrag", kind::total}, {"gesamtsumme", kind::total},
    {"endbetrag", kind::total}, {"zahlbetrag", kind::total}, {"zu zahlen", kind::total},
    {"zu zahlender betrag", kind::total}, {"bruttobetrag", kind::total},
    {"gesamt brutto", kind::total}, {"summe brutto", kind::total}, {"brutto gesamt", kind::total},
    {"gesamtbetrag brutto", kind::total}, {"rechnungsbetrag brutto", kind::total},
    {"brutto", kind::total}, {"summe", kind::total_weak}, {"gesamt", kind::total_weak},
    {"ust-idnr.", kind::vat_id}, {"ust-idnr", kind::vat_id}, {"ust-id-nr.", kind::vat_id},
    {"ust-id", kind::vat_id}, {"ust.-id", kind::vat_id}, {"ust id", kind::vat_id},
    {"ust-identifikationsnummer", kind::vat_id}, {"umsatzsteuer-id", kind::vat_id},
    {"umsatzsteuer-identifikationsnummer", kind::vat_id}, {"uid", kind::vat_id},
    {"uid-nr.", kind::vat_id}, {"mwst-nr.", kind::vat_id}, {"w\xC3\xA4hrung", kind::currency},
    {"wahrung", kind::currency}, {"rechnungsempf\xC3\xA4nger", kind::customer},
    {"rechnungsadresse", kind::customer}, {"kunde", kind::customer},
    {"rechnungsempfanger", kind::customer}, {"rechnungsempfaenger", kind::customer},
    {"empf\xC3\xA4nger", kind::customer}, {"leistungsempf\xC3\xA4nger", kind::customer},
    {"an:", kind::customer}, {"lieferant", kind::supplier}, {"rechnungssteller", kind::supplier},
    {"verk\xC3\xA4ufer", kind::supplier}, {"von:", kind::supplier},
    {"zahlungsbedingungen", kind::terms}, {"zahlbar", kind::terms},
    {"inkl. mwst.", kind::qualifier}, {"inkl. mwst", kind::qualifier},
    {"inkl. ust.", kind::qualifier}, {"inkl.", kind::qualifier}, {"zzgl.", kind::qualifier},
    {"zuzgl.", kind::qualifier}, {"davon", kind::qualifier}, {"exkl. mwst.", kind::net_qualifier},
    {"lieferadresse", kind::contact}, {"lieferanschrift", kind::contact},
    {"telefon", kind::contact}, {"mobil", kind::contact}, {"geschäftsführer", kind::contact},
    {"amtsgericht", kind::contact},
    // receipts and booking confirmations
    {"bon-nr.", kind::invoice_number}, {"bon-nr", kind::invoice_number}, {"belegnr.", kind::invoice_number},
    {"quittungsnummer", kind::invoice_number}, {"buchungsnummer", kind::order_number},
    {"reservierungsnummer", kind::order_number}, {"bezahlt", kind::total}, {"gezahlt", kind::total},
    {"anreise", kind::other_date}, {"abreise", kind::other_date},
  };
  static const label_table table{"de", &all};
  return table;
}

} // namespace ingestd::local_rules
