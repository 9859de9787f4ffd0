// The provider limiter: a first-come-first-served line in front of the HTTP engine, released by
// answers (the concurrency limit) and by timer tasks (the per-minute buckets refilling, and the
// longest wait running out). Every decision is taken under one mutex; requests are sent, and
// callbacks and hooks called, outside it, except `waiting`, which must come before `resumed`.
#include "adapters/http/rate_limited_client.hpp"

#include "messages/error_codes.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace ingestd {

namespace {

using clock = std::chrono::steady_clock;

/// A per-minute limit as a bucket of one second's worth (at least 1), refilled continuously.
struct bucket {
  double per_second = 0; // 0: no limit
  double capacity = 0;
  double level = 0;

  void configure(double per_minute) {
    per_second = per_minute / 60.0;
    capacity = std::max(1.0, per_second);
    level = capacity;
  }
  bool limited() const { return per_second > 0; }
  void refill(double seconds) {
    if (limited())
      level = std::min(capacity, level + seconds * per_second);
  }
  /// A cost over the capacity goes when the bucket is full (and leaves it in debt).
  double needed(double cost) const { return std::min(cost, capacity); }
  bool allows(double cost) const { return !limited() || level >= needed(cost) - 1e-9; }
  /// Seconds until allows(cost).
  double seconds_until(double cost) const {
    return limited() ? std::max(0.0, (needed(cost) - level) / per_second) : 0.0;
  }
};

} // namespace

struct rate_limited_client::state : std::enable_shared_from_this<rate_limited_client::state> {
  state(std::string p, http_client& i, timer& w, provider_limits l, clock_fn n)
      : provider(std::move(p)), inner(i), wake(w), limits(l), now(std::move(n)) {
    if (!now)
      now = [] { return clock::now(); };
    requests.configure(limits.requests_per_minute);
    tokens.configure(static_cast<double>(limits.tokens_per_minute));
    refilled = now();
  }

  struct waiting_request {
    uint64_t id;
    http_request request;
    callback<http_response> done;
    clock::time_point since;
  };

  /// A request taken out of the line (or never in it), to be sent outside the lock.
  struct to_send {
    uint64_t id;
    http_request request;
    callback<http_response> done;
    bool waited;
  };

  /// An answer to give outside the lock.
  struct to_answer {
    callback<http_response> done;
    error err;
  };

  const std::string provider;
  http_client& inner;
  timer& wake;
  const provider_limits limits;
  clock_fn now;

  mutable std::mutex mtx;
  bucket requests;
  bucket tokens;
  clock::time_point refilled;
  std::deque<waiting_request> line;
  /// Sent requests by our id: the engine's id (0 until submit returned), and a cancel that came
  /// before it.
  struct sent_request {
    uint64_t inner_id = 0;
    bool cancel = false;
  };
  std::unordered_map<uint64_t, sent_request> sent;
  uint64_t next_id = 1;
  int in_flight = 0;
  /// When the armed timer task fires (max: none armed).
  clock::time_point timer_due = clock::time_point::max();
  bool closed = false;
  provider_limit_stats totals;

  double cost_of(const http_request& r) const {
    return static_cast<double>(std::max<int64_t>(r.estimated_tokens, 0));
  }

  bool admissible(const http_request& r) const {
    return (limits.max_concurrent <= 0 || in_flight < limits.max_concurrent) && requests.allows(1)
           && (cost_of(r) == 0 || tokens.allows(cost_of(r)));
  }

  void take(clock::time_point at, const http_request& r, bool waited, clock::time_point since) {
    if (requests.limited())
      requests.level -= 1;
    if (tokens.limited())
      tokens.level -= cost_of(r);
    ++in_flight;
    ++totals.sent;
    totals.tokens += std::max<int64_t>(r.estimated_tokens, 0);
    if (waited) {
      ++totals.waited;
      totals.wait_seconds += std::chrono::duration<double>(at - since).count();
    }
  }

  /// Under the lock: refills the buckets, ends the waits that ran out, takes what the limits
  /// allow now, and arms the timer for the next moment something can change.
  void advance(std::vector<to_send>& out, std::vector<to_answer>& expired) {
    auto at = now();
    auto elapsed = std::chrono::duration<double>(at - refilled).count();
    if (elapsed > 0) {
      requests.refill(elapsed);
      tokens.refill(elapsed);
      refilled = at;
    }
    // The line is in arrival order and every request may wait as long: the front's wait ends first.
    while (!line.empty() && at - line.front().since >= limits.max_wait) {
      auto& w = line.front();
      ++totals.busy;
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(limits.max_wait).count();
      expired.push_back(
          {std::move(w.done),
           error::make_transient(errc::provider_busy,
                                 "the request waited " + std::to_string(secs) + " s for the "
                                     + provider + " provider's limits and was not sent")});
      if (w.request.context.resumed)
        w.request.context.resumed();
      line.pop_front();
    }
    while (!line.empty() && admissible(line.front().request)) {
      auto& w = line.front();
      take(at, w.request, true, w.since);
      sent.emplace(w.id, sent_request{});
      out.push_back({w.id, std::move(w.request), std::move(w.done), true});
      line.pop_front();
    }
    if (line.empty())
      return;
    // Next: the front's wait running out, or (when the rate holds it, not the concurrency) the
    // buckets holding enough for it.
    auto due = line.front().since + limits.max_wait;
    bool by_concurrency = limits.max_concurrent > 0 && in_flight >= limits.max_concurrent;
    if (!by_concurrency) {
      auto cost = cost_of(line.front().request);
      auto wait = std::max(requests.seconds_until(1), cost > 0 ? tokens.seconds_until(cost) : 0.0);
      due = std::min(
          due,
          at + std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(wait)));
    }
    if (due >= timer_due)
      return; // an earlier task is armed; it arms the next
    timer_due = due;
    auto delay = std::max(std::chrono::ceil<std::chrono::milliseconds>(due - at),
                          std::chrono::milliseconds{1});
    wake.after(delay, [weak = weak_from_this(), due] {
      if (auto self = weak.lock())
        self->on_timer(due);
    });
  }

  void on_timer(clock::time_point due) {
    std::vector<to_send> out;
    std::vector<to_answer> expired;
    {
      std::lock_guard lock{mtx};
      if (timer_due == due)
        timer_due = clock::time_point::max();
      if (closed)
        return;
      advance(out, expired);
    }
    deliver(std::move(out), std::move(expired));
  }

  void on_answer(uint64_t id) {
    std::vector<to_send> out;
    std::vector<to_answer> expired;
    {
      std::lock_guard lock{mtx};
      --in_flight;
      sent.erase(id);
      if (!closed)
        advance(out, expired);
    }
    deliver(std::move(out), std::move(expired));
  }

  /// Outside the lock: answers the expired, sends the taken.
  void deliver(std::vector<to_send> out, std::vector<to_answer> expired) {
    for (auto& e : expired)
      e.done(std::move(e.err));
    for (auto& s : out)
      send(std::move(s));
  }

  void send(to_send s) {
    if (s.waited && s.request.context.resumed)
      s.request.context.resumed();
    auto id = s.id;
    auto inner_id
        = inner.submit(std::move(s.request), [self = shared_from_this(), id,
                                              done = std::move(s.done)](result<http_response> r) {
            self->on_answer(id);
            done(std::move(r));
          });
    bool cancel = false;
    {
      std::lock_guard lock{mtx};
      if (auto i = sent.find(id); i != sent.end()) { // not answered already
        i->second.inner_id = inner_id;
        cancel = i->second.cancel;
      }
    }
    if (cancel)
      inner.cancel(inner_id);
  }
};

rate_limited_client::rate_limited_client(std::string provider, http_client& inner, timer& wake,
                                         provider_limits limits, clock_fn now)
    : st_(std::make_shared<state>(std::move(provider), inner, wake, limits, std::move(now))) {}

rate_limited_client::~rate_limited_client() {
  std::deque<state::waiting_request> left;
  {
    std::lock_guard lock{st_->mtx};
    st_->closed = true;
    left.swap(st_->line);
  }
  for (auto& w : left) {
    if (w.request.context.resumed)
      w.request.context.resumed();
    w.done(error::make_transient("http.cancelled",
                                 "the " + st_->provider
                                     + " client shut down before the request was sent"));
  }
}

uint64_t rate_limited_client::submit(http_request request, callback<http_response> done) {
  auto& st = *st_;
  std::vector<state::to_send> out;
  std::vector<state::to_answer> expired;
  uint64_t id = 0;
  {
    std::lock_guard lock{st.mtx};
    id = st.next_id++;
    if (st.closed) {
      expired.push_back(
          {std::move(done),
           error::make_transient("http.cancelled", "the " + st.provider + " client is shut down")});
    } else {
      auto at = st.now();
      auto elapsed = std::chrono::duration<double>(at - st.refilled).count();
      if (elapsed > 0) {
        st.requests.refill(elapsed);
        st.tokens.refill(elapsed);
        st.refilled = at;
      }
      if (st.line.empty() && st.admissible(request)) {
        st.take(at, request, false, at);
        st.sent.emplace(id, state::sent_request{});
        out.push_back({id, std::move(request), std::move(done), false});
      } else {
        // Told under the lock, so that it comes before the `resumed` of whoever sends it.
        if (request.context.waiting)
          request.context.waiting();
        st.line.push_back({id, std::move(request), std::move(done), at});
        st.advance(out, expired);
      }
    }
  }
  st.deliver(std::move(out), std::move(expired));
  return id;
}

void rate_limited_client::cancel(uint64_t id) {
  auto& st = *st_;
  std::optional<state::waiting_request> removed;
  uint64_t inner_id = 0;
  {
    std::lock_guard lock{st.mtx};
    auto w = std::find_if(st.line.begin(), st.line.end(), [id](auto& x) { return x.id == id; });
    if (w != st.line.end()) {
      removed = std::move(*w);
      st.line.erase(w);
    } else if (auto s = st.sent.find(id); s != st.sent.end()) {
      if (s->second.inner_id == 0)
        s->second.cancel = true; // sent as soon as submit returns
      else
        inner_id = s->second.inner_id;
    }
  }
  if (removed) {
    if (removed->request.context.resumed)
      removed->request.context.resumed();
    removed->done(
        error::make_transient("http.cancelled", "the request was cancelled before it was sent"));
  } else if (inner_id != 0) {
    st.inner.cancel(inner_id);
  }
}

const std::string& rate_limited_client::provider() const {
  return st_->provider;
}

const provider_limits& rate_limited_client::limits() const {
  return st_->limits;
}

provider_limit_stats rate_limited_client::stats() const {
  std::lock_guard lock{st_->mtx};
  auto s = st_->totals;
  s.waiting = st_->line.size();
  s.in_flight = static_cast<uint64_t>(std::max(st_->in_flight, 0));
  return s;
}

std::string
provider_limits_prometheus(const std::vector<std::shared_ptr<rate_limited_client>>& limiters) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out.append("# HELP ")
        .append(name)
        .append(" ")
        .append(help)
        .append("\n# TYPE ")
        .append(name)
        .append(" ")
        .append(type)
        .append("\n");
    for (auto& l : limiters)
      out.append(name)
          .append("{provider=\"")
          .append(l->provider())
          .append("\"} ")
          .append(value(*l))
          .append("\n");
  };
  auto n = [](auto x) { return std::to_string(x); };
  family("ingestd_provider_requests_waiting", "gauge",
         "Requests waiting for their provider's limits.",
         [&](const rate_limited_client& l) { return n(l.stats().waiting); });
  family("ingestd_provider_requests_in_flight", "gauge",
         "Requests sent to the provider and not answered yet.",
         [&](const rate_limited_client& l) { return n(l.stats().in_flight); });
  family("ingestd_provider_requests_total", "counter", "Requests sent to the provider.",
         [&](const rate_limited_client& l) { return n(l.stats().sent); });
  family("ingestd_provider_limit_waits_total", "counter",
         "Requests that waited for the provider's limits before they were sent.",
         [&](const rate_limited_client& l) { return n(l.stats().waited); });
  family("ingestd_provider_limit_wait_seconds_total", "counter",
         "Time the sent requests waited for the provider's limits, in all (not counted against "
         "step deadlines).",
         [&](const rate_limited_client& l) { return n(l.stats().wait_seconds); });
  family("ingestd_provider_limit_busy_total", "counter",
         "Requests that waited the longest wait for the provider's limits and were not sent "
         "(provider.busy).",
         [&](const rate_limited_client& l) { return n(l.stats().busy); });
  family("ingestd_provider_tokens_total", "counter",
         "Estimated tokens of the requests sent (the tokens-per-minute limit's count).",
         [&](const rate_limited_client& l) { return n(l.stats().tokens); });
  out += "# HELP ingestd_provider_limit The provider's configured limits (0: none).\n"
         "# TYPE ingestd_provider_limit gauge\n";
  for (auto& l : limiters) {
    auto& lim = l->limits();
    auto line = [&](const char* kind, int64_t v) {
      out.append("ingestd_provider_limit{provider=\"")
          .append(l->provider())
          .append("\",kind=\"")
          .append(kind)
          .append("\"} ")
          .append(std::to_string(v))
          .append("\n");
    };
    line("max_concurrent", lim.max_concurrent);
    line("requests_per_minute", lim.requests_per_minute);
    line("tokens_per_minute", lim.tokens_per_minute);
  }
  return out;
}

} // namespace ingestd
