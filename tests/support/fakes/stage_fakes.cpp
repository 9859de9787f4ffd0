// In-memory fakes of the matcher, the outbox and the event sinks.
#include "tests/support/fakes/stage_fakes.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace ingestd::test {

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

int64_t fake_outbox::add(std::string destination, std::string body, int32_t priority) {
  std::lock_guard guard{mtx_};
  auto id = ++next_id_;
  outbox_row row{id, std::move(destination), std::move(body)};
  row.priority = priority;
  rows_.emplace(id, fake_outbox_row{std::move(row)});
  return id;
}

int64_t fake_outbox::add_event(std::string destination, std::string event_id,
                               std::string ordering_key) {
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
      violations_.push_back("take of " + std::to_string(limit) + " rows held "
                            + std::to_string(hold.count()) + " s");
    if (auto err = take_failure("take")) {
      r = *err;
    } else {
      // One relay: the keys its previous take locked are let go, and every key is free to it.
      // Keyed rows come whole per key in id order; unkeyed rows only when nobody holds them.
      for (auto& [id, row] : rows_)
        if (!row.row.ordering_key.empty())
          row.held = false;
      for (auto& [id, row] : rows_) { // ids grow with time: oldest first
        if (static_cast<int>(r->size()) >= limit)
          break;
        bool other_sink
            = row.row.destination.rfind("events:", 0) == 0
              && std::find(sinks.begin(), sinks.end(), row.row.destination) == sinks.end();
        if (row.sent || row.dead || row.held || other_sink)
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

void fake_outbox::mark_failed(std::vector<int64_t> ids, std::string error, int max_attempts,
                              callback<int64_t> done) {
  result<int64_t> r = int64_t{0};
  {
    std::lock_guard guard{mtx_};
    if (ids.empty())
      violations_.push_back("mark_failed of no rows");
    if (error.empty())
      violations_.push_back("mark_failed without an error");
    if (max_attempts < 1)
      violations_.push_back("mark_failed with at most " + std::to_string(max_attempts)
                            + " attempts");
    if (auto err = take_failure("mark_failed")) {
      r = *err;
    } else {
      for (auto id : ids) {
        auto i = rows_.find(id);
        if (i == rows_.end()) {
          violations_.push_back("mark_failed of an unknown row " + std::to_string(id));
          continue;
        }
        if (i->second.sent || i->second.dead)
          violations_.push_back("mark_failed of a sent or dead row " + std::to_string(id));
        i->second.failures++;
        i->second.last_error = error;
        i->second.held = false;
        if (i->second.failures >= max_attempts) {
          i->second.dead = true;
          ++*r;
        }
      }
    }
    if (maybe_hold("mark_failed", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_outbox::dead_rows(int limit, callback<std::vector<dead_outbox_row>> done) {
  std::vector<dead_outbox_row> out;
  {
    std::lock_guard guard{mtx_};
    for (auto i = rows_.rbegin(); i != rows_.rend() && static_cast<int>(out.size()) < limit; ++i)
      if (i->second.dead)
        out.push_back(dead_outbox_row{i->first, i->second.row.destination, i->second.row.body,
                                      i->second.failures, i->second.last_error});
  }
  done(std::move(out));
}

void fake_outbox::redeliver(std::vector<int64_t> ids, callback<int64_t> done) {
  int64_t n = 0;
  {
    std::lock_guard guard{mtx_};
    for (auto& [id, row] : rows_)
      if (row.dead && (ids.empty() || std::find(ids.begin(), ids.end(), id) != ids.end())) {
        row.dead = false;
        row.failures = 0;
        ++n;
      }
  }
  done(n);
}

void fake_outbox::figures(callback<outbox_figures> done) {
  outbox_figures f;
  {
    std::lock_guard guard{mtx_};
    for (auto& [id, row] : rows_) {
      f.dead += row.dead ? 1 : 0;
      f.pending += !row.sent && !row.dead ? 1 : 0;
    }
  }
  done(f);
}

void fake_outbox::register_sinks(std::vector<registered_sink> sinks, callback<void> done) {
  {
    std::lock_guard guard{mtx_};
    if (sinks.empty())
      violations_.push_back("register_sinks of no sink");
    for (auto& sink : sinks) {
      if (sink.name.empty())
        violations_.push_back("register_sinks of a sink without a name");
      // Registering again replaces the types.
      auto same = [&](const registered_sink& s) { return s.name == sink.name; };
      sinks_.erase(std::remove_if(sinks_.begin(), sinks_.end(), same), sinks_.end());
      sinks_.push_back(std::move(sink));
    }
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

std::vector<registered_sink> fake_outbox::registered_sinks() {
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
      violations_.push_back("prune with a retention of " + std::to_string(retention.count())
                            + " s");
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
