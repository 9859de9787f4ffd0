// `ingestd extract FILE [--json]`: one document transcribed and extracted with the configured
// providers, then judged by the quality gate; no database or queue.
#include <cstdio>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/extractor.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/provenance.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "app/transcribe_command.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* scalar_fields[]
    = {"invoice_number",   "invoice_date",    "due_date",      "supplier_name",
       "supplier_address", "supplier_vat_id", "customer_name", "currency",
       "subtotal",         "vat_amount",      "total"};

std::string show(const rapidjson::Value& v) {
  if (v.IsNull())
    return "(none)";
  if (v.IsString())
    return v.GetString();
  if (v.IsNumber()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v.GetDouble());
    return buf;
  }
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w{sb};
  v.Accept(w);
  return sb.GetString();
}

result<extraction> run_extractor(const config& cfg, const std::string& text) {
  if (cfg.extraction.provider == "local")
    return local_extractor{}.run(text);
  thread_pool_executor pool{1};
  auto rt = make_runtime(cfg, pool, runtime_parts{false, false, false, false});
  if (!rt)
    return rt.error();
  // Each attempt's deadline, and the in-process back-offs between attempts (2, 4, 8 s...).
  auto deadline = std::chrono::seconds{cfg.extraction.timeout_seconds * cfg.extraction.max_attempts
                                       + (2 << cfg.extraction.max_attempts) + 30};
  auto extractor = (*rt)->providers->extractors().at(cfg.extraction.provider);
  return blocking_call<extraction>(deadline, "extract.timeout", "the extractor",
                                   [&](auto cb) { extractor->extract(text, cb); });
}

/// `retried`: a refused document is tried once more (an extractor that may answer differently,
/// as the ingest stage's gate step decides), rather than sent to review at once.
void print_human(const transcription& t, const extraction& x, const rapidjson::Document& d,
                 const gate_verdict& v, bool retried) {
  std::printf("transcription: %s, %d page%s, quality %.2f%s%s\n", t.provider.c_str(), t.page_count,
              t.page_count == 1 ? "" : "s", t.quality_score,
              t.native_text ? ", native PDF text" : "", t.preprocessed ? ", preprocessed" : "");
  std::printf("extractor: %s", x.model.c_str());
  if (x.input_tokens || x.output_tokens)
    std::printf(" (%lld input + %lld output tokens)", static_cast<long long>(x.input_tokens),
                static_cast<long long>(x.output_tokens));
  std::printf("\n\n");
  if (d.IsObject()) {
    for (auto* name : scalar_fields)
      if (auto m = d.FindMember(name); m != d.MemberEnd())
        std::printf("%-17s %s\n", (std::string{name} + ":").c_str(), show(m->value).c_str());
    if (auto m = d.FindMember("line_items"); m != d.MemberEnd() && m->value.IsArray()) {
      std::printf("line_items:       %u\n", m->value.Size());
      for (auto& li : m->value.GetArray()) {
        if (!li.IsObject())
          continue;
        auto get = [&](const char* k) {
          auto i = li.FindMember(k);
          return i == li.MemberEnd() ? std::string{"(none)"} : show(i->value);
        };
        std::printf("  - %s | qty %s | unit %s | amount %s\n", get("description").c_str(),
                    get("quantity").c_str(), get("unit_price").c_str(), get("amount").c_str());
      }
    }
  } else {
    std::printf("structured data: (not a JSON object)\n");
  }
  std::printf("\nextraction_successful: %s\n", x.extraction_successful ? "yes" : "no");
  std::printf("confidence: %s\n", x.confidence.c_str());
  std::printf("missing fields: ");
  if (x.missing_fields.empty())
    std::printf("none");
  for (size_t i = 0; i < x.missing_fields.size(); ++i)
    std::printf("%s%s", i ? ", " : "", x.missing_fields[i].c_str());
  std::printf("\n");
  for (auto& warning : t.warnings)
    std::printf("warning: %s\n", warning.c_str());
  if (!x.review_reason.empty())
    std::printf("review: %s\n", x.review_reason.c_str());
  if (v.passed)
    std::printf("gate: passed\n");
  else if (retried)
    std::printf("gate: FAILED - %s\n(the pipeline would retry this document once, as the LLM may "
                "answer differently, then send it to human review)\n",
                v.reason.c_str());
  else
    std::printf("gate: FAILED - %s\n(the pipeline would send this document to human review at "
                "once: the local rules read it the same way every time)\n",
                v.reason.c_str());
}

void print_json(const transcription& t, const extraction& x, const rapidjson::Document& d,
                const gate_verdict& v, bool retried) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w{sb};
  w.StartObject();
  w.Key("transcription");
  auto summary = to_summary_json(t);
  w.RawValue(summary.data(), summary.size(), rapidjson::kObjectType);
  w.Key("extraction");
  w.StartObject();
  w.Key("structured_data");
  if (d.HasParseError())
    w.Null();
  else
    d.Accept(w);
  w.Key("extraction_successful");
  w.Bool(x.extraction_successful);
  w.Key("confidence");
  w.String(x.confidence.c_str());
  w.Key("missing_fields");
  w.StartArray();
  for (auto& m : x.missing_fields)
    w.String(m.c_str());
  w.EndArray();
  w.Key("model");
  w.String(x.model.c_str());
  w.Key("review_reason");
  if (x.review_reason.empty())
    w.Null();
  else
    w.String(x.review_reason.c_str());
  w.Key("input_tokens");
  w.Int64(x.input_tokens);
  w.Key("output_tokens");
  w.Int64(x.output_tokens);
  // Where on the pages each value was read: {"total": {"page", "box", "text"}, ...}.
  w.Key("provenance");
  auto sources = to_json(locate_fields(x.structured_data, t));
  w.RawValue(sources.data(), sources.size(), rapidjson::kObjectType);
  w.EndObject();
  w.Key("gate");
  w.StartObject();
  w.Key("passed");
  w.Bool(v.passed);
  w.Key("reason");
  w.String(v.reason.c_str());
  // What the pipeline does with a refused document: "review" at once, or "retry" once first.
  w.Key("refused_goes_to");
  w.String(retried ? "retry" : "review");
  w.EndObject();
  w.EndObject();
  std::printf("%s\n", sb.GetString());
}

} // namespace

int extract_command(const arguments& args) {
  transcribed_file file;
  if (auto code = transcribe_argument(args, "extract", file); code != ok)
    return code;
  auto x = run_extractor(file.cfg, file.text.text);
  if (!x) {
    std::fprintf(stderr, "ingestd extract: %s: extraction failed: %s\n", file.path.c_str(),
                 x.error().describe().c_str());
    return failure;
  }
  auto verdict = evaluate(*x);
  rapidjson::Document d;
  d.Parse(x->structured_data.c_str());
  // The local rules are deterministic: the gate step sends what they refuse to review at once.
  bool retried = file.cfg.extraction.provider != "local";
  if (args.has("--json"))
    print_json(file.text, *x, d, verdict, retried);
  else
    print_human(file.text, *x, d, verdict, retried);
  return ok;
}

} // namespace ingestd::cli
