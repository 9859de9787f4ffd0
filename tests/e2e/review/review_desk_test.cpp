// The review desk in `ingestd run`: refused at start when misconfigured (an open desk on a public
// bind, no admin port, a bad token setting), and served by a running daemon: a document that
// failed for good is in the desk's queue, a reprocess through the API makes the daemon take it
// again, and the desk's address is in the log; a reprocess that chooses the LLM extractor on a
// node configured with the local rules goes through the LLM (the chat-completions stub); the desk
// shows where each value of a scan read in the decoder helpers is on its page; sampled checks
// measure the error rate of what goes through, calibrated confidence (review.auto_approve)
// decides what may, and a reviewer's correction is applied to the same supplier's next invoice
// (review.learn).
#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include "tests/support/daemon/e2e_setup.hpp"
#include "tests/support/llm/chat_stub.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

/// A port free on loopback now (bound to port 0, then closed).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
      && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

/// The desk's API on a running daemon, as one tenant's reviewer ("ops") with its token.
struct desk_api {
  httplib::Client c;
  httplib::Headers auth{{"Authorization", "Bearer desk-token-0123456789"}, {"X-Reviewer", "ops"}};

  explicit desk_api(int port) : c{"127.0.0.1", port} { c.set_read_timeout(30, 0); }

  /// The daemon's settings that serve the desk on `port` for `tenant` with this token.
  static std::map<std::string, std::string> settings(int port, const std::string& tenant) {
    return {{"INGESTD_REVIEW__ENABLED", "true"},
            {"INGESTD_ADMIN__PORT", std::to_string(port)},
            {"INGESTD_REVIEW_TOKEN", tenant + ":desk-token-0123456789"}};
  }

  /// The queue of documents needing review for `reason`; fails the test unless it answers 200.
  rapidjson::Document queue(const std::string& reason) {
    rapidjson::Document out;
    auto q = c.Get(("/review/api/queue?reason=" + reason).c_str(), auth);
    EXPECT_TRUE(q);
    if (!q)
      return out;
    EXPECT_EQ(q->status, 200) << q->body;
    out.Parse(q->body.c_str());
    EXPECT_TRUE(out.IsObject() && out.HasMember("documents")) << q->body;
    return out;
  }

  /// Approves the queue's `item` with `fields` ("" or `,"fields":{...}`): 200 or the test fails.
  void approve(const rapidjson::Value& item, const std::string& fields = "") {
    auto path
        = std::string{"/review/api/documents/"} + item["document_id"].GetString() + "/approve";
    auto r = c.Post(path.c_str(), auth,
                    R"({"version":)" + std::to_string(item["version"].GetInt64()) + fields + "}",
                    "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
};

/// A valid one-page PDF whose text layer has these lines (Helvetica, 16 pt apart).
std::string text_pdf(const std::vector<std::string>& lines) {
  std::string content = "BT /F1 12 Tf 16 TL 72 720 Td";
  for (const auto& line : lines) {
    content += " (";
    for (char c : line) {
      if (c == '(' || c == ')' || c == '\\')
        content += '\\';
      content += c;
    }
    content += ") '";
  }
  content += " ET";
  return "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
         "2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
         "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R"
         "/Resources<</Font<</F1 5 0 R>>>>>>endobj\n"
         "4 0 obj<</Length "
         + std::to_string(content.size()) + ">>stream\n" + content
         + "\nendstream endobj\n"
           "5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj\n"
           "trailer<</Root 1 0 R>>\n%%EOF\n";
}

/// A letter: the local rules find no invoice in it.
std::string letter_pdf() {
  return text_pdf({"Dear customer, thank you for your letter."});
}

TEST(review_desk_daemon, refuses_to_start_when_misconfigured) {
  e2e_setup setup;
  struct bad_case {
    std::map<std::string, std::string> env;
    std::string expected;
  };
  std::vector<bad_case> cases{
      {{{"INGESTD_REVIEW__ENABLED", "true"},
        {"INGESTD_ADMIN__PORT", "9"},
        {"INGESTD_ADMIN__BIND", "0.0.0.0"}},
       "INGESTD_REVIEW_TOKEN"},
      {{{"INGESTD_REVIEW__ENABLED", "true"}, {"INGESTD_ADMIN__PORT", "0"}}, "admin.port"},
      {{{"INGESTD_REVIEW__ENABLED", "true"},
        {"INGESTD_ADMIN__PORT", "9"},
        {"INGESTD_REVIEW_TOKEN", "a,,b"}},
       "INGESTD_REVIEW_TOKEN"},
  };
  for (auto& c : cases) {
    auto d = setup.start(c.env);
    auto code = d->wait_exit(30s);
    ASSERT_TRUE(code) << d->log_tail();
    EXPECT_EQ(*code, 1) << d->log_tail();
    EXPECT_NE(d->log().find(c.expected), std::string::npos) << d->log_tail();
  }
}

TEST(review_desk_daemon, a_failed_document_is_reviewed_and_reprocessed_through_the_running_daemon) {
  e2e_setup setup;
  auto tenant = std::string{"00000000-0000-7000-8000-0000000000aa"};
  auto ingestions = setup.add_documents(1, doc_kind::corrupt_pdf, {}, tenant);
  setup.enqueue(ingestions);
  int port = free_port();
  auto d = setup.start({{"INGESTD_REVIEW__ENABLED", "true"},
                        {"INGESTD_ADMIN__PORT", std::to_string(port)},
                        {"INGESTD_REVIEW_TOKEN", tenant + ":desk-token-0123456789"}});
  ASSERT_TRUE(wait_until([&] { return setup.with_status("failed") == 1; }, 60s)) << setup.logs();
  EXPECT_NE(d->log().find("http://127.0.0.1:" + std::to_string(port) + "/review"),
            std::string::npos)
      << d->log_tail();

  httplib::Client c{"127.0.0.1", port};
  httplib::Headers auth{{"Authorization", "Bearer desk-token-0123456789"}, {"X-Reviewer", "ops"}};
  auto q = c.Get("/review/api/queue", auth);
  ASSERT_TRUE(q);
  ASSERT_EQ(q->status, 200) << q->body;
  rapidjson::Document queue;
  queue.Parse(q->body.c_str());
  ASSERT_EQ(queue["documents"].Size(), 1u) << q->body;
  std::string document = queue["documents"][0]["document_id"].GetString();
  EXPECT_EQ(std::string{queue["documents"][0]["reason"].GetString()}, "failed");
  auto version = queue["documents"][0]["version"].GetInt64();

  auto r = c.Post(("/review/api/documents/" + document + "/reprocess").c_str(), auth,
                  R"({"version":)" + std::to_string(version) + "}", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // The daemon takes the new ingestion from the queue and fails it again: the file is corrupt.
  ASSERT_TRUE(wait_until([&] { return setup.with_status("failed") == 2; }, 60s)) << setup.logs();
  EXPECT_EQ(setup.count("SELECT count(*) FROM document WHERE needs_human_review"), 1);
  EXPECT_EQ(
      setup.count(
          "SELECT count(*) FROM document_review WHERE action = 'reprocess' AND reviewer = 'ops'"),
      1);

  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

TEST(review_desk_daemon, a_reprocess_that_chooses_the_llm_goes_through_the_llm_extractor) {
  chat_stub stub;
  e2e_setup setup;
  auto first = setup.add_document_bytes(letter_pdf(), "pdf", "application/pdf");
  auto tenant = setup.db().scalar(
      "SELECT d.tenant_id FROM document AS d JOIN ingestion AS i ON i.document_id = d.id "
      "WHERE i.id = $1",
      {first});
  auto document = setup.db().scalar("SELECT document_id FROM ingestion WHERE id = $1", {first});
  setup.enqueue({first});
  int port = free_port();
  // The local rules are the configured extractor; the LLM is there for a reprocess to choose.
  auto model = std::string{"success:e2e-reprocess"};
  auto d = setup.start({{"INGESTD_REVIEW__ENABLED", "true"},
                        {"INGESTD_ADMIN__PORT", std::to_string(port)},
                        {"INGESTD_REVIEW_TOKEN", tenant + ":desk-token-0123456789"},
                        {"INGESTD_EXTRACTION__LLM_BASE_URL", stub.base_url()},
                        {"INGESTD_EXTRACTION__LLM_MODEL", model}});
  // The local rules find no invoice in a letter: failed for review at the first attempt.
  ASSERT_TRUE(wait_until([&] { return setup.with_status("failed") == 1; }, 60s)) << setup.logs();

  httplib::Client c{"127.0.0.1", port};
  c.set_read_timeout(30, 0);
  httplib::Headers auth{{"Authorization", "Bearer desk-token-0123456789"}, {"X-Reviewer", "ops"}};
  auto version = setup.db().scalar("SELECT review_version FROM document WHERE id = $1", {document});
  auto path = "/review/api/documents/" + document + "/reprocess";
  // This node has no Document AI: refused by the desk, which runs inside it.
  auto refused = c.Post(path.c_str(), auth,
                        R"({"version":)" + version + R"(,"transcription_provider":"document_ai"})",
                        "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_NE(refused->body.find("review.provider_unavailable"), std::string::npos) << refused->body;

  auto r
      = c.Post(path.c_str(), auth, R"({"version":)" + version + R"(,"extraction_provider":"llm"})",
               "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  rapidjson::Document done;
  done.Parse(r->body.c_str());
  std::string second = done["ingestion_id"].GetString();
  // The new ingestion is extracted by the LLM: the stub's invoice passes the gate.
  ASSERT_TRUE(wait_until([&] { return setup.with_status("completed") == 1; }, 60s)) << setup.logs();
  EXPECT_EQ(
      setup.db().scalar("SELECT status || ' ' || extraction_model || ' ' || extraction_provider "
                        "FROM ingestion WHERE id = $1",
                        {second}),
      "completed " + model + " llm");
  EXPECT_EQ(setup.db().scalar(
                "SELECT (structured_data->>'invoice_number') || ' ' || needs_human_review::text "
                "FROM document WHERE id = $1",
                {document}),
            "INV-1 false");
  auto counted = httplib::Client{"127.0.0.1", stub.port()}.Get(("/count?model=" + model).c_str());
  ASSERT_TRUE(counted);
  rapidjson::Document count;
  count.Parse(counted->body.c_str());
  ASSERT_TRUE(count.IsObject() && count.HasMember("count")) << counted->body;
  EXPECT_EQ(count["count"].GetInt(), 1) << "one request for the one extraction";
  // The audit trail names the providers.
  EXPECT_EQ(setup.db().scalar(
                "SELECT detail FROM ingestion_event WHERE ingestion_id = $1 AND step = 'providers'",
                {second}),
            "transcription as configured (tesseract), extraction llm");
  auto extract = setup.db().scalar(
      "SELECT detail FROM ingestion_event WHERE ingestion_id = $1 AND step = 'extract'", {second});
  EXPECT_EQ(extract.rfind("openai, confidence high, model " + model, 0), 0u) << extract;
  // The first ingestion went through the local rules.
  EXPECT_EQ(setup.db().scalar(
                "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'extract' "
                "AND detail LIKE 'local,%'",
                {first}),
            "1");

  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

} // namespace

// Where each value is on the page, through the whole daemon: a scan read by Tesseract in the
// decoder helpers, its words and their boxes through the helper protocol into the stored
// transcription, and the desk locating the extracted values among them.
TEST(review_desk_daemon, the_desk_shows_where_each_value_of_a_scan_was_read) {
  e2e_setup setup;
  auto tenant = std::string{"00000000-0000-7000-8000-0000000000ab"};
  auto ingestions = setup.add_documents(1, doc_kind::scan_png, {}, tenant);
  auto document
      = setup.db().scalar("SELECT document_id FROM ingestion WHERE id = $1", {ingestions[0]});
  setup.enqueue(ingestions);
  int port = free_port();
  auto d = setup.start({{"INGESTD_REVIEW__ENABLED", "true"},
                        {"INGESTD_ADMIN__PORT", std::to_string(port)},
                        {"INGESTD_REVIEW_TOKEN", tenant + ":desk-token-0123456789"}});
  ASSERT_TRUE(wait_until([&] { return setup.with_status("completed") == 1; }, 120s))
      << setup.logs();
  httplib::Client c{"127.0.0.1", port};
  c.set_read_timeout(30, 0);
  httplib::Headers auth{{"Authorization", "Bearer desk-token-0123456789"}, {"X-Reviewer", "ops"}};
  auto r = c.Get(("/review/api/documents/" + document).c_str(), auth);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  rapidjson::Document doc;
  doc.Parse(r->body.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r->body;
  auto& fields = doc["fields"];
  auto& where = doc["provenance"];
  ASSERT_TRUE(where.IsObject()) << r->body;
  for (auto field : {"invoice_number", "invoice_date", "supplier_name", "total"}) {
    ASSERT_TRUE(where.HasMember(field)) << field << " not located: " << r->body;
    EXPECT_EQ(where[field]["page"].GetInt(), 1);
    auto& box = where[field]["box"];
    EXPECT_LT(box[0].GetDouble(), box[2].GetDouble()) << field;
    EXPECT_LT(box[1].GetDouble(), box[3].GetDouble()) << field;
    EXPECT_LE(box[3].GetDouble(), 1.0) << field;
  }
  EXPECT_EQ(std::string{where["invoice_number"]["text"].GetString()},
            std::string{fields["invoice_number"].GetString()});
  // The total is printed below the invoice number.
  EXPECT_GT(where["total"]["box"][1].GetDouble(), where["invoice_number"]["box"][3].GetDouble());
  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

// Straight-through processing measured: with review.sample_rate 1 every document the gate passes
// goes to the desk for a check (reason "sample"); one approved as it is and one corrected make
// the error rate `ingestd status` reports for what goes through without a person.
TEST(review_desk_daemon, sampled_checks_measure_the_error_rate_of_what_goes_through) {
  e2e_setup setup;
  auto tenant = std::string{"00000000-0000-7000-8000-0000000000ac"};
  auto ingestions = setup.add_documents(2, doc_kind::text_pdf, {}, tenant);
  setup.enqueue(ingestions);
  int port = free_port();
  auto settings = desk_api::settings(port, tenant);
  settings["INGESTD_REVIEW__SAMPLE_RATE"] = "1";
  auto d = setup.start(settings);
  ASSERT_TRUE(wait_until([&] { return setup.with_status("completed") == 2; }, 120s))
      << setup.logs();
  desk_api desk{port};
  auto queue = desk.queue("sample");
  ASSERT_EQ(queue["documents"].Size(), 2u);
  EXPECT_EQ(queue["counts"]["sample"].GetInt64(), 2);
  std::vector<std::string> bodies{"", R"(,"fields":{"invoice_number":"CORRECTED-1"})"};
  for (rapidjson::SizeType i = 0; i < 2; ++i) {
    auto& item = queue["documents"][i];
    EXPECT_EQ(std::string{item["reason"].GetString()}, "sample");
    desk.approve(item, bodies[i]);
  }
  daemon_process status{setup.daemon_env(), setup.root() + "/status.log", {"status", "--json"}};
  ASSERT_EQ(status.wait_exit(60s).value_or(-1), 0) << status.log();
  EXPECT_NE(
      status.log().find(R"("straight_through":{"days":30,"completed":2,"through":2,"rate":1.0,)"
                        R"("sampled":{"right":1,"wrong":1,"waiting":0},"error_rate":0.5})"),
      std::string::npos)
      << status.log();
  daemon_process text{setup.daemon_env(), setup.root() + "/status-text.log", {"status"}};
  ASSERT_EQ(text.wait_exit(60s).value_or(-1), 0) << text.log();
  EXPECT_NE(text.log().find("straight through (30 days)   100.0% of 2 completed   error rate 50.0% "
                            "(1 of 2 sampled checks corrected)"),
            std::string::npos)
      << text.log();
  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

namespace {

/// One tenant's invoice read by a daemon serving the desk with `extra` settings (and a 1 s
/// learning_recheck_seconds) waits on the desk for `reason`; `review` acts on it on the desk; then,
/// once the node's copy of what reviewers did is older than 1 s (a wait fixed by that setting,
/// not a guess at speed), the same supplier's invoice again is read and `check` looks at it (and
/// at the desk).
void review_then_next(const std::string& tenant, const std::map<std::string, std::string>& extra,
                      const std::string& reason,
                      const std::function<void(desk_api&, const rapidjson::Value&)>& review,
                      const std::function<void(e2e_setup&, desk_api&, const std::string&)>& check,
                      const std::string& pdf = {}) {
  e2e_setup setup;
  // The invoice: `pdf`, or the corpus's first.
  auto add = [&] {
    return pdf.empty() ? setup.add_documents(1, doc_kind::text_pdf, {}, tenant)
                       : std::vector<std::string>{
                           setup.add_document_bytes(pdf, "pdf", "application/pdf", tenant)};
  };
  auto first = add();
  setup.enqueue(first);
  int port = free_port();
  auto settings = desk_api::settings(port, tenant);
  settings["INGESTD_REVIEW__LEARNING_RECHECK_SECONDS"] = "1";
  settings.insert(extra.begin(), extra.end());
  auto d = setup.start(settings);
  ASSERT_TRUE(wait_until([&] { return setup.with_status("completed") == 1; }, 120s))
      << setup.logs();
  desk_api desk{port};
  auto queue = desk.queue(reason);
  ASSERT_EQ(queue["documents"].Size(), 1u);
  review(desk, queue["documents"][0]);
  std::this_thread::sleep_for(1100ms);
  auto second = add();
  setup.enqueue(second);
  ASSERT_TRUE(wait_until([&] { return setup.with_status("completed") == 2; }, 120s))
      << setup.logs();
  check(setup, desk, second[0]);
  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

} // namespace

// Calibrated straight-through processing: with review.auto_approve, a document the gate passes
// goes through only when reviewers kept its fields' values often enough at the extractor's
// confidence. The first invoice has no reviews to go by and waits on the desk (reason
// "calibration"); once a reviewer approved it unchanged, the same supplier's next invoice goes
// through without a person.
TEST(review_desk_daemon,
     calibrated_confidence_lets_documents_through_once_reviewers_kept_the_values) {
  auto tenant = std::string{"00000000-0000-7000-8000-0000000000ad"};
  review_then_next(
      tenant,
      {{"INGESTD_REVIEW__AUTO_APPROVE", "1"}, {"INGESTD_REVIEW__CALIBRATION_MIN_REVIEWS", "1"}},
      "calibration",
      [](desk_api& desk, const rapidjson::Value& item) {
        EXPECT_NE(std::string{item["detail"].GetString()}.find(
                      "calibration: invoice_number at confidence high has 0 reviews"),
                  std::string::npos)
            << item["detail"].GetString();
        desk.approve(item);
      },
      [&](e2e_setup& setup, desk_api&, const std::string& second) {
        EXPECT_EQ(
            setup.count("SELECT count(*) FROM document WHERE tenant_id = $1 AND needs_human_review",
                        {tenant}),
            0);
        EXPECT_EQ(setup.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND "
                              "step = 'calibration' AND outcome = 'through'",
                              {second}),
                  1)
            << setup.logs();
      });
}

// Learning from corrections (review.learn): a reviewer who corrects the supplier's name and its
// invoice number (this supplier's own number is the one after "Order ref", which the rules do not
// take) on one invoice has the same supplier's next invoice read with the corrected name and the
// number printed after that label; the audit trail says it was learned, and the desk shows it
// beside each field. The first invoice reaches the desk as a sampled check.
TEST(review_desk_daemon, a_correction_on_the_desk_corrects_the_same_suppliers_next_invoice) {
  auto invoice = text_pdf(
      {"Acme Office Supplies Ltd", "12 High Street, London EC1A 1BB", "VAT ID GB123456789",
       "Invoice number: INV-2024-0117", "Invoice date: 15.03.2024", "Order ref: PO-7781-B",
       "Description   Qty   Unit price   Amount", "Printer paper   2   50.00   100.00",
       "Subtotal   100.00 GBP", "VAT 20%   20.00 GBP", "Total   120.00 GBP"});
  review_then_next(
      "00000000-0000-7000-8000-0000000000ae",
      {{"INGESTD_REVIEW__SAMPLE_RATE", "1"}, {"INGESTD_REVIEW__LEARN", "true"}}, "sample",
      [](desk_api& desk, const rapidjson::Value& item) {
        desk.approve(item, R"(,"fields":{"supplier_name":"Corrected Supplier Ltd",)"
                           R"("invoice_number":"PO-7781-B"})");
      },
      [](e2e_setup& setup, desk_api& desk, const std::string& second) {
        EXPECT_EQ(setup.count("SELECT count(*) FROM ingestion WHERE id = $1 AND "
                              "structured_data->>'supplier_name' = 'Corrected Supplier Ltd' AND "
                              "structured_data->>'invoice_number' = 'PO-7781-B'",
                              {second}),
                  1)
            << setup.logs();
        EXPECT_EQ(setup.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND "
                              "step = 'learned' AND outcome = 'applied' AND detail LIKE "
                              "'%supplier_name ''Corrected Supplier Ltd'' (learned from 1 review)%'"
                              " AND detail LIKE '%invoice_number ''PO-7781-B'' printed after "
                              "''Order ref'' (learned from 1 review)%'",
                              {second}),
                  1)
            << setup.logs();
        EXPECT_EQ(setup.count("SELECT count(*) FROM supplier_knowledge WHERE "
                              "field = 'invoice_number_label' AND value = 'Order ref'"),
                  2)
            << "learned under the supplier's VAT id and its name";
        // The desk's page of the second invoice says, beside each field, what was learned.
        auto document
            = setup.db().scalar("SELECT document_id FROM ingestion WHERE id = $1", {second});
        auto page = desk.c.Get(("/review/documents/" + document).c_str(), desk.auth);
        ASSERT_TRUE(page);
        ASSERT_EQ(page->status, 200) << page->body;
        EXPECT_NE(page->body.find("<div class=\"learned\">Learned: &#39;Corrected Supplier "
                                  "Ltd&#39; (learned from 1 review)</div>"),
                  std::string::npos)
            << page->body;
        EXPECT_NE(
            page->body.find("<div class=\"learned\">Learned: &#39;PO-7781-B&#39; "
                            "printed after &#39;Order ref&#39; (learned from 1 review)</div>"),
            std::string::npos)
            << page->body;
      },
      invoice);
}
