// The fauxqs fixture: checks the emulator is there, hands out fresh queues and buckets, cleans
// them up, and runs boto3 as an independent client.
#include "tests/support/fauxqs/fauxqs_fixture.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include <sys/wait.h>

#include "adapters/aws/aws_credentials.hpp"
#include "tests/support/await.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::test {

std::string fauxqs_endpoint() {
  return env_or("INGESTD_TEST_FAUXQS_ENDPOINT", "");
}

std::string unique_bucket_name(const std::string& prefix) {
  auto name = unique_name(prefix);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

} // namespace

process_result run_python(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = "python3 -c " + shell_quote(script);
  for (auto& a : args)
    cmd += " " + shell_quote(a);
  cmd += " 2>&1";
  process_result out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    out.output = "popen failed";
    return out;
  }
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0)
    out.output.append(buf.data(), n);
  int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

void fauxqs_test::SetUp() {
  endpoint_ = fauxqs_endpoint();
  if (endpoint_.empty())
    GTEST_FAIL() << "INGESTD_TEST_FAUXQS_ENDPOINT is not set. Start the emulator with "
                    "`deploy/local-stack.sh start` and run `eval \"$(deploy/local-stack.sh env)\"` "
                    "before ctest.";
  // fauxqs accepts any credentials; these make the clients (and boto3) sign as usual.
  ::setenv("AWS_ACCESS_KEY_ID", "test", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  ::unsetenv("AWS_PROFILE");
  engine_ = std::make_shared<curl_engine>();
  http_request health;
  health.url = endpoint_ + "/health";
  health.total_timeout = std::chrono::seconds{5};
  auto answer = await<http_response>(
      [&](callback<http_response> cb) { engine_->submit(std::move(health), std::move(cb)); });
  if (!answer || answer->status != 200)
    GTEST_FAIL() << "fauxqs does not answer at " << endpoint_ << "/health ("
                 << (answer ? "HTTP " + std::to_string(answer->status) : answer.error().describe())
                 << "). Start it with `deploy/local-stack.sh start`.";
  sqs_ = std::make_unique<sqs_client>(engine_, connection());
}

void fauxqs_test::TearDown() {
  if (!engine_ || !sqs_)
    return;
  for (auto& url : queue_urls_) {
    auto r = await<void>([&](callback<void> cb) { sqs_->delete_queue(url, std::move(cb)); });
    if (!r && r.error().code != "sqs.NonExistentQueue" && r.error().code != "sqs.QueueDoesNotExist")
      ADD_FAILURE() << "could not delete queue " << url << ": " << r.error().describe();
  }
  for (auto& bucket : buckets_) {
    s3_store store{engine_, store_options(bucket, true)};
    auto keys = await<std::vector<std::string>>(
        [&](callback<std::vector<std::string>> cb) { store.list("", std::move(cb)); });
    if (!keys) {
      ADD_FAILURE() << "could not list bucket " << bucket << ": " << keys.error().describe();
      continue;
    }
    for (auto& key : *keys) {
      auto r = await<void>([&](callback<void> cb) { store.remove(key, std::move(cb)); });
      if (!r)
        ADD_FAILURE() << "could not delete " << bucket << "/" << key << ": "
                      << r.error().describe();
    }
    auto r = await<void>([&](callback<void> cb) { store.delete_bucket(std::move(cb)); });
    if (!r)
      ADD_FAILURE() << "could not delete bucket " << bucket << ": " << r.error().describe();
  }
  sqs_.reset();
  engine_.reset();
}

sqs_connection fauxqs_test::connection() const {
  sqs_connection c;
  auto creds = aws::credentials_from_env();
  if (creds)
    c.credentials = *creds;
  c.endpoint = endpoint_;
  return c;
}

std::unique_ptr<sqs_queue> fauxqs_test::make_queue(sqs_queue_settings settings, std::string* url) {
  auto name = unique_name("q");
  auto created = await<std::string>([&](callback<std::string> cb) {
    sqs_->create_queue(name, std::move(settings), std::move(cb));
  });
  if (!created) {
    ADD_FAILURE() << "could not create queue " << name << ": " << created.error().describe();
    return nullptr;
  }
  queue_urls_.push_back(*created);
  if (url != nullptr)
    *url = *created;
  sqs_queue_options opts;
  opts.connection = connection();
  opts.queue_url = *created;
  return std::make_unique<sqs_queue>(engine_, std::move(opts));
}

s3_options fauxqs_test::store_options(const std::string& bucket, bool path_style) const {
  s3_options o;
  auto creds = aws::credentials_from_env();
  if (creds)
    o.credentials = *creds;
  o.endpoint = endpoint_;
  o.bucket = bucket;
  o.path_style = path_style;
  return o;
}

std::unique_ptr<s3_store> fauxqs_test::make_bucket(bool path_style, std::string* bucket) {
  auto name = unique_bucket_name("t");
  auto store = std::make_unique<s3_store>(engine_, store_options(name, path_style));
  auto created = await<void>([&](callback<void> cb) { store->create_bucket(std::move(cb)); });
  if (!created) {
    ADD_FAILURE() << "could not create bucket " << name << ": " << created.error().describe();
    return nullptr;
  }
  buckets_.push_back(name);
  if (bucket != nullptr)
    *bucket = name;
  return store;
}

std::string fauxqs_test::boto3_preamble() const {
  return "import sys, boto3, botocore.config\n"
         "kw = dict(endpoint_url='"
         + endpoint_
         + "', region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test')\n"
           "sqs = boto3.client('sqs', **kw)\n"
           "s3 = boto3.client('s3', config=botocore.config.Config(s3={'addressing_style': "
           "'path'}), **kw)\n";
}

} // namespace ingestd::test
