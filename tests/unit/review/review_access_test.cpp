// Tenant token parsing (INGESTD_REVIEW_TOKEN, INGESTD_INTAKE_TOKEN) (one token, TENANT:TOKEN pairs,
// one token for several tenants, clear errors), sessions, and the HTML escaping of the desk's
// pages.
#include <gtest/gtest.h>

#include "adapters/http_server/credentials.hpp"
#include "review/review_access.hpp"
#include "review/review_pages.hpp"

namespace ingestd {
namespace {

using http_server::tenant_tokens;

const uuid tenant_a = *uuid::parse("00000000-0000-7000-8000-00000000000a");
const uuid tenant_b = *uuid::parse("00000000-0000-7000-8000-00000000000b");
const uuid fallback = *uuid::parse("00000000-0000-7000-8000-000000000001");

TEST(tenant_tokens, empty_means_no_token) {
  auto t = tenant_tokens::parse("  ", fallback, "INGESTD_REVIEW_TOKEN");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->empty());
  EXPECT_TRUE(t->tenants_of("").empty());
}

TEST(tenant_tokens, one_token_opens_the_default_tenant) {
  auto t = tenant_tokens::parse("s3cret:with:colons", fallback, "INGESTD_REVIEW_TOKEN");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->empty());
  EXPECT_EQ(t->tenants_of("s3cret:with:colons"), std::vector<uuid>{fallback});
  EXPECT_TRUE(t->tenants_of("s3cret").empty());
  EXPECT_TRUE(t->tenants_of("").empty());
}

TEST(tenant_tokens, pairs_map_tokens_to_tenants_and_a_shared_token_opens_each) {
  auto t = tenant_tokens::parse(tenant_a.str() + ":ta, " + tenant_b.str() + ":tb," + tenant_a.str()
                                    + ":both," + tenant_b.str() + ":both",
                                std::nullopt, "INGESTD_REVIEW_TOKEN");
  ASSERT_TRUE(t) << t.error().describe();
  EXPECT_EQ(t->tenants_of("ta"), std::vector<uuid>{tenant_a});
  EXPECT_EQ(t->tenants_of("tb"), std::vector<uuid>{tenant_b});
  EXPECT_EQ(t->tenants_of("both"), (std::vector<uuid>{tenant_a, tenant_b}));
}

TEST(tenant_tokens, bad_settings_are_refused_by_name) {
  for (const auto& text : std::vector<std::string>{"a,,b", tenant_a.str() + ":",
                                                   "00000000-0000-7000-8000-00000000000Z:tok"}) {
    auto t = tenant_tokens::parse(text, fallback, "INGESTD_REVIEW_TOKEN");
    ASSERT_FALSE(t) << text;
    EXPECT_EQ(t.error().code, "config.bad_token");
    EXPECT_NE(t.error().message.find("INGESTD_REVIEW_TOKEN"), std::string::npos);
  }
  auto no_default = tenant_tokens::parse("plain", std::nullopt, "INGESTD_REVIEW_TOKEN");
  ASSERT_FALSE(no_default);
  EXPECT_NE(no_default.error().message.find("default_tenant"), std::string::npos);
}

TEST(review_sessions, a_session_has_its_own_csrf_token_and_ends_on_close) {
  review_sessions sessions;
  auto id = sessions.open("erin", {tenant_a});
  auto other = sessions.open("frank", {tenant_a});
  EXPECT_EQ(id.size(), 64u);
  auto s = sessions.find(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->reviewer, "erin");
  EXPECT_EQ(s->csrf.size(), 64u);
  EXPECT_NE(s->csrf, sessions.find(other)->csrf);
  sessions.close(id);
  EXPECT_FALSE(sessions.find(id));
  EXPECT_FALSE(sessions.find("unknown"));
}

TEST(review_sessions, an_expired_session_is_gone) {
  review_sessions sessions{std::chrono::minutes{0}};
  auto id = sessions.open("erin", {tenant_a});
  EXPECT_FALSE(sessions.find(id));
}

TEST(review_pages, html_escape_covers_text_and_attributes) {
  EXPECT_EQ(html_escape(R"(<a href="x">'&'</a>)"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

} // namespace
} // namespace ingestd
