// The claim and the other repository calls of the stages on the ingestion table (ingest, unpack).
#include "actors/ingestion_stage_job.hpp"

#include "actors/job.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

ingestion_stage_job::ingestion_stage_job(std::shared_ptr<worker_context> ctx, std::string stage, std::string work,
                                         bool crash_escalates)
  : ctx_(std::move(ctx)), stage_(std::move(stage)), work_(std::move(work)), crash_escalates_(crash_escalates) {}

void ingestion_stage_job::claim(const uuid& id, const uuid& token, int32_t max_attempts,
                                callback<std::optional<claimed_work>> done) {
  auto slot = std::make_shared<claimed_ingestion>();
  granted_ = slot;
  ctx_->ports.db->claim(
    {claim_request{id, token, max_attempts, crash_escalates_}}, ctx_->settings.worker_id, ctx_->settings.lease,
    [slot, ctx = ctx_, stage = stage_, work = work_,
     done = std::move(done)](result<std::vector<std::optional<claimed_ingestion>>> r) {
      if (!r)
        return done(r.error());
      if (r->empty() || !r->front())
        return done(std::optional<claimed_work>{});
      auto& row = *r->front();
      if (row.skipped) {
        // A known file: the claim ended it `skipped`; the job finds it finished and acknowledges
        // its message.
        ++ctx->metrics->known_file_skips;
        log::info("ingestion skipped: a known file",
                  {{"worker_id", ctx->settings.worker_id},
                   {"stage", stage},
                   {"step", "claim"},
                   {"ingestion_id", row.ingestion_id.str()},
                   {"document_id", row.document_id.str()},
                   {"tenant_id", row.tenant_id.str()}});
        return done(std::optional<claimed_work>{});
      }
      if (row.poisoned) {
        // This claim failed it as poison (its crashes reached the limit): notified here, once, as
        // any final failure is; the job then finds it finished and acknowledges its message.
        if (ctx->ports.on_failed)
          ctx->ports.on_failed(row,
                               error::make_permanent("poison", work + " ended without an outcome (a crash) "
                                                                 + std::to_string(row.attempt_count)
                                                                 + " times, the limit of worker.max_retry_attempts:"
                                                                   " failed for review"),
                               row.attempt_count);
        return done(std::optional<claimed_work>{});
      }
      *slot = std::move(row);
      done(std::optional<claimed_work>{claimed_work{slot->ingestion_id, slot->claim_token, slot->attempt_count,
                                                    slot->document_id, slot->size_class,
                                                    slot->class_attempts_base, slot->tenant_id}});
    });
}

void ingestion_stage_job::state(const uuid& id, callback<ingestion_state> done) {
  ctx_->ports.db->states({id}, [done = std::move(done)](result<std::vector<ingestion_state>> r) {
    if (!r)
      return done(r.error());
    if (r->empty())
      return done(error::make_transient("db.no_result", "states returned nothing"));
    done(r->front());
  });
}

void ingestion_stage_job::record_failure(const lease_ref& ref, failure_record record, std::chrono::seconds delay,
                                         callback<failure_outcome> done) {
  ctx_->ports.db->record_failure(ref, std::move(record), delay, std::move(done));
}

void ingestion_stage_job::release(const lease_ref& ref, callback<void> done) {
  ctx_->ports.db->release(ref, std::move(done));
}

void ingestion_stage_job::record_cancelled(const lease_ref& ref, callback<void> done) {
  ctx_->ports.db->record_cancelled(ref, std::move(done));
}

void ingestion_stage_job::failed_for_good(const error& err, int32_t attempts) {
  if (ctx_->ports.on_failed)
    ctx_->ports.on_failed(job_ != nullptr ? claim_ : *granted_, err, attempts);
}

void ingestion_stage_job::take_claim(job_handle& job) {
  job_ = &job;
  claim_ = std::move(*granted_);
}

} // namespace ingestd
