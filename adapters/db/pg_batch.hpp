// The batch runner of the repository's coalesced statements: one statement for a batch of items,
// and when PostgreSQL refuses the batch for the values in it, each item alone, so that one bad
// value fails only its own item instead of every job that happened to share its statement.
#pragma once

#include <cstddef>
#include <memory>
#include <numeric>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "adapters/support/coalescing_queue.hpp"
#include "messages/result.hpp"

namespace ingestd::pg {

/// True when PostgreSQL refused a statement for the values it was given: SQLSTATE class 22 (data
/// exception: 22P02 invalid text representation, 22P05 untranslatable character, 22021 bytes that
/// are not UTF-8, ...), class 23 (integrity constraint violation) or class 54 (a value beyond a
/// limit). The same statement without those values can succeed. Connection, lock, timeout and
/// deadlock errors are not data errors.
inline bool is_data_error(const error& err) {
  return err.code.rfind("pg.22", 0) == 0 || err.code.rfind("pg.23", 0) == 0
         || err.code.rfind("pg.54", 0) == 0;
}

/// Runs a batched statement over items 0..count-1. `send(indexes)` runs one statement over the
/// items at `indexes` and answers one result per index, in order, or the statement's error.
/// A batch refused for its values (is_data_error) is sent again item by item (nothing of it was
/// stored: a statement is atomic), so the guilty items fail, each with a permanent error that
/// says so, and the others go through. Any other error of the batch (the connection, a lock
/// timeout) is every item's answer, as for a batch of one: the callers retry later.
template <class Answer, class Send>
std::vector<result<Answer>> run_batch(size_t count, Send&& send) {
  std::vector<size_t> all(count);
  std::iota(all.begin(), all.end(), size_t{0});
  auto answers = send(all);
  if (answers)
    return std::move(*answers);
  if (count < 2 || !is_data_error(answers.error()))
    return std::vector<result<Answer>>(count, answers.error());
  std::vector<result<Answer>> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto alone = send(std::vector<size_t>{i});
    if (alone)
      out.push_back(std::move(alone->front()));
    else if (is_data_error(alone.error()))
      out.push_back(error::make_permanent(
          alone.error().code,
          "the database refused this item's values (the rest of its batch was stored): "
              + alone.error().message));
    else
      out.push_back(alone.error());
  }
  return out;
}

/// Starts a run of a coalesced statement (after `waiting.push` said none is in progress): on a
/// pool thread, takes what waits, hands it to `run(connection&, std::vector<Item>& batch)`, which
/// answers each item's `done`, and starts the next run when more arrived meanwhile. Each item is
/// answered exactly once even when `run` throws: the items it had not answered get
/// task_exception(), and the queue still moves on to the next run.
template <class Item, class Run>
void submit_coalesced(pool& p, coalescing_queue<Item>& waiting, Run run) {
  auto batch = std::make_shared<std::vector<Item>>();
  auto next = [&p, &waiting, run] {
    if (waiting.finish())
      submit_coalesced(p, waiting, run);
  };
  p.submit(
      [batch, &waiting, run, next](connection& conn) mutable {
        *batch = waiting.take();
        for (auto& item : *batch)
          item.done = answer_once(std::move(item.done));
        run(conn, *batch);
        next();
      },
      [batch, next](const error& err) {
        for (auto& item : *batch)
          item.done(err);
        next();
      });
}

} // namespace ingestd::pg
