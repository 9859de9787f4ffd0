// The match stage's steps, between the claim (the document's work item) and the outcome (the
// lifecycle around them is actors/job.cpp's):
//
//   load (the document's data and latest transcription) ─► text (read, parsed on the CPU pool)
//   ─► features (computed on the CPU pool, then stored: pre-processing, safe to redo)
//   ─► candidates (indexed, within the tenant) ─► decide (the matcher: rules on the CPU pool, or
//   the LLM with its in-process retries) ─► write (one transaction: the document's edges
//   replaced, the affected clusters recomputed, the work item completed)
//
// Failures take the shared path: transient ones back off by deliveries (5 min, 30 min) and the
// third fails the matching and leaves the message to the queue's dead-letter redrive; a
// permanent one fails at once and deletes the message.
#include "stages/match/match_stage.hpp"

#include "actors/job.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/matching/features.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/providers/provider_set.hpp"
#include "stages/registry.hpp"

namespace ingestd {

namespace {

class match_job final : public stage_job {
public:
  match_job(std::shared_ptr<const match_ports> ports, int candidate_limit)
      : ports_(std::move(ports)), candidate_limit_(candidate_limit) {}

  void run(job_handle& job) override {
    job_ = &job;
    load();
  }

private:
  void load() {
    job_->request<matching_subject>(
        "load", [&](auto cb) { ports_->db->load(job_->claim().document_id, std::move(cb)); },
        [this](result<matching_subject> r) {
          if (!r)
            return job_->step_failed(r.error());
          subject_ = std::move(*r);
          job_->step_done("ok");
          read_text();
        });
  }

  /// The transcription of the document's latest completed ingestion: the searchable text.
  void read_text() {
    if (subject_.transcription_file_path.empty())
      return describe({});
    job_->request<std::string>(
        "text",
        [&](auto cb) {
          ports_->storage->get(subject_.transcription_file_path, 64u << 20, std::move(cb));
        },
        [this](result<std::string> r) {
          if (!r) {
            if (r.error().code != errc::storage_not_found)
              return job_->fail(r.error());
            job_->step_done("none", "transcription not found; matching on the extracted fields");
            return describe({});
          }
          job_->step_done("ok", std::to_string(r->size()) + " bytes");
          describe(std::move(*r));
        });
  }

  /// The normalized values, computed on the CPU pool from the stored transcription and the
  /// extracted fields, then stored outside the write transaction.
  void describe(std::string transcription_json) {
    job_->on_cpu<match_features>(
        "features",
        [json = std::move(transcription_json),
         data = subject_.structured_data]() -> result<match_features> {
          std::string text;
          if (!json.empty())
            if (auto parsed = transcription_from_json(json))
              text = std::move(parsed->text);
          return describe_for_matching(data, text);
        },
        [this](result<match_features> r) {
          if (!r)
            return job_->step_failed(r.error());
          doc_.id = job_->claim().document_id;
          doc_.tenant_id = job_->claim().tenant_id;
          doc_.file_name = subject_.file_name;
          doc_.structured_data = subject_.structured_data;
          doc_.features = std::move(*r);
          job_->step_done("ok",
                          doc_.features.kind
                              + (doc_.features.number.empty() ? "" : " " + doc_.features.number));
          store_features();
        });
  }

  void store_features() {
    job_->request<void>(
        "store_features",
        [&](auto cb) { ports_->db->store_features(job_->ref(), doc_.features, std::move(cb)); },
        [this](result<void> r) {
          if (!r)
            return job_->step_failed(r.error());
          job_->step_done("ok");
          find_candidates();
        });
  }

  void find_candidates() {
    job_->request<std::vector<match_document>>(
        "candidates",
        [&](auto cb) {
          ports_->db->candidates(doc_.tenant_id, doc_.id, doc_.features, candidate_limit_,
                                 std::move(cb));
        },
        [this](result<std::vector<match_document>> r) {
          if (!r)
            return job_->step_failed(r.error());
          job_->step_done("ok", std::to_string(r->size()) + " candidates");
          decide(std::move(*r));
        });
  }

  void decide(std::vector<match_document> candidates) {
    // No silent degradation: a decision not made is an error, never "no match".
    auto next = [this](result<std::vector<match_edge>> r) {
      if (!r)
        return job_->step_failed(r.error());
      job_->step_done("ok", std::to_string(r->size()) + " edges");
      write(std::move(*r));
    };
    auto& port = ports_->match;
    if (!port->runs_inline())
      return job_->request<std::vector<match_edge>>(
          "decide",
          [&](auto cb) {
            port->decide_with(doc_, std::move(candidates), job_->port_call(), std::move(cb));
          },
          std::move(next));
    // Rules that decide inline (the local matcher) run on the CPU pool.
    job_->on_cpu<std::vector<match_edge>>(
        "decide",
        [port, doc = doc_, candidates = std::move(candidates)]() mutable {
          result<std::vector<match_edge>> out{
              error::make_transient("match.no_answer", "the matcher did not answer")};
          port->decide(std::move(doc), std::move(candidates),
                       [&out](result<std::vector<match_edge>> r) { out = std::move(r); });
          return out;
        },
        std::move(next));
  }

  void write(std::vector<match_edge> edges) {
    job_->storing_outcome();
    job_->request<void>(
        "write",
        [&](auto cb) {
          ports_->db->write_matches(job_->outcome(), std::move(edges), std::move(cb));
        },
        [this](result<void> r) {
          if (!r)
            return job_->fail(r.error());
          job_->completed();
        });
  }

  std::shared_ptr<const match_ports> ports_;
  int candidate_limit_;
  job_handle* job_ = nullptr;
  matching_subject subject_;
  match_document doc_;
};

} // namespace

std::shared_ptr<stage> make_match_stage(std::shared_ptr<const match_ports> ports,
                                        const match_settings& settings) {
  auto s = std::make_shared<stage>();
  s->name = "match";
  s->label = "match";
  s->item_log_key = "document_id";
  s->queue = settings.queue;
  s->queue_name = settings.queue_name;
  s->max_in_flight = settings.max_in_flight;
  s->max_attempts = settings.max_attempts;
  s->retry_backoff = settings.retry_backoff;
  s->dead_letter = dead_letter_policy::exhausted;
  s->uses_cpu = false;
  s->audit = false;
  s->make_job = [ports = std::move(ports), limit = settings.candidate_limit] {
    return std::make_unique<match_job>(ports, limit);
  };
  return s;
}

std::vector<queue_spec> match_queues(const config& cfg) {
  auto& m = cfg.matching;
  return {{"match", m.queue_name, m.queue_url, m.dead_letter_name, m.max_receive_count}};
}

result<std::vector<std::shared_ptr<const stage>>> match_stages(stage_env& env) {
  auto& cfg = env.cfg;
  auto spec = match_queues(cfg).front();
  auto q = env.open_queue(spec);
  if (!q)
    return q.error();
  auto ports = std::make_shared<match_ports>();
  // Its own connections: a write phase waiting for its tenant's lock never holds up ingestion.
  ports->db = std::make_shared<pg_matching_repository>(
      cfg.database.url, pg_matching_options{env.pool_size, env.session, env.via_outbox});
  ports->storage = env.storage;
  ports->match = env.providers.matcher();
  match_settings settings;
  settings.queue = std::move(*q);
  settings.queue_name = spec.name;
  settings.max_in_flight = cfg.matching.max_in_flight;
  settings.max_attempts = cfg.matching.max_receive_count;
  settings.retry_backoff.clear();
  for (auto x : cfg.matching.retry_backoff_seconds)
    settings.retry_backoff.emplace_back(x);
  settings.candidate_limit = cfg.matching.candidate_limit;
  return std::vector<std::shared_ptr<const stage>>{make_match_stage(std::move(ports), settings)};
}

} // namespace ingestd
