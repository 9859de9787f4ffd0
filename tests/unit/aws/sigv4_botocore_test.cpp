// Cross-check of SigV4 with botocore (Debian's python3-botocore): the same requests (SQS JSON
// calls, S3 keys with awkward characters, queries, session tokens) must get the same signature.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <vector>

#include "adapters/aws/encoding.hpp"
#include "adapters/aws/sigv4.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::aws {
namespace {

struct signing_case {
  std::string method;
  std::string url;
  std::string service;
  bool s3 = false;
  http_headers headers;
  std::string body;
};

std::vector<signing_case> cases() {
  const http_headers sqs_headers{{"Content-Type", "application/x-amz-json-1.0"},
                                 {"X-Amz-Target", "AmazonSQS.ReceiveMessage"},
                                 {"x-amzn-query-mode", "true"}};
  return {
      {"POST", "http://127.0.0.1:54566/", "sqs", false, sqs_headers,
       R"({"QueueUrl":"http://127.0.0.1:54566/000000000000/q","MaxNumberOfMessages":10})"},
      {"POST", "https://sqs.eu-west-1.amazonaws.com/", "sqs", false, sqs_headers, "{}"},
      {"GET", "http://127.0.0.1:54566/bucket/documents/a%20b%2Bc%3D%C3%A9.pdf", "s3", true, {}, ""},
      {"PUT",
       "https://bucket.s3.us-east-1.amazonaws.com/ingestions/0190aa/transcription-output.json",
       "s3",
       true,
       {{"Content-Type", "application/json"}},
       R"({"text":"hello"})"},
      {"GET",
       "https://bucket.s3.amazonaws.com/?list-type=2&prefix=documents%2F&max-keys=10",
       "s3",
       true,
       {},
       ""},
      {"HEAD", "http://127.0.0.1:9000/b/k~%2A%27%28x%29", "s3", true, {{"Range", "bytes=0-9"}}, ""},
      {"GET",
       "https://iam.amazonaws.com/?Version=2010-05-08&Action=ListUsers",
       "iam",
       false,
       {{"X-Custom", "  a   b  "}},
       ""},
  };
}

std::string run_botocore(const std::vector<signing_case>& all, const aws_credentials& creds) {
  auto dir = test::make_temp_dir("ingestd_botocore");
  auto input = dir + "/cases.tsv";
  {
    std::ofstream out(input);
    for (const auto& c : all) {
      std::string headers;
      for (const auto& [n, v] : c.headers)
        headers.append(n).append(": ").append(v).append("\n");
      out << c.method << '\t' << c.url << '\t' << c.service << "\tus-east-1\t" << (c.s3 ? 1 : 0)
          << '\t' << hex_encode(c.body) << '\t' << hex_encode(headers) << '\n';
    }
  }
  auto script = test::source_dir() + "/tests/unit/aws/botocore_sign.py";
  auto cmd = "python3 '" + script + "' '" + creds.access_key_id + "' '" + creds.secret_access_key
             + "' '" + creds.session_token + "' < '" + input + "' 2>&1";
  std::string output;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
      output.append(buf, n);
    int rc = pclose(p);
    EXPECT_EQ(rc, 0) << "botocore signer failed (is python3-botocore installed?):\n" << output;
  }
  std::remove(input.c_str());
  std::remove(dir.c_str());
  return output;
}

void check_against_botocore(const aws_credentials& creds) {
  auto all = cases();
  auto output = run_botocore(all, creds);
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 21;
  tm.tm_hour = 12;
  tm.tm_min = 34;
  tm.tm_sec = 56;
  auto time = std::chrono::system_clock::from_time_t(timegm(&tm));
  size_t pos = 0;
  for (const auto& c : all) {
    auto eol = output.find('\n', pos);
    ASSERT_NE(eol, std::string::npos) << "botocore gave fewer lines than cases:\n" << output;
    auto expected = output.substr(pos, eol - pos);
    pos = eol + 1;
    http_request r;
    r.method = c.method;
    r.url = c.url;
    r.headers = c.headers;
    r.body = c.body;
    auto opts = c.s3 ? s3_signing("us-east-1") : service_signing(c.service, "us-east-1");
    opts.time = time;
    auto sig = sign_request(r, creds, opts);
    ASSERT_TRUE(sig.ok()) << sig.error().describe();
    EXPECT_EQ(sig->authorization, expected) << c.method << " " << c.url << "\nours:\n"
                                            << sig->canonical_request;
  }
}

TEST(sigv4_botocore, same_signatures_as_botocore) {
  check_against_botocore(
      {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", "us-east-1"});
}

TEST(sigv4_botocore, same_signatures_as_botocore_with_session_token) {
  check_against_botocore({"ASIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                          "FwoGZXIvYXdzEXAMPLE+token/=", "us-east-1"});
}

} // namespace
} // namespace ingestd::aws
