// AWS credentials and region from the standard environment variables, and the endpoint of an AWS
// service (the real one for a region, or an override such as a local emulator).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "messages/result.hpp"

namespace ingestd::aws {

struct aws_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  /// Empty when the credentials are long-lived (no STS session).
  std::string session_token;
  std::string region;
};

/// Reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (optional) and AWS_REGION
/// (falling back to AWS_DEFAULT_REGION). A missing or empty required variable gives a permanent
/// "aws.credentials" error whose message names the variable (never a secret value).
result<aws_credentials> credentials_from_env();

/// The same with a custom lookup (returns nullptr for unset), for tests and config layers.
result<aws_credentials> credentials_from(const std::function<const char*(const char*)>& getenv_fn);

/// The base URL (no trailing '/') of `service` in `region`: `endpoint_override` when it is not
/// empty (e.g. "http://127.0.0.1:54566" for fauxqs), else
/// "https://{service}.{region}.amazonaws.com".
std::string service_endpoint(std::string_view service, std::string_view region,
                             std::string_view endpoint_override = {});

} // namespace ingestd::aws
