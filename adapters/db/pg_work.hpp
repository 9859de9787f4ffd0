// What the PostgreSQL repositories share about work items: the fenced finish of a stage's
// outcome (in the caller's transaction, so that a stage's own final write and the item's
// completion, audit trail and next work are one), the transaction with the re-read of a COMMIT
// whose answer was lost, and the parameters of audit rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "messages/error_codes.hpp"
#include "messages/work.hpp"

namespace ingestd::pg {

/// A uuid[] parameter.
std::string uuid_array(const std::vector<uuid>& ids);

/// Appends the seven array parameters of ingestd_append_audit for `events`, text cleaned: an
/// element per run of consecutive steps of one item (the trail's row), the item, then each
/// column (steps, outcomes, details, durations, workers, times) as an array literal.
void add_audit_params(std::vector<param>& params, const std::vector<audit_event>& events);

/// The error of a fenced write that matched no row.
error claim_lost(const claim_ref& ref, std::string_view what);

/// Completes the outcomes' items in one statement on `conn`, inside the caller's transaction or
/// alone: each item in progress under its token becomes `completed` with its claim cleared, its
/// next work is added with its messages (`via_outbox`: outbox rows for the relay, else rows of
/// the Postgres queue), and every outcome's audit rows are appended. A result per outcome
/// (claim_lost where fenced out), or the statement's error.
result<std::vector<result<void>>>
finish_work(connection& conn, const std::vector<const work_outcome*>& outcomes, bool via_outbox);

/// Where each item stands, for a write whose answer was lost: (status, claim_token) in the
/// order of `items` ("" for an unknown one), read on a connection made again; nullopt when the
/// database cannot be read either.
std::optional<std::vector<std::pair<std::string, std::string>>>
reread_items(connection& conn, const std::vector<uuid>& items);

/// The answer for an item whose completion's answer was lost: done when it is completed, the
/// original error when it is still in progress under our token (not applied: safe to retry),
/// claim_lost otherwise.
result<void> settled(const std::pair<std::string, std::string>& state, const claim_ref& ref,
                     const error& lost);

/// Runs `body(conn) -> result<T>` between BEGIN and COMMIT; an error of the body rolls back and is
/// the answer. When the COMMIT's answer is lost with the connection, `settle(conn, written,
/// error) -> result<T>` decides, on a connection made again, whether it happened.
template <class T, class Body, class Settle>
result<T> transaction(connection& conn, Body body, Settle settle) {
  if (auto begun = conn.exec_simple("BEGIN"); !begun)
    return begun.error();
  result<T> written = body(conn);
  if (!written) {
    // On a broken connection the server rolls back by itself.
    (void)conn.exec_simple("ROLLBACK");
    return written;
  }
  auto committed = conn.exec_simple("COMMIT");
  if (committed)
    return written;
  auto err = committed.error();
  if (!database_unavailable(err) && err.code != errc::pg_commit_unknown)
    return err;
  if (!conn.ensure(true))
    return err;
  return settle(conn, std::move(written), err);
}

} // namespace ingestd::pg
