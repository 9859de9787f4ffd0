// In-memory fakes of the stages' own database ports (ingest, matching, containers) over the
// claimed-work table of work_fakes.cpp: each stage's final write finishes its item there.
#include "tests/support/fakes/work_fakes.hpp"

#include <algorithm>
#include <utility>

#include "messages/error_codes.hpp"

namespace ingestd::test {

// -- fake_ingest_repository ---------------------------------------------------------------

uuid fake_ingest_repository::add(const std::string& file_path, const std::string& mime_type,
                                 int32_t attempts, const std::string& stage,
                                 std::optional<uuid> tenant) {
  fake_ingestion row;
  row.document_id = uuid::v7();
  row.tenant_id = tenant ? *tenant : uuid::v7();
  row.details.file_path = file_path;
  row.details.mime_type = mime_type;
  auto id = uuid::v7();
  work_->add(stage, id, row.document_id, row.tenant_id, attempts);
  std::lock_guard guard{mtx_};
  rows_.emplace(id, std::move(row));
  return id;
}

void fake_ingest_repository::load(uuid id, callback<ingestion_details> done) {
  result<ingestion_details> r = error::make_permanent("db.not_found", "no ingestion " + id.str());
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("load"))
      r = *err;
    else if (auto i = rows_.find(id); i != rows_.end())
      r = i->second.details;
    if (maybe_hold("load", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_ingest_repository::record_transcription(claim_ref ref, transcription_record record,
                                                  callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (record.transcription_file_path.empty())
      violations_.push_back("record_transcription without a transcription");
    if (auto err = take_failure("record_transcription")) {
      r = *err;
    } else if (!work_->holds(ref, "record_transcription")) {
      r = error::make_claim_lost("record_transcription: the claim no longer holds");
    } else {
      auto& row = rows_.at(ref.item);
      row.details.transcription_file_path = record.transcription_file_path;
      row.transcription = std::move(record);
    }
    if (maybe_hold("record_transcription", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_ingest_repository::keep_output(claim_ref ref, std::string structured_data,
                                         callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("keep_output")) {
      r = *err;
    } else if (!work_->holds(ref, "keep_output")) {
      r = error::make_claim_lost("keep_output: the claim no longer holds");
    } else {
      auto& row = rows_.at(ref.item);
      row.structured_data = std::move(structured_data);
      row.valid_structured_data = false;
      row.kept_outputs++;
    }
    if (maybe_hold("keep_output", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_ingest_repository::complete(std::vector<ingest_completion> completions,
                                      callback<std::vector<result<void>>> done) {
  result<std::vector<result<void>>> r = std::vector<result<void>>{};
  {
    std::lock_guard guard{mtx_};
    if (completions.empty())
      violations_.push_back("complete of no completion");
    if (auto err = take_failure("complete")) {
      r = *err; // rolled back: nothing of it is written
    } else {
      for (auto& c : completions) {
        if (rows_.count(c.work.ref.item) == 0) {
          violations_.push_back("complete of an unknown ingestion");
          r->push_back(error::make_permanent("db.not_found", "no ingestion"));
          continue;
        }
        // The result's own write is fenced first: a lost claim writes nothing, not even the
        // trail (the job writes it alone then).
        if (!work_->holds(c.work.ref, "complete")) {
          r->push_back(error::make_claim_lost("complete: the claim no longer holds"));
          continue;
        }
        auto finished = work_->finish(c.work, "complete");
        if (finished) {
          auto& row = rows_.at(c.work.ref.item);
          row.structured_data = c.record.structured_data;
          row.valid_structured_data = c.record.valid_structured_data;
          row.model = c.record.model;
          row.review_reason = c.record.review_reason;
          if (c.record.transcription) {
            row.details.transcription_file_path = c.record.transcription->transcription_file_path;
            row.transcription = c.record.transcription;
          }
          row.completions++;
        }
        r->push_back(std::move(finished));
      }
    }
    if (maybe_hold("complete", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_ingest_repository::choose_providers(const uuid& id, const std::string& transcription,
                                              const std::string& extraction) {
  std::lock_guard guard{mtx_};
  rows_.at(id).details.transcription_provider = transcription;
  rows_.at(id).details.extraction_provider = extraction;
}

fake_ingestion fake_ingest_repository::row(const uuid& id) {
  std::lock_guard guard{mtx_};
  return rows_.at(id);
}

std::vector<std::string> fake_ingest_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_matching_repository -------------------------------------------------------------

uuid fake_matching_repository::add(const uuid& tenant, std::string structured_data,
                                   std::string transcription, bool queued, int32_t attempts) {
  auto id = uuid::v7();
  fake_matching_document doc;
  doc.tenant_id = tenant;
  doc.subject.structured_data = std::move(structured_data);
  doc.subject.file_name = "document-" + id.str() + ".pdf";
  doc.subject.transcription_file_path = std::move(transcription);
  if (queued)
    work_->add("match", id, id, tenant, attempts);
  std::lock_guard guard{mtx_};
  docs_.emplace(id, std::move(doc));
  return id;
}

void fake_matching_repository::load(uuid document_id, callback<matching_subject> done) {
  result<matching_subject> r
      = error::make_permanent("db.not_found", "no document " + document_id.str());
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("load"))
      r = *err;
    else if (auto i = docs_.find(document_id); i != docs_.end())
      r = i->second.subject;
    if (maybe_hold("load", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::store_features(claim_ref ref, match_features features,
                                              callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("store_features"))
      r = *err;
    else if (!work_->holds(ref, "store_features"))
      r = error::make_claim_lost("store_features: the claim no longer holds");
    else
      docs_.at(ref.item).features = std::move(features);
    if (maybe_hold("store_features", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::candidates(uuid tenant_id, uuid document_id, match_features,
                                          int limit, callback<std::vector<match_document>> done) {
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

void fake_matching_repository::write_matches(work_outcome outcome, std::vector<match_edge> edges,
                                             callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    std::set<uuid> others;
    for (auto& e : edges) {
      if (e.other == outcome.ref.item)
        violations_.push_back("write_matches with an edge to the document itself");
      if (!others.insert(e.other).second)
        violations_.push_back("write_matches with two edges to one document");
      if (e.confidence < 0 || e.confidence > 1)
        violations_.push_back("write_matches with a confidence of " + std::to_string(e.confidence));
    }
    if (auto err = take_failure("write_matches")) {
      r = *err; // rolled back: the previous state stays
    } else if (auto i = docs_.find(outcome.ref.item); i == docs_.end()) {
      violations_.push_back("write_matches of an unknown document");
      r = error::make_permanent("db.not_found", "no document");
    } else {
      if (!i->second.features)
        violations_.push_back("write_matches before store_features");
      // Fenced before anything is written: a lost claim rolls everything back, the trail too.
      r = work_->holds(outcome.ref, "write_matches")
              ? work_->finish(outcome, "write_matches")
              : result<void>{error::make_claim_lost("write_matches: the claim no longer holds")};
      if (r) {
        i->second.edges = std::move(edges);
        i->second.writes++;
      }
    }
    if (maybe_hold("write_matches", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_matching_repository::matches_of(
    uuid document_id, callback<std::pair<std::vector<stored_match>, std::vector<uuid>>> done) {
  result<std::pair<std::vector<stored_match>, std::vector<uuid>>> r
      = std::pair<std::vector<stored_match>, std::vector<uuid>>{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("matches_of")) {
      r = *err;
    } else {
      // The edges stored from either side, each pair once (a < b); the cluster is not kept.
      for (auto& [id, doc] : docs_)
        for (auto& e : doc.edges)
          if (id == document_id || e.other == document_id)
            r->first.push_back(stored_match{std::min(id, e.other), std::max(id, e.other), e.kind,
                                            e.confidence, e.reason});
      r->second.push_back(document_id);
    }
    if (maybe_hold("matches_of", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_matching_repository::set_candidates(std::vector<match_document> docs) {
  std::lock_guard guard{mtx_};
  candidates_ = std::move(docs);
}

fake_matching_document fake_matching_repository::document(const uuid& id) {
  std::lock_guard guard{mtx_};
  return docs_.at(id);
}

std::vector<int> fake_matching_repository::candidate_limits() {
  std::lock_guard guard{mtx_};
  return candidate_limits_;
}

std::vector<std::string> fake_matching_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

// -- fake_container_repository --------------------------------------------------------------

uuid fake_container_repository::add(const std::string& file_path, const std::string& mime_type,
                                    int32_t depth) {
  fake_container row;
  row.document_id = uuid::v7();
  row.tenant_id = uuid::v7();
  row.details = container_details{file_path, mime_type, depth};
  auto id = uuid::v7();
  work_->add("unpack", id, row.document_id, row.tenant_id);
  std::lock_guard guard{mtx_};
  rows_.emplace(id, std::move(row));
  return id;
}

void fake_container_repository::load(uuid ingestion_id, callback<container_details> done) {
  result<container_details> r
      = error::make_permanent("db.not_found", "no ingestion " + ingestion_id.str());
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("load"))
      r = *err;
    else if (auto i = rows_.find(ingestion_id); i != rows_.end())
      r = i->second.details;
    if (maybe_hold("load", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_container_repository::complete_unpack(work_outcome outcome, unpack_completion completion,
                                                callback<unpack_counts> done) {
  result<unpack_counts> r = unpack_counts{};
  {
    std::lock_guard guard{mtx_};
    std::set<uuid> ids;
    for (auto& c : completion.children) {
      if (c.stage != "ingest" && c.stage != "unpack")
        violations_.push_back("complete_unpack with a child of stage \"" + c.stage + "\"");
      if (c.queue.empty() || c.file_path.empty() || c.content_hash.empty())
        violations_.push_back("complete_unpack with a child without a queue, file or hash");
      if (!ids.insert(c.ingestion_id).second || !ids.insert(c.document_id).second)
        violations_.push_back("complete_unpack with an id used twice");
    }
    if (auto err = take_failure("complete_unpack")) {
      r = *err; // rolled back: nothing of it is written
    } else if (auto i = rows_.find(outcome.ref.item); i == rows_.end()) {
      violations_.push_back("complete_unpack of an unknown container");
      r = error::make_permanent("db.not_found", "no ingestion");
    } else if (!work_->holds(outcome.ref, "complete_unpack")) {
      // The parent's claim is locked first: a lost one rolls everything back, the trail too.
      r = error::make_claim_lost("complete_unpack: the claim no longer holds");
    } else if (work_->item(outcome.ref.item).cancel_requested) {
      // A cancel request on the parent refuses its children: nothing is written.
      r = error::make_transient(std::string{errc::work_cancelled},
                                "complete_unpack: the container was cancelled");
    } else if (auto finished = work_->finish(outcome, "complete_unpack"); !finished) {
      r = finished.error();
    } else {
      auto& parent = i->second;
      auto priority = work_->item(outcome.ref.item).priority;
      for (auto& c : completion.children) {
        if (!known_.insert({parent.tenant_id, c.content_hash}).second) {
          r->known++;
          continue;
        }
        r->created++;
        work_->add_work(next_work{c.ingestion_id, c.stage, c.document_id, parent.tenant_id,
                                  priority, "small", c.queue, false});
      }
      parent.children = std::move(completion.children);
      parent.body_text = std::move(completion.body_text);
      parent.structured_data = std::move(completion.structured_data);
      parent.unpack_error = std::move(completion.unpack_error);
      parent.completions++;
    }
    if (maybe_hold("complete_unpack", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_container_repository::know(const uuid& tenant, const std::string& content_hash) {
  std::lock_guard guard{mtx_};
  known_.insert({tenant, content_hash});
}

fake_container fake_container_repository::container(const uuid& id) {
  std::lock_guard guard{mtx_};
  return rows_.at(id);
}

std::vector<std::string> fake_container_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

} // namespace ingestd::test
