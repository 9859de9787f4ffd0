// The local extractor on the corpus's text PDFs as poppler reads them (physical layout, columns
// kept apart by runs of spaces): the native-text path straight from the files.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <poppler-document.h>
#include <poppler-page.h>
#include <rapidjson/document.h>

#include "adapters/extraction/local_extractor.hpp"
#include "tests/support/llm/extraction_accuracy.hpp"

using namespace ingestd;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string pdf_text(const std::string& path) {
  std::unique_ptr<poppler::document> doc{poppler::document::load_from_file(path)};
  if (!doc)
    return {};
  std::string out;
  for (int i = 0; i < doc->pages(); ++i) {
    std::unique_ptr<poppler::page> p{doc->create_page(i)};
    auto bytes = p->text(poppler::rectf(), poppler::page::physical_layout).to_utf8();
    out.append(bytes.begin(), bytes.end());
    out += '\n';
  }
  return out;
}

} // namespace

TEST(local_extractor, corpus_pdf_text_layer_accuracy) {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "INGESTD_SOURCE_DIR is not set (run through ctest)";
  std::string corpus = std::string{src} + "/tests/fixtures/corpus/";
  rapidjson::Document manifest;
  auto m = slurp(corpus + "manifest.json");
  manifest.Parse(m.c_str());
  ASSERT_FALSE(manifest.HasParseError()) << "corpus manifest missing or invalid";
  std::vector<test::truth_pair> pairs;
  for (const auto& f : manifest["files"].GetArray()) {
    if (std::string{f["kind"].GetString()} != "text_pdf")
      continue;
    test::truth_pair p;
    p.name = f["file"].GetString();
    p.text = pdf_text(corpus + p.name);
    p.truth_json = slurp(corpus + f["truth"].GetString());
    ASSERT_FALSE(p.text.empty()) << p.name;
    pairs.push_back(std::move(p));
  }
  local_extractor ex;
  auto rep = test::measure_accuracy(
      pairs, [&](const std::string& t) { return ex.run(t).structured_data; });
  std::cout << "\nlocal extractor on the corpus text PDFs (poppler physical layout, "
            << rep.documents << " documents)\n"
            << rep.table();
  for (const auto& miss : rep.misses)
    std::cout << "  miss: " << miss << "\n";
  ASSERT_GE(rep.documents, 6);
  for (const auto& f : rep.fields)
    EXPECT_GE(f.ratio(), 0.8) << f.field;
}
