// The pgbench replay's script (replay_sql.hpp).
#include "bench/orchestration/replay_sql.hpp"

#include <cstddef>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/db/lifecycle_sql.hpp"

namespace ingestd::bench {

namespace {

namespace sql = pg::lifecycle_sql;

/// The statement's SQL on one line with its parameters replaced: `args[k]` for $(k+1). A statement
/// that takes more parameters than the replay gives stops the bench, naming it.
std::string bind(const pg::statement& st, const std::vector<std::string>& args) {
  std::string text = st.sql;
  for (size_t k = args.size(); k-- > 0;)
    text = std::regex_replace(text, std::regex{"\\$" + std::to_string(k + 1) + "(?![0-9])"},
                              args[k]);
  if (std::regex_search(text, std::regex{"\\$[0-9]"}))
    throw std::runtime_error{std::string{"the replay gives "} + st.name + " too few parameters"};
  std::string line;
  bool space = false;
  for (char c : text) {
    bool ws = c == '\n' || c == ' ' || c == '\t';
    if (ws && !line.empty())
      space = true;
    if (ws)
      continue;
    if (space)
      line += ' ';
    space = false;
    line += c;
  }
  return line;
}

} // namespace

replay replay_sql(const std::string& queue, const std::vector<std::string>& audit_steps) {
  std::string q = "'" + queue + "'";
  auto steps = std::string{"ARRAY["};
  for (size_t i = 0; i < audit_steps.size(); ++i)
    steps += (i ? ",'" : "'") + audit_steps[i] + "'";
  steps += "]::text[]";
  auto n = std::to_string(audit_steps.size());
  replay r;
  auto add = [&](const std::string& command, bool gset = false) {
    r.script += command + (gset ? "\n\\gset\n" : ";\n");
    ++r.statements;
  };
  add(bind(sql::queue_receive, {q, "1", "60", "0", "'" + queue + "-dlq'"}), true);
  add(bind(sql::work_claim, {"ARRAY[:body]::uuid[]", "ARRAY[gen_random_uuid()]", "ARRAY['ingest']",
                             "ARRAY['']", "ARRAY[3]", "ARRAY[true]", "ARRAY['']", "ARRAY['']",
                             "ARRAY[true]", "'pgbench'", "300", "false"}),
      true);
  add(bind(sql::queue_visibility, {q, "ARRAY[:receipt]::uuid[]", "ARRAY[345]"}));
  add(bind(sql::work_renew, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]", "300"}));
  add(bind(sql::ingest_load, {"ARRAY[:body]::uuid[]"}));
  add("BEGIN");
  add(bind(sql::ingest_results,
           {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]",
            "ARRAY['{\"invoice_number\":\"INV-1\",\"total\":119.0}']", "ARRAY[true]", "ARRAY[0]",
            "ARRAY[0]", "ARRAY['instant']", "ARRAY['transcriptions/x/transcription-output.json']",
            "ARRAY[NULL]::text[]", "ARRAY[1.0]", "ARRAY[1]", "ARRAY['instant']"}));
  add(bind(sql::work_finish, {"ARRAY[:body]::uuid[]",
                              "ARRAY[:token]::uuid[]",
                              "ARRAY[:body]::uuid[]",
                              "ARRAY[" + steps + "::text]",
                              "ARRAY[array_fill('ok'::text, ARRAY[" + n + "])::text]",
                              "ARRAY[array_fill(NULL::text, ARRAY[" + n + "])::text]",
                              "ARRAY[array_fill(1::bigint, ARRAY[" + n + "])::text]",
                              "ARRAY[array_fill('pgbench'::text, ARRAY[" + n + "])::text]",
                              "ARRAY[array_fill(0::bigint, ARRAY[" + n + "])::text]",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "'{}'",
                              "false",
                              "ARRAY[NULL]::text[]",
                              "'{}'"}));
  add("COMMIT");
  add(bind(sql::queue_delete, {q, "ARRAY[:receipt]::uuid[]"}));
  return r;
}

} // namespace ingestd::bench
