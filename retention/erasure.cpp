// Erasure: objects first, then rows and the receipt (see erasure.hpp).
#include "retention/erasure.hpp"

#include <set>
#include <vector>

#include "retention/objects.hpp"

namespace ingestd {

eraser::eraser(pg_erasure_repository& db, object_store& store, erasure_options opts)
    : db_(db), store_(store), opts_(std::move(opts)) {}

result<int64_t> eraser::remove_prefix(const std::string& prefix) {
  auto keys = objects::list(store_, prefix, opts_.storage_timeout);
  if (!keys)
    return keys.error();
  return objects::remove(store_, {keys->begin(), keys->end()}, opts_.storage_timeout);
}

result<int64_t> eraser::remove_objects(const erasure_plan& plan) {
  std::set<std::string> keys(plan.object_keys.begin(), plan.object_keys.end());
  auto tenant = plan.tenant_id.str();
  std::vector<std::string> prefixes;
  for (const auto& doc : plan.documents)
    for (auto& p : storage_keys::document_prefixes(tenant, doc.str()))
      prefixes.push_back(std::move(p));
  for (const auto& ing : plan.ingestions)
    for (auto& p : storage_keys::ingestion_prefixes(tenant, ing.str()))
      prefixes.push_back(std::move(p));
  for (const auto& prefix : prefixes) {
    auto listed = objects::list(store_, prefix, opts_.storage_timeout);
    if (!listed)
      return listed.error();
    keys.insert(listed->begin(), listed->end());
  }
  return objects::remove(store_, keys, opts_.storage_timeout);
}

result<erasure_receipt> eraser::erase_planned(const erasure_plan& plan, bool write_receipt) {
  if (plan.running > 0)
    return error::make_transient(
        "erase.busy", std::to_string(plan.running)
                          + " work item(s) of the document are running on a node: cancel them "
                            "(ingestd cancel) or let them finish, then erase again");
  auto objects = remove_objects(plan);
  if (!objects)
    return objects.error();
  return db_.erase_rows(plan, opts_.erased_by, *objects, write_receipt);
}

result<erasure_receipt> eraser::erase_document(uuid document_id, std::optional<uuid> tenant_id) {
  auto plan = db_.plan_document(document_id, tenant_id);
  if (!plan)
    return plan.error();
  if (!*plan)
    return error::make_permanent(
        "erase.not_found", "no document " + document_id.str()
                               + (tenant_id ? " of tenant " + tenant_id->str() : std::string{}));
  return erase_planned(**plan, true);
}

result<erasure_receipt> eraser::erase_tenant(uuid tenant_id) {
  erasure_receipt totals;
  auto add = [&](const erasure_receipt& r) {
    totals.documents += r.documents;
    totals.objects += r.objects;
    for (auto& [table, n] : r.rows) {
      bool found = false;
      for (auto& [t, total] : totals.rows)
        if (t == table) {
          total += n;
          found = true;
        }
      if (!found)
        totals.rows.emplace_back(table, n);
    }
  };
  for (;;) {
    auto docs = db_.tenant_documents(tenant_id, opts_.tenant_batch);
    if (!docs)
      return docs.error();
    if (docs->empty())
      break;
    for (auto& doc : *docs) {
      auto plan = db_.plan_document(doc, tenant_id);
      if (!plan)
        return plan.error();
      if (!*plan)
        continue; // erased meanwhile (a child of a document of this round)
      auto erased = erase_planned(**plan, false);
      if (!erased)
        return erased.error();
      add(*erased);
    }
  }
  // What storage holds under the tenant's prefix that no row named any more.
  auto rest = remove_prefix(tenant_id.str() + "/");
  if (!rest)
    return rest.error();
  totals.objects += *rest;
  return db_.finish_tenant(tenant_id, opts_.erased_by, totals);
}

} // namespace ingestd
