// The daemon's JSON log as an operator's log pipeline reads it: every line is a JSON
// object; every line about a job carries the node, stage, step, ingestion, document and tenant;
// each job writes one info line when it ends and, at debug, one line per step, the
// acknowledgement included. The audit trail beside it ends at the state change: the steps up to
// the completion are rows of ingestion_event, the acknowledgement after it is only logged.
// Checked on the log of a real run: completed documents, a corrupt one, their matching.
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

struct log_line {
  std::string text;
  std::map<std::string, std::string> fields; // every member as text (numbers as written)
  std::set<std::string> numbers;             // members written as JSON numbers

  bool has(const std::string& key) const { return fields.contains(key); }
  std::string operator[](const std::string& key) const {
    auto i = fields.find(key);
    return i == fields.end() ? std::string{} : i->second;
  }
};

/// Every line of the log, parsed; a line that is not a JSON object fails the test.
std::vector<log_line> read_log(const std::string& path) {
  std::ifstream in{path};
  std::vector<log_line> out;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty())
      continue;
    rapidjson::Document doc;
    doc.Parse(text.c_str());
    EXPECT_FALSE(doc.HasParseError()) << "not JSON: " << text;
    EXPECT_TRUE(!doc.HasParseError() && doc.IsObject()) << "not a JSON object: " << text;
    if (doc.HasParseError() || !doc.IsObject())
      continue;
    log_line line{text, {}, {}};
    for (auto& m : doc.GetObject()) {
      std::string key = m.name.GetString();
      if (m.value.IsString()) {
        line.fields[key] = m.value.GetString();
      } else if (m.value.IsNumber()) {
        line.fields[key] = std::to_string(m.value.GetDouble());
        line.numbers.insert(key);
      } else {
        line.fields[key] = "?";
      }
    }
    out.push_back(std::move(line));
  }
  return out;
}

} // namespace

TEST(e2e_daemon_log_fields, every_job_line_names_node_stage_step_ingestion_document_and_tenant) {
  e2e_setup s;
  auto good = s.add_documents(3, doc_kind::text_pdf);
  auto corrupt = s.add_documents(1, doc_kind::corrupt_pdf);
  auto all = good;
  all.push_back(corrupt[0]);
  s.enqueue(all);
  const std::string node = "log-fields-node";
  auto d = s.start({{"INGESTD_LOG__LEVEL", "debug"}, {"INGESTD_WORKER__ID", node}});
  ASSERT_TRUE(await_completed(s, 3, 180s)) << s.logs();
  ASSERT_TRUE(wait_until([&] { return s.with_status("failed") == 1; }, 60s)) << s.logs();
  // The matching of the three completed documents ends too (succeeded or failed for good).
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM document_matching WHERE matching_status IN "
                       "('succeeded', 'failed')")
               == 3;
      },
      120s))
      << s.logs();
  ASSERT_TRUE(await_complete_events(s, good, 30s)) << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  ASSERT_EQ(*rc, 0) << d->log_tail();

  // The database's view of each ingestion: its document and tenant.
  std::map<std::string, std::pair<std::string, std::string>>
      owner; // ingestion -> (document, tenant)
  for (auto& row : s.db().query("SELECT i.id::text, d.id::text, d.tenant_id::text FROM ingestion i "
                                "JOIN document d ON d.id = i.document_id",
                                {}))
    owner[row[0].value_or("")] = {row[1].value_or(""), row[2].value_or("")};
  ASSERT_EQ(owner.size(), 4u);

  auto lines = read_log(d->log_path());
  ASSERT_FALSE(lines.empty());
  const std::vector<std::string> context
      = {"worker_id", "stage", "step", "document_id", "tenant_id"};
  size_t about_jobs = 0;
  for (auto& l : lines) {
    EXPECT_TRUE(l.has("ts") && l.has("level") && l.has("msg")) << l.text;
    if (!l.has("ingestion_id") && !l.has("document_id"))
      continue;
    ++about_jobs;
    for (auto& key : context)
      EXPECT_TRUE(l.has(key)) << "no " << key << ": " << l.text;
    EXPECT_EQ(l["worker_id"], node) << l.text;
    EXPECT_FALSE(l["stage"].empty()) << l.text;
    EXPECT_FALSE(l["step"].empty()) << l.text;
    // Once the claim is granted, the document and tenant are the database's.
    if (l.has("ingestion_id") && owner.contains(l["ingestion_id"]) && !l["tenant_id"].empty()) {
      EXPECT_EQ(l["document_id"], owner[l["ingestion_id"]].first) << l.text;
      EXPECT_EQ(l["tenant_id"], owner[l["ingestion_id"]].second) << l.text;
    }
  }
  EXPECT_GT(about_jobs, 0u);

  // One info line per job when it ends, with the outcome and the full context.
  auto job_lines = [&](const std::string& stage, const std::string& key, const std::string& id) {
    std::vector<const log_line*> out;
    for (auto& l : lines)
      if (l["msg"] == "job finished" && l["stage"] == stage && l[key] == id)
        out.push_back(&l);
    return out;
  };
  for (auto& id : good) {
    auto finished = job_lines("ingest", "ingestion_id", id);
    ASSERT_EQ(finished.size(), 1u) << "ingestion " << id << "\n" << s.logs();
    auto& l = *finished[0];
    EXPECT_EQ(l["level"], "info") << l.text;
    EXPECT_EQ(l["status"], "completed") << l.text;
    EXPECT_EQ(l["document_id"], owner[id].first) << l.text;
    EXPECT_EQ(l["tenant_id"], owner[id].second) << l.text;
    EXPECT_EQ(l["attempt"], "1.000000") << l.text;
    EXPECT_TRUE(l.numbers.contains("duration_ms")) << l.text;

    // One debug line per step, each with its status and duration.
    std::set<std::string> steps;
    for (auto& x : lines)
      if (x["msg"] == "step finished" && x["ingestion_id"] == id) {
        EXPECT_EQ(x["level"], "debug") << x.text;
        EXPECT_FALSE(x["status"].empty()) << x.text;
        EXPECT_TRUE(x.numbers.contains("duration_ms")) << x.text;
        EXPECT_EQ(x["tenant_id"], owner[id].second) << x.text;
        steps.insert(x["step"]);
      }
    for (auto step : {"claim", "load", "fetch", "transcribe", "store_transcription", "extract",
                      "gate", "complete", "ack"})
      EXPECT_TRUE(steps.contains(step)) << "no step line for " << step << " of " << id;

    // The audit trail, written with the completion: every step up to it, one row each, and none
    // after it (the acknowledgement is logged above, not audited).
    std::set<std::string> audited;
    for (auto& row :
         s.db().query("SELECT step, count(*)::text FROM ingestion_event WHERE ingestion_id = $1 "
                      "GROUP BY step",
                      {id})) {
      audited.insert(row[0].value_or(""));
      EXPECT_EQ(row[1].value_or(""), "1") << "step " << row[0].value_or("") << " of " << id;
    }
    for (auto step : {"claim", "load", "fetch", "transcribe", "store_transcription", "extract",
                      "gate", "complete"})
      EXPECT_TRUE(audited.contains(step)) << "no audit row for " << step << " of " << id;
    // The transcription is recorded with the result, by no step of its own.
    EXPECT_FALSE(audited.contains("record_transcription")) << id;
    EXPECT_FALSE(audited.contains("ack")) << "the audit trail ends at the completion: " << id;
    EXPECT_EQ(
        s.db().scalar(
            "SELECT step FROM ingestion_event WHERE ingestion_id = $1 ORDER BY id DESC LIMIT 1",
            {id}),
        "complete")
        << id;

    // Its matching job: the match stage names the document and tenant (no ingestion).
    auto matched = job_lines("match", "document_id", owner[id].first);
    ASSERT_FALSE(matched.empty()) << "no matching job line for " << owner[id].first << "\n"
                                  << s.logs();
    for (auto* m : matched) {
      EXPECT_EQ((*m)["tenant_id"], owner[id].second) << m->text;
      EXPECT_FALSE(m->has("ingestion_id")) << m->text;
    }
  }

  // The corrupt file: one warning line naming the failure.
  auto failed = job_lines("ingest", "ingestion_id", corrupt[0]);
  ASSERT_EQ(failed.size(), 1u) << s.logs();
  EXPECT_EQ((*failed[0])["level"], "warn") << failed[0]->text;
  EXPECT_EQ((*failed[0])["status"], "failed") << failed[0]->text;
  EXPECT_EQ((*failed[0])["error_class"], "permanent") << failed[0]->text;
  EXPECT_EQ((*failed[0])["document_id"], owner[corrupt[0]].first) << failed[0]->text;
  EXPECT_EQ((*failed[0])["tenant_id"], owner[corrupt[0]].second) << failed[0]->text;
}
