// bench_conversion: the office conversion's time per document and per page, per format.
//
//   build/bench/conversion/bench_conversion [--pages N] [--runs R]
//
// LibreOffice (unconfined: the bench's own tool) writes a DOCX, ODT and RTF of N pages of invoice
// lines, an XLSX and ODS of as many rows, and the bench writes an HTML page of them; each is then
// converted R times the way the ingest stage converts (convert_to_pdf, confined, this program as
// its launcher), and the median is printed with the PDF's page count. Needs soffice on PATH.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/convert/office_converter.hpp"
#include "adapters/ocr/document_source.hpp"

using namespace ingestd;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary};
  out << bytes;
}

bool soffice_convert(const fs::path& dir, const std::string& format, const std::string& from) {
  auto command = "timeout 300 soffice --headless --norestore -env:UserInstallation=file://"
                 + (dir / "maker").string() + " --convert-to " + format + " --outdir "
                 + dir.string() + " " + (dir / from).string() + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

int run(int argc, char** argv) {
  int pages = 10;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--pages") == 0)
      pages = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--runs") == 0)
      runs = std::max(1, std::atoi(argv[i + 1]));
  }
  auto dir = fs::temp_directory_path() / ("ingestd-bench-conversion-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // About 45 lines of text, or rows, a page.
  std::string text, csv = "Item,Quantity,Unit price,Amount\n", html = "<!DOCTYPE html><html><body>";
  html += "<h1>Invoice INV-2026-0001</h1><table>";
  for (int line = 1; line <= pages * 45; ++line) {
    auto n = std::to_string(line);
    text.append("Line ")
        .append(n)
        .append(": Widget model ")
        .append(n)
        .append(", 2 pieces at 10.50 EUR, 21.00 EUR\n");
    csv.append("Widget ").append(n).append(",2,10.50,21.00\n");
    html.append("<tr><td>Widget ")
        .append(n)
        .append("</td><td>2</td><td>10.50</td><td>21.00</td></tr>");
  }
  html += "</table></body></html>";
  write_all(dir / "invoice.txt", text);
  write_all(dir / "sheet.csv", csv);
  write_all(dir / "page.html", html);
  for (auto [format, from] : {std::pair{"docx", "invoice.txt"},
                              {"odt", "invoice.txt"},
                              {"rtf", "invoice.txt"},
                              {"xlsx", "sheet.csv"},
                              {"ods", "sheet.csv"}})
    if (!soffice_convert(dir, format, from)) {
      std::fprintf(stderr, "bench_conversion: soffice could not write the %s document\n", format);
      return 1;
    }

  office_converter_options options;
  std::printf("%-6s %8s %6s %12s %12s\n", "format", "bytes", "pages", "ms/document", "ms/page");
  for (auto name :
       {"invoice.docx", "invoice.odt", "invoice.rtf", "sheet.xlsx", "sheet.ods", "page.html"}) {
    auto bytes = read_all(dir / name);
    auto type = detect_file_type(bytes);
    if (!type || !needs_conversion(type->kind)) {
      std::fprintf(stderr, "bench_conversion: %s is not recognised\n", name);
      return 1;
    }
    std::vector<double> ms;
    int pdf_pages = 0;
    for (int r = 0; r < runs; ++r) {
      auto began = std::chrono::steady_clock::now();
      auto pdf = convert_to_pdf(bytes, *type, options, began + std::chrono::minutes{5});
      auto took
          = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
                .count();
      if (!pdf) {
        std::fprintf(stderr, "bench_conversion: %s: %s\n", name, pdf.error().describe().c_str());
        return 1;
      }
      auto counted = count_pages(*pdf, "application/pdf", document_limits{});
      pdf_pages = counted ? *counted : 0;
      ms.push_back(took);
    }
    std::sort(ms.begin(), ms.end());
    auto median = ms[ms.size() / 2];
    std::printf("%-6s %8zu %6d %12.0f %12.0f\n", std::string{type->ext}.c_str(), bytes.size(),
                pdf_pages, median, median / std::max(1, pdf_pages));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "converter") == 0)
    return converter_main(argc, argv, 2);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_conversion: %s\n", e.what());
    return 1;
  }
}
