// Credentials from the standard environment variables: what is read, and errors that name the
// missing variable without leaking any value.
#include <gtest/gtest.h>

#include <map>

#include "adapters/aws/aws_credentials.hpp"

namespace ingestd::aws {
namespace {

auto env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(aws_credentials, reads_all_four_variables) {
  auto c = credentials_from(env_of({{"AWS_ACCESS_KEY_ID", "AKID"},
                                    {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                    {"AWS_SESSION_TOKEN", "TOKEN"},
                                    {"AWS_REGION", "eu-west-1"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "SECRET");
  EXPECT_EQ(c->session_token, "TOKEN");
  EXPECT_EQ(c->region, "eu-west-1");
}

TEST(aws_credentials, session_token_optional_default_region_fallback) {
  auto c = credentials_from(env_of({{"AWS_ACCESS_KEY_ID", "AKID"},
                                    {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                    {"AWS_DEFAULT_REGION", "us-east-2"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->session_token, "");
  EXPECT_EQ(c->region, "us-east-2");
}

TEST(aws_credentials, missing_variable_is_named) {
  auto no_key
      = credentials_from(env_of({{"AWS_SECRET_ACCESS_KEY", "SECRET"}, {"AWS_REGION", "r"}}));
  ASSERT_FALSE(no_key.ok());
  EXPECT_TRUE(no_key.error().permanent());
  EXPECT_EQ(no_key.error().code, "aws.credentials");
  EXPECT_NE(no_key.error().message.find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_EQ(no_key.error().message.find("SECRET"), std::string::npos);

  auto no_secret = credentials_from(env_of({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_REGION", "r"}}));
  ASSERT_FALSE(no_secret.ok());
  EXPECT_NE(no_secret.error().message.find("AWS_SECRET_ACCESS_KEY"), std::string::npos);

  auto no_region = credentials_from(
      env_of({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"}}));
  ASSERT_FALSE(no_region.ok());
  EXPECT_NE(no_region.error().message.find("AWS_REGION"), std::string::npos);
}

TEST(aws_credentials, service_endpoint_default_and_override) {
  EXPECT_EQ(service_endpoint("sqs", "us-east-1"), "https://sqs.us-east-1.amazonaws.com");
  EXPECT_EQ(service_endpoint("s3", "eu-west-1", "http://127.0.0.1:54566/"),
            "http://127.0.0.1:54566");
}

} // namespace
} // namespace ingestd::aws
