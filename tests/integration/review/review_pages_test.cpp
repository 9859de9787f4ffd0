// The review desk's pages over HTTP: the login form and its cookie, the queue and document pages
// (escaped values, the failed checks at their fields, the reprocess form with the node's
// providers), and CSRF on every cookie-session POST.
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/review/review_fixture.hpp"

namespace ingestd {
namespace {

class review_pages_test : public test::review_fixture {
protected:
  /// Signs in through the form; returns the Cookie header value ("" when refused).
  std::string sign_in(const std::string& name, const std::string& token) {
    auto r = client().Post("/review/login", httplib::Params{{"name", name}, {"token", token}});
    if (!r || r->status != 303)
      return "";
    auto set = r->get_header_value("Set-Cookie");
    return set.substr(0, set.find(';'));
  }

  httplib::Result get_page(const std::string& path, const std::string& cookie) {
    return client().Get(path.c_str(), httplib::Headers{{"Cookie", cookie}});
  }

  static std::string csrf_of(const std::string& html) {
    std::smatch m;
    if (std::regex_search(html, m, std::regex{"data-csrf=\"([0-9a-f]+)\""}))
      return m[1];
    return "";
  }
};

TEST_F(review_pages_test, the_login_form_opens_a_cookie_session_and_the_pages_render) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 3, "INVOICE <INV-1>",
                         {{"po_number", "PO-<7>"}, {"cost centre", "Kantine"}});
  start_desk();
  auto form = client().Get("/review/login");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 200);
  EXPECT_NE(form->body.find("name=\"token\""), std::string::npos);

  auto login
      = client().Post("/review/login", httplib::Params{{"name", "Erin"}, {"token", token_a}});
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Location"), "/review");
  auto set = login->get_header_value("Set-Cookie");
  EXPECT_NE(set.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set.find("SameSite=Strict"), std::string::npos);
  auto cookie = set.substr(0, set.find(';'));

  auto queue = get_page("/review", cookie);
  ASSERT_TRUE(queue);
  ASSERT_EQ(queue->status, 200);
  EXPECT_NE(queue->body.find("inv01_en_classic.pdf"), std::string::npos);
  EXPECT_NE(queue->body.find("/review/documents/" + a1), std::string::npos);
  EXPECT_NE(queue->body.find("Erin"), std::string::npos);
  EXPECT_EQ(queue->body.find("<link"), std::string::npos) << "no external assets";
  EXPECT_EQ(queue->body.find("src=\"http"), std::string::npos) << "no external assets";

  auto page = get_page("/review/documents/" + a1, cookie);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  auto& html = page->body;
  EXPECT_FALSE(csrf_of(html).empty());
  EXPECT_NE(html.find("id=\"f-total\""), std::string::npos);
  EXPECT_NE(html.find("value=\"120\""), std::string::npos);
  // The failed check is shown at the fields it concerns.
  EXPECT_NE(html.find("class=\"field flagged\" data-name=\"total\""), std::string::npos);
  EXPECT_NE(html.find("INVOICE &lt;INV-1&gt;"), std::string::npos)
      << "the transcription is escaped";
  EXPECT_NE(html.find("/review/api/documents/" + a1 + "/pages/0.png"), std::string::npos);
  // The submitter's fields (a load file's columns), escaped.
  EXPECT_NE(html.find("<tr><th>po_number</th><td>PO-&lt;7&gt;</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>cost centre</th><td>Kantine</td></tr>"), std::string::npos);

  // Another tenant's document is not found; a bad token or a missing name does not sign in.
  auto b1 = add_document(tenant_b, "inv02_de_modern.pdf", "gate", 1);
  auto other = get_page("/review/documents/" + b1, cookie);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  auto bad = client().Post("/review/login", httplib::Params{{"name", "Erin"}, {"token", "nope"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  EXPECT_TRUE(bad->get_header_value("Set-Cookie").empty());
  auto nameless
      = client().Post("/review/login", httplib::Params{{"name", " "}, {"token", token_a}});
  ASSERT_TRUE(nameless);
  EXPECT_EQ(nameless->status, 400);
}

TEST_F(review_pages_test, every_cookie_session_post_needs_the_sessions_csrf_token) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk();
  auto cookie = sign_in("Erin", token_a);
  ASSERT_FALSE(cookie.empty());
  auto csrf = csrf_of(get_page("/review/documents/" + a1, cookie)->body);
  ASSERT_FALSE(csrf.empty());
  auto path = "/review/api/documents/" + a1 + "/approve";
  auto body = R"({"version":)" + std::to_string(version_of(a1)) + R"(,"fields":{"total":119}})";

  auto none
      = client().Post(path.c_str(), httplib::Headers{{"Cookie", cookie}}, body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 403);
  auto wrong = client().Post(path.c_str(),
                             httplib::Headers{{"Cookie", cookie}, {"X-CSRF-Token", csrf + "0"}},
                             body, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  // Another session's token does not do either.
  auto other_cookie = sign_in("Frank", token_a);
  auto other_csrf = csrf_of(get_page("/review/documents/" + a1, other_cookie)->body);
  auto crossed = client().Post(path.c_str(),
                               httplib::Headers{{"Cookie", cookie}, {"X-CSRF-Token", other_csrf}},
                               body, "application/json");
  ASSERT_TRUE(crossed);
  EXPECT_EQ(crossed->status, 403);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document_review"), "0");

  auto ok
      = client().Post(path.c_str(), httplib::Headers{{"Cookie", cookie}, {"X-CSRF-Token", csrf}},
                      body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(db->scalar("SELECT reviewed_by FROM document WHERE id = $1", {a1}), "Erin");

  // Signing out is a POST too; afterwards the cookie opens nothing.
  auto out_without = client().Post("/review/logout", httplib::Headers{{"Cookie", cookie}}, "",
                                   "application/x-www-form-urlencoded");
  ASSERT_TRUE(out_without);
  EXPECT_EQ(out_without->status, 403);
  auto out = client().Post("/review/logout", httplib::Headers{{"Cookie", cookie}}, "csrf=" + csrf,
                           "application/x-www-form-urlencoded");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 303);
  auto after = get_page("/review", cookie);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 303);
}

TEST_F(review_pages_test,
       the_reprocess_form_offers_the_nodes_providers_and_its_post_needs_the_csrf_token) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "failed", 1);
  start_desk();
  auto cookie = sign_in("Erin", token_a);
  ASSERT_FALSE(cookie.empty());
  auto page = get_page("/review/documents/" + a1, cookie);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  auto& html = page->body;
  // Two labelled selects, "as configured" first and chosen; what this node cannot run is
  // listed disabled with what it needs.
  EXPECT_NE(html.find("<form id=\"reprocess-form\">"), std::string::npos);
  EXPECT_NE(html.find("<label for=\"rp-transcription\">"), std::string::npos);
  EXPECT_NE(
      html.find(
          "<select id=\"rp-transcription\" name=\"transcription_provider\"><option value=\"\" "
          "selected>as configured (tesseract on this node)</option>"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("<option value=\"tesseract\">tesseract</option>"), std::string::npos);
  EXPECT_NE(
      html.find(
          "<option value=\"document_ai\" disabled title=\"needs transcription.document_ai_endpoint "
          "and INGESTD_DOCUMENT_AI_TOKEN\">document_ai (not on this node)</option>"),
      std::string::npos)
      << html;
  EXPECT_NE(
      html.find("<select id=\"rp-extraction\" name=\"extraction_provider\"><option value=\"\" "
                "selected>as configured (local on this node)</option>"),
      std::string::npos);
  EXPECT_NE(html.find("<option value=\"llm\">llm</option>"), std::string::npos);
  EXPECT_NE(html.find("<button id=\"reprocess\" type=\"submit\">"), std::string::npos);
  auto csrf = csrf_of(html);
  ASSERT_FALSE(csrf.empty());

  // What the form's script sends, with and without the session's CSRF token.
  auto path = "/review/api/documents/" + a1 + "/reprocess";
  auto body
      = R"({"version":)" + std::to_string(version_of(a1)) + R"(,"extraction_provider":"llm"})";
  auto none
      = client().Post(path.c_str(), httplib::Headers{{"Cookie", cookie}}, body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 403);
  auto wrong = client().Post(path.c_str(),
                             httplib::Headers{{"Cookie", cookie}, {"X-CSRF-Token", csrf + "0"}},
                             body, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE document_id = $1", {a1}), "1");
  auto ok
      = client().Post(path.c_str(), httplib::Headers{{"Cookie", cookie}, {"X-CSRF-Token", csrf}},
                      body, "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(db->scalar("SELECT reviewer || ' ' || extraction_provider FROM document_review WHERE "
                       "document_id = $1",
                       {a1}),
            "Erin llm");
  EXPECT_EQ(db->scalar("SELECT extraction_provider FROM ingestion WHERE document_id = $1 AND "
                       "status = 'in-progress'",
                       {a1}),
            "llm");
}

TEST_F(review_pages_test, an_open_desk_signs_in_by_name_only_and_still_checks_csrf) {
  auto a1 = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 1);
  start_desk("");
  auto form = client().Get("/review/login");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->body.find("name=\"token\""), std::string::npos);
  auto cookie = sign_in("Gina", "");
  ASSERT_FALSE(cookie.empty());
  auto reject = client().Post(("/review/api/documents/" + a1 + "/reject").c_str(),
                              httplib::Headers{{"Cookie", cookie}},
                              R"({"version":1,"reason":"spam"})", "application/json");
  ASSERT_TRUE(reject);
  EXPECT_EQ(reject->status, 403);
}

} // namespace
} // namespace ingestd
