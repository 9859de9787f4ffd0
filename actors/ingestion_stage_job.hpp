// What the stages that work on the ingestion table (ingest, unpack) share of their stage_job: the
// fenced claim through the repository (known files skipped, poison failed and notified once), the
// row's state, failures, give-back and cancellation, and the failure notification. Each stage
// adds its own steps (run()).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"

namespace ingestd {

class ingestion_stage_job : public stage_job {
public:
  void claim(const uuid& id, const uuid& token, int32_t max_attempts,
             callback<std::optional<claimed_work>> done) override;
  void state(const uuid& id, callback<ingestion_state> done) override;
  void record_failure(const lease_ref& ref, failure_record record, std::chrono::seconds delay,
                      callback<failure_outcome> done) override;
  void release(const lease_ref& ref, callback<void> done) override;
  void record_cancelled(const lease_ref& ref, callback<void> done) override;
  void failed_for_good(const error& err, int32_t attempts) override;

protected:
  /// `stage`: the stage's name, for the log; `work`: what it does to a row, for the poison
  /// notice ("its processing", "its unpacking"); `crash_escalates`: a crash moves the row to the
  /// large size class (the small class).
  ingestion_stage_job(std::shared_ptr<worker_context> ctx, std::string stage, std::string work,
                      bool crash_escalates = false);

  /// The start of run(): the granted row becomes claim_.
  void take_claim(job_handle& job);

  std::shared_ptr<worker_context> ctx_;
  job_handle* job_ = nullptr;
  /// The granted row, once run() has taken it.
  claimed_ingestion claim_;

private:
  std::string stage_;
  std::string work_;
  bool crash_escalates_ = false;
  /// The claim's answer lands in a slot of its own: the job may be gone (deadline) when it comes
  /// on the database thread, and the actor reads the slot only after the answer arrived.
  std::shared_ptr<claimed_ingestion> granted_;
};

} // namespace ingestd
