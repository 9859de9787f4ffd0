// Office conversion as a confined process (adapters/convert): real DOCX, XLSX, ODT, ODS, RTF and
// HTML files, written by LibreOffice from plain text for each test run, convert to PDFs whose
// text is the document's; a damaged document, a conversion that never ends and a missing
// LibreOffice are named errors; inside, the network, the host's files and processes are out of
// reach. Needs LibreOffice (libreoffice-writer-nogui, -calc-nogui) and the ingestd program.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

#include "adapters/convert/office_converter.hpp"
#include "adapters/ocr/document_source.hpp"
#include "messages/error_codes.hpp"
#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/environment.hpp"

using namespace ingestd;
using namespace ingestd::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const char* invoice_text = "INVOICE\n"
                           "Invoice number: INV-2026-0417\n"
                           "Date: 2026-11-02\n"
                           "Supplier: Acme Widgets GmbH\n"
                           "Total: 1,234.50 EUR\n";
const char* sheet_text = "Item,Quantity,Price\nWidget,2,10.50\nGadget,1,99.00\nTotal,,120.00\n";
// (Its first paragraph is the one LibreOffice's default HTML import loses.)
const char* page_html = "<!DOCTYPE html><html><head><title>Invoice</title></head><body>"
                        "<p>Invoice number: INV-2026-0418</p><table><tr><td>Total</td>"
                        "<td>77.00 EUR</td></tr></table></body></html>";

std::string read_all(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class office_converter : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(make_temp_dir("office"));
    write_file(*dir_ + "/invoice.txt", invoice_text);
    write_file(*dir_ + "/sheet.csv", sheet_text);
    write_file(*dir_ + "/page.html", page_html);
    // LibreOffice itself writes the documents (outside any confinement: the test's tool).
    auto make = [&](const std::string& format, const std::string& from) {
      auto command = "timeout 120 soffice --headless --norestore -env:UserInstallation=file://"
                     + *dir_ + "/maker --convert-to " + format + " --outdir " + *dir_ + " " + *dir_
                     + "/" + from + " >/dev/null 2>&1";
      return std::system(command.c_str()) == 0;
    };
    available_ = make("docx", "invoice.txt") && make("odt", "invoice.txt")
                 && make("rtf", "invoice.txt") && make("xlsx", "sheet.csv")
                 && make("ods", "sheet.csv");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }

  void SetUp() override {
    if (!available_)
      GTEST_SKIP() << "LibreOffice (soffice) could not write the test's documents";
    options_.launcher = {ingestd_binary(), "converter"};
    options_.work_root = *dir_ + "/work";
    fs::create_directories(options_.work_root);
  }

  static std::string file(const std::string& name) { return read_all(*dir_ + "/" + name); }

  /// The text of a PDF's pages.
  static std::string pdf_text(const std::string& pdf) {
    auto bytes = std::make_shared<const std::string>(pdf);
    auto doc = open_document(bytes, "application/pdf", document_limits{});
    if (!doc)
      return "(not a PDF: " + doc.error().describe() + ")";
    std::string text;
    for (int i = 0; i < (*doc)->page_count(); ++i)
      if (auto page = (*doc)->text_layer(i))
        text += *page;
    return text;
  }

  /// A program standing in for LibreOffice: a shell script in a folder of /var/tmp, which the
  /// confinement leaves readable (its /tmp is its own, and a build folder may be under /tmp).
  std::string script(const std::string& name, const std::string& body) {
    auto path = (fs::path{outside_dir()} / (unique_name(name) + ".sh")).string();
    write_file(path, "#!/bin/sh\n" + body);
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  /// A folder outside /tmp that the conversion sees (read-only), removed after the test.
  const std::string& outside_dir() {
    if (outside_.empty()) {
      std::string pattern = "/var/tmp/ingestd-convert-test-XXXXXX";
      if (::mkdtemp(pattern.data()) != nullptr)
        outside_ = pattern;
    }
    return outside_;
  }
  void TearDown() override {
    std::error_code ec;
    if (!outside_.empty())
      fs::remove_all(outside_, ec);
  }

  static inline std::string* dir_ = nullptr;
  static inline bool available_ = false;
  office_converter_options options_;
  std::string outside_;
};

TEST_F(office_converter, every_format_converts_to_a_pdf_with_its_text) {
  write_file(*dir_ + "/page.html", page_html);
  std::map<std::string, std::string> expected{
      {"invoice.docx", "INV-2026-0417"}, {"invoice.odt", "INV-2026-0417"},
      {"invoice.rtf", "INV-2026-0417"},  {"sheet.xlsx", "Gadget"},
      {"sheet.ods", "Gadget"},           {"page.html", "INV-2026-0418"}};
  for (auto& [name, needle] : expected) {
    auto bytes = file(name);
    auto type = detect_file_type(bytes);
    ASSERT_TRUE(type && needs_conversion(type->kind)) << name;
    EXPECT_EQ(name.substr(name.rfind('.') + 1), type->ext);
    auto began = std::chrono::steady_clock::now();
    auto pdf = convert_to_pdf(bytes, *type, options_, began + 120s);
    ASSERT_TRUE(pdf) << name << ": " << pdf.error().describe();
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - began);
    EXPECT_TRUE(pdf->starts_with("%PDF-")) << name;
    auto text = pdf_text(*pdf);
    EXPECT_NE(text.find(needle), std::string::npos) << name << ": " << text;
    std::printf("%s: %zu bytes, converted in %lld ms\n", name.c_str(), bytes.size(),
                static_cast<long long>(took.count()));
  }
  // Each conversion's work folder is gone (the test's own folders, made under a root of its own:
  // other processes convert under /tmp meanwhile).
  EXPECT_TRUE(fs::is_empty(options_.work_root)) << options_.work_root;
}

TEST_F(office_converter, a_damaged_document_is_a_named_error) {
  // A DOCX's parts cut short: its directory still says DOCX, its data is gone.
  auto docx = file("invoice.docx");
  ASSERT_GT(docx.size(), 2000u);
  auto damaged = docx.substr(0, 200) + std::string(docx.size() - 1400, 'x')
                 + docx.substr(docx.size() - 1200);
  auto type = detect_file_type(damaged);
  ASSERT_TRUE(type && type->kind == file_kind::docx);
  auto pdf = convert_to_pdf(damaged, *type, options_, std::chrono::steady_clock::now() + 120s);
  ASSERT_FALSE(pdf);
  EXPECT_EQ(pdf.error().code, "convert.failed") << pdf.error().describe();
  EXPECT_TRUE(pdf.error().permanent());
  EXPECT_NE(pdf.error().message.find("docx"), std::string::npos) << pdf.error().message;
}

TEST_F(office_converter, a_conversion_past_its_deadline_is_killed_with_its_processes) {
  auto marker = std::to_string(3000 + ::getpid() % 1000);
  options_.program = script("never_ends", "sleep " + marker + " & sleep " + marker + "\n");
  auto began = std::chrono::steady_clock::now();
  auto type = detect_file_type(file("invoice.odt"));
  auto pdf = convert_to_pdf(file("invoice.odt"), *type, options_, began + 2s);
  ASSERT_FALSE(pdf);
  EXPECT_EQ(pdf.error().code, errc::convert_timeout) << pdf.error().describe();
  EXPECT_TRUE(decoder_crash(pdf.error()));
  // Neither sleep is left (both were in the conversion's process group and PID namespace).
  auto sleeping = [&] {
    for (auto& entry : fs::directory_iterator("/proc")) {
      auto cmdline = read_all(entry.path() / "cmdline");
      for (auto& c : cmdline)
        c = c == '\0' ? ' ' : c;
      if (cmdline.starts_with("sleep " + marker))
        return true;
    }
    return false;
  };
  EXPECT_TRUE(wait_until([&] { return !sleeping(); }, 30s));
}

TEST_F(office_converter, work_folders_a_killed_node_left_are_removed_before_the_first_conversion) {
  options_.work_root = *dir_ + "/left-behind";
  auto root = fs::path{options_.work_root};
  for (auto name : {"ingestd-convert-old", "ingestd-convert-new", "someone-elses-old"})
    fs::create_directories(root / name / "profile");
  auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours{2};
  fs::last_write_time(root / "ingestd-convert-old", two_hours_ago);
  fs::last_write_time(root / "someone-elses-old", two_hours_ago);
  options_.program = "/nonexistent/soffice";
  auto type = detect_file_type(file("invoice.rtf"));
  auto pdf = convert_to_pdf(file("invoice.rtf"), *type, options_,
                            std::chrono::steady_clock::now() + 60s);
  ASSERT_FALSE(pdf);
  EXPECT_FALSE(fs::exists(root / "ingestd-convert-old"));
  // One that may be a running conversion's, and what is not a conversion's, stay.
  EXPECT_TRUE(fs::exists(root / "ingestd-convert-new"));
  EXPECT_TRUE(fs::exists(root / "someone-elses-old"));
}

TEST_F(office_converter, without_libreoffice_the_error_names_the_packages) {
  options_.program = "/nonexistent/soffice";
  auto type = detect_file_type(file("invoice.rtf"));
  auto pdf = convert_to_pdf(file("invoice.rtf"), *type, options_,
                            std::chrono::steady_clock::now() + 60s);
  ASSERT_FALSE(pdf);
  EXPECT_EQ(pdf.error().code, "convert.unavailable");
  EXPECT_NE(pdf.error().message.find("libreoffice-writer-nogui"), std::string::npos)
      << pdf.error().message;
}

TEST_F(office_converter, inside_the_network_host_files_and_processes_are_out_of_reach) {
  // A listener on loopback that the conversion must not reach.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t length = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  auto port = std::to_string(ntohs(addr.sin_port));
  auto outside = (fs::path{outside_dir()} / unique_name("written")).string();
  // The probe reports what it could do as the "PDF" it writes to its output folder.
  options_.program
      = script("probe", "cd \"$HOME\"\n"
                        "r=\"%PDF-probe\"\n"
                        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "
                            + port
                            + "), 2)' 2>/dev/null && r=\"$r tcp-connected\"\n"
                              "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
                              "s.connect(\"/run/postgresql/.s.PGSQL.5432\")' 2>/dev/null && r=\"$r "
                              "unix-connected\"\n"
                              "touch "
                            + outside
                            + " 2>/dev/null && r=\"$r wrote-outside\"\n"
                              "touch out/inside 2>/dev/null && r=\"$r wrote-inside\"\n"
                              "r=\"$r processes=$(ls /proc | grep -c '^[0-9]')\"\n"
                              "r=\"$r tmp=$(ls -A /tmp | wc -l)\"\n"
                              "echo \"$r\" > out/document.pdf\n");
  auto type = detect_file_type(file("invoice.docx"));
  auto pdf = convert_to_pdf(file("invoice.docx"), *type, options_,
                            std::chrono::steady_clock::now() + 60s);
  ::close(listener);
  ASSERT_TRUE(pdf) << pdf.error().describe();
  EXPECT_EQ(pdf->find("connected"), std::string::npos) << *pdf;
  EXPECT_EQ(pdf->find("wrote-outside"), std::string::npos) << *pdf;
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_NE(pdf->find("wrote-inside"), std::string::npos) << *pdf;
  // The shell, its command and the namespace's first process; /tmp holds only the work folder.
  EXPECT_NE(pdf->find("tmp=1"), std::string::npos) << *pdf;
  auto processes = std::stoi(pdf->substr(pdf->find("processes=") + 10));
  EXPECT_LE(processes, 6) << *pdf;
}

} // namespace
