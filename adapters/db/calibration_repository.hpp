// The calibration's database port: what reviewers did with a tenant's extracted values.
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

class calibration_repository {
public:
  virtual ~calibration_repository() = default;
  /// The tenant's reviewed values of the last 90 days: each document's first review, when it
  /// approved (a rejection or a reprocess says nothing about single values), per field the
  /// machine gave a value for (not null, "" or []), by the extractor's confidence.
  virtual void reviews_of(uuid tenant, callback<std::vector<field_reviews>> done) = 0;
};

} // namespace ingestd
