// `ingestd tenants add|list|rotate-token`: the tenants the HTTP intake knows by name, and their
// tokens. A token is printed once, when it is made; the database keeps only its digest.
#include <cstdio>
#include <optional>
#include <string>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/http_server/credentials.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* tenants_usage = R"(Usage: ingestd tenants add NAME [--id TENANT_ID] [--json]
       ingestd tenants list [--json]
       ingestd tenants rotate-token TENANT [--json]

The tenants whose documents the HTTP intake takes with a token of their own. The intake takes
the tenant from the token (X-Tenant-Id cannot name another one), and answers only the tenant's
own documents and ingestions. A token is printed once, when it is made: the database keeps only
its SHA-256 digest. Once any tenant has a token, every intake request needs one.

  add NAME            a new tenant (a new id, or --id to name an existing tenant id, such as
                      the default tenant's) and its first token
  list                every tenant: id, name, since when, whether it has a token
  rotate-token TENANT a new token for the tenant (by id or name); its old token stops working
                      at once
  --json              the result as JSON (add and rotate-token: the token is in "token")

Tokens given in the environment (INGESTD_INTAKE_TOKEN: TOKEN or TENANT_ID:TOKEN pairs) and the
admin token (INGESTD_INTAKE_ADMIN_TOKEN: any tenant, named by X-Tenant-Id) work beside these.
Exit codes: 0 done; 1 no such tenant, a tenant with this name or id exists, or the database could
not be reached; 2 usage error.
)";

std::string json_of(const tenant_record& t, const std::string& token) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto id = t.id.str();
  w.StartObject();
  w.Key("id");
  w.String(id.c_str());
  w.Key("name");
  w.String(t.name.c_str());
  w.Key("created_at");
  w.String(t.created_at.c_str());
  w.Key("has_token");
  w.Bool(t.active_tokens > 0);
  w.Key("token_created_at");
  w.String(t.token_created_at.c_str());
  if (!token.empty()) {
    w.Key("token");
    w.String(token.c_str());
  }
  w.EndObject();
  return buf.GetString();
}

int print_issued(const tenant_record& t, const std::string& token, bool json, const char* what) {
  if (json) {
    std::printf("%s\n", json_of(t, token).c_str());
    return ok;
  }
  std::printf("%s %s (%s)\ntoken: %s\n", what, t.name.c_str(), t.id.str().c_str(), token.c_str());
  std::fputs("The token is shown this once; give it to the tenant's intake client as "
             "Authorization: Bearer TOKEN.\n",
             stderr);
  return ok;
}

} // namespace

int tenants_command(const arguments& args) {
  const auto& raw = args.raw;
  if (raw.empty()) {
    std::fputs(tenants_usage, stderr);
    return usage;
  }
  if (raw[0] == "-h" || raw[0] == "--help") {
    std::fputs(tenants_usage, stdout);
    return ok;
  }
  const std::string action = raw[0];
  bool json = false;
  std::optional<uuid> id;
  std::vector<std::string> positional;
  for (size_t i = 1; i < raw.size(); ++i) {
    const auto& a = raw[i];
    if (a == "-h" || a == "--help") {
      std::fputs(tenants_usage, stdout);
      return ok;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--id" && action == "add") {
      if (i + 1 >= raw.size() || !(id = uuid::parse(raw[i + 1]))) {
        std::fputs("ingestd tenants add: --id needs a tenant id (a UUID)\n", stderr);
        return usage;
      }
      ++i;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ingestd tenants: unknown option %s\n%s", a.c_str(), tenants_usage);
      return usage;
    } else {
      positional.push_back(a);
    }
  }
  size_t wanted = action == "list" ? 0 : 1;
  if ((action != "add" && action != "list" && action != "rotate-token")
      || positional.size() != wanted) {
    std::fputs(tenants_usage, stderr);
    return usage;
  }
  if (action == "add" && (positional[0].empty() || positional[0].size() > 200)) {
    std::fputs("ingestd tenants add: NAME must have 1 to 200 characters\n", stderr);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_intake_repository db{cfg->database.url};
  constexpr std::chrono::seconds deadline{30};
  auto database_failed = [](const error& e) {
    std::fprintf(stderr, "ingestd tenants: database: %s\n", e.describe().c_str());
    return failure;
  };

  if (action == "list") {
    auto all = db.tenants(deadline);
    if (!all)
      return database_failed(all.error());
    if (json) {
      std::string out = "[";
      for (const auto& t : *all)
        out += (out.size() > 1 ? "," : "") + json_of(t, "");
      std::printf("%s]\n", out.c_str());
      return ok;
    }
    if (all->empty()) {
      std::puts("no tenants (add one with: ingestd tenants add NAME)");
      return ok;
    }
    std::printf("%-36s  %-24s  %-8s  %s\n", "TENANT", "NAME", "TOKEN", "TOKEN SINCE");
    for (const auto& t : *all)
      std::printf("%-36s  %-24s  %-8s  %s\n", t.id.str().c_str(), t.name.c_str(),
                  t.active_tokens > 0 ? "yes" : "none", t.token_created_at.c_str());
    return ok;
  }

  auto token = http_server::random_token();
  auto digest = http_server::token_digest(token);
  if (action == "add") {
    auto added = db.add_tenant(id.value_or(uuid::v7()), positional[0], digest, deadline);
    if (!added)
      return database_failed(added.error());
    if (!*added) {
      std::fprintf(stderr, "ingestd tenants add: a tenant named '%s'%s exists already\n",
                   positional[0].c_str(), id ? " or with this id" : "");
      return failure;
    }
    return print_issued(**added, token, json, "added tenant");
  }
  auto named = uuid::parse(positional[0]);
  auto rotated = db.rotate_tenant_token(named, positional[0], digest, deadline);
  if (!rotated)
    return database_failed(rotated.error());
  if (!*rotated) {
    std::fprintf(stderr, "ingestd tenants rotate-token: no tenant '%s'\n", positional[0].c_str());
    return failure;
  }
  return print_issued(**rotated, token, json, "new token for tenant");
}

} // namespace ingestd::cli
