// Measures pg_matching_repository on synthetic tenants (load_synthetic_match_documents): candidate
// retrieval p50/p95/p99 at each tenant size, write_matches/s with 1 and 4 writers of one tenant
// (serialised by the tenant's lock; each write completes the document's match work item), and the
// database side of a matching job (the claim of its work item through pg_work_repository,
// store_features, candidates, write_matches) per second; the match decision is not included.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

template <class T, class Start>
T call(Start&& start, const char* what) {
  std::promise<result<T>> promise;
  auto future = promise.get_future();
  start([&](result<T> r) { promise.set_value(std::move(r)); });
  auto r = future.get();
  if (!r) {
    std::fprintf(stderr, "%s failed: %s\n", what, r.error().describe().c_str());
    std::exit(1);
  }
  if constexpr (!std::is_void_v<T>)
    return std::move(*r);
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

template <class T>
T must(result<T> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s failed: %s\n", what, r.error().describe().c_str());
    std::exit(1);
  }
  return std::move(*r);
}

/// Candidate retrieval for each probe, one after another: latencies in ms.
void retrieval(pg_matching_repository& repo, uuid tenant, const std::vector<match_document>& probes,
               int64_t size) {
  // Warm the prepared statement and the cache a little, as a running worker would have.
  for (size_t i = 0; i < std::min<size_t>(20, probes.size()); ++i)
    (void)call<std::vector<match_document>>(
        [&](auto cb) { repo.candidates(tenant, probes[i].id, probes[i].features, 20, cb); },
        "candidates");
  std::vector<double> ms;
  size_t returned = 0;
  auto t0 = clock_type::now();
  for (auto& p : probes) {
    auto t = clock_type::now();
    auto found = call<std::vector<match_document>>(
        [&](auto cb) { repo.candidates(tenant, p.id, p.features, 20, cb); }, "candidates");
    ms.push_back(seconds_since(t) * 1000);
    returned += found.size();
  }
  auto total = seconds_since(t0);
  std::printf("candidates  %7lld docs in tenant: p50 %6.2f ms  p95 %6.2f ms  p99 %6.2f ms  "
              "max %6.2f ms  (%zu probes, limit 20, %.1f found on average, %.0f calls/s)\n",
              static_cast<long long>(size), percentile(ms, 0.5), percentile(ms, 0.95),
              percentile(ms, 0.99), *std::max_element(ms.begin(), ms.end()), probes.size(),
              static_cast<double>(returned) / static_cast<double>(probes.size()),
              static_cast<double>(probes.size()) / total);
  std::fflush(stdout);
}

struct prepared {
  claim_ref ref;
  std::vector<match_edge> edges;
};

/// Claims the document's match work item as the match stage's job does; nullopt when not granted.
std::optional<claim_ref> claim_match(work_repository& work, const uuid& document) {
  claim_request req;
  req.item = document;
  req.token = uuid::v7();
  req.stage = "match";
  req.max_attempts = 3;
  auto answers = call<std::vector<claim_answer>>(
      [&](auto cb) { work.claim({req}, "bench", 600s, cb); }, "claim");
  if (answers.size() != 1 || answers[0].outcome != claim_outcome::granted)
    return std::nullopt;
  return answers[0].work.ref();
}

/// Claims each document and finds its best candidate (the edge to write); not timed.
std::vector<prepared> prepare(pg_matching_repository& repo, work_repository& work,
                              const std::vector<match_document>& docs) {
  std::vector<prepared> out;
  for (auto& d : docs) {
    auto c = claim_match(work, d.id);
    if (!c)
      continue;
    auto found = call<std::vector<match_document>>(
        [&](auto cb) { repo.candidates(d.tenant_id, d.id, d.features, 20, cb); }, "candidates");
    prepared p{*c, {}};
    if (!found.empty())
      p.edges.push_back({found.front().id, match_kind::related, 0.7, "bench"});
    out.push_back(std::move(p));
  }
  return out;
}

/// A node's two repositories of the match stage: its own and the claimed-work one.
struct match_repos {
  pg_matching_repository matching;
  pg_work_repository work;
  explicit match_repos(const std::string& url)
      : matching{url, pg_matching_options{1}}, work{url, pg_work_options{1}} {}
};

/// Runs `work(i)` for i in 0..n-1 on `threads` threads, each with its own repositories (their own
/// connections, as separate nodes); answers the rate per second.
template <class Work>
double in_parallel(const std::string& url, size_t n, int threads, Work work) {
  std::atomic<size_t> next{0};
  std::vector<std::unique_ptr<match_repos>> repos;
  repos.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    repos.push_back(std::make_unique<match_repos>(url));
  auto t0 = clock_type::now();
  std::vector<std::thread> ts;
  ts.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (size_t i = next++; i < n; i = next++)
        work(*repos[static_cast<size_t>(t)], i);
    });
  for (auto& t : ts)
    t.join();
  return static_cast<double>(n) / seconds_since(t0);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes{10000, 100000};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i)
      sizes.push_back(std::atoll(argv[i]));
  }
  if (sizes.empty() || std::any_of(sizes.begin(), sizes.end(), [](auto s) { return s < 100; })) {
    std::fprintf(stderr, "usage: bench_matching [DOCUMENTS_PER_TENANT...] (each at least 100)\n");
    return 2;
  }
  try {
    std::printf("bench_matching: pg_matching_repository, %u hardware threads, database %s\n",
                std::thread::hardware_concurrency(),
                std::getenv("INGESTD_TEST_DATABASE_URL") ? std::getenv("INGESTD_TEST_DATABASE_URL")
                                                         : "(unset)");
    ingestd::test::pg_schema db;
    pg_matching_repository repo{db.url(), pg_matching_options{1}};
    pg_work_repository work_repo{db.url(), pg_work_options{1}};
    uuid last_tenant;
    for (auto size : sizes) {
      auto tenant = uuid::v4();
      auto t0 = clock_type::now();
      auto loaded = must(load_synthetic_match_documents(db.url(), tenant, size, size), "load");
      std::printf("loaded %lld synthetic documents with features into a tenant in %.1f s\n",
                  static_cast<long long>(loaded), seconds_since(t0));
      auto probes = must(sample_synthetic_match_documents(db.url(), tenant, 500), "sample");
      retrieval(repo, tenant, probes, size);
      last_tenant = tenant;
    }

    // The write phase, in the largest tenant: 2,000 more documents waiting to be matched.
    constexpr int64_t per_run = 400;
    must(load_synthetic_match_documents(db.url(), last_tenant, 4 * per_run, 7, "pending"),
         "load pending");
    auto pending = must(sample_synthetic_match_documents(db.url(), last_tenant,
                                                         static_cast<int>(4 * per_run), "pending"),
                        "sample pending");
    auto slice = [&](int64_t k) {
      return std::vector<match_document>(pending.begin() + k * per_run,
                                         pending.begin() + (k + 1) * per_run);
    };
    for (int64_t k = 0; k < 2; ++k) {
      int threads = k == 0 ? 1 : 4;
      auto work = prepare(repo, work_repo, slice(k));
      auto rate = in_parallel(db.url(), work.size(), threads, [&](match_repos& r, size_t i) {
        call<void>(
            [&](auto cb) {
              r.matching.write_matches(work_outcome{work[i].ref, {}, {}}, work[i].edges, cb);
            },
            "write_matches");
      });
      std::printf("write_matches  %d writer%s of one tenant: %7.0f /s  (%zu documents, one edge "
                  "each, clusters recomputed)\n",
                  threads, threads == 1 ? " " : "s", rate, work.size());
      std::fflush(stdout);
    }
    for (int64_t k = 2; k < 4; ++k) {
      int threads = k == 2 ? 1 : 4;
      auto docs = slice(k);
      auto rate = in_parallel(db.url(), docs.size(), threads, [&](match_repos& r, size_t i) {
        auto& d = docs[i];
        auto c = claim_match(r.work, d.id);
        if (!c)
          return;
        auto ref = *c;
        call<void>([&](auto cb) { r.matching.store_features(ref, d.features, cb); },
                   "store_features");
        auto found = call<std::vector<match_document>>(
            [&](auto cb) { r.matching.candidates(d.tenant_id, d.id, d.features, 20, cb); },
            "candidates");
        // The embedded default's decision: the local rules.
        match_document doc{d.id, d.tenant_id, "", d.features, "{}"};
        auto edges = match_locally(doc, found);
        call<void>(
            [&](auto cb) {
              r.matching.write_matches(work_outcome{ref, {}, {}}, edges, cb);
            },
            "write_matches");
      });
      std::printf("matching job with the local matcher (claim, store_features, candidates, "
                  "decide, write_matches)  %d worker%s: %7.0f jobs/s\n",
                  threads, threads == 1 ? " " : "s", rate);
      std::fflush(stdout);
    }
    size_t biggest = 0;
    for (auto& d : pending) {
      auto of = call<std::pair<std::vector<stored_match>, std::vector<uuid>>>(
          [&](auto cb) { repo.matches_of(d.id, cb); }, "matches_of");
      biggest = std::max(biggest, of.second.size());
    }
    std::printf("largest cluster among the matched documents afterwards: %zu documents\n", biggest);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_matching: %s\n", e.what());
    return 1;
  }
  return 0;
}
