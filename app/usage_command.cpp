// `ingestd usage [--tenant ID] [--since T] [--json]`: what each tenant's documents used of the
// providers, per month, priced with the configuration's usage.* prices.
#include <cstdio>
#include <optional>
#include <string>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/providers/budget_ledger.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* usage_usage
    = R"(Usage: ingestd usage [--tenant TENANT_ID] [--since TIME] [--json]

What each tenant's documents used of the providers, per month (UTC, by when the ingestion was
made): ingestions and completions, the LLM tokens of completed extractions, and the pages read by
Document AI and locally (Tesseract, a PDF's own text), with their cost at the prices of
usage.llm_input_price_per_million_tokens, usage.llm_output_price_per_million_tokens and
usage.document_ai_price_per_thousand_pages (0: not priced), in usage.currency, and each tenant's
monthly budget (usage.monthly_budget, usage.tenant_budgets; "spent" once the cost reached it).

  --tenant ID  one tenant only
  --since T    ingestions made at or after T: a time (2026-11-01, 2026-11-01T00:00:00Z) or an
               age (90m, 12h, 30d)
  --json       one JSON object per tenant and month

Pages are recorded since migration 018; tokens of extractions that did not complete are not
recorded. Exit codes: 0 done; 1 the database could not be reached; 2 usage error.
)";

double cost_of(const usage_row& r, const config::usage_section& prices) {
  return ingestd::cost_of(
      month_usage{r.month, r.llm_input_tokens, r.llm_output_tokens, r.document_ai_pages}, prices);
}

/// The tenant's monthly budget (0: none).
double budget_of(const uuid& tenant, const config::usage_section& usage,
                 const std::vector<tenant_budget>& budgets) {
  auto id = tenant.str();
  for (const auto& b : budgets)
    if (b.tenant == id)
      return b.amount;
  return usage.monthly_budget;
}

std::string json_line(const usage_row& r, double cost, double budget, const std::string& currency) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto tenant = r.tenant_id.str();
  w.StartObject();
  w.Key("tenant_id");
  w.String(tenant.c_str());
  w.Key("tenant_name");
  w.String(r.tenant_name.c_str());
  w.Key("month");
  w.String(r.month.c_str());
  w.Key("ingestions");
  w.Int64(r.ingestions);
  w.Key("completed");
  w.Int64(r.completed);
  w.Key("llm_input_tokens");
  w.Int64(r.llm_input_tokens);
  w.Key("llm_output_tokens");
  w.Int64(r.llm_output_tokens);
  w.Key("document_ai_pages");
  w.Int64(r.document_ai_pages);
  w.Key("local_pages");
  w.Int64(r.local_pages);
  w.Key("cost");
  w.Double(cost);
  w.Key("budget");
  if (budget > 0)
    w.Double(budget);
  else
    w.Null();
  w.Key("budget_exceeded");
  w.Bool(budget > 0 && cost >= budget);
  w.Key("currency");
  w.String(currency.c_str());
  w.EndObject();
  return buf.GetString();
}

} // namespace

int usage_command(const arguments& args) {
  bool json = false;
  std::optional<uuid> tenant;
  std::string since;
  const auto& raw = args.raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto& a = raw[i];
    bool has_value = i + 1 < raw.size();
    if (a == "-h" || a == "--help") {
      std::fputs(usage_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--tenant") {
      if (!has_value || !(tenant = uuid::parse(raw[i + 1]))) {
        std::fputs("ingestd usage: --tenant needs a tenant id (a UUID)\n", stderr);
        return usage;
      }
      ++i;
    } else if (a == "--since") {
      auto t = has_value ? since_time(raw[i + 1]) : std::nullopt;
      if (!t) {
        std::fputs("ingestd usage: --since needs a time (2026-11-01, 2026-11-01T00:00:00Z) or an "
                   "age (90m, 12h, 30d)\n",
                   stderr);
        return usage;
      }
      since = *t;
      ++i;
    } else {
      std::fprintf(stderr, "ingestd usage: unexpected argument %s\n%s", a.c_str(), usage_usage);
      return usage;
    }
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_intake_repository db{cfg->database.url};
  auto rows = db.usage(tenant, since, std::chrono::seconds{60});
  if (!rows) {
    std::fprintf(stderr, "ingestd usage: database: %s\n", rows.error().describe().c_str());
    return failure;
  }
  const auto& prices = cfg->usage;
  auto listed = tenant_budgets_of(prices.tenant_budgets); // checked with the configuration
  auto budgets = listed ? *listed : std::vector<tenant_budget>{};
  if (json) {
    for (const auto& r : *rows)
      std::printf("%s\n", json_line(r, cost_of(r, prices), budget_of(r.tenant_id, prices, budgets),
                                    prices.currency)
                              .c_str());
    return ok;
  }
  if (rows->empty()) {
    std::puts("no ingestions");
    return ok;
  }
  std::printf("%-7s  %-36s  %-16s  %10s  %10s  %12s  %12s  %9s  %9s  %12s  %12s\n", "MONTH",
              "TENANT", "NAME", "INGESTIONS", "COMPLETED", "LLM IN", "LLM OUT", "DOCAI PP",
              "LOCAL PP", ("COST " + prices.currency).c_str(), "BUDGET");
  for (const auto& r : *rows) {
    auto cost = cost_of(r, prices);
    auto budget = budget_of(r.tenant_id, prices, budgets);
    char budget_text[48] = "-";
    if (budget > 0)
      std::snprintf(budget_text, sizeof budget_text, "%.2f%s", budget,
                    cost >= budget ? " spent" : "");
    std::printf("%-7s  %-36s  %-16s  %10lld  %10lld  %12lld  %12lld  %9lld  %9lld  %12.2f  %12s\n",
                r.month.c_str(), r.tenant_id.str().c_str(), r.tenant_name.c_str(),
                static_cast<long long>(r.ingestions), static_cast<long long>(r.completed),
                static_cast<long long>(r.llm_input_tokens),
                static_cast<long long>(r.llm_output_tokens),
                static_cast<long long>(r.document_ai_pages), static_cast<long long>(r.local_pages),
                cost, budget_text);
  }
  return ok;
}

} // namespace ingestd::cli
