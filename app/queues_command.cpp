// `ingestd queues create`: creates every queue the configuration names.
// `ingestd queues redrive QUEUE`: moves a dead-letter queue's messages back to their stage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "app/queues.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* queues_usage = R"(usage: ingestd queues create
       ingestd queues redrive QUEUE [--limit N]

  create    creates each enabled stage's queue and its dead-letter queue with the redrive policy
            (queue.backend: SQS or the Postgres queue); safe to run again
  redrive   moves the messages of QUEUE's dead-letter queue back to QUEUE: QUEUE is a stage
            (ingest, ingest.large, unpack, match) or its queue's name. Each message names a work
            item: a failed one starts over (as `ingestd retry` does it), one still in progress gets
            a new message, one that has finished since needs nothing; each of these messages is
            deleted from the dead-letter queue, and every item sent again gets an audit row (step
            "redrive") and a RETRY_REQUESTED event (via "redrive"). A message that names no work
            item of the stage stays in the dead-letter queue and is reported. At most N messages
            (default 10000); safe to run again.
)";

constexpr auto call_timeout = std::chrono::seconds{60};

/// The stage of a queue spec's label ("ingest.large" -> "ingest").
std::string stage_of(const std::string& label) {
  return label.substr(0, label.find('.'));
}

int redrive_command(const config& cfg, const std::string& which, int64_t limit) {
  std::optional<queue_spec> spec;
  std::string known;
  for (const auto& s : configured_queues(cfg)) {
    known += (known.empty() ? "" : ", ") + s.stage + " (" + s.name + ")";
    if (s.stage == which || s.name == which)
      spec = s;
  }
  if (!spec) {
    std::fprintf(stderr,
                 "ingestd queues redrive: no enabled stage or queue named %s; the queues: %s\n",
                 which.c_str(), known.c_str());
    return usage;
  }
  queue_spec dead{spec->stage, spec->dead_letter, "", "", 0};
  std::shared_ptr<curl_engine> engine;
  auto dlq = open_queue(cfg, dead, [&engine] {
    if (!engine)
      engine = std::make_shared<curl_engine>();
    return engine;
  });
  if (!dlq) {
    std::fprintf(stderr, "ingestd queues redrive: %s\n", dlq.error().describe().c_str());
    return failure;
  }
  bool via_outbox = cfg.queue.backend == "sqs";
  pg_intake_repository db{cfg.database.url, via_outbox};
  retry_request req;
  req.stage = stage_of(spec->stage);
  req.queues = {{spec->stage, spec->name}};
  req.via_outbox = via_outbox;
  req.redrive = true;
  req.who = "cli";
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0')
    req.who.append(":").append(user);

  int64_t retried = 0, resent = 0, finished = 0, left = 0;
  for (int64_t seen = 0; seen < limit;) {
    // Messages left in the dead-letter queue stay invisible for the rest of the run.
    auto got = blocking_call<std::vector<queue_message>>(
        call_timeout, "queue.timeout", "the dead-letter queue", [&](auto cb) {
          (*dlq)->receive(static_cast<int>(std::min<int64_t>(10, limit - seen)),
                          std::chrono::seconds{1}, std::chrono::seconds{600}, cb);
        });
    if (!got) {
      std::fprintf(stderr, "ingestd queues redrive: %s: %s\n", spec->dead_letter.c_str(),
                   got.error().describe().c_str());
      return failure;
    }
    if (got->empty())
      break;
    seen += static_cast<int64_t>(got->size());
    std::multimap<std::string, std::string> receipts; // item id -> receipt
    req.ids.clear();
    for (const auto& m : *got) {
      auto id = uuid::parse(m.body);
      if (!id) {
        ++left;
        std::fprintf(stderr, "ingestd queues redrive: message %s names no work item: left in %s\n",
                     m.id.c_str(), spec->dead_letter.c_str());
        continue;
      }
      receipts.emplace(id->str(), m.receipt);
      req.ids.push_back(*id);
    }
    req.limit = static_cast<int>(req.ids.size());
    std::vector<std::string> done;
    if (!req.ids.empty()) {
      auto r = db.retry_failed(req, call_timeout);
      if (!r) {
        std::fprintf(stderr, "ingestd queues redrive: database: %s\n",
                     r.error().describe().c_str());
        return failure;
      }
      for (const auto& item : *r) {
        bool ok = item.sent || (item.status != "failed" && item.status != "in-progress");
        if (!ok)
          continue; // its stage's label has no queue here (another size class): left
        if (!item.sent)
          ++finished;
        else if (item.status == "failed")
          ++retried;
        else
          ++resent;
        auto [from, to] = receipts.equal_range(item.id.str());
        for (auto it = from; it != to; ++it)
          done.push_back(it->second);
        receipts.erase(from, to);
      }
      for (const auto& [id, receipt] : receipts) {
        ++left;
        std::fprintf(stderr, "ingestd queues redrive: %s is no work item of %s here: left in %s\n",
                     id.c_str(), spec->stage.c_str(), spec->dead_letter.c_str());
      }
    }
    if (!done.empty()) {
      auto removed = blocking_call<std::vector<batch_entry_result>>(
          call_timeout, "queue.timeout", "the dead-letter queue",
          [&](auto cb) { (*dlq)->remove(done, cb); });
      if (!removed) {
        std::fprintf(stderr,
                     "ingestd queues redrive: the work is sent again, but deleting from %s failed "
                     "(run again to clear it): %s\n",
                     spec->dead_letter.c_str(), removed.error().describe().c_str());
        return failure;
      }
    }
  }
  std::printf("redrive %s: %lld failed item(s) started over, %lld in progress sent again, %lld "
              "finished (dropped), %lld left in %s\n",
              spec->name.c_str(), static_cast<long long>(retried), static_cast<long long>(resent),
              static_cast<long long>(finished), static_cast<long long>(left),
              spec->dead_letter.c_str());
  return left == 0 ? ok : failure;
}

} // namespace

int queues_command(const arguments& args) {
  const auto& p = args.positional;
  int64_t limit = 10000;
  bool limit_given = false;
  for (size_t i = 0; i < args.raw.size(); ++i) {
    if (args.raw[i] != "--limit")
      continue;
    char* end = nullptr;
    long long n = i + 1 < args.raw.size() ? std::strtoll(args.raw[i + 1].c_str(), &end, 10) : 0;
    if (end == nullptr || *end != '\0' || n < 1) {
      std::fputs("ingestd queues redrive: --limit needs a positive number\n", stderr);
      return usage;
    }
    limit = n;
    limit_given = true;
  }
  bool create = p.size() == 1 && p[0] == "create" && !limit_given;
  bool redrive = p.size() == (limit_given ? 3u : 2u) && p[0] == "redrive";
  if (args.has("--help")) {
    std::fputs(queues_usage, stdout);
    return ok;
  }
  if (!create && !redrive) {
    std::fputs(queues_usage, stderr);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  if (redrive)
    return redrive_command(*cfg, p[1], limit);
  auto made = create_queues(*cfg);
  if (!made) {
    std::fprintf(stderr, "ingestd queues create: %s\n", made.error().describe().c_str());
    return failure;
  }
  for (auto& line : *made)
    std::printf("%s\n", line.c_str());
  return ok;
}

} // namespace ingestd::cli
