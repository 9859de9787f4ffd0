// What reviewers taught, over PostgreSQL: one connection thread; a tenant's reviewed values are
// one statement over its range of document_review (migration 025), its supplier facts one over
// its range of supplier_knowledge (migration 026).
#pragma once

#include <memory>
#include <string>

#include "adapters/db/learning_repository.hpp"
#include "adapters/db/pg_connection.hpp"

namespace ingestd {

class pg_learning_repository final : public learning_repository {
public:
  pg_learning_repository(std::string database_url, pg::session_options session = {});
  ~pg_learning_repository() override;

  void reviews_of(uuid tenant, callback<std::vector<field_reviews>> done) override;
  void facts_of(uuid tenant, callback<std::vector<supplier_fact>> done) override;

private:
  std::unique_ptr<pg::pool> pool_;
};

} // namespace ingestd
