// In-memory fakes of the match stage's ports and of the outbox.
#include "tests/support/fakes/stage_fakes.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace ingestd::test {

// -- fake_matching_repository -------------------------------------------------------

uuid fake_matching_repository::add(const uuid& tenant, std::string structured_data, std::string transcription,
                                   std::string status, int32_t attempts) {
  std::lock_guard guard{mtx_};
  fake_matching_row row;
  row.doc.document_id = uuid::v7();
  row.doc.tenant_id = tenant;
  row.doc.file_name = "document-" + row.doc.document_id.str() + ".pdf";
  row.doc.content_hash = "hash-" + row.doc.document_id.str();
  row.doc.structured_data = std::move(structured_data);
  row.doc.transcription_file_path = std::move(transcription);
  row.status = std::move(status);
  row.matching_attempts = attempts;
  auto id = row.doc.document_id;
  rows_.emplace(id, std::move(row));
  return id;
}

bool fake_matching_repository::fenced(const lease_ref& ref, const char* op) {
  auto i = rows_.find(ref.ingestion_id);
  bool live = i != rows_.end() && i->second.status == "in-progress" && i->second.token
              && *i->second.token == ref.claim_token;
  if (live)
    return true;
  if (granted_.count(ref.claim_token) == 0)
    violations_.push_back(std::string{op} + " with a token never granted");
  else if (ended_.count(ref.claim_token) > 0)
    violations_.push_back(std::string{op} + " with the token of a claim the caller already ended");
  return false;
}

void fake_matching_repository::end_token(const uuid& token) { ended_.insert(token); }

void fake_matching_repository::claim(uuid document_id, uuid claim_token, std::string worker_id,
                                     std::chrono::seconds lease, int32_t max_attempts,
                                     callback<std::optional<matching_claim>> done) {
  result<std::optional<matching_claim>> r = std::optional<matching_claim>{};
  {
    std::lock_guard guard{mtx_};
    if (lease.count() <= 0)
      violations_.push_back("claim with a lease of " + std::to_string(lease.count()) + " s");
    if (worker_id.empty())
      violations_.push_back("claim without a worker id");
    if (granted_.count(claim_token) > 0)
      violations_.push_back("claim with a token used before");
    if (auto err = take_failure("claim")) {
      r = *err;
    } else if (auto i = rows_.find(document_id); i != rows_.end()) {
      auto& row = i->second;
      bool pending = row.status == "pending";
      bool crashed = row.status == "in-progress" && !row.lease_live;
      if (pending || crashed) {
        row.matching_attempts++;
        if (crashed && row.matching_attempts >= std::max(max_attempts, 1)) {
          row.status = "failed";
          row.failed_at_set = true;
          row.matching_error = "poison: the matching claim expired without an outcome or give-back";
          row.token.reset();
        } else {
          if (crashed)
            row.matching_error = "worker.crash: the matching claim expired without an outcome or give-back";
          row.status = "in-progress";
          row.token = claim_token;
          row.lease_live = true;
          granted_.insert(claim_token);
          auto c = row.doc;
          c.claim_token = claim_token;
          c.attempt_count = row.matching_attempts - 1;
          r = std::optional<matching_claim>{std::move(c)};
        }
      }
    }
    if (maybe_hold("claim", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::state(uuid document_id, callback<ingestion_state> done) {
  result<ingestion_state> r = ingestion_state::unknown;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("state")) {
      r = *err;
    } else if (auto i = rows_.find(document_id); i != rows_.end()) {
      auto& row = i->second;
      if (row.status == "succeeded")
        r = ingestion_state::completed;
      else if (row.status == "failed")
        r = ingestion_state::failed;
      else if (row.status == "pending")
        r = ingestion_state::claimable;
      else if (row.status == "in-progress")
        r = row.lease_live ? ingestion_state::held : ingestion_state::claimable;
    }
    if (maybe_hold("state", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::store_features(lease_ref ref, match_features features, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("store_features"))
      r = *err;
    else if (!fenced(ref, "store_features"))
      r = error::make_claim_lost("store_features fenced out");
    else
      rows_.at(ref.ingestion_id).features = std::move(features);
    if (maybe_hold("store_features", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::candidates(uuid tenant_id, uuid document_id, match_features, int limit,
                                          callback<std::vector<match_document>> done) {
  result<std::vector<match_document>> r = std::vector<match_document>{};
  {
    std::lock_guard guard{mtx_};
    candidate_limits_.push_back(limit);
    if (limit < 1)
      violations_.push_back("candidates with a limit of " + std::to_string(limit));
    if (auto err = take_failure("candidates")) {
      r = *err;
    } else {
      for (auto& c : candidates_)
        if (c.tenant_id == tenant_id && c.id != document_id && static_cast<int>(r->size()) < limit)
          r->push_back(c);
    }
    if (maybe_hold("candidates", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::write_matches(lease_ref ref, std::vector<match_edge> edges, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    std::set<uuid> others;
    for (auto& e : edges) {
      if (e.other == ref.ingestion_id)
        violations_.push_back("write_matches with an edge to the document itself");
      if (!others.insert(e.other).second)
        violations_.push_back("write_matches with two edges to one document");
      if (e.confidence < 0 || e.confidence > 1)
        violations_.push_back("write_matches with a confidence of " + std::to_string(e.confidence));
    }
    if (auto err = take_failure("write_matches")) {
      r = *err;  // rolled back: the previous state stays
    } else if (!fenced(ref, "write_matches")) {
      r = error::make_claim_lost("write_matches fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      if (!row.features)
        violations_.push_back("write_matches before store_features");
      row.edges = std::move(edges);
      row.status = "succeeded";
      row.matching_error.clear();
      row.token.reset();
      row.lease_live = false;
      row.writes++;
      end_token(ref.claim_token);
    }
    if (maybe_hold("write_matches", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::record_failure(lease_ref ref, failure_record record,
                                              callback<failure_outcome> done) {
  result<failure_outcome> r = failure_outcome{};
  {
    std::lock_guard guard{mtx_};
    if (record.max_attempts < 1)
      violations_.push_back("record_failure with max_attempts " + std::to_string(record.max_attempts));
    if (auto err = take_failure("record_failure")) {
      r = *err;
    } else if (!fenced(ref, "record_failure")) {
      r = error::make_claim_lost("record_failure fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      row.matching_error = record.error.describe();
      row.token.reset();
      row.lease_live = false;
      bool final = record.error.permanent() || row.matching_attempts >= record.max_attempts;
      row.status = final ? "failed" : "pending";
      row.failed_at_set = row.failed_at_set || final;
      end_token(ref.claim_token);
      r = failure_outcome{row.matching_attempts, final};
    }
    if (maybe_hold("record_failure", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::release(lease_ref ref, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("release")) {
      r = *err;
    } else if (!fenced(ref, "release")) {
      r = error::make_claim_lost("release fenced out");
    } else {
      auto& row = rows_.at(ref.ingestion_id);
      row.status = "pending";
      row.matching_attempts = std::max(row.matching_attempts - 1, 0);
      row.token.reset();
      row.lease_live = false;
      row.releases++;
      end_token(ref.claim_token);
    }
    if (maybe_hold("release", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::rescue_stranded(std::string queue_name, std::chrono::seconds stale_threshold,
                                               int limit, callback<std::vector<uuid>> done) {
  result<std::vector<uuid>> r = std::vector<uuid>{};
  {
    std::lock_guard guard{mtx_};
    rescue_calls_.emplace_back(queue_name, stale_threshold);
    if (auto err = take_failure("rescue")) {
      r = *err;
    } else {
      for (auto& [id, row] : rows_) {
        if (static_cast<int>(r->size()) >= limit)
          break;
        if (row.status == "pending" && row.message_lost) {
          row.message_lost = false;
          r->push_back(id);
        }
      }
    }
  }
  done(std::move(r));
}

void fake_matching_repository::lose_message(const uuid& id) {
  std::lock_guard guard{mtx_};
  rows_[id].message_lost = true;
}

std::vector<std::pair<std::string, std::chrono::seconds>> fake_matching_repository::rescue_calls() {
  std::lock_guard guard{mtx_};
  return rescue_calls_;
}

void fake_matching_repository::renew_leases(std::vector<lease_ref> refs, std::chrono::seconds lease,
                                            callback<std::vector<lease_ref>> done) {
  result<std::vector<lease_ref>> r = std::vector<lease_ref>{};
  {
    std::lock_guard guard{mtx_};
    renew_batches_.push_back(refs.size());
    if (lease.count() <= 0)
      violations_.push_back("renew_leases with a lease of " + std::to_string(lease.count()) + " s");
    if (auto err = take_failure("renew_leases")) {
      r = *err;
    } else {
      for (auto& ref : refs) {
        auto i = rows_.find(ref.ingestion_id);
        bool live = i != rows_.end() && i->second.status == "in-progress" && i->second.token
                    && *i->second.token == ref.claim_token;
        if (live)
          i->second.lease_live = true;
        else
          r->push_back(ref);
      }
    }
    if (maybe_hold("renew_leases", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::matches_of(uuid document_id,
                                          callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) {
  result<std::pair<std::vector<stored_match>, std::vector<uuid>>> r =
    std::pair<std::vector<stored_match>, std::vector<uuid>>{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("matches_of")) {
      r = *err;
    } else {
      // The edges stored from either side, each pair once (a < b); the cluster is not kept.
      for (auto& [id, row] : rows_)
        for (auto& e : row.edges)
          if (id == document_id || e.other == document_id)
            r->first.push_back(stored_match{std::min(id, e.other), std::max(id, e.other), e.kind,
                                            e.confidence, e.reason});
      r->second.push_back(document_id);
    }
  }
  done(std::move(r));
}

void fake_matching_repository::set_candidates(std::vector<match_document> docs) {
  std::lock_guard guard{mtx_};
  candidates_ = std::move(docs);
}

fake_matching_row fake_matching_repository::row(const uuid& id) {
  std::lock_guard guard{mtx_};
  return rows_.at(id);
}

void fake_matching_repository::steal_claim(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& row = rows_.at(id);
  if (row.status != "in-progress")
    row.matching_attempts++;
  row.status = "in-progress";
  row.token = uuid::v7();
  row.lease_live = true;
}

void fake_matching_repository::hold_by_other(const uuid& id) { steal_claim(id); }

void fake_matching_repository::crash_holder(const uuid& id) {
  std::lock_guard guard{mtx_};
  auto& row = rows_.at(id);
  if (!row.token || !row.lease_live)
    violations_.push_back("crash_holder on a document nobody holds");
  row.lease_live = false;
}

int fake_matching_repository::renew_calls() {
  std::lock_guard guard{mtx_};
  return static_cast<int>(renew_batches_.size());
}

std::vector<size_t> fake_matching_repository::renew_batch_sizes() {
  std::lock_guard guard{mtx_};
  return renew_batches_;
}

std::vector<int> fake_matching_repository::candidate_limits() {
  std::lock_guard guard{mtx_};
  return candidate_limits_;
}

std::vector<std::string> fake_matching_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_matcher ---------------------------------------------------------------------

void fake_matcher::decide(match_document doc, std::vector<match_document> candidates,
                          callback<std::vector<match_edge>> done) {
  result<std::vector<match_edge>> r = std::vector<match_edge>{};
  {
    std::lock_guard guard{mtx_};
    ++calls_;
    std::set<uuid> seen;
    last_candidates_.clear();
    for (auto& c : candidates) {
      if (c.id == doc.id)
        violations_.push_back("decide with the document among its candidates");
      if (!seen.insert(c.id).second)
        violations_.push_back("decide with a candidate twice");
      last_candidates_.push_back(c.id);
    }
    last_doc_ = std::move(doc);
    if (auto err = take_failure("decide"))
      r = *err;
    else if (always_)
      r = *always_;
    else
      r = edges_;
    if (maybe_hold("decide", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matcher::answer(std::vector<match_edge> edges) {
  std::lock_guard guard{mtx_};
  edges_ = std::move(edges);
}

void fake_matcher::fail_always(std::optional<error> err) {
  std::lock_guard guard{mtx_};
  always_ = std::move(err);
}

int fake_matcher::calls() {
  std::lock_guard guard{mtx_};
  return calls_;
}

match_document fake_matcher::last_document() {
  std::lock_guard guard{mtx_};
  return last_doc_;
}

std::vector<uuid> fake_matcher::last_candidates() {
  std::lock_guard guard{mtx_};
  return last_candidates_;
}

std::vector<std::string> fake_matcher::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_outbox ---------------------------------------------------------------------

int64_t fake_outbox::add(std::string destination, std::string body) {
  std::lock_guard guard{mtx_};
  auto id = ++next_id_;
  rows_.emplace(id, fake_outbox_row{outbox_row{id, std::move(destination), std::move(body)}});
  return id;
}

int64_t fake_outbox::add_event(std::string destination, std::string event_id, std::string ordering_key) {
  std::lock_guard guard{mtx_};
  auto id = ++next_id_;
  auto body = R"({"id":")" + event_id + R"("})";
  rows_.emplace(id, fake_outbox_row{outbox_row{id, std::move(destination), std::move(body),
                                               std::move(event_id), std::move(ordering_key)}});
  return id;
}

void fake_outbox::take(int limit, std::chrono::seconds hold, std::vector<std::string> sinks,
                       callback<std::vector<outbox_row>> done) {
  result<std::vector<outbox_row>> r = std::vector<outbox_row>{};
  {
    std::lock_guard guard{mtx_};
    take_limits_.push_back(limit);
    if (limit < 1 || hold.count() <= 0)
      violations_.push_back("take of " + std::to_string(limit) + " rows held " + std::to_string(hold.count())
                            + " s");
    if (auto err = take_failure("take")) {
      r = *err;
    } else {
      // Held before this take (the statement's snapshot): rows taken by this take do not count.
      std::set<int64_t> held_before;
      for (auto& [id, row] : rows_)
        if (row.held)
          held_before.insert(id);
      auto waits = [&](const fake_outbox_row& row) {
        if (row.row.ordering_key.empty())
          return false;
        for (auto& [id, other] : rows_)
          if (id < row.row.id && !other.sent && held_before.count(id) != 0
              && other.row.ordering_key == row.row.ordering_key && other.row.destination == row.row.destination)
            return true;
        return false;
      };
      for (auto& [id, row] : rows_) {  // ids grow with time: oldest first
        if (static_cast<int>(r->size()) >= limit)
          break;
        bool other_sink = row.row.destination.rfind("events:", 0) == 0
                          && std::find(sinks.begin(), sinks.end(), row.row.destination) == sinks.end();
        if (row.sent || row.held || other_sink || waits(row))
          continue;
        row.held = true;
        r->push_back(row.row);
      }
    }
    if (maybe_hold("take", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_outbox::mark_sent(std::vector<int64_t> ids, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (ids.empty())
      violations_.push_back("mark_sent of no rows");
    if (auto err = take_failure("mark_sent")) {
      r = *err;
    } else {
      for (auto id : ids) {
        auto i = rows_.find(id);
        if (i == rows_.end()) {
          violations_.push_back("mark_sent of an unknown row " + std::to_string(id));
          continue;
        }
        if (!i->second.held)
          violations_.push_back("mark_sent of a row not taken: " + std::to_string(id));
        i->second.sent = true;
        i->second.held = false;
      }
    }
    if (maybe_hold("mark_sent", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_outbox::mark_failed(std::vector<int64_t> ids, std::string error, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (ids.empty())
      violations_.push_back("mark_failed of no rows");
    if (error.empty())
      violations_.push_back("mark_failed without an error");
    if (auto err = take_failure("mark_failed")) {
      r = *err;
    } else {
      for (auto id : ids) {
        auto i = rows_.find(id);
        if (i == rows_.end()) {
          violations_.push_back("mark_failed of an unknown row " + std::to_string(id));
          continue;
        }
        if (i->second.sent)
          violations_.push_back("mark_failed of a sent row " + std::to_string(id));
        i->second.failures++;
        i->second.last_error = error;
        i->second.held = false;
      }
    }
    if (maybe_hold("mark_failed", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_outbox::register_sinks(std::vector<std::string> sinks, callback<void> done) {
  {
    std::lock_guard guard{mtx_};
    if (sinks.empty())
      violations_.push_back("register_sinks of no sink");
    sinks_.insert(sinks_.end(), sinks.begin(), sinks.end());
  }
  done(result<void>{});
}

void fake_outbox::emit(std::string type, std::string payload, std::string, callback<void> done) {
  {
    std::lock_guard guard{mtx_};
    if (type.empty() || payload.empty())
      violations_.push_back("emit without a type or payload");
    emitted_.push_back(std::move(type));
  }
  done(result<void>{});
}

void fake_outbox::read_stream(int64_t, int limit, callback<std::vector<stream_event>> done) {
  if (limit < 1) {
    std::lock_guard guard{mtx_};
    violations_.push_back("read_stream of " + std::to_string(limit) + " events");
  }
  done(std::vector<stream_event>{});
}

std::vector<std::string> fake_outbox::registered_sinks() {
  std::lock_guard guard{mtx_};
  return sinks_;
}

std::vector<std::string> fake_outbox::emitted() {
  std::lock_guard guard{mtx_};
  return emitted_;
}

void fake_outbox::prune(std::chrono::seconds retention, callback<int64_t> done) {
  result<int64_t> r = int64_t{0};
  {
    std::lock_guard guard{mtx_};
    prune_calls_.push_back(retention);
    if (retention.count() <= 0)
      violations_.push_back("prune with a retention of " + std::to_string(retention.count()) + " s");
    if (auto err = take_failure("prune")) {
      r = *err;
    } else {
      for (auto i = rows_.begin(); i != rows_.end();) {
        if (i->second.sent && i->second.old) {
          i = rows_.erase(i);
          ++*r;
        } else {
          ++i;
        }
      }
    }
    if (maybe_hold("prune", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_outbox::age_sent(int64_t id) {
  std::lock_guard guard{mtx_};
  rows_.at(id).old = true;
}

void fake_outbox::expire_holds() {
  std::lock_guard guard{mtx_};
  for (auto& [id, row] : rows_)
    row.held = false;
}

std::optional<fake_outbox_row> fake_outbox::row(int64_t id) {
  std::lock_guard guard{mtx_};
  if (auto i = rows_.find(id); i != rows_.end())
    return i->second;
  return std::nullopt;
}

size_t fake_outbox::size() {
  std::lock_guard guard{mtx_};
  return rows_.size();
}

std::vector<int> fake_outbox::take_limits() {
  std::lock_guard guard{mtx_};
  return take_limits_;
}

std::vector<std::chrono::seconds> fake_outbox::prune_calls() {
  std::lock_guard guard{mtx_};
  return prune_calls_;
}

std::vector<std::string> fake_outbox::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_event_sink ----------------------------------------------------------------

void fake_event_sink::deliver(sink_event event, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (event.event_id.empty() || event.body.empty())
      violations_.push_back("deliver of an event without id or body");
    if (auto err = take_failure("deliver")) {
      r = *err;
      ++refused_;
    } else if (down_) {
      r = error::make_transient("events.http_503", "the receiver is down");
      ++refused_;
    } else {
      delivered_.push_back(event.event_id);
    }
    if (maybe_hold("deliver", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_event_sink::set_down(bool down) {
  std::lock_guard guard{mtx_};
  down_ = down;
}

std::vector<std::string> fake_event_sink::delivered() {
  std::lock_guard guard{mtx_};
  return delivered_;
}

int fake_event_sink::refused() {
  std::lock_guard guard{mtx_};
  return refused_;
}

std::vector<std::string> fake_event_sink::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

} // namespace ingestd::test
