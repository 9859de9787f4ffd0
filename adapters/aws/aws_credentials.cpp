// AWS credentials and region from the standard environment variables; service endpoints.
// Errors name the missing variable, never a value.
#include "adapters/aws/aws_credentials.hpp"

#include <cstdlib>

namespace ingestd::aws {

namespace {

std::string lookup(const std::function<const char*(const char*)>& getenv_fn, const char* name) {
  const char* value = getenv_fn(name);
  return value == nullptr ? std::string{} : std::string{value};
}

error missing(const char* name, const char* what) {
  return error::make_permanent("aws.credentials", std::string("environment variable ") + name
                                                      + " is not set (" + what + ")");
}

} // namespace

result<aws_credentials> credentials_from(const std::function<const char*(const char*)>& getenv_fn) {
  aws_credentials out;
  out.access_key_id = lookup(getenv_fn, "AWS_ACCESS_KEY_ID");
  if (out.access_key_id.empty())
    return missing("AWS_ACCESS_KEY_ID", "the access key id");
  out.secret_access_key = lookup(getenv_fn, "AWS_SECRET_ACCESS_KEY");
  if (out.secret_access_key.empty())
    return missing("AWS_SECRET_ACCESS_KEY", "the secret access key");
  out.session_token = lookup(getenv_fn, "AWS_SESSION_TOKEN");
  out.region = lookup(getenv_fn, "AWS_REGION");
  if (out.region.empty())
    out.region = lookup(getenv_fn, "AWS_DEFAULT_REGION");
  if (out.region.empty())
    return missing("AWS_REGION", "the region; AWS_DEFAULT_REGION is also accepted");
  return out;
}

result<aws_credentials> credentials_from_env() {
  return credentials_from([](const char* name) { return std::getenv(name); });
}

std::string service_endpoint(std::string_view service, std::string_view region,
                             std::string_view endpoint_override) {
  if (!endpoint_override.empty()) {
    std::string out(endpoint_override);
    while (!out.empty() && out.back() == '/')
      out.pop_back();
    return out;
  }
  return "https://" + std::string(service) + "." + std::string(region) + ".amazonaws.com";
}

} // namespace ingestd::aws
