// Spanish labels (Spain, Latin America).
// Data only: a label's kind says what the value after it is (see labels.hpp). Accents are
// optional in the text ("numero" matches "numéro"), so each label is listed once.
#include "adapters/extraction/local/labels.hpp"

namespace ingestd::local_rules {

const label_table& labels_es() {
  static const std::vector<label> all{
      // invoice number
      {"n\xC3\xBAmero de factura", kind::invoice_number},
      {"n\xC2\xBA factura", kind::invoice_number},
      {"n\xC2\xBA de factura", kind::invoice_number},
      {"factura n\xC2\xBA", kind::invoice_number},
      {"factura n\xC3\xBAmero", kind::invoice_number},
      {"factura no", kind::invoice_number},
      {"num. factura", kind::invoice_number},
      {"n.\xC2\xBA factura", kind::invoice_number},
      {"n.\xC2\xBA de factura", kind::invoice_number},
      {"nro. factura", kind::invoice_number},
      {"factura", kind::invoice_title},
      {"factura simplificada", kind::invoice_title},
      {"n\xC2\xBA de ticket", kind::invoice_number},
      {"n\xC2\xBA de pedido", kind::order_number},
      {"n\xC3\xBAmero de pedido", kind::order_number},
      {"n\xC3\xBAmero de reserva", kind::order_number},
      {"localizador", kind::order_number},
      {"pedido n\xC2\xBA", kind::order_number},
      // dates
      {"fecha de factura", kind::invoice_date},
      {"fecha factura", kind::invoice_date},
      {"fecha de la factura", kind::invoice_date},
      {"fecha de emisi\xC3\xB3n", kind::invoice_date},
      {"fecha de expedici\xC3\xB3n", kind::invoice_date},
      {"fecha", kind::invoice_date},
      {"fecha de vencimiento", kind::due_date},
      {"vencimiento", kind::due_date},
      {"fecha l\xC3\xADmite de pago", kind::due_date},
      {"fecha de entrega", kind::other_date},
      {"fecha de pedido", kind::other_date},
      {"fecha de operaci\xC3\xB3n", kind::other_date},
      {"periodo", kind::other_date},
      {"llegada", kind::other_date},
      {"salida", kind::other_date},
      // other numbers
      {"n\xC2\xBA de cliente", kind::other_number},
      {"c\xC3\xB3"
       "digo de cliente",
       kind::other_number},
      {"p\xC3\xA1gina", kind::other_number},
      // amounts
      {"base imponible", kind::subtotal},
      {"importe neto", kind::subtotal},
      {"total sin iva", kind::subtotal},
      {"iva", kind::vat},
      {"cuota iva", kind::vat},
      {"cuota de iva", kind::vat},
      {"total iva", kind::vat},
      {"total factura", kind::total},
      {"importe total", kind::total},
      {"total a pagar", kind::total},
      {"importe pagado", kind::total},
      {"total pagado", kind::total},
      {"total con iva", kind::total},
      {"importe", kind::total_weak},
      // ids, currency, parties
      {"cif", kind::vat_id},
      {"nif", kind::vat_id},
      {"nif/cif", kind::vat_id},
      {"n\xC2\xBA iva", kind::vat_id},
      {"moneda", kind::currency},
      {"divisa", kind::currency},
      {"facturar a", kind::customer},
      {"cliente", kind::customer},
      {"datos del cliente", kind::customer},
      {"proveedor", kind::supplier},
      {"emisor", kind::supplier},
      {"forma de pago", kind::terms},
      {"iva incluido", kind::qualifier},
      {"sin iva", kind::net_qualifier},
      {"tel\xC3\xA9"
       "fono",
       kind::contact},
      {"tfno.", kind::contact},
      {"direcci\xC3\xB3n de env\xC3\xAD"
       "o",
       kind::contact},
      // till receipts: the tender, the change and the cash rounding (receipts.cpp)
      {"efectivo", kind::tender},
      {"entregado", kind::tender},
      {"tarjeta", kind::tender},
      {"tarjeta credito", kind::tender},
      {"tarjeta cr\xC3\xA9"
       "dito",
       kind::tender},
      {"cambio", kind::change},
      {"a devolver", kind::change},
      {"devoluci\xC3\xB3n", kind::change},
      {"redondeo", kind::rounding},
      {"a pagar", kind::total},
  };
  static const label_table table{"es", &all};
  return table;
}

} // namespace ingestd::local_rules
