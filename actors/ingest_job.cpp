// The ingest stage's steps, between the claim and the outcome (the lifecycle around them is
// actors/job.cpp's):
//
//   resume? ──stored transcription──────────────────────────┐
//     └─none─► fetch ─► transcribe ─► store ─► record ───────┤
//                                                            ▼
//                                          extract ─► gate ─► complete
#include "actors/ingest_job.hpp"

#include <algorithm>
#include <cctype>

#include "actors/ingestion_stage_job.hpp"
#include "actors/job.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/support/log.hpp"
#include "config/providers.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

namespace {

/// The stored MIME type, or the one the fetched bytes show (ingestions written before intake
/// recorded it); empty when neither: the transcriber then names the problem.
std::string mime_of(const claimed_ingestion& c, std::string_view bytes) {
  if (!c.mime_type.empty())
    return c.mime_type;
  auto type = detect_file_type(bytes);
  return type ? std::string{type->mime} : std::string{};
}

/// A reprocess's choice of provider (migration 013) from the node's providers `named` into
/// `slot`; an empty name keeps the configured one. A provider this node does not run is a
/// permanent error naming it and the configuration it needs.
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
  return error::make_permanent("provider.unavailable",
                               "the reprocess chose the " + std::string{kind} + " provider " + name
                                 + ", which this node does not run"
                                 + (needs.empty() ? std::string{} : ": it needs " + std::string{needs}));
}

class ingest_job final : public ingestion_stage_job {
public:
  explicit ingest_job(std::shared_ptr<worker_context> ctx, std::string stage = "ingest", bool crash_escalates = false,
                      std::chrono::seconds ocr_timeout = std::chrono::seconds{0})
    : ingestion_stage_job(std::move(ctx), std::move(stage), "its processing", crash_escalates),
      ocr_timeout_(ocr_timeout) {}

  void run(job_handle& job) override {
    take_claim(job);
    if (choose_providers())
      resume_or_fetch();
  }

private:
  std::string id() const { return claim_.ingestion_id.str(); }

  /// The node's configured providers, or those a reprocess chose for this ingestion; false after
  /// failing it when this node does not run a chosen one.
  bool choose_providers() {
    auto& ports = ctx_->ports;
    ocr_ = ports.ocr;
    extractor_ = ports.extract;
    if (claim_.transcription_provider.empty() && claim_.extraction_provider.empty())
      return true;
    job_->begin_local("providers");
    auto chosen = choose(ports.transcribers, claim_.transcription_provider, "transcription", ocr_);
    if (chosen)
      chosen = choose(ports.extractors, claim_.extraction_provider, "extraction", extractor_);
    if (!chosen) {
      job_->step_failed(chosen.error());
      return false;
    }
    auto named = [](const std::string& choice, const std::string& configured) {
      return choice.empty() ? "as configured (" + configured + ")" : choice;
    };
    job_->step_done("chosen", "transcription " + named(claim_.transcription_provider, ocr_->name())
                                + ", extraction " + named(claim_.extraction_provider, extractor_->name()));
    return true;
  }

  /// Crash resume (seed 000): a transcription stored by an earlier attempt is reused.
  void resume_or_fetch() {
    auto key = storage_keys::transcription(id());
    job_->request<std::string>(
      "resume", [&](auto cb) { ctx_->ports.storage->get(key, 64u << 20, std::move(cb)); },
      [this](result<std::string> r) {
        if (!r) {
          if (r.error().code != "storage.not_found" && r.error().transient())
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
          return job_->fail(parsed.error());  // busy node or deadline: not the file's fault
        if (!parsed) {
          // Unreadable: transcribe again and overwrite it.
          job_->step_done("unreadable", parsed.error().describe());
          return fetch();
        }
        text_ = std::move(*parsed);
        job_->step_done("reused");
        if (claim_.transcription_file_path.empty())
          return record_transcription("");
        extract();
      });
  }

  void fetch() {
    job_->request<std::string>(
      "fetch",
      [&](auto cb) { ctx_->ports.storage->get(claim_.file_path, ctx_->settings.max_file_bytes, std::move(cb)); },
      [this](result<std::string> r) {
        if (!r)
          return job_->fail(r.error());
        file_ = std::move(*r);
        job_->step_done("ok", std::to_string(file_.size()) + " bytes");
        transcribe();
      });
  }

  void transcribe() {
    auto mime = mime_of(claim_, file_);
    transcription_request req{std::move(file_), std::move(mime), ctx_->settings.quality_threshold,
                              true, {}, ocr_timeout_};
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
        job_->step_done("ok", (text_.provider.empty() ? ocr_->name() : text_.provider) + ", quality "
                                + std::to_string(text_.quality_score)
                                + (text_.preprocessed ? ", preprocessed" : "")
                                + (text_.native_text ? ", native text" : ""));
        store_transcription();
      });
  }

  void store_transcription() {
    auto key = storage_keys::transcription(id());
    job_->request<void>(
      "store_transcription",
      [&](auto cb) { ctx_->ports.storage->put(key, to_json(text_), "application/json", std::move(cb)); },
      [this, key](result<void> r) {
        if (!r)
          return job_->fail(r.error());
        job_->step_done("ok", key);
        store_preprocessed();
      });
  }

  void store_preprocessed() {
    if (!text_.preprocessed || text_.preprocessed_image.empty())
      return record_transcription("");
    auto ext = text_.preprocessed_ext.empty() ? std::string{"png"} : text_.preprocessed_ext;
    auto key = storage_keys::preprocessed(id(), ext);
    job_->request<void>(
      "store_preprocessed",
      [&](auto cb) {
        ctx_->ports.storage->put(key, std::move(text_.preprocessed_image), "image/" + ext, std::move(cb));
      },
      [this, key](result<void> r) {
        if (!r)
          return job_->fail(r.error());
        job_->step_done("ok", key);
        record_transcription(key);
      });
  }

  void record_transcription(std::string preprocessed_key) {
    transcription_record rec{storage_keys::transcription(id()), std::move(preprocessed_key),
                             text_.quality_score};
    job_->request<void>(
      "record_transcription",
      [&](auto cb) { ctx_->ports.db->record_transcription(job_->lease(), std::move(rec), std::move(cb)); },
      [this](result<void> r) {
        if (!r)
          return job_->fail(r.error());
        job_->step_done("ok");
        extract();
      });
  }

  void extract() {
    if (!has_text(text_.text)) {
      // Seed 004: nothing to read is not a failure to retry; a person looks at the document.
      job_->begin_local("extract");
      job_->step_done("text_unavailable");
      return complete("text_unavailable: the document has no text (no text layer and OCR found none)");
    }
    auto next = [this](result<extraction> r) {
        if (!r)
          return job_->step_failed(r.error());
        fields_ = std::move(*r);
        ctx_->metrics->llm_input_tokens += fields_.input_tokens;
        ctx_->metrics->llm_output_tokens += fields_.output_tokens;
        job_->step_done("ok", extractor_->name() + ", confidence " + fields_.confidence + ", model "
                                + fields_.model);
        gate();
    };
    auto& port = extractor_;
    if (!port->runs_inline())
      return job_->request<extraction>(
        "extract", [&](auto cb) { port->extract_with(text_.text, job_->port_call(), std::move(cb)); },
        std::move(next));
    // Rules that run inline (the local extractor's regular expressions) run on the CPU pool.
    job_->on_cpu<extraction>("extract", [port, text = text_.text] {
      result<extraction> out{error::make_transient("extract.no_answer", "the extractor did not answer")};
      port->extract(text, [&out](result<extraction> r) { out = std::move(r); });
      return out;
    }, std::move(next));
  }

  /// The quality gate runs in the actor: a step without a port call.
  void gate() {
    job_->begin_local("gate");
    auto verdict = ctx_->ports.gate ? ctx_->ports.gate(fields_) : evaluate(fields_);
    if (!verdict.passed) {
      job_->step_done("failed", verdict.reason);
      // Seed 000's table: a retry only where it can change the answer (an LLM), and only once.
      auto retry_can_help = !extractor_->deterministic() && claim_.attempt_count == 0;
      return job_->fail(gate_error(verdict, retry_can_help), fields_.structured_data);
    }
    job_->step_done("ok");
    complete(fields_.review_reason);
  }

  static bool has_text(const std::string& text) {
    return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) == 0; });
  }

  /// Stores the outcome; a `review_reason` sends the document to review with it.
  void complete(std::string review_reason = {}) {
    job_->storing_outcome();
    completion c{job_->lease(), completion_record{fields_.structured_data, true, fields_.input_tokens,
                                                  fields_.output_tokens, fields_.model, std::move(review_reason)}};
    job_->request<std::vector<result<void>>>(
      "complete", [&](auto cb) { ctx_->ports.db->complete({std::move(c)}, std::move(cb)); },
      [this](result<std::vector<result<void>>> r) {
        if (!r)
          return job_->fail(r.error(), fields_.structured_data);
        if (r->empty())
          return job_->fail(error::make_transient("db.no_result", "complete returned nothing"));
        if (auto& one = r->front(); !one)
          return job_->fail(one.error(), fields_.structured_data);
        job_->completed();
      });
  }

  std::chrono::seconds ocr_timeout_{0};
  /// This ingestion's providers (choose_providers).
  std::shared_ptr<transcriber> ocr_;
  std::shared_ptr<extractor> extractor_;
  std::string file_;
  transcription text_;
  extraction fields_;
};

} // namespace

std::shared_ptr<stage> make_ingest_stage(const worker_context& ctx) {
  auto s = std::make_shared<stage>();
  auto& set = ctx.settings;
  s->name = "ingest";
  s->queue = ctx.ports.ingest_queue;
  s->max_in_flight = set.max_in_flight;
  s->max_attempts = set.max_attempts;
  s->retry_backoff = set.retry_backoff;
  s->dead_letter = set.dead_letter_on_final_failure ? dead_letter_policy::always : dead_letter_policy::never;
  s->uses_cpu = true;
  s->audit = true;
  s->renew_leases = [db = ctx.ports.db](std::vector<lease_ref> refs, std::chrono::seconds lease,
                                        callback<std::vector<lease_ref>> done) {
    db->renew_leases(std::move(refs), lease, std::move(done));
  };
  s->cancel_requests = [db = ctx.ports.db](std::vector<uuid> ids, callback<std::vector<uuid>> done) {
    db->cancel_requests(std::move(ids), std::move(done));
  };
  s->make_job = [](const std::shared_ptr<worker_context>& c) { return std::make_unique<ingest_job>(c); };
  return s;
}

std::shared_ptr<stage> make_ingest_class_stage(const worker_context& ctx, const size_class_settings& cls) {
  auto s = make_ingest_stage(ctx);
  s->name = "ingest." + cls.name;
  s->queue = cls.queue;
  s->queue_name = cls.queue_name;
  s->size_class = cls.name;
  s->weight = std::max(cls.weight, 0);
  s->step_timeout = cls.step_timeout;
  s->escalate_to = cls.escalate_to;
  s->class_max_attempts = std::max(cls.class_max_attempts, 1);
  if (cls.max_in_flight > 0)
    s->max_in_flight = cls.max_in_flight;
  s->make_job = [name = s->name, escalates = cls.escalate_to != nullptr,
                 ocr = cls.ocr_timeout](const std::shared_ptr<worker_context>& c) {
    return std::make_unique<ingest_job>(c, name, escalates, ocr);
  };
  return s;
}

} // namespace ingestd
