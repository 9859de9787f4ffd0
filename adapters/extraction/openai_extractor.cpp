// OpenAI-compatible extraction: the invoice prompt and schema, and the answer read into an
// extraction; the call itself (retries, classification) is chat_client's.
#include "adapters/extraction/openai_extractor.hpp"

#include "adapters/extraction/extraction_schema.hpp"

namespace ingestd {

namespace {

constexpr std::string_view default_prompt
    = "You extract structured data from invoices. The user message is the text of one document, "
      "transcribed by OCR or taken from a PDF's text layer; it may contain OCR errors. Answer with "
      "one JSON object that matches the schema. Copy values as printed and never invent one: use "
      "null for anything absent or illegible and list those field names in missing_fields "
      "(\"line_items\" when there are none). Dates as YYYY-MM-DD. Amounts as plain numbers without "
      "currency symbols or thousands separators (\"1.234,56\" is 1234.56). currency as an ISO 4217 "
      "code. supplier_vat_id without spaces. subtotal is the net amount, vat_amount the total VAT, "
      "total the gross amount payable. extraction_successful is false when the document is not an "
      "invoice or its key fields (invoice_number, invoice_date, supplier_name, total) cannot be "
      "read. confidence is \"high\" only when every key field is legible and subtotal + vat_amount "
      "equals total, \"medium\" when something is uncertain, \"low\" when you had to guess.";

/// The configured system prompt, or the default one.
std::shared_ptr<const std::string> system_prompt_of(const std::string& configured) {
  return std::make_shared<const std::string>(configured.empty() ? std::string{default_prompt}
                                                                : configured);
}

/// The schema as each request carries it, made compact once.
std::string_view request_schema() {
  static const std::string compact = compact_json(extraction_schema_json());
  return compact;
}

chat_prompt extraction_prompt(std::shared_ptr<const std::string> system_prompt,
                              std::string_view text) {
  chat_prompt p;
  p.system = std::move(system_prompt);
  p.user.reserve(text.size() + 16);
  p.user = "Document text:\n";
  p.user += text;
  p.schema_name = "invoice";
  p.schema_json = request_schema();
  return p;
}

} // namespace

std::string build_chat_request(const openai_options& opts, std::string_view text) {
  return build_chat_body(opts, extraction_prompt(system_prompt_of(opts.system_prompt), text));
}

result<extraction> parse_chat_response(const http_response& response, const openai_options& opts,
                                       extraction* usage_out) {
  chat_usage usage;
  auto answer = parse_chat_answer(response, opts, &usage);
  if (usage_out) {
    usage_out->input_tokens = usage.input_tokens;
    usage_out->output_tokens = usage.output_tokens;
    usage_out->model = usage.model;
  }
  if (!answer)
    return answer.error();
  auto parsed = extraction_from_json(answer->content);
  if (!parsed)
    return parsed.error();
  parsed->input_tokens = usage.input_tokens;
  parsed->output_tokens = usage.output_tokens;
  parsed->model = usage.model;
  return parsed;
}

openai_extractor::openai_extractor(http_client& http, timer& retry_timer, openai_options opts)
    : system_prompt_(system_prompt_of(opts.system_prompt)),
      client_(http, retry_timer, static_cast<chat_options&&>(std::move(opts)), "extraction") {}

openai_extractor::~openai_extractor() = default;

void openai_extractor::extract(std::string text, callback<extraction> done) {
  extract_with(std::move(text), {}, std::move(done));
}

void openai_extractor::extract_with(std::string text, call_context context,
                                    callback<extraction> done) {
  // The answer is read into `out` by the acceptor; the call's usage completes it.
  auto out = std::make_shared<extraction>();
  auto prompt = extraction_prompt(system_prompt_, text);
  text = {};
  client_.complete(
      std::move(prompt),
      [out](const chat_answer& a) -> result<void> {
        auto parsed = extraction_from_json(a.content);
        if (!parsed)
          return parsed.error();
        *out = std::move(*parsed);
        return {};
      },
      [out, done = std::move(done)](result<chat_usage> usage) {
        if (!usage) {
          done(usage.error());
          return;
        }
        out->input_tokens = usage->input_tokens;
        out->output_tokens = usage->output_tokens;
        out->model = usage->model;
        done(std::move(*out));
      },
      std::move(context));
}

openai_stats openai_extractor::stats() const {
  return client_.stats();
}

} // namespace ingestd
