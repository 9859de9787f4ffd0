// The calibration's database port over PostgreSQL: one connection thread; a tenant's reviewed
// values are one statement over its range of document_review (migration 025).
#pragma once

#include <memory>
#include <string>

#include "adapters/db/calibration_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

class pg_calibration_repository final : public calibration_repository {
public:
  pg_calibration_repository(std::string database_url, pg::session_options session = {});
  ~pg_calibration_repository() override;

  void reviews_of(uuid tenant, callback<std::vector<field_reviews>> done) override;

private:
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
