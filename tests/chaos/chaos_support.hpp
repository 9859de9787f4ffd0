// What both chaos tests (Postgres queue, SQS) share: the lease their nodes run with, their
// independent accounting of completions and results, and the truth it checks each one against.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/daemon/e2e_setup.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::test {

/// The lease the nodes run with (worker.lease_seconds of the end-to-end environment): a node
/// stopped longer than this loses its claims to the others.
inline constexpr std::chrono::seconds chaos_lease{10};

/// One node of a chaos run.
struct chaos_node {
  std::string id;
  std::unique_ptr<daemon_process> proc;
  /// Set while SIGSTOPped: when to send SIGCONT.
  std::optional<std::chrono::steady_clock::time_point> resume_at;
};

/// SIGTERM to every node, each once it has started: a node started again just before the end may
/// still be loading its libraries, before it blocks SIGTERM to drain on it, and the signal would
/// kill it. Each must then exit 0.
inline void stop_all(std::vector<chaos_node>& nodes) {
  for (auto& n : nodes) {
    EXPECT_TRUE(n.proc->wait_started(std::chrono::seconds{60})) << n.id << " did not start\n"
                                                                << n.proc->log_tail();
    n.proc->signal(SIGTERM);
  }
  for (auto& n : nodes) {
    auto rc = n.proc->wait_exit(std::chrono::seconds{120});
    ASSERT_TRUE(rc.has_value()) << n.id << " did not stop\n" << n.proc->log_tail();
    EXPECT_EQ(*rc, 0) << n.id << "\n" << n.proc->log_tail();
  }
}

/// The invoice number the corpus's truth file gives for a source file
/// (inv01_en_classic.pdf -> truth/inv01.json).
inline std::string truth_invoice_number(const std::string& source) {
  auto path = source_dir() + "/tests/fixtures/corpus/truth/" + source.substr(0, 5) + ".json";
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("invoice_number"))
    throw std::runtime_error("cannot read the invoice number from " + path);
  return d["invoice_number"].GetString();
}

/// Independent accounting, by triggers this test installs rather than ingestd's own audit trail:
/// every transition of an ingest work item to `completed` (the claim's outcome), every write of an
/// ingestion's result (structured_data), and every end of a document's matching (its match work
/// item completed or failed), as the database saw them.
inline void install_accounting(e2e_setup& s) {
  s.db().query("CREATE TABLE chaos_completion (ingestion_id uuid NOT NULL, "
               "at timestamptz NOT NULL DEFAULT clock_timestamp())");
  s.db().query("CREATE TABLE chaos_result (ingestion_id uuid NOT NULL, "
               "at timestamptz NOT NULL DEFAULT clock_timestamp())");
  s.db().query("CREATE TABLE chaos_matching (document_id uuid NOT NULL, status text NOT NULL, "
               "at timestamptz NOT NULL DEFAULT clock_timestamp())");
  s.db().query(R"sql(
CREATE FUNCTION chaos_record_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.stage = 'ingest' AND NEW.status = 'completed' AND OLD.status IS DISTINCT FROM 'completed' THEN
    INSERT INTO chaos_completion (ingestion_id) VALUES (NEW.id);
  ELSIF NEW.stage = 'match' AND NEW.status IN ('completed', 'failed')
        AND OLD.status IS DISTINCT FROM NEW.status THEN
    INSERT INTO chaos_matching (document_id, status) VALUES (NEW.id, NEW.status);
  END IF;
  RETURN NEW;
END $$)sql");
  s.db().query("CREATE TRIGGER chaos_record_completion AFTER UPDATE OF status ON work_item "
               "FOR EACH ROW EXECUTE FUNCTION chaos_record_completion()");
  s.db().query(R"sql(
CREATE FUNCTION chaos_record_result() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.structured_data IS NOT NULL THEN
    INSERT INTO chaos_result (ingestion_id) VALUES (NEW.id);
  END IF;
  RETURN NEW;
END $$)sql");
  s.db().query("CREATE TRIGGER chaos_record_result AFTER UPDATE OF structured_data ON ingestion "
               "FOR EACH ROW EXECUTE FUNCTION chaos_record_result()");
}

/// Documents whose matching has ended (succeeded or failed for good).
inline int64_t matching_ended(e2e_setup& s) {
  return s.count(
      "SELECT count(*) FROM document_matching WHERE matching_status IN ('succeeded', 'failed')");
}

/// After the run, for the `n` documents: each one's matching was handed over by its completion
/// and ended once (nothing lost, nothing matched twice), a failure with its reason, no claim
/// left.
inline void expect_matching_once(e2e_setup& s, int64_t n, const std::string& journal) {
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'match'"), n);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = 'in-progress'"),
      0);
  EXPECT_EQ(s.count("SELECT count(*) FROM chaos_matching"), n)
      << "ends of matching: one per document, none twice\n"
      << journal;
  EXPECT_EQ(s.count("SELECT count(DISTINCT document_id) FROM chaos_matching"), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = 'failed' "
                    "AND coalesce(last_error, '') = ''"),
            0)
      << "a matching failed without its reason";
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE stage = 'match' AND claim_token IS NOT NULL"),
      0);
  std::printf("chaos: matching %lld succeeded, %lld failed\n",
              static_cast<long long>(
                  s.count("SELECT count(*) FROM chaos_matching WHERE status = 'completed'")),
              static_cast<long long>(
                  s.count("SELECT count(*) FROM chaos_matching WHERE status = 'failed'")));
}

/// The audit trail of every ingestion whose result was never written, oldest step first.
inline std::string missing_results(e2e_setup& s) {
  std::string out;
  for (auto& row : s.db().query(
           "SELECT e.ingestion_id::text, string_agg(e.step || ':' || e.outcome || "
           "coalesce(' (' || e.detail || ')', '') || ' by ' || coalesce(e.worker_id, '?'), "
           "E'\\n  ' ORDER BY e.at, e.id) FROM ingestion_event AS e WHERE NOT EXISTS "
           "(SELECT 1 FROM chaos_result AS r WHERE r.ingestion_id = e.ingestion_id) "
           "GROUP BY e.ingestion_id")) {
    auto id = row[0].value_or("");
    out.append("without a result: ").append(id).append("\n  ").append(row[1].value_or(""));
    out.append("\n  the nodes' log lines about it:\n");
    // Every node's whole log (e2e_setup::start writes root()/daemon-N.log).
    for (const auto& entry : std::filesystem::directory_iterator(s.root())) {
      if (entry.path().filename().string().rfind("daemon-", 0) != 0)
        continue;
      std::ifstream in{entry.path()};
      for (std::string line; std::getline(in, line);)
        if (line.find(id) != std::string::npos)
          out.append("  ")
              .append(entry.path().filename().string())
              .append(": ")
              .append(line)
              .append("\n");
    }
  }
  return out;
}

/// After the run: each of the `n` ingestions completed exactly once (its work item and its
/// ingestion), its result written once, no claim left, and the right result (its file's
/// invoice number, no review).
inline void expect_exactly_once(e2e_setup& s, int64_t n, const std::string& journal) {
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE status <> 'completed'"), 0);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status <> 'completed'"),
      0);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest'"), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM chaos_completion"), n)
      << "transitions to completed: one per document, none twice\n"
      << journal;
  EXPECT_EQ(s.count("SELECT count(DISTINCT ingestion_id) FROM chaos_completion"), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM chaos_result"), n)
      << "results written: one per document, none twice\n"
      << journal << missing_results(s);
  EXPECT_EQ(s.count("SELECT count(DISTINCT ingestion_id) FROM chaos_result"), n);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'ingest' "
                    "AND (claim_token IS NOT NULL OR lease_expires_at IS NOT NULL)"),
            0);
  int64_t checked = 0;
  for (auto& row : s.db().query("SELECT i.id::text, d.structured_data->>'invoice_number', "
                                "d.needs_human_review FROM ingestion i "
                                "JOIN document d ON d.id = i.document_id")) {
    auto source = s.source_of(*row[0]);
    ASSERT_FALSE(source.empty()) << *row[0];
    EXPECT_EQ(row[1].value_or("(none)"), truth_invoice_number(source)) << source;
    EXPECT_EQ(row[2].value_or(""), "f") << source << " needs review";
    ++checked;
  }
  EXPECT_EQ(checked, n);
}

} // namespace ingestd::test
