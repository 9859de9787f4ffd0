// The GoogleTest fixture for tests against the fauxqs SQS/S3 emulator: a real HTTP engine, a fresh
// queue or bucket per test (deleted afterwards), test credentials, and a way to run boto3.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/http/curl_engine.hpp"
#include "adapters/queue/sqs_queue.hpp"
#include "adapters/storage/s3_store.hpp"

namespace ingestd::test {

/// INGESTD_TEST_FAUXQS_ENDPOINT, or "" when unset.
std::string fauxqs_endpoint();

/// A fresh S3 bucket name: lower case, digits and hyphens, starting with `prefix`.
std::string unique_bucket_name(const std::string& prefix = "t");

/// What a process printed and how it ended.
struct process_result {
  int exit_code = -1;
  std::string output; ///< stdout and stderr together
};

/// Runs `python3 -c script args...` with the current environment and waits for it.
process_result run_python(const std::string& script, const std::vector<std::string>& args = {});

class fauxqs_test : public ::testing::Test {
protected:
  /// Fails (never skips) when INGESTD_TEST_FAUXQS_ENDPOINT is unset or the emulator does not
  /// answer its health check. Sets AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION to
  /// test values (fauxqs accepts any), so clients built from the environment work.
  void SetUp() override;
  /// Deletes every queue and bucket (with its objects) this test created.
  void TearDown() override;

  sqs_connection connection() const;
  /// Creates a fresh queue with `settings` and returns a queue port bound to it; the URL goes to
  /// `url` when given. Deleted after the test.
  std::unique_ptr<sqs_queue> make_queue(sqs_queue_settings settings = {},
                                        std::string* url = nullptr);
  /// Registers a queue URL created some other way for deletion after the test.
  void adopt_queue(std::string url) { queue_urls_.push_back(std::move(url)); }

  s3_options store_options(const std::string& bucket, bool path_style) const;
  /// Creates a fresh bucket and returns a store bound to it. Emptied and deleted after the test.
  std::unique_ptr<s3_store> make_bucket(bool path_style = true, std::string* bucket = nullptr);

  /// A Python preamble that defines `sqs` and `s3` boto3 clients (path-style S3) pointed at the
  /// emulator with the test credentials; append the test's own lines.
  std::string boto3_preamble() const;

  std::string endpoint_;
  std::shared_ptr<curl_engine> engine_;
  std::unique_ptr<sqs_client> sqs_;

private:
  std::vector<std::string> queue_urls_;
  std::vector<std::string> buckets_;
};

} // namespace ingestd::test
