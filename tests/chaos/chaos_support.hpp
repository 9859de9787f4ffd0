// What both chaos tests (Postgres queue, SQS) share: the lease their nodes run with and the truth
// their independent accounting checks each completion against.
#pragma once

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <rapidjson/document.h>

#include "tests/support/environment.hpp"

namespace ingestd::test {

/// The lease the nodes run with (worker.lease_seconds of the end-to-end environment): a node
/// stopped longer than this loses its claims to the others.
inline constexpr std::chrono::seconds chaos_lease{10};

/// The invoice number the corpus's truth file gives for a source file
/// (inv01_en_classic.pdf -> truth/inv01.json).
inline std::string truth_invoice_number(const std::string& source) {
  auto path = source_dir() + "/tests/fixtures/corpus/truth/" + source.substr(0, 5) + ".json";
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("invoice_number"))
    throw std::runtime_error("cannot read the invoice number from " + path);
  return d["invoice_number"].GetString();
}

} // namespace ingestd::test
