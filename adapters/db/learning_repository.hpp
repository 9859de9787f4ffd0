// What the ingest stage learns from a tenant's reviewers, read from the database: how often they
// kept each field's values (calibrated confidence, review.auto_approve), and what their
// corrections taught about each supplier (supplier_knowledge, review.learn).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// One field's values at one extractor confidence, as reviewers found them: how many a person
/// reviewed (an approval of the machine's data) and how many of those they left unchanged.
struct field_reviews {
  /// The extractor's confidence: "high", "medium", "low" (empty: none given).
  std::string confidence;
  std::string field;
  int64_t reviewed = 0;
  int64_t kept = 0;
};

/// One thing a tenant's reviewers taught about a supplier (adapters/extraction/supplier_knowledge).
struct supplier_fact {
  /// The supplier as the machine reads it: "vat:DE123456789" or "name:acmegmbh".
  std::string supplier;
  /// "supplier_name", "supplier_vat_id", "date_order", "invoice_number_label" or
  /// "decimal_separator".
  std::string field;
  /// The reviewer's value; for date_order "day_month_swapped", for invoice_number_label the label
  /// ("Beleg-Nr"), for decimal_separator "." or ",".
  std::string value;
  /// The reviews that taught it (the same value again adds one; another value starts over).
  int64_t reviews = 1;
};

class learning_repository {
public:
  virtual ~learning_repository() = default;
  /// The tenant's reviewed values of the last 90 days: each document's first review, when it
  /// approved (a rejection or a reprocess says nothing about single values), per field the
  /// machine gave a value for (not null, "" or []), by the extractor's confidence.
  virtual void reviews_of(uuid tenant, callback<std::vector<field_reviews>> done) = 0;
  /// What the tenant's reviewers taught about its suppliers.
  virtual void facts_of(uuid tenant, callback<std::vector<supplier_fact>> done) = 0;
};

} // namespace ingestd
