// The fenced finish of work items, the re-read after a lost answer, and audit parameters.
#include "adapters/db/pg_work.hpp"
#include "adapters/db/lifecycle_sql.hpp"

#include <set>

#include "adapters/db/pg_values.hpp"

namespace ingestd::pg {

namespace {

// Completes the items still in progress under their tokens (rows locked in id order, so that
// two batches over the same items wait for each other instead of deadlocking), adds the next
// work of the outcomes that completed them (by item and token: a batch may carry one item under a
// stale and a live token), with its messages, and appends the audit rows of all (what a worker
// did is history even when another took the item over). The last SELECT always answers one row
// at least, so that the audit and the next work are written. The items are completed from the rows
// locked, found by key. A small batch runs on one generic plan; a large one is planned for its own
// values (pg::for_batch): it joins the next work with the items it completed.
constexpr statement finish_sql{"ingestd_work_finish", R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $20::text[]) AS c(id, token, remark)
), lock AS (
  SELECT w.id, c.token, c.remark FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), done AS (
  UPDATE work_item AS w
     SET status = 'completed', completed_at = now(), claim_token = NULL, lease_expires_at = NULL,
         last_error = COALESCE(l.remark, w.last_error)
    FROM lock AS l
   WHERE w.id = l.id AND w.claim_token = l.token AND w.status = 'in-progress'
  RETURNING w.id, l.token
), next AS (
  SELECT count(*) FILTER (WHERE ingestd_add_work(n.item, n.stage, n.document, n.tenant, n.priority,
                                                 n.class, n.queue, $19::boolean, n.reopen)) AS sent
    FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::uuid[], $14::uuid[], $15::integer[],
                $16::text[], $17::text[], $18::boolean[], $21::uuid[])
         AS n(parent, item, stage, document, tenant, priority, class, queue, reopen, parent_token)
   WHERE (n.parent, n.parent_token) IN (SELECT id, token FROM done)
), audit AS (
  SELECT ingestd_append_audit($3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
                              $8::text[], $9::text[]) AS appended
)
SELECT d.id, d.token, (SELECT sent FROM next), (SELECT appended FROM audit)
  FROM (SELECT 1) AS one LEFT JOIN done AS d ON true
)sql",
                               plans::generic};

constexpr statement reread_sql{"ingestd_work_reread", R"sql(
SELECT r.ord, COALESCE(w.status, ''), COALESCE(w.claim_token::text, '')
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  LEFT JOIN work_item AS w ON w.id = r.id
 ORDER BY r.ord
)sql"};

std::string bool_text(bool b) {
  return b ? "t" : "f";
}

} // namespace

std::string uuid_array(const std::vector<uuid>& ids) {
  std::vector<param> items;
  items.reserve(ids.size());
  for (auto& id : ids)
    items.emplace_back(id.str());
  return array_literal(items);
}

void add_audit_params(std::vector<param>& params, const std::vector<audit_event>& events) {
  constexpr size_t max_run = 1000;
  // One element per write: each run of steps of one item (a job's trail is one run) becomes one
  // row of the trail, its columns array literals inside the array; a run takes at most the
  // 1,000 ids of its block (migration 035).
  std::vector<param> items, steps, outcomes, details, durations, workers, ats;
  std::vector<param> run_steps, run_outcomes, run_details, run_durations, run_workers, run_ats;
  auto close_run = [&] {
    steps.emplace_back(array_literal(run_steps));
    outcomes.emplace_back(array_literal(run_outcomes));
    details.emplace_back(array_literal(run_details));
    durations.emplace_back(array_literal(run_durations));
    workers.emplace_back(array_literal(run_workers));
    ats.emplace_back(array_literal(run_ats));
    for (auto* a :
         {&run_steps, &run_outcomes, &run_details, &run_durations, &run_workers, &run_ats})
      a->clear();
  };
  for (size_t i = 0; i < events.size(); ++i) {
    auto& e = events[i];
    if (i > 0 && (e.item != events[i - 1].item || run_steps.size() == max_run))
      close_run();
    if (run_steps.empty())
      items.emplace_back(e.item.str());
    run_steps.push_back(clean(e.step));
    run_outcomes.push_back(clean(e.outcome));
    run_details.push_back(opt_clean(e.detail));
    run_durations.emplace_back(std::to_string(e.duration_ms));
    run_workers.push_back(opt_clean(e.worker_id));
    run_ats.emplace_back(std::to_string(e.at_ms));
  }
  if (!run_steps.empty())
    close_run();
  for (auto* a : {&items, &steps, &outcomes, &details, &durations, &workers, &ats})
    params.emplace_back(array_literal(*a));
}

error claim_lost(const claim_ref& ref, std::string_view what) {
  return error::make_claim_lost(std::string{what} + ": work item " + ref.item.str()
                                + " is no longer held by claim " + ref.token.str());
}

result<std::vector<result<void>>>
finish_work(connection& conn, const std::vector<const work_outcome*>& outcomes, bool via_outbox) {
  std::vector<uuid> ids, tokens;
  std::vector<audit_event> audit;
  std::vector<param> remarks, parents, parent_tokens, items, stages, documents, tenants, priorities,
      classes, queues, reopen;
  for (auto* o : outcomes) {
    ids.push_back(o->ref.item);
    tokens.push_back(o->ref.token);
    remarks.push_back(opt_clean(o->remark));
    audit.insert(audit.end(), o->audit.begin(), o->audit.end());
    for (auto& n : o->next) {
      parents.emplace_back(o->ref.item.str());
      parent_tokens.emplace_back(o->ref.token.str());
      items.emplace_back(n.item.str());
      stages.emplace_back(n.stage);
      documents.emplace_back(n.document_id.str());
      tenants.emplace_back(n.tenant_id.str());
      priorities.emplace_back(std::to_string(n.priority));
      classes.emplace_back(n.size_class);
      queues.emplace_back(n.queue);
      reopen.emplace_back(bool_text(n.reopen));
    }
  }
  std::vector<param> params{uuid_array(ids), uuid_array(tokens)};
  add_audit_params(params, audit);
  for (auto* a :
       {&parents, &items, &stages, &documents, &tenants, &priorities, &classes, &queues, &reopen})
    params.emplace_back(array_literal(*a));
  params.emplace_back(bool_text(via_outbox));
  params.emplace_back(array_literal(remarks));
  params.emplace_back(array_literal(parent_tokens));
  auto res = conn.exec(finish_sql, params, for_batch(outcomes.size()));
  if (!res)
    return res.error();
  // Matched by id and token: a batch may carry the same id with a stale and a live token.
  std::set<std::pair<uuid, uuid>> finished;
  for (int r = 0; r < res->size(); ++r)
    if (!res->is_null(r, 0))
      finished.emplace(parse_uuid(res->text(r, 0)), parse_uuid(res->text(r, 1)));
  std::vector<result<void>> out;
  out.reserve(outcomes.size());
  for (auto* o : outcomes) {
    if (finished.erase({o->ref.item, o->ref.token}) == 0)
      out.emplace_back(claim_lost(o->ref, "complete"));
    else
      out.emplace_back();
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>>
reread_items(connection& conn, const std::vector<uuid>& items) {
  if (!conn.ensure(true))
    return std::nullopt;
  auto res = conn.exec(reread_sql, {uuid_array(items)});
  if (!res)
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out(items.size());
  for (int r = 0; r < res->size(); ++r) {
    auto index = res->i64(r, 0) - 1;
    if (index >= 0 && index < static_cast<int64_t>(out.size()))
      out[index] = {res->str(r, 1), res->str(r, 2)};
  }
  return out;
}

result<void> settled(const std::pair<std::string, std::string>& state, const claim_ref& ref,
                     const error& lost) {
  auto& [status, token] = state;
  if (status == "completed")
    return {};
  if (status == "in-progress" && token == ref.token.str())
    return lost;
  return claim_lost(ref, "complete");
}

const statement lifecycle_sql::work_finish = finish_sql;

} // namespace ingestd::pg
