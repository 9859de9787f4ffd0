// What users see of matching, against the real PostgreSQL: the document JSON of
// GET /v1/documents/{id} (matching_status from the view document_matching, cluster_id, the edges),
// the documents list and the status figures of pg_intake_repository, and the `ingestd matches` and
// `ingestd status` commands run as a user runs them. The match stage's work items are claimed
// through pg_work_repository and completed by the write phase, as the match stage does.
#include <cstdio>
#include <string>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd {
namespace {

using namespace std::chrono_literals;
using test::await;

constexpr auto t = std::chrono::seconds{30};

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

class matching_view_test : public test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    look = std::make_shared<pg_intake_repository>(db->url());
    matching = std::make_unique<pg_matching_repository>(db->url());
    work = std::make_unique<pg_work_repository>(db->url());
  }
  void TearDown() override {
    work.reset();
    matching.reset();
    look.reset();
    postgres_test::TearDown();
  }

  /// A document of the tenant taken in as `file_name`, queued for matching.
  uuid document(const std::string& file_name) {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = tenant;
    r.content_hash = uuid::v4().str();
    r.file_path = "documents/" + r.document_id.str() + ".pdf";
    r.uploaded_by = uuid::v4();
    r.source_metadata = R"({"file_name": ")" + file_name + R"("})";
    r.queue = "ingest-q";
    auto res = look->create_ingestion(r, t);
    EXPECT_TRUE(res) << res.error().describe();
    // Its matching, as its ingestion's completion adds it.
    db->query("SELECT ingestd_add_work($1, 'match', $1, $2, 50, 'small', 'match-q', false, true)",
              {r.document_id.str(), tenant.str()});
    return r.document_id;
  }

  /// Claims the document's matching as the match stage does.
  claim_ref claim_matching(uuid doc) {
    claim_request r;
    r.item = doc;
    r.token = uuid::v4();
    r.stage = "match";
    auto c = await<std::vector<claim_answer>>([&](auto cb) { work->claim({r}, "w1", 300s, cb); });
    EXPECT_TRUE(c && c->size() == 1 && c->front().outcome == claim_outcome::granted);
    return claim_ref{doc, r.token};
  }

  /// Matches the document as the match stage does: claim, then the write phase, which completes
  /// its work item.
  void match(uuid doc, std::vector<match_edge> edges) {
    auto ref = claim_matching(doc);
    auto w = await<void>([&](auto cb) { matching->write_matches(work_outcome{ref}, edges, cb); });
    ASSERT_TRUE(w) << w.error().describe();
  }

  /// Runs the built binary with this schema's database; answers the exit code and stdout
  /// (stderr when `with_stderr`).
  std::pair<int, std::string> run(const std::string& args, bool with_stderr = false) {
    auto cmd = "env -u INGESTD_CONFIG INGESTD_DATABASE__URL='" + db->url()
               + "' INGESTD_LOG__LEVEL=error '" + test::ingestd_binary() + "' " + args
               + (with_stderr ? " 2>&1" : " 2>/dev/null");
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p))
      out.append(buf, n);
    int status = ::pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }

  std::shared_ptr<pg_intake_repository> look;
  std::unique_ptr<pg_matching_repository> matching;
  std::unique_ptr<pg_work_repository> work;
  uuid tenant = uuid::v7();
};

TEST_F(matching_view_test, the_document_json_carries_matching_status_cluster_and_edges) {
  auto invoice = document("invoice.pdf");
  auto scan = document("invoice-scan.png");
  auto waiting = document("later.pdf");
  match(invoice, {});
  match(scan, {match_edge{invoice, match_kind::same_invoice, 0.95, "number, supplier, total"}});
  auto cluster = std::min(invoice.str(), scan.str());

  // What GET /v1/documents/{id} answers (intake_service::document_json).
  intake_service service{look, nullptr};
  auto json = service.document_json(tenant, invoice);
  ASSERT_TRUE(json && *json);
  auto d = parse(**json);
  EXPECT_STREQ(d["matching_status"].GetString(), "succeeded");
  EXPECT_EQ(d["cluster_id"].GetString(), cluster);
  ASSERT_TRUE(d["matches"].IsArray());
  ASSERT_EQ(d["matches"].Size(), 1u);
  EXPECT_EQ(d["matches"][0]["document_id"].GetString(), scan.str());
  EXPECT_STREQ(d["matches"][0]["kind"].GetString(), "same_invoice");
  EXPECT_DOUBLE_EQ(d["matches"][0]["confidence"].GetDouble(), 0.95);
  EXPECT_STREQ(d["matches"][0]["reason"].GetString(), "number, supplier, total");
  auto pending = parse(**service.document_json(tenant, waiting));
  EXPECT_STREQ(pending["matching_status"].GetString(), "pending");
  EXPECT_TRUE(pending["cluster_id"].IsNull());
  EXPECT_EQ(pending["matches"].Size(), 0u);
  EXPECT_EQ(pending["matching_attempts"].GetInt(), 0);
  EXPECT_EQ(d["matching_attempts"].GetInt(), 1);

  // The documents list of `ingestd status --documents`.
  auto list = look->documents_json(10, t);
  ASSERT_TRUE(list) << list.error().describe();
  auto docs = parse(*list);
  ASSERT_EQ(docs.Size(), 3u);
  for (auto& row : docs.GetArray()) {
    std::string id = row["document_id"].GetString();
    if (id == waiting.str()) {
      EXPECT_STREQ(row["matching_status"].GetString(), "pending");
      EXPECT_TRUE(row["cluster_id"].IsNull());
    } else {
      EXPECT_STREQ(row["matching_status"].GetString(), "succeeded");
      EXPECT_EQ(row["cluster_id"].GetString(), cluster);
    }
  }
}

TEST_F(matching_view_test, status_counts_matching_and_reports_it_stuck_over_10_minutes) {
  auto a = document("a.pdf");
  auto b = document("b.pdf");
  auto c = document("c.pdf");
  (void)document("d.pdf");
  match(a, {});
  for (auto doc : {b, c})
    claim_matching(doc);
  // c's worker crashed 11 minutes ago.
  db->query("UPDATE work_item SET started_at = now() - interval '11 minutes', "
            "lease_expires_at = now() - interval '6 minutes' WHERE id = $1",
            {c.str()});
  auto s = look->summarize(t);
  ASSERT_TRUE(s) << s.error().describe();
  std::map<std::string, int64_t> by_status(s->matching_by_status.begin(),
                                           s->matching_by_status.end());
  EXPECT_EQ(by_status["pending"], 1);
  EXPECT_EQ(by_status["in-progress"], 2);
  EXPECT_EQ(by_status["succeeded"], 1);
  EXPECT_EQ(by_status["failed"], 0);
  EXPECT_EQ(s->matching_in_progress_over_10_minutes, 1);
  EXPECT_GE(s->oldest_matching_in_progress_seconds, 600);

  auto [code, out] = run("status", true);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("matching   pending 1   in progress 2   succeeded 1   failed 0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("matching in progress over 10 min   1"), std::string::npos) << out;
  auto [jcode, jout] = run("status --json");
  ASSERT_EQ(jcode, 0) << jout;
  auto j = parse(jout);
  ASSERT_TRUE(j.HasMember("matching")) << jout;
  EXPECT_EQ(j["matching"]["in-progress"].GetInt64(), 2);
  EXPECT_EQ(j["matching"]["in_progress_over_10_minutes"].GetInt64(), 1);
}

TEST_F(matching_view_test, status_documents_and_the_matches_command_show_clusters) {
  auto invoice = document("invoice.pdf");
  auto scan = document("invoice-scan.png");
  auto credit = document("credit-note.pdf");
  auto alone = document("alone.pdf");
  match(invoice, {});
  match(scan, {match_edge{invoice, match_kind::same_invoice, 0.95, "same invoice"}});
  match(credit, {match_edge{invoice, match_kind::credit_note, 0.9, "refers to INV-1"}});
  match(alone, {});
  auto cluster = std::min({invoice.str(), scan.str(), credit.str()});

  auto [code, out] = run("status --documents --json");
  ASSERT_EQ(code, 0) << out;
  auto j = parse(out);
  ASSERT_TRUE(j.HasMember("documents")) << out;
  ASSERT_EQ(j["documents"].Size(), 4u);
  for (auto& row : j["documents"].GetArray()) {
    for (auto key : {"file_name", "state", "matching_status", "cluster_id"})
      EXPECT_TRUE(row.HasMember(key)) << key;
    std::string name = row["file_name"].GetString();
    EXPECT_STREQ(row["matching_status"].GetString(), "succeeded");
    EXPECT_EQ(row["cluster_id"].GetString(), name == "alone.pdf" ? alone.str() : cluster) << name;
  }
  auto [tcode, table] = run("status --documents");
  ASSERT_EQ(tcode, 0) << table;
  EXPECT_NE(table.find("CLUSTER"), std::string::npos) << table;
  EXPECT_NE(table.find(cluster.substr(cluster.size() - 8)), std::string::npos) << table;

  auto [mcode, mout] = run("matches " + invoice.str());
  ASSERT_EQ(mcode, 0) << mout;
  for (const auto& s :
       {std::string{"invoice-scan.png"}, std::string{"credit-note.pdf"},
        std::string{"same_invoice"}, std::string{"credit_note"}, std::string{"refers to INV-1"},
        std::string{"cluster members (3)"}, cluster})
    EXPECT_NE(mout.find(s), std::string::npos) << s << " missing in:\n" << mout;
  EXPECT_EQ(mout.find("alone.pdf"), std::string::npos) << mout;

  auto [jmcode, jm] = run("matches " + scan.str() + " --json");
  ASSERT_EQ(jmcode, 0) << jm;
  auto m = parse(jm);
  EXPECT_EQ(m["document_id"].GetString(), scan.str());
  EXPECT_STREQ(m["file_name"].GetString(), "invoice-scan.png");
  EXPECT_EQ(m["cluster_id"].GetString(), cluster);
  ASSERT_EQ(m["matches"].Size(), 1u);
  EXPECT_EQ(m["matches"][0]["document_id"].GetString(), invoice.str());
  EXPECT_STREQ(m["matches"][0]["file_name"].GetString(), "invoice.pdf");
  EXPECT_STREQ(m["matches"][0]["kind"].GetString(), "same_invoice");
  EXPECT_EQ(m["members"].Size(), 3u);

  auto [ucode, uout] = run("matches " + uuid::v7().str(), true);
  EXPECT_EQ(ucode, 1) << uout;
  EXPECT_NE(uout.find("no document"), std::string::npos) << uout;
  auto [bcode, bout] = run("matches not-an-id", true);
  EXPECT_EQ(bcode, 2) << bout;
  EXPECT_NE(bout.find("is not a document id"), std::string::npos) << bout;
}

} // namespace
} // namespace ingestd
