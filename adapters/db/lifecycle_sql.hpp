// The statements one job of the ingest stage sends on the Postgres queue, as the adapters send
// them (postgres_queue, pg_work_repository, pg_work, pg_ingest_repository): for
// bench/orchestration's pgbench replay, which must replay this SQL and no copy of it.
#pragma once

#include "adapters/db/pg_connection.hpp"

namespace ingestd::pg::lifecycle_sql {

extern const statement queue_receive;
extern const statement queue_visibility;
extern const statement queue_delete;
extern const statement work_claim;
extern const statement work_renew;
extern const statement work_finish;
extern const statement ingest_load;
extern const statement ingest_results;

} // namespace ingestd::pg::lifecycle_sql
