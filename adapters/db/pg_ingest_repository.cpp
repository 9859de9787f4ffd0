// pg_ingest_repository: the ingestion's details after the claim, its transcription, the output
// kept for a reviewer, and its result (with the transcription) written with the work item's
// completion, as prepared
// statements; the frequent calls coalesced.
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/lifecycle_sql.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "adapters/db/pg_batch.hpp"
#include "adapters/db/pg_values.hpp"
#include "adapters/db/pg_work.hpp"

namespace ingestd {

namespace {

using pg::opt_clean;
using pg::opt_text;
using pg::param;
using pg::parse_uuid;

// -- statements ------------------------------------------------------------------------------

constexpr pg::statement load_sql{"ingestd_ingest_load", R"sql(
SELECT r.ord, d.file_path, COALESCE(d.mime_type, ''), COALESCE(i.transcription_file_path, ''),
       COALESCE(i.transcription_provider, ''), COALESCE(i.extraction_provider, '')
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  JOIN ingestion AS i ON i.id = r.id
  JOIN document AS d ON d.id = i.document_id
)sql"};

// Fenced per row by the work item's token: a row whose claim no longer holds is not updated and
// not returned. The work items are locked in id order (as the claim and the completion lock them),
// so that the fence holds until the write commits and two batches over the same items wait for
// each other instead of deadlocking.
constexpr pg::statement transcription_sql{"ingestd_ingest_transcriptions", R"sql(
WITH r AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::numeric[],
                       $6::integer[], $7::text[])
           AS r(id, token, path, preprocessed, score, pages, provider)
), held AS (
  SELECT r.* FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
)
UPDATE ingestion AS i
   SET transcription_file_path = held.path,
       preprocessed_file_path = held.preprocessed,
       transcription_quality_score = held.score,
       transcribed_pages = held.pages,
       transcribed_by = held.provider
  FROM held
 WHERE i.id = held.id
RETURNING i.id, held.token
)sql"};

constexpr pg::statement keep_output_sql{"ingestd_ingest_keep_output", R"sql(
UPDATE ingestion AS i SET structured_data = $3::jsonb, valid_structured_data = false
  FROM work_item AS w
 WHERE i.id = $1 AND w.id = $1 AND w.claim_token = $2 AND w.status = 'in-progress'
)sql"};

// The results of a batch, fenced (the work items locked in id order, as the finish that follows
// in the same transaction does); answers the ingestions updated. A completion with a reason for
// review is never valid as it stands. A completion that carries its transcription (a path in $8)
// records it here, in the same UPDATE; one without keeps what an earlier attempt recorded. The
// ingestion is completed here, with its data, and not again by the work item's trigger when the
// finish completes its item (migration 033): the rows locked here are the ones the finish
// completes, in the same transaction.
constexpr pg::statement result_sql{"ingestd_ingest_results", R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::integer[],
                       $6::integer[], $7::text[], $8::text[], $9::text[], $10::numeric[],
                       $11::integer[], $12::text[])
           AS c(id, token, data, valid, input_tokens, output_tokens, model, transcription,
                preprocessed, score, pages, provider)
), lock AS (
  SELECT c.* FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
)
UPDATE ingestion AS i
   SET structured_data = lock.data::jsonb,
       valid_structured_data = lock.valid,
       extraction_input_tokens = lock.input_tokens,
       extraction_output_tokens = lock.output_tokens,
       extraction_model = lock.model,
       transcription_file_path = COALESCE(lock.transcription, i.transcription_file_path),
       preprocessed_file_path = CASE WHEN lock.transcription IS NULL
                                     THEN i.preprocessed_file_path ELSE lock.preprocessed END,
       transcription_quality_score = CASE WHEN lock.transcription IS NULL
                                          THEN i.transcription_quality_score ELSE lock.score END,
       transcribed_pages = CASE WHEN lock.transcription IS NULL
                                THEN i.transcribed_pages ELSE lock.pages END,
       transcribed_by = CASE WHEN lock.transcription IS NULL
                             THEN i.transcribed_by ELSE lock.provider END,
       status = 'completed',
       completed_at = now(),
       skip_reason = NULL
  FROM lock
 WHERE i.id = lock.id
RETURNING i.id, lock.token
)sql"};

int32_t clamp_i32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, 0, INT32_MAX));
}

/// The ids and tokens a fenced statement returned.
std::set<std::pair<uuid, uuid>> returned_refs(const pg::rows& rows) {
  std::set<std::pair<uuid, uuid>> out;
  for (int r = 0; r < rows.size(); ++r)
    out.emplace(parse_uuid(rows.text(r, 0)), parse_uuid(rows.text(r, 1)));
  return out;
}

} // namespace

struct pg_ingest_repository::queues {
  coalescing_queue<pending_load> loads;
  coalescing_queue<pending_transcription> transcriptions;
  coalescing_queue<pending_completion> completions;
  std::atomic<uint64_t> load_statements{0};
  std::atomic<uint64_t> transcription_statements{0};
  std::atomic<uint64_t> completion_statements{0};
};

pg_ingest_repository::pg_ingest_repository(std::string database_url, const pg_ingest_options& opts)
    : via_outbox_(opts.via_outbox), queues_(std::make_unique<queues>()),
      pool_(std::make_unique<pg::pool>(
          std::move(database_url),
          pg::pool_options{opts.pool_size, "ingestd-ingest", opts.session})) {}

// The pool goes first: it runs what was submitted (which uses the queues) before they go.
pg_ingest_repository::~pg_ingest_repository() {
  pool_.reset();
}

pg_ingest_repository::counters pg_ingest_repository::statements() const {
  return {queues_->load_statements.load(), queues_->transcription_statements.load(),
          queues_->completion_statements.load()};
}

void pg_ingest_repository::load(uuid id, callback<ingestion_details> done) {
  if (queues_->loads.push({id, std::move(done)}))
    pg::submit_coalesced(*pool_, queues_->loads,
                         [this](pg::connection& conn, std::vector<pending_load>& batch) {
                           load_batch(conn, batch);
                         });
}

void pg_ingest_repository::load_batch(pg::connection& conn, std::vector<pending_load>& batch) {
  std::vector<uuid> ids;
  ids.reserve(batch.size());
  for (auto& p : batch)
    ids.push_back(p.id);
  auto res = conn.exec(load_sql, {pg::uuid_array(ids)});
  ++queues_->load_statements;
  if (!res) {
    for (auto& p : batch)
      p.done(res.error());
    return;
  }
  std::vector<std::optional<ingestion_details>> found(batch.size());
  for (int r = 0; r < res->size(); ++r) {
    auto index = res->i64(r, 0) - 1;
    if (index < 0 || index >= static_cast<int64_t>(found.size()))
      continue;
    found[static_cast<size_t>(index)] = ingestion_details{
        res->str(r, 1), res->str(r, 2), res->str(r, 3), res->str(r, 4), res->str(r, 5)};
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (found[i])
      batch[i].done(std::move(*found[i]));
    else
      batch[i].done(error::make_permanent("ingest.unknown", "no ingestion " + batch[i].id.str()));
  }
}

void pg_ingest_repository::record_transcription(claim_ref ref, transcription_record record,
                                                callback<void> done) {
  if (queues_->transcriptions.push({ref, std::move(record), std::move(done)}))
    pg::submit_coalesced(*pool_, queues_->transcriptions,
                         [this](pg::connection& conn, std::vector<pending_transcription>& batch) {
                           transcription_batch(conn, batch);
                         });
}

void pg_ingest_repository::transcription_batch(pg::connection& conn,
                                               std::vector<pending_transcription>& batch) {
  // Paths are storage keys, sent as they are: a key that cleaning changed would name nothing.
  auto answers = pg::run_batch<void>(
      batch.size(), [&](const std::vector<size_t>& items) -> result<std::vector<result<void>>> {
        std::vector<param> ids, tokens, paths, preprocessed, scores, pages, providers;
        for (auto i : items) {
          auto& p = batch[i];
          ids.emplace_back(p.ref.item.str());
          tokens.emplace_back(p.ref.token.str());
          paths.emplace_back(p.record.transcription_file_path);
          preprocessed.push_back(opt_text(p.record.preprocessed_file_path));
          scores.emplace_back(std::to_string(p.record.quality_score));
          pages.emplace_back(std::to_string(p.record.pages));
          providers.push_back(opt_text(p.record.provider));
        }
        auto res = conn.exec(transcription_sql,
                             {pg::array_literal(ids), pg::array_literal(tokens),
                              pg::array_literal(paths), pg::array_literal(preprocessed),
                              pg::array_literal(scores), pg::array_literal(pages),
                              pg::array_literal(providers)});
        ++queues_->transcription_statements;
        if (!res)
          return res.error();
        auto updated = returned_refs(*res);
        std::vector<result<void>> out;
        for (auto i : items) {
          auto& ref = batch[i].ref;
          if (updated.count({ref.item, ref.token}) == 0)
            out.emplace_back(pg::claim_lost(ref, "record_transcription"));
          else
            out.emplace_back();
        }
        return out;
      });
  for (size_t i = 0; i < batch.size(); ++i)
    batch[i].done(std::move(answers[i]));
}

void pg_ingest_repository::keep_output(claim_ref ref, std::string structured_data,
                                       callback<void> done) {
  pool_->call(std::move(done),
              [ref, data = std::move(structured_data)](pg::connection& conn, const auto& done) {
                auto json = clean_json(data);
                if (json.empty() || !pg::valid_json(json))
                  return done(result<void>{}); // nothing a reviewer could read
                auto res = conn.exec(keep_output_sql, {ref.item.str(), ref.token.str(), json});
                if (!res)
                  return done(res.error());
                if (res->affected() == 0)
                  return done(pg::claim_lost(ref, "keep_output"));
                done(result<void>{});
              });
}

void pg_ingest_repository::complete(std::vector<ingest_completion> completions,
                                    callback<std::vector<result<void>>> done) {
  if (completions.empty())
    return done(std::vector<result<void>>{});
  // Each goes into the coalesced batch on its own; the answers are gathered back in order.
  struct gather {
    std::mutex mtx;
    std::vector<result<void>> answers;
    size_t left;
    callback<std::vector<result<void>>> done;
  };
  auto g = std::make_shared<gather>();
  g->answers.resize(completions.size());
  g->left = completions.size();
  g->done = std::move(done);
  for (size_t k = 0; k < completions.size(); ++k) {
    auto answer = [g, k](result<void> r) {
      std::unique_lock lock{g->mtx};
      g->answers[k] = std::move(r);
      if (--g->left > 0)
        return;
      auto answers = std::move(g->answers);
      lock.unlock();
      g->done(std::move(answers));
    };
    if (queues_->completions.push({std::move(completions[k]), std::move(answer)}))
      pg::submit_coalesced(*pool_, queues_->completions,
                           [this](pg::connection& conn, std::vector<pending_completion>& batch) {
                             completion_batch(conn, batch);
                           });
  }
}

void pg_ingest_repository::completion_batch(pg::connection& conn,
                                            std::vector<pending_completion>& batch) {
  std::vector<result<void>> answers(batch.size());
  std::vector<size_t> sent;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& rec = batch[i].completion.record;
    rec.structured_data = clean_json(rec.structured_data);
    if (!rec.structured_data.empty() && !pg::valid_json(rec.structured_data)) {
      answers[i] = error::make_permanent("pg.invalid_json",
                                         "structured_data is not valid JSON for ingestion "
                                             + batch[i].completion.work.ref.item.str());
      continue;
    }
    sent.push_back(i);
  }
  // One transaction per batch: the results, then the items' completion. A batch refused for
  // its values is sent again item by item (pg::run_batch), each in its own transaction.
  auto written = pg::run_batch<void>(sent.size(), [&](const std::vector<size_t>& items) {
    std::vector<const pending_completion*> group;
    group.reserve(items.size());
    for (auto k : items)
      group.push_back(&batch[sent[k]]);
    ++queues_->completion_statements;
    return pg::transaction<std::vector<result<void>>>(
        conn,
        [&](pg::connection& c) -> result<std::vector<result<void>>> {
          std::vector<param> ids, tokens, data, valid, in_tok, out_tok, model;
          std::vector<param> paths, preprocessed, scores, pages, providers;
          for (auto* p : group) {
            auto& rec = p->completion.record;
            ids.emplace_back(p->completion.work.ref.item.str());
            tokens.emplace_back(p->completion.work.ref.token.str());
            data.push_back(opt_text(rec.structured_data));
            valid.emplace_back(rec.valid_structured_data && rec.review_reason.empty() ? "t" : "f");
            in_tok.emplace_back(std::to_string(clamp_i32(rec.input_tokens)));
            out_tok.emplace_back(std::to_string(clamp_i32(rec.output_tokens)));
            model.push_back(opt_clean(rec.model));
            // Paths are storage keys, sent as they are: a key that cleaning changed would name
            // nothing. Without a transcription the row's recorded one stays (NULL path).
            auto* t = rec.transcription ? &*rec.transcription : nullptr;
            paths.push_back(t ? opt_text(t->transcription_file_path) : param{});
            preprocessed.push_back(t ? opt_text(t->preprocessed_file_path) : param{});
            scores.emplace_back(std::to_string(t ? t->quality_score : 0.0));
            pages.emplace_back(std::to_string(t ? t->pages : 0));
            providers.push_back(t ? opt_text(t->provider) : param{});
          }
          auto res = c.exec(result_sql, {pg::array_literal(ids), pg::array_literal(tokens),
                                         pg::array_literal(data), pg::array_literal(valid),
                                         pg::array_literal(in_tok), pg::array_literal(out_tok),
                                         pg::array_literal(model), pg::array_literal(paths),
                                         pg::array_literal(preprocessed), pg::array_literal(scores),
                                         pg::array_literal(pages), pg::array_literal(providers)});
          if (!res)
            return res.error();
          auto updated = returned_refs(*res);
          std::vector<const work_outcome*> finishing;
          std::vector<result<void>> out(group.size());
          std::vector<size_t> finishing_index;
          for (size_t k = 0; k < group.size(); ++k) {
            auto& work = group[k]->completion.work;
            if (updated.count({work.ref.item, work.ref.token}) == 0) {
              out[k] = pg::claim_lost(work.ref, "complete");
              continue;
            }
            finishing.push_back(&work);
            finishing_index.push_back(k);
          }
          if (!finishing.empty()) {
            auto finished = pg::finish_work(c, finishing, via_outbox_);
            if (!finished)
              return finished.error();
            for (size_t j = 0; j < finishing.size(); ++j)
              out[finishing_index[j]] = std::move((*finished)[j]);
          }
          return out;
        },
        [&](pg::connection& c, const result<std::vector<result<void>>>& written,
            const error& lost) {
          // The COMMIT's answer was lost: an item completed is ours; one still in progress under
          // our token was not written.
          std::vector<uuid> ids;
          ids.reserve(group.size());
          for (auto* p : group)
            ids.push_back(p->completion.work.ref.item);
          auto states = pg::reread_items(c, ids);
          if (!states)
            return result<std::vector<result<void>>>{lost};
          std::vector<result<void>> out;
          for (size_t k = 0; k < group.size(); ++k)
            out.push_back(pg::settled((*states)[k], group[k]->completion.work.ref, lost));
          (void)written;
          return result<std::vector<result<void>>>{std::move(out)};
        });
  });
  for (size_t k = 0; k < sent.size(); ++k)
    answers[sent[k]] = std::move(written[k]);
  for (size_t i = 0; i < batch.size(); ++i)
    batch[i].done(std::move(answers[i]));
}

const pg::statement pg::lifecycle_sql::ingest_load = load_sql;
const pg::statement pg::lifecycle_sql::ingest_results = result_sql;

} // namespace ingestd
