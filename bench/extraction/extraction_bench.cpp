// Extraction accuracy of the local extractor on the multilingual corpus and on the receipt
// photos, per document kind, per language, per layout and per field, for text PDFs and scans
// (photos) separately, through the real transcriber (poppler for text layers, Tesseract for
// scans); the OCR's seconds per page; and the extractor's CPU time per page.
// A report, not a threshold test: the held-out split is measured here and nowhere tuned.
// Columns: each field's accuracy where the truth has it; all-key: every key field right; gate:
// passed the quality gate (no review); gate-err: of those, the share with a key field wrong.
//
// Usage:
//   tests/fixtures/generate_multilingual_corpus.py build/multilingual --scans
//   tests/fixtures/generate_receipts.py build/receipts
//   OMP_THREAD_LIMIT=1 build/bench/extraction/bench_extraction build/multilingual/heldout
//       [--text-only | --scans-only] [--failures] [--cache DIR] [--languages eng+deu]
//       [--other-languages fra+nld+spa+ita+pol]
//   OMP_THREAD_LIMIT=1 build/bench/extraction/bench_extraction build/receipts/heldout --scans-only
// --failures lists every wrong field (use it on the tune split only); --cache keeps each
// transcription as DIR/<id>.<pdf|scan>.json so a second run skips the OCR. Also: the share of
// the values read right that are found on their page (adapters/extraction/provenance), and the
// lift of learning from corrections (adapters/extraction/supplier_knowledge): each supplier's
// first document corrected to the truth by a "reviewer", its second and later documents read
// with what that taught, against the same documents read without.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/local/text.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/provenance.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"

using namespace ingestd;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> fields{"invoice_number", "invoice_date",  "total",
                                      "currency",       "due_date",      "subtotal",
                                      "vat_amount",     "supplier_name", "supplier_vat_id"};
constexpr size_t key_fields = 4; // the key fields, measured together: the first four

struct tally {
  std::map<std::string, std::pair<int, int>> by_field; // field -> (right, counted)
  int documents = 0;
  int all_key_right = 0;
  int gate_passed = 0;
  int gate_passed_wrong = 0; // passed the gate with a key field wrong: what goes through unseen
};

std::string read_text(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string normalise_id(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// Whether the extracted value of `field` matches the truth; nullopt when the truth has none.
std::optional<bool> matches(const std::string& field, const rapidjson::Value& truth,
                            const rapidjson::Value& got) {
  auto t = truth.FindMember(field.c_str());
  if (t == truth.MemberEnd() || t->value.IsNull())
    return std::nullopt;
  auto g = got.FindMember(field.c_str());
  if (g == got.MemberEnd() || g->value.IsNull())
    return false;
  if (t->value.IsNumber())
    return g->value.IsNumber() && std::fabs(g->value.GetDouble() - t->value.GetDouble()) < 0.011;
  if (!g->value.IsString())
    return false;
  std::string tv = t->value.GetString(), gv = g->value.GetString();
  if (field == "invoice_number")
    return normalise_id(tv) == normalise_id(gv);
  if (field == "supplier_vat_id") {
    auto alnum = [](const std::string& v) {
      std::string out;
      for (char c : normalise_id(v))
        if (std::isalnum(static_cast<unsigned char>(c)))
          out += c;
      return out;
    };
    return alnum(tv) == alnum(gv);
  }
  if (field == "supplier_name")
    return local_rules::lower(tv) == local_rules::lower(gv);
  return tv == gv;
}

/// The machine's data with every scored field the truth has set to the truth: what a reviewer
/// approves after correcting it.
std::string corrected(const rapidjson::Document& truth, const std::string& machine) {
  rapidjson::Document d;
  d.Parse(machine.c_str());
  if (!d.IsObject())
    d.SetObject();
  auto& a = d.GetAllocator();
  for (const auto& f : fields) {
    auto t = truth.FindMember(f.c_str());
    if (t == truth.MemberEnd() || t->value.IsNull())
      continue;
    rapidjson::Value v{t->value, a};
    if (auto g = d.FindMember(f.c_str()); g != d.MemberEnd())
      g->value = v;
    else
      d.AddMember(rapidjson::Value{f.c_str(), a}, v, a);
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  d.Accept(w);
  return buf.GetString();
}

/// What one tenant's reviewers taught, merged as supplier_knowledge merges it in the database.
void teach(std::vector<supplier_fact>& known, const std::vector<supplier_fact>& learned) {
  for (const auto& f : learned) {
    auto it = std::find_if(known.begin(), known.end(), [&](const supplier_fact& k) {
      return k.supplier == f.supplier && k.field == f.field;
    });
    if (it == known.end())
      known.push_back(f);
    else
      *it = supplier_fact{f.supplier, f.field, f.value, it->value == f.value ? it->reviews + 1 : 1};
  }
}

/// --other-languages: the languages a page may be read again in (transcription.other_languages;
/// the daemon's default unless given, "" for none).
std::string other_languages = "fra+nld+spa+ita+pol";

/// Seconds of OCR and the pages they read (transcriptions taken from the cache do not count).
double ocr_seconds = 0;
long ocr_pages = 0;

std::optional<transcription> transcribe(const fs::path& file, const std::string& languages,
                                        const fs::path& cache, const std::string& key) {
  fs::path cached = cache.empty() ? fs::path{} : cache / (key + ".json");
  if (!cached.empty() && fs::exists(cached))
    if (auto t = transcription_from_json(read_text(cached)))
      return std::move(*t);
  auto opts = make_local_transcriber_options(languages, 50u << 20, 20, std::chrono::seconds(300),
                                             other_languages);
  auto t0 = std::chrono::steady_clock::now();
  auto r = transcribe_file_blocking(file.string(), opts, 0.7, true, 0);
  ocr_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r)
    ocr_pages += r->page_count;
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(), r.error().describe().c_str());
    return std::nullopt;
  }
  if (!cached.empty()) {
    std::ofstream out{cached, std::ios::binary};
    out << to_json(*r);
  }
  return std::move(*r);
}

void print_table(const char* title, const std::map<std::string, tally>& rows) {
  std::printf("\n%s\n%-12s %5s", title, "", "docs");
  for (const auto& f : fields)
    std::printf(" %9.9s", f.c_str());
  std::printf(" %8s %6s %9s\n", "all-key", "gate", "gate-err");
  tally sum;
  auto line = [](const std::string& name, const tally& t) {
    std::printf("%-12s %5d", name.c_str(), t.documents);
    for (const auto& f : fields) {
      auto it = t.by_field.find(f);
      if (it == t.by_field.end() || it->second.second == 0)
        std::printf(" %9s", "-");
      else
        std::printf(" %8.0f%%", 100.0 * it->second.first / it->second.second);
    }
    std::printf(" %7.0f%% %5.0f%%", t.documents ? 100.0 * t.all_key_right / t.documents : 0.0,
                t.documents ? 100.0 * t.gate_passed / t.documents : 0.0);
    if (t.gate_passed > 0)
      std::printf(" %8.1f%%\n", 100.0 * t.gate_passed_wrong / t.gate_passed);
    else
      std::printf(" %9s\n", "-");
  };
  for (const auto& [name, t] : rows) {
    line(name, t);
    sum.documents += t.documents;
    sum.all_key_right += t.all_key_right;
    sum.gate_passed += t.gate_passed;
    sum.gate_passed_wrong += t.gate_passed_wrong;
    for (const auto& [f, v] : t.by_field) {
      sum.by_field[f].first += v.first;
      sum.by_field[f].second += v.second;
    }
  }
  line("ALL", sum);
  double key_right = 0, key_count = 0;
  for (size_t i = 0; i < key_fields; ++i) {
    key_right += sum.by_field[fields[i]].first;
    key_count += sum.by_field[fields[i]].second;
  }
  std::printf("key fields (invoice_number, invoice_date, total, currency) together: %.1f%%\n",
              key_count > 0 ? 100.0 * key_right / key_count : 0.0);
}

int run_bench(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_extraction SPLIT_DIR [--text-only|--scans-only] [--failures] "
                 "[--cache DIR] [--languages L] [--other-languages L]\n");
    return 2;
  }
  fs::path dir = argv[1];
  bool text = true, scans = true, failures = false;
  fs::path cache;
  std::string languages = "eng+deu";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--text-only")
      scans = false;
    else if (a == "--scans-only")
      text = false;
    else if (a == "--failures")
      failures = true;
    else if (a == "--cache" && i + 1 < argc)
      cache = argv[++i];
    else if (a == "--languages" && i + 1 < argc)
      languages = argv[++i];
    else if (a == "--other-languages" && i + 1 < argc)
      other_languages = argv[++i];
  }
  if (!cache.empty())
    fs::create_directories(cache);
  std::vector<fs::path> truths;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json")
      truths.push_back(e.path());
  std::sort(truths.begin(), truths.end());
  local_extractor extractor;
  gate_options gate;
  for (const char* mode : {"pdf", "scan"}) {
    bool is_scan = std::string{mode} == "scan";
    if ((is_scan && !scans) || (!is_scan && !text))
      continue;
    std::map<std::string, tally> by_kind, by_language, by_layout;
    // The extractor's stated confidence -> (documents with every key field right, documents).
    std::map<std::string, std::pair<int, int>> reliability;
    // Per field: (values read right and found on their page, values read right).
    std::map<std::string, std::pair<int, int>> located;
    // Learning from corrections: the suppliers whose first document was corrected, what that
    // taught, and on the later documents of those suppliers the scores without and with it.
    std::set<std::string> corrected_suppliers;
    std::vector<supplier_fact> known;
    tally without_learning, with_learning;
    ocr_seconds = 0;
    ocr_pages = 0;
    double cpu_seconds = 0;
    long pages = 0;
    for (const auto& tp : truths) {
      rapidjson::Document truth;
      auto tj = read_text(tp);
      truth.Parse(tj.c_str());
      if (!truth.IsObject() || !truth.HasMember(mode))
        continue;
      std::string id = truth["id"].GetString();
      auto t = transcribe(dir / truth[mode].GetString(), languages, cache, id + "." + mode);
      if (!t)
        continue;
      constexpr int reps = 20;
      std::clock_t c0 = std::clock();
      extraction x;
      for (int r = 0; r < reps; ++r)
        x = extractor.run(t->text);
      cpu_seconds += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC / reps;
      pages += truth["pages"].GetInt();
      rapidjson::Document got;
      got.Parse(x.structured_data.c_str());
      bool all_key = true;
      std::set<std::string> on_page;
      for (auto& s : locate_fields(x.structured_data, *t))
        on_page.insert(s.field);
      auto& lt = by_language[truth["language"].GetString()];
      auto& yt = by_layout[truth["layout"].GetString()];
      auto& kt = by_kind[std::string{truth["kind"].GetString()} + (is_scan ? " scan" : " pdf")];
      for (size_t i = 0; i < fields.size(); ++i) {
        auto m = matches(fields[i], truth, got);
        if (!m)
          continue;
        if (*m) {
          located[fields[i]].first += on_page.contains(fields[i]) ? 1 : 0;
          located[fields[i]].second += 1;
        }
        for (auto* tl : {&kt, &lt, &yt}) {
          tl->by_field[fields[i]].first += *m ? 1 : 0;
          tl->by_field[fields[i]].second += 1;
        }
        if (i < key_fields && !*m) {
          all_key = false;
          if (failures) {
            auto g = got.FindMember(fields[i].c_str());
            auto tv = truth.FindMember(fields[i].c_str());
            auto show = [](const rapidjson::Value& v) {
              return v.IsString()   ? std::string{v.GetString()}
                     : v.IsNumber() ? std::to_string(v.GetDouble())
                                    : std::string{"null"};
            };
            std::printf("%s %s %s: got %s, want %s\n", mode, id.c_str(), fields[i].c_str(),
                        g == got.MemberEnd() ? "-" : show(g->value).c_str(),
                        show(tv->value).c_str());
          }
        }
      }
      if (auto supplier = truth.FindMember("supplier_name");
          supplier != truth.MemberEnd() && supplier->value.IsString()) {
        if (corrected_suppliers.insert(supplier->value.GetString()).second) {
          teach(known, learn(x.structured_data, corrected(truth, x.structured_data), t->text));
        } else {
          extraction learned_x = x;
          apply_knowledge(known, learned_x, t->text);
          rapidjson::Document with;
          with.Parse(learned_x.structured_data.c_str());
          for (auto [t, data] :
               {std::pair{&without_learning, &got}, std::pair{&with_learning, &with}}) {
            bool all = true;
            for (size_t i = 0; i < fields.size(); ++i)
              if (auto m = matches(fields[i], truth, *data)) {
                t->by_field[fields[i]].first += *m ? 1 : 0;
                t->by_field[fields[i]].second += 1;
                all = all && (i >= key_fields || *m);
              }
            t->documents += 1;
            t->all_key_right += all ? 1 : 0;
          }
        }
      }
      bool passed = evaluate(x, gate).passed;
      auto& rel = reliability[x.confidence];
      rel.first += all_key ? 1 : 0;
      rel.second += 1;
      for (auto* tl : {&kt, &lt, &yt}) {
        tl->documents += 1;
        tl->all_key_right += all_key ? 1 : 0;
        tl->gate_passed += passed ? 1 : 0;
        tl->gate_passed_wrong += passed && !all_key ? 1 : 0;
      }
    }
    std::string title = std::string{is_scan ? "SCANS" : "TEXT PDFs"} + " of " + dir.string();
    print_table((title + ", by document kind").c_str(), by_kind);
    print_table((title + ", by language").c_str(), by_language);
    print_table((title + ", by layout").c_str(), by_layout);
    std::printf("\nreliability: stated confidence against documents with every key field right\n");
    for (const char* level : {"high", "medium", "low"})
      if (auto it = reliability.find(level); it != reliability.end())
        std::printf("  %-6s %4d documents, %5.1f%% right\n", level, it->second.second,
                    100.0 * it->second.first / it->second.second);
    int found = 0, right = 0;
    for (auto& [field, n] : located) {
      found += n.first;
      right += n.second;
    }
    std::printf("\nprovenance: values read right that were found on their page (their box):"
                " %.1f%% (%d of %d)\n ",
                right ? 100.0 * found / right : 0.0, found, right);
    for (auto& [field, n] : located)
      std::printf(" %s %.0f%%", field.c_str(), n.second ? 100.0 * n.first / n.second : 0.0);
    std::printf("\n");
    std::printf("learning from corrections: %zu suppliers, one document each corrected (%zu facts "
                "taught); their %d later documents without -> with what was learned:\n ",
                corrected_suppliers.size(), known.size(), with_learning.documents);
    for (const char* f : {"supplier_name", "supplier_vat_id", "invoice_number", "invoice_date",
                          "due_date", "total"}) {
      auto b = without_learning.by_field[f], a = with_learning.by_field[f];
      if (a.second > 0)
        std::printf(" %s %.1f%% -> %.1f%%", f, 100.0 * b.first / b.second,
                    100.0 * a.first / a.second);
    }
    if (with_learning.documents > 0)
      std::printf("; all key fields %.1f%% -> %.1f%%",
                  100.0 * without_learning.all_key_right / without_learning.documents,
                  100.0 * with_learning.all_key_right / with_learning.documents);
    std::printf("\n");
    if (is_scan && ocr_pages > 0)
      std::printf("OCR (%s): %.2f s per page, %.2f pages/s (%ld pages read, not cached)\n",
                  languages.c_str(), ocr_seconds / static_cast<double>(ocr_pages),
                  static_cast<double>(ocr_pages) / ocr_seconds, ocr_pages);
    std::printf("local extractor CPU time: %.2f ms per page (%ld pages)\n",
                pages ? cpu_seconds * 1000.0 / static_cast<double>(pages) : 0.0, pages);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // An unexpected failure (a file that cannot be read, a bad truth file) ends the run with a
  // message instead of std::terminate.
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "extraction_bench: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "extraction_bench: unknown exception\n");
  }
  return 1;
}
