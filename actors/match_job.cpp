// The match stage's steps, between the claim (matching_status in-progress, the delivery counted)
// and the outcome (seed 003's per-message flow; the lifecycle around them is actors/job.cpp's):
//
//   text (the latest transcription, if any) ─► features (pre-processing writes, outside the
//   write transaction, safe to redo) ─► candidates (indexed, within the tenant) ─► decide (the
//   matcher: rules or the LLM with in-process retries) ─► write (one transaction: delete the
//   document's edges, insert the new ones, recompute the affected clusters; succeeded)
//
// Failures take the shared path: transient ones back off by deliveries (5 min, 30 min) and the
// third fails the matching, notifies and leaves the message to the queue's dead-letter redrive;
// a permanent one fails at once, notifies, and deletes the message.
#include "actors/match_job.hpp"

#include "actors/job.hpp"
#include "adapters/matching/features.hpp"
#include "adapters/ocr/transcription_json.hpp"

namespace ingestd {

namespace {

class match_job final : public stage_job {
public:
  match_job(std::shared_ptr<worker_context> ctx, int candidate_limit)
    : ctx_(std::move(ctx)), candidate_limit_(candidate_limit) {}

  void claim(const uuid& id, const uuid& token, int32_t max_attempts,
             callback<std::optional<claimed_work>> done) override {
    // The row lands in a slot of its own: this job may be gone (deadline) when the answer comes.
    auto slot = std::make_shared<matching_claim>();
    granted_ = slot;
    ctx_->ports.matching->claim(
      id, token, ctx_->settings.worker_id, ctx_->settings.lease, max_attempts,
      [slot, done = std::move(done)](result<std::optional<matching_claim>> r) {
        if (!r)
          return done(r.error());
        if (!*r)
          return done(std::optional<claimed_work>{});
        *slot = std::move(**r);
        done(std::optional<claimed_work>{
          claimed_work{slot->document_id, slot->claim_token, slot->attempt_count, slot->document_id, {}, 0,
                       slot->tenant_id}});
      });
  }

  void state(const uuid& id, callback<ingestion_state> done) override {
    ctx_->ports.matching->state(id, std::move(done));
  }

  void record_failure(const lease_ref& ref, failure_record record, std::chrono::seconds,
                      callback<failure_outcome> done) override {
    // The back-off is the queue's visibility (the lifecycle sets it); the row only says pending.
    ctx_->ports.matching->record_failure(ref, std::move(record), std::move(done));
  }

  void release(const lease_ref& ref, callback<void> done) override {
    ctx_->ports.matching->release(ref, std::move(done));
  }

  void failed_for_good(const error& err, int32_t attempts) override {
    if (ctx_->ports.on_matching_failed)
      ctx_->ports.on_matching_failed(*granted_, err, attempts);
  }

  void run(job_handle& job) override {
    job_ = &job;
    claim_ = *granted_;
    read_text();
  }

private:
  /// The transcription of the document's latest completed ingestion: the searchable text.
  void read_text() {
    if (claim_.transcription_file_path.empty())
      return describe("");
    job_->request<std::string>(
      "text",
      [&](auto cb) { ctx_->ports.storage->get(claim_.transcription_file_path, 64u << 20, std::move(cb)); },
      [this](result<std::string> r) {
        if (!r) {
          if (r.error().code != "storage.not_found")
            return job_->fail(r.error());
          job_->step_done("none", "transcription not found; matching on the extracted fields");
          return describe("");
        }
        auto parsed = transcription_from_json(*r);
        if (!parsed) {
          job_->step_done("unreadable", parsed.error().describe());
          return describe("");
        }
        job_->step_done("ok");
        describe(parsed->text);
      });
  }

  /// Seed 003's pre-processing: the normalized values, stored outside the write transaction.
  void describe(const std::string& text) {
    doc_.id = claim_.document_id;
    doc_.tenant_id = claim_.tenant_id;
    doc_.file_name = claim_.file_name;
    doc_.structured_data = claim_.structured_data;
    doc_.features = describe_for_matching(claim_.structured_data, text);
    job_->request<void>(
      "features", [&](auto cb) { ctx_->ports.matching->store_features(job_->lease(), doc_.features, std::move(cb)); },
      [this](result<void> r) {
        if (!r)
          return job_->step_failed(r.error());
        job_->step_done("ok", doc_.features.kind + (doc_.features.number.empty() ? "" : " " + doc_.features.number));
        find_candidates();
      });
  }

  void find_candidates() {
    job_->request<std::vector<match_document>>(
      "candidates",
      [&](auto cb) {
        ctx_->ports.matching->candidates(doc_.tenant_id, doc_.id, doc_.features, candidate_limit_, std::move(cb));
      },
      [this](result<std::vector<match_document>> r) {
        if (!r)
          return job_->step_failed(r.error());
        job_->step_done("ok", std::to_string(r->size()) + " candidates");
        decide(std::move(*r));
      });
  }

  void decide(std::vector<match_document> candidates) {
    job_->request<std::vector<match_edge>>(
      "decide",
      [&](auto cb) {
        ctx_->ports.match->decide_with(doc_, std::move(candidates), job_->port_call(), std::move(cb));
      },
      [this](result<std::vector<match_edge>> r) {
        // No silent degradation (seed 003): a decision not made is an error, never "no match".
        if (!r)
          return job_->step_failed(r.error());
        job_->step_done("ok", std::to_string(r->size()) + " edges");
        write(std::move(*r));
      });
  }

  void write(std::vector<match_edge> edges) {
    job_->storing_outcome();
    job_->request<void>(
      "write", [&](auto cb) { ctx_->ports.matching->write_matches(job_->lease(), std::move(edges), std::move(cb)); },
      [this](result<void> r) {
        if (!r)
          return job_->fail(r.error());
        job_->completed();
      });
  }

  std::shared_ptr<worker_context> ctx_;
  int candidate_limit_;
  job_handle* job_ = nullptr;
  std::shared_ptr<matching_claim> granted_;
  matching_claim claim_;
  match_document doc_;
};

} // namespace

std::shared_ptr<stage> make_match_stage(const worker_context& ctx, match_stage_settings settings) {
  auto s = std::make_shared<stage>();
  s->name = "match";
  s->queue = std::move(settings.queue);
  s->queue_name = std::move(settings.queue_name);
  s->max_in_flight = settings.max_in_flight;
  s->max_attempts = settings.max_attempts;
  s->retry_backoff = std::move(settings.retry_backoff);
  s->dead_letter = dead_letter_policy::exhausted;
  s->uses_cpu = false;
  s->audit = false;
  s->renew_leases = [repo = ctx.ports.matching](std::vector<lease_ref> refs, std::chrono::seconds lease,
                                                callback<std::vector<lease_ref>> done) {
    repo->renew_leases(std::move(refs), lease, std::move(done));
  };
  s->make_job = [limit = settings.candidate_limit](const std::shared_ptr<worker_context>& c) {
    return std::make_unique<match_job>(c, limit);
  };
  return s;
}

} // namespace ingestd
