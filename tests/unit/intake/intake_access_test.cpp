// The HTTP intake's credentials without a server: which tenant each kind of token acts for, what a
// request may name, when the intake is open, and a database that cannot answer.
#include <gtest/gtest.h>

#include "intake/intake_access.hpp"

namespace ingestd {
namespace {

const uuid tenant_a = *uuid::parse("00000000-0000-7000-8000-00000000000a");
const uuid tenant_b = *uuid::parse("00000000-0000-7000-8000-00000000000b");
const uuid fallback = *uuid::parse("00000000-0000-7000-8000-000000000001");

http_server::tenant_tokens tokens(const std::string& text) {
  auto t = http_server::tenant_tokens::parse(text, fallback, "INGESTD_INTAKE_TOKEN");
  EXPECT_TRUE(t) << t.error().describe();
  return t ? *t : http_server::tenant_tokens{};
}

/// Stored tokens: "stored-a" opens tenant A (by its digest); `down` answers an error.
struct fake_store {
  bool has_tokens = true;
  bool down = false;
  int lookups = 0;

  intake_access::stored_lookup lookup() {
    return [this](const std::string& digest) -> result<std::optional<uuid>> {
      ++lookups;
      if (down)
        return error::make_transient("pg.connection", "down");
      if (digest == http_server::token_digest("stored-a"))
        return std::optional<uuid>{tenant_a};
      return std::optional<uuid>{};
    };
  }
  intake_access::stored_any any() {
    return [this]() -> result<bool> {
      if (down)
        return error::make_transient("pg.connection", "down");
      return has_tokens;
    };
  }
};

TEST(intake_access, a_tenant_token_acts_for_its_tenant_and_a_header_cannot_name_another) {
  intake_access access{tokens(tenant_a.str() + ":token-a"), "", fallback};
  auto caller = access.authenticate("Bearer token-a");
  ASSERT_TRUE(caller);
  ASSERT_TRUE(*caller);
  EXPECT_EQ(*tenant_for(**caller, ""), tenant_a);
  EXPECT_EQ(*tenant_for(**caller, tenant_a.str()), tenant_a);
  auto other = tenant_for(**caller, tenant_b.str());
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, "intake.forbidden_tenant");
  EXPECT_EQ(tenant_for(**caller, "not-a-uuid").error().code, "intake.invalid_tenant");
  // Not the default tenant either.
  EXPECT_EQ(tenant_for(**caller, fallback.str()).error().code, "intake.forbidden_tenant");
}

TEST(intake_access, a_token_of_several_tenants_must_name_one) {
  intake_access access{tokens(tenant_a.str() + ":both," + tenant_b.str() + ":both"), "", fallback};
  auto caller = access.authenticate("Bearer both");
  ASSERT_TRUE(caller && *caller);
  auto unnamed = tenant_for(**caller, "");
  ASSERT_FALSE(unnamed);
  EXPECT_EQ(unnamed.error().code, "intake.missing_tenant");
  EXPECT_NE(unnamed.error().message.find("several tenants"), std::string::npos);
  EXPECT_EQ(*tenant_for(**caller, tenant_b.str()), tenant_b);
}

TEST(intake_access, one_plain_token_is_the_default_tenants) {
  intake_access access{tokens("a-plain-token-0123456789"), "", fallback};
  auto caller = access.authenticate("Bearer a-plain-token-0123456789");
  ASSERT_TRUE(caller && *caller);
  EXPECT_EQ(*tenant_for(**caller, ""), fallback);
  EXPECT_FALSE(tenant_for(**caller, tenant_a.str()));
}

TEST(intake_access, the_admin_token_acts_for_the_tenant_each_request_names) {
  intake_access access{tokens(tenant_a.str() + ":token-a"), "the-admin-token-0123", fallback};
  auto caller = access.authenticate("Bearer the-admin-token-0123");
  ASSERT_TRUE(caller && *caller);
  EXPECT_EQ(*tenant_for(**caller, tenant_b.str()), tenant_b);
  EXPECT_EQ(tenant_for(**caller, "").error().code, "intake.missing_tenant"); // explicitly only
}

TEST(intake_access, stored_tokens_are_found_by_their_digest) {
  fake_store store;
  intake_access access{{}, "", fallback, store.lookup(), store.any()};
  auto caller = access.authenticate("Bearer stored-a");
  ASSERT_TRUE(caller && *caller);
  EXPECT_EQ(*tenant_for(**caller, ""), tenant_a);
  auto wrong = access.authenticate("Bearer stored-b");
  ASSERT_TRUE(wrong);
  EXPECT_FALSE(*wrong);
  EXPECT_FALSE(*access.authenticate(""));
  EXPECT_FALSE(*access.authenticate("Basic c3RvcmVkLWE="));
  // A database that cannot answer is an error (503), not a refusal (401).
  store.down = true;
  EXPECT_FALSE(access.authenticate("Bearer stored-a"));
}

TEST(intake_access, an_environment_token_does_not_ask_the_database) {
  fake_store store;
  intake_access access{tokens(tenant_b.str() + ":token-b"), "", fallback, store.lookup(),
                       store.any()};
  ASSERT_TRUE(access.authenticate("Bearer token-b"));
  EXPECT_EQ(store.lookups, 0);
}

TEST(intake_access, without_any_credential_the_intake_is_open_and_a_request_names_its_tenant) {
  fake_store store;
  store.has_tokens = false;
  intake_access access{{}, "", fallback, store.lookup(), store.any()};
  EXPECT_FALSE(*access.required());
  auto caller = access.authenticate("");
  ASSERT_TRUE(caller && *caller);
  EXPECT_EQ(*tenant_for(**caller, ""), fallback);
  EXPECT_EQ(*tenant_for(**caller, tenant_b.str()), tenant_b);
  // Once a tenant has a stored token, a request needs one.
  store.has_tokens = true;
  EXPECT_TRUE(*access.required());
  EXPECT_FALSE(*access.authenticate(""));
  // ... for good: the intake does not fall back to open.
  store.has_tokens = false;
  EXPECT_TRUE(*access.required());
}

} // namespace
} // namespace ingestd
