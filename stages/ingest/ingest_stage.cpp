// The ingest stage's steps, between the claim and the outcome (the lifecycle around them is
// actors/job.cpp's), and its failure hook for the size classes:
//
//   load ─► providers ─► budget ─► resume? ──stored transcription (parsed on the CPU pool)─┐
//                           └─none─► fetch ─► transcribe ─► store ────────────────────────┤
//                                                                                         ▼
//                                      extract (the local rules on the CPU pool) ─► learned? ─►
//                                      gate ─► calibration? ─► complete
//
// resume looks for the transcription an earlier attempt stored; at the item's first claim there
// is none to look for, and it goes to fetch at once.
// store puts the derived file (a preprocessed scan, an office document's PDF), then the
// transcription: a stored transcription names its derived file, which is then stored too. The
// ingestion records them with the result (complete): one write of the row, not two. An attempt
// that fails or is cancelled records them first (save_progress), so that a reviewer reads what
// was read; one ended otherwise (a crash, a shutdown, the database gone) left them in storage,
// where the next attempt finds them (resume) and records them with its own outcome.
// budget asks the tenants' budgets when a paid provider would read the document: a tenant whose
// month is spent has it read by the local providers (its ingestion says so) or left queued.
// learned applies, with review.learn, what the tenant's reviewers taught about the supplier (its
// name, VAT id, date order, the label of its invoice number, its decimal separator) to the
// extraction before the gate judges it.
// calibration asks, with review.auto_approve set for the tenant, whether reviewers kept enough of
// each field's values at the extractor's confidence to let the document through without a person.
// complete writes the result and the work item's completion in one transaction, with the
// document's matching as the next work when the match stage is on. A gate that refuses the
// extraction keeps it for the reviewer, then fails the attempt.
#include "stages/ingest/ingest_stage.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include "actors/job.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_learning_repository.hpp"
#include "adapters/db/pg_usage_repository.hpp"
#include "adapters/extraction/calibration.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/providers/budget_ledger.hpp"
#include "adapters/providers/provider_set.hpp"
#include "config/providers.hpp"
#include "messages/file_type.hpp"
#include "stages/registry.hpp"

namespace ingestd {

namespace {

/// The stored MIME type, or the one the fetched bytes show (ingestions written before intake
/// recorded it); empty when neither: the transcriber then names the problem.
std::string mime_of(const ingestion_details& d, std::string_view bytes) {
  if (!d.mime_type.empty())
    return d.mime_type;
  auto type = detect_file_type(bytes);
  return type ? std::string{type->mime} : std::string{};
}

/// A reprocess's choice of provider from the node's providers `named` into `slot`; an empty name
/// keeps the configured one. A provider this node does not run is a permanent error naming it
/// and the configuration it needs.
template <class Port>
result<void> choose(const std::map<std::string, std::shared_ptr<Port>, std::less<>>& named,
                    const std::string& name, std::string_view kind, std::shared_ptr<Port>& slot) {
  if (name.empty())
    return {};
  if (auto it = named.find(name); it != named.end()) {
    slot = it->second;
    return {};
  }
  auto needs = provider_requirement(name);
  return error::make_permanent(
      "provider.unavailable",
      "the reprocess chose the " + std::string{kind} + " provider " + name
          + ", which this node does not run"
          + (needs.empty() ? std::string{} : ": it needs " + std::string{needs}));
}

bool has_text(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isspace(c) == 0; });
}

class ingest_job final : public stage_job {
public:
  ingest_job(std::shared_ptr<const ingest_ports> ports,
             std::shared_ptr<const ingest_settings> settings, std::chrono::seconds ocr_timeout)
      : ports_(std::move(ports)), settings_(std::move(settings)), ocr_timeout_(ocr_timeout) {}

  void run(job_handle& job) override {
    job_ = &job;
    load();
  }

  /// The transcription stored but not yet recorded is recorded before the failure or the
  /// cancellation is.
  void save_progress(job_handle& job, std::function<void()> then) override {
    if (!unrecorded_)
      return then();
    auto record = std::move(*unrecorded_);
    unrecorded_.reset();
    job.request<void>(
        "record_transcription",
        [&](auto cb) {
          ports_->db->record_transcription(job.ref(), std::move(record), std::move(cb));
        },
        [&job, then = std::move(then)](result<void> r) {
          if (r)
            job.step_done("ok");
          else
            job.step_done(to_string(r.error().cls), r.error().describe());
          then();
        });
  }

private:
  std::string id() const { return job_->claim().item.str(); }
  std::string tenant() const { return job_->claim().tenant_id.str(); }

  void load() {
    job_->request<ingestion_details>(
        "load", [&](auto cb) { ports_->db->load(job_->claim().item, std::move(cb)); },
        [this](result<ingestion_details> r) {
          if (!r)
            return job_->step_failed(r.error());
          details_ = std::move(*r);
          job_->step_done("ok");
          if (choose_providers())
            check_budget();
        });
  }

  /// The node's configured providers, or those a reprocess chose for this ingestion; false after
  /// failing it when this node does not run a chosen one.
  bool choose_providers() {
    ocr_ = ports_->ocr;
    extractor_ = ports_->extract;
    if (details_.transcription_provider.empty() && details_.extraction_provider.empty())
      return true;
    job_->begin_local("providers");
    auto chosen
        = choose(ports_->transcribers, details_.transcription_provider, "transcription", ocr_);
    if (chosen)
      chosen = choose(ports_->extractors, details_.extraction_provider, "extraction", extractor_);
    if (!chosen) {
      job_->step_failed(chosen.error());
      return false;
    }
    auto named = [](const std::string& choice, const std::string& configured) {
      return choice.empty() ? "as configured (" + configured + ")" : choice;
    };
    job_->step_done(
        "chosen", "transcription " + named(details_.transcription_provider, ocr_->name())
                      + ", extraction " + named(details_.extraction_provider, extractor_->name()));
    return true;
  }

  /// The local providers, when the node runs them (null otherwise).
  template <class Map>
  static typename Map::mapped_type local(const Map& named, std::string_view name) {
    auto it = named.find(name);
    return it == named.end() ? nullptr : it->second;
  }

  /// When a paid provider would read the document and the tenant's month has reached its
  /// budget: the local providers read it instead (downgrade), or the work waits (hold).
  void check_budget() {
    auto local_ocr = local(ports_->transcribers, "tesseract");
    auto local_extract = local(ports_->extractors, "local");
    auto paid = (local_ocr && ocr_ != local_ocr) || (local_extract && extractor_ != local_extract);
    if (!ports_->budget || !paid || !ports_->budget->budget_of(job_->claim().tenant_id))
      return resume_or_fetch();
    job_->request<budget_verdict>(
        "budget", [&](auto cb) { ports_->budget->check(job_->claim().tenant_id, std::move(cb)); },
        [this, local_ocr, local_extract](result<budget_verdict> r) {
          if (!r)
            return job_->step_failed(r.error());
          if (!r->exceeded) {
            job_->step_done("ok");
            return resume_or_fetch();
          }
          if (r->action == budget_action::hold) {
            job_->step_done("held", r->describe());
            ++job_->node().metrics->budget_held;
            auto held = error::make_transient(std::string{errc::budget_held},
                                              r->describe() + ": the work waits");
            held.retry_after_ms = std::chrono::milliseconds{ports_->budget->recheck()}.count();
            return job_->fail(held);
          }
          if (local_ocr)
            ocr_ = local_ocr;
          if (local_extract)
            extractor_ = local_extract;
          budget_note_ = r->describe() + ": read with the local providers";
          ++job_->node().metrics->budget_downgraded;
          job_->step_done("downgraded", budget_note_);
          resume_or_fetch();
        });
  }

  /// Crash resume: a transcription stored by an earlier attempt is reused. The item's first
  /// claim has no earlier attempt to look for (no request to the object store for it).
  void resume_or_fetch() {
    if (job_->claim().first_claim)
      return fetch();
    auto key = storage_keys::transcription(tenant(), id());
    job_->request<std::string>(
        "resume", [&](auto cb) { ports_->storage->get(key, 64u << 20, std::move(cb)); },
        [this](result<std::string> r) {
          if (!r) {
            if (r.error().code != errc::storage_not_found && r.error().transient())
              return job_->fail(r.error());
            job_->step_done("none");
            return fetch();
          }
          job_->step_done("found", std::to_string(r->size()) + " bytes");
          parse_stored(std::move(*r));
        });
  }

  /// The stored transcription's JSON (up to 64 MiB) is parsed on the CPU pool.
  void parse_stored(std::string json) {
    job_->on_cpu<transcription>(
        "parse_transcription", [json = std::move(json)] { return transcription_from_json(json); },
        [this](result<transcription> parsed) {
          if (!parsed && parsed.error().code != bad_transcription_json)
            return job_->fail(parsed.error()); // busy node or deadline: not the file's fault
          if (!parsed) {
            // Unreadable: transcribe again and overwrite it.
            job_->step_done("unreadable", parsed.error().describe());
            return fetch();
          }
          text_ = std::move(*parsed);
          job_->step_done("reused");
          if (details_.transcription_file_path.empty())
            keep_unrecorded(); // stored, and the attempt that stored it ended before recording
          extract();
        });
  }

  void fetch() {
    job_->request<std::string>(
        "fetch",
        [&](auto cb) {
          ports_->storage->get(details_.file_path, settings_->max_file_bytes, std::move(cb));
        },
        [this](result<std::string> r) {
          if (!r && r.error().code == errc::storage_not_found)
            return job_->fail(error::make_permanent(
                std::string{errc::storage_not_found},
                "the original " + details_.file_path
                    + " is not in storage (retention removes originals after "
                      "retention.originals_days): submit the file again to restore it"));
          if (!r)
            return job_->fail(r.error());
          file_ = std::move(*r);
          job_->step_done("ok", std::to_string(file_.size()) + " bytes");
          transcribe();
        });
  }

  void transcribe() {
    auto mime = mime_of(details_, file_);
    transcription_request req{
        std::move(file_), std::move(mime), settings_->quality_threshold, true, {}, ocr_timeout_};
    job_->request<transcription>(
        "transcribe",
        [&](auto cb) {
          // The step's deadline starts when a CPU worker does, and stops while a remote provider's
          // request waits for the provider's limits.
          if (ocr_->waits_for_cpu())
            req.started = job_->wait_for_cpu();
          req.context = job_->port_call();
          ocr_->transcribe(std::move(req), std::move(cb));
        },
        [this](result<transcription> r) {
          if (!r)
            return job_->step_failed(r.error());
          text_ = std::move(*r);
          job_->step_done("ok", (text_.provider.empty() ? ocr_->name() : text_.provider)
                                    + ", quality " + std::to_string(text_.quality_score)
                                    + (text_.preprocessed ? ", preprocessed" : "")
                                    + (text_.derived_ext == "pdf" ? ", converted to PDF" : "")
                                    + (text_.native_text ? ", native text" : ""));
          store_preprocessed();
        });
  }

  /// The derived file the reading came from (a preprocessed scan, or an office document's PDF),
  /// kept as the ingestion's preprocessed file: the desk shows it, retention and erasure remove
  /// it with the transcription. Stored first: a stored transcription's file is there.
  void store_preprocessed() {
    if (text_.derived_file.empty()) {
      text_.derived_ext.clear(); // the stored transcription names no derived file
      return store_transcription();
    }
    if (text_.derived_ext.empty())
      text_.derived_ext = "png"; // an image, unless the transcriber said otherwise
    auto key = preprocessed_key();
    auto type = text_.derived_ext == "pdf" ? std::string{"application/pdf"}
                                           : "image/" + text_.derived_ext;
    job_->request<void>(
        "store_preprocessed",
        [&](auto cb) {
          ports_->storage->put(key, std::move(text_.derived_file), type, std::move(cb));
        },
        [this, key](result<void> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok", key);
          store_transcription();
        });
  }

  void store_transcription() {
    auto key = storage_keys::transcription(tenant(), id());
    job_->request<void>(
        "store_transcription",
        [&](auto cb) {
          ports_->storage->put(key, to_json(text_), "application/json", std::move(cb));
        },
        [this, key](result<void> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok", key);
          keep_unrecorded();
          extract();
        });
  }

  std::string preprocessed_key() const {
    return storage_keys::preprocessed(tenant(), id(), text_.derived_ext);
  }

  /// The stored transcription, to record with the outcome (or before a failure); its derived
  /// file, if it names one, was stored before it.
  void keep_unrecorded() {
    unrecorded_
        = transcription_record{storage_keys::transcription(tenant(), id()),
                               text_.derived_ext.empty() ? std::string{} : preprocessed_key(),
                               text_.quality_score, text_.page_count, text_.provider};
  }

  void extract() {
    if (!has_text(text_.text)) {
      // Nothing to read is not a failure to retry: a person looks at the document.
      job_->begin_local("extract");
      job_->step_done("text_unavailable");
      return complete(
          "text_unavailable: the document has no text (no text layer and OCR found none)");
    }
    auto next = [this](result<extraction> r) {
      if (!r)
        return job_->step_failed(r.error());
      fields_ = std::move(*r);
      job_->node().metrics->llm_input_tokens += fields_.input_tokens;
      job_->node().metrics->llm_output_tokens += fields_.output_tokens;
      job_->step_done("ok", extractor_->name() + ", confidence " + fields_.confidence + ", model "
                                + fields_.model);
      if (ports_->knowledge)
        return learned();
      gate();
    };
    auto& port = extractor_;
    if (!port->runs_inline())
      return job_->request<extraction>(
          "extract",
          [&](auto cb) { port->extract_with(text_.text, job_->port_call(), std::move(cb)); },
          std::move(next));
    // Rules that run inline (the local extractor's regular expressions) run on the CPU pool.
    job_->on_cpu<extraction>(
        "extract",
        [port, text = text_.text] {
          result<extraction> out{
              error::make_transient("extract.no_answer", "the extractor did not answer")};
          port->extract(text, [&out](result<extraction> r) { out = std::move(r); });
          return out;
        },
        std::move(next));
  }

  /// review.learn: what the tenant's reviewers taught about this supplier corrects the
  /// extraction before the gate judges it.
  void learned() {
    job_->request<std::vector<supplier_fact>>(
        "learned", [&](auto cb) { ports_->knowledge->get(job_->claim().tenant_id, std::move(cb)); },
        [this](result<std::vector<supplier_fact>> r) {
          if (!r)
            return job_->fail(r.error());
          auto applied = apply_knowledge(*r, fields_, text_.text);
          job_->step_done(applied.empty() ? "none" : "applied", learned_detail(applied));
          gate();
        });
  }

  /// The quality gate runs in the actor: a step without a port call.
  void gate() {
    job_->begin_local("gate");
    auto verdict = ports_->gate ? ports_->gate(fields_) : evaluate(fields_);
    if (!verdict.passed) {
      job_->step_done("failed", verdict.reason);
      // A retry only where it can change the answer (an LLM), and only once.
      auto retry_can_help = !extractor_->deterministic() && job_->claim().attempt_count == 0;
      return keep_output(gate_error(verdict, retry_can_help));
    }
    auto reason = fields_.review_reason;
    bool sampled = reason.empty()
                   && sampled_for_review(job_->claim().document_id, settings_->review_sample_rate);
    job_->step_done(sampled ? "sampled" : "ok");
    auto& calibration = ports_->calibration;
    if (!reason.empty() || sampled || !calibration
        || calibration->threshold_of(job_->claim().tenant_id) <= 0)
      return complete(sampled ? sampled_reason : reason);
    calibrate();
  }

  /// review.auto_approve: the tenant's reviewers decide, field by field, whether the extractor's
  /// confidence is enough to let the document through without a person.
  void calibrate() {
    job_->request<calibration_verdict>(
        "calibration",
        [&](auto cb) {
          ports_->calibration->check(job_->claim().tenant_id, fields_, std::move(cb));
        },
        [this](result<calibration_verdict> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done(r->through ? "through" : "review", r->reason);
          complete(r->reason);
        });
  }

  /// The refused extraction stays for the reviewer, then the attempt fails with `err`.
  void keep_output(const error& err) {
    job_->request<void>(
        "keep_output",
        [&](auto cb) {
          ports_->db->keep_output(job_->ref(), fields_.structured_data, std::move(cb));
        },
        [this, err](result<void> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok");
          job_->fail(err);
        });
  }

  /// Stores the outcome; a `review_reason` sends the document to review with it.
  void complete(std::string review_reason = {}) {
    job_->storing_outcome();
    job_->request<std::vector<result<void>>>(
        "complete",
        [&](auto cb) {
          auto& claim = job_->claim();
          std::vector<next_work> next;
          if (!settings_->match_queue.empty())
            next.push_back(next_work{claim.document_id, "match", claim.document_id, claim.tenant_id,
                                     claim.priority, "small", settings_->match_queue, true});
          ingest_completion c{job_->outcome(std::move(next)),
                              completion_record{fields_.structured_data, true, fields_.input_tokens,
                                                fields_.output_tokens, fields_.model, review_reason,
                                                unrecorded_}};
          c.work.remark = review_reason.empty() || budget_note_.empty()
                              ? review_reason + budget_note_
                              : review_reason + "; " + budget_note_;
          std::vector<ingest_completion> batch; // not {c}: a list's elements are copied
          batch.push_back(std::move(c));
          ports_->db->complete(std::move(batch), std::move(cb));
        },
        [this](result<std::vector<result<void>>> r) {
          if (r && r->empty())
            r = error::make_transient(std::string{errc::db_no_result}, "complete answered nothing");
          if (r && !r->front())
            r = r->front().error();
          if (!r)
            return job_->fail(r.error());
          job_->completed();
        });
  }

  std::shared_ptr<const ingest_ports> ports_;
  std::shared_ptr<const ingest_settings> settings_;
  std::chrono::seconds ocr_timeout_{0};
  job_handle* job_ = nullptr;
  ingestion_details details_;
  /// This ingestion's providers (choose_providers).
  std::shared_ptr<transcriber> ocr_;
  std::shared_ptr<extractor> extractor_;
  /// Why the local providers read it (the tenant's budget is spent); empty: as chosen.
  std::string budget_note_;
  std::string file_;
  transcription text_;
  /// The transcription stored and not yet recorded on the ingestion.
  std::optional<transcription_record> unrecorded_;
  extraction fields_;
};

/// The size classes' failure rule: attempts count per class; the small class moves a timeout at
/// once (the document is larger than it looked) and a transient failure after class_max_attempts
/// of them to the large class; the large class fails for review after its class_max_attempts,
/// a timeout (even the OCR's, permanent elsewhere) being one of them.
void size_class_rule(const ingest_class& cls, failure_plan& plan) {
  auto& rec = plan.record;
  auto in_class = plan.claim.attempt_count + 1 - plan.claim.class_attempts_base;
  auto timed_out = rec.error.code == errc::step_timeout || rec.error.code == errc::ocr_deadline;
  if (!cls.move_to_queue.empty()) {
    rec.max_attempts = std::numeric_limits<int32_t>::max();
    if (timed_out || (!rec.error.permanent() && in_class >= cls.class_max_attempts)) {
      rec.move = work_move{"large", cls.move_to_queue};
      plan.delay = std::chrono::seconds{0};
    }
    return;
  }
  rec.max_attempts = plan.claim.class_attempts_base + cls.class_max_attempts;
  if (timed_out)
    rec.error.cls = error_class::transient;
}

/// review.auto_approve's calibration, or null when no tenant has a threshold.
std::shared_ptr<confidence_calibration>
make_calibration(const config& cfg, std::shared_ptr<learning_repository> learning) {
  confidence_calibration::settings s;
  s.threshold = cfg.review.auto_approve;
  // The configuration was checked when it was loaded: an entry that does not parse is not here.
  auto listed = tenant_auto_approve_of(cfg.review.tenant_auto_approve);
  for (auto& t : listed ? *listed : std::vector<tenant_threshold>{})
    if (auto id = uuid::parse(t.tenant))
      s.tenants[*id] = t.threshold;
  s.min_reviews = cfg.review.calibration_min_reviews;
  s.recheck = std::chrono::seconds{std::max(cfg.review.learning_recheck_seconds, 1)};
  return confidence_calibration::make(std::move(s), std::move(learning));
}

/// review.learn's tenant facts about their suppliers, or null when it is off.
std::shared_ptr<const tenant_cache<std::vector<supplier_fact>>>
make_knowledge(const config& cfg, std::shared_ptr<learning_repository> learning) {
  if (!cfg.review.learn)
    return nullptr;
  return std::make_shared<const tenant_cache<std::vector<supplier_fact>>>(
      std::chrono::seconds{std::max(cfg.review.learning_recheck_seconds, 1)},
      [db = std::move(learning)](const uuid& tenant, callback<std::vector<supplier_fact>> done) {
        db->facts_of(tenant, std::move(done));
      });
}

} // namespace

std::shared_ptr<stage> make_ingest_stage(std::shared_ptr<const ingest_ports> ports,
                                         const ingest_settings& settings, const ingest_class& cls) {
  auto s = std::make_shared<stage>();
  s->name = "ingest";
  s->label = cls.name.empty() ? "ingest" : "ingest." + cls.name;
  s->item_log_key = "ingestion_id";
  s->queue = cls.queue;
  s->queue_name = cls.queue_name;
  s->max_in_flight = cls.max_in_flight > 0 ? cls.max_in_flight : settings.max_in_flight;
  s->max_attempts = settings.max_attempts;
  s->retry_backoff = settings.retry_backoff;
  s->dead_letter = settings.dead_letter ? dead_letter_policy::always : dead_letter_policy::never;
  s->uses_cpu = true;
  s->audit = true;
  s->skips_known_files = true;
  s->cancellable = true;
  s->size_class = cls.name;
  s->weight = std::max(cls.weight, 0);
  s->step_timeout = cls.step_timeout;
  if (!cls.name.empty()) {
    if (!cls.move_to_queue.empty())
      s->crash_move = work_move{"large", cls.move_to_queue};
    s->on_failure = [cls](failure_plan& plan) { size_class_rule(cls, plan); };
  }
  auto held = std::make_shared<const ingest_settings>(settings);
  s->make_job = [ports = std::move(ports), held, ocr = cls.ocr_timeout] {
    return std::make_unique<ingest_job>(ports, held, ocr);
  };
  return s;
}

bool sampled_for_review(const uuid& document_id, double rate) {
  if (rate <= 0)
    return false;
  if (rate >= 1)
    return true;
  // FNV-1a of the id, its top 53 bits a uniform fraction in [0, 1).
  uint64_t h = 1469598103934665603ULL;
  for (char c : document_id.str()) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<double>(h >> 11) / 9007199254740992.0 < rate;
}

std::vector<queue_spec> ingest_queues(const config& cfg) {
  std::vector<queue_spec> out{{"ingest", cfg.queue.name, cfg.queue.url, cfg.queue.dead_letter_name,
                               cfg.queue.max_receive_count}};
  if (cfg.classes.enabled)
    out.push_back({"ingest.large", cfg.classes.large_queue_name, cfg.classes.large_queue_url,
                   cfg.classes.large_dead_letter_name, cfg.queue.max_receive_count});
  return out;
}

result<std::vector<std::shared_ptr<const stage>>> ingest_stages(stage_env& env) {
  auto& cfg = env.cfg;
  auto ports = std::make_shared<ingest_ports>();
  ports->db = std::make_shared<pg_ingest_repository>(
      cfg.database.url, pg_ingest_options{env.pool_size, env.session, env.via_outbox});
  ports->storage = env.storage;
  auto transcribers = env.providers.transcribers();
  if (!transcribers)
    return transcribers.error();
  ports->transcribers = std::move(*transcribers);
  ports->ocr = ports->transcribers.at(cfg.transcription.provider);
  ports->extractors = env.providers.extractors();
  ports->extract = ports->extractors.at(cfg.extraction.provider);
  ports->budget = budget_ledger::make(
      cfg, [&] { return std::make_shared<pg_usage_repository>(cfg.database.url, env.session); });
  // One connection for what the stage reads of the tenants' reviews, made only when used.
  std::shared_ptr<learning_repository> learning;
  if (cfg.review.learn || cfg.review.auto_approve > 0 || !cfg.review.tenant_auto_approve.empty())
    learning = std::make_shared<pg_learning_repository>(cfg.database.url, env.session);
  ports->calibration = make_calibration(cfg, learning);
  ports->knowledge = make_knowledge(cfg, learning);

  ingest_settings settings;
  settings.max_in_flight = cfg.stages.ingest_max_in_flight;
  settings.max_attempts = cfg.worker.max_retry_attempts;
  settings.retry_backoff.clear();
  for (auto x : cfg.worker.retry_backoff_seconds)
    settings.retry_backoff.emplace_back(x);
  settings.dead_letter = cfg.queue.max_receive_count > 0;
  settings.quality_threshold = cfg.transcription.ocr_quality_threshold;
  settings.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
  settings.review_sample_rate = cfg.review.sample_rate;
  // The next stage: a completed ingestion's document is matched.
  if (stage_enabled(cfg, "match"))
    settings.match_queue = cfg.matching.queue_name;

  auto specs = ingest_queues(cfg);
  std::vector<std::shared_ptr<const stage>> out;
  auto add = [&](ingest_class cls, const queue_spec& spec) -> result<void> {
    auto q = env.open_queue(spec);
    if (!q)
      return q.error();
    cls.queue = std::move(*q);
    cls.queue_name = spec.name;
    out.push_back(make_ingest_stage(ports, settings, cls));
    return {};
  };
  if (!cfg.classes.enabled) {
    if (auto added = add(ingest_class{}, specs[0]); !added)
      return added.error();
    return out;
  }
  for (auto& name : stage_list(cfg.worker.classes)) {
    ingest_class cls;
    cls.name = name;
    cls.max_in_flight = cfg.stages.ingest_max_in_flight;
    if (name == "small") {
      cls.weight = cfg.classes.small_weight;
      cls.step_timeout = std::chrono::seconds{cfg.worker.step_timeout_seconds};
      cls.ocr_timeout = std::chrono::seconds{cfg.transcription.timeout_seconds};
      cls.move_to_queue = cfg.classes.large_queue_name;
      cls.class_max_attempts = std::max(cfg.classes.small_max_attempts, 1);
    } else {
      cls.weight = cfg.classes.large_weight;
      cls.step_timeout = std::chrono::seconds{cfg.classes.large_step_timeout_seconds};
      cls.ocr_timeout = std::chrono::seconds{cfg.classes.large_ocr_timeout_seconds};
      cls.class_max_attempts = std::max(cfg.classes.large_max_attempts, 1);
    }
    if (auto added = add(cls, specs[name == "small" ? 0 : 1]); !added)
      return added.error();
  }
  return out;
}

} // namespace ingestd
