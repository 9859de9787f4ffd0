// Configuration loading: defaults, file, environment overrides, and every validation error.
#include <cctype>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "config/config.hpp"
#include "config/providers.hpp"
#include "tests/support/environment.hpp"

using namespace ingestd;

namespace {

class config_test : public ::testing::Test {
protected:
  std::string dir = test::make_temp_dir("config");
  ~config_test() override { std::filesystem::remove_all(dir); }

  std::string write(const std::string& text) {
    auto path = dir + "/" + test::unique_name("cfg") + ".json";
    std::ofstream{path} << text;
    return path;
  }

  /// The error text of a load that must fail.
  std::string failure(const std::optional<std::string>& path, const environment& env = {}) {
    auto cfg = load_config(path, env);
    EXPECT_FALSE(cfg) << "expected the configuration to be rejected";
    return cfg ? std::string{} : cfg.error().message;
  }
};

} // namespace

TEST_F(config_test, defaults_are_the_documented_ones) {
  auto cfg = load_config(std::nullopt, {});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->queue.backend, "postgres");
  EXPECT_EQ(cfg->storage.backend, "filesystem");
  EXPECT_EQ(cfg->transcription.provider, "tesseract");
  EXPECT_EQ(cfg->extraction.provider, "local");
  EXPECT_EQ(cfg->queue.wait_time_seconds, 20);
  EXPECT_EQ(cfg->queue.max_messages, 100); // the Postgres queue's most
  // The lease and what derives from it: visibility and extension the lease + 5 s, the
  // heartbeat every third of it.
  EXPECT_EQ(cfg->worker.lease_seconds, 15);
  EXPECT_EQ(cfg->queue.visibility_timeout_seconds, 20);
  EXPECT_EQ(cfg->worker.heartbeat_rate_seconds, 5);
  EXPECT_EQ(cfg->worker.heartbeat_extension_seconds, 20);
  EXPECT_EQ(cfg->worker.heartbeat_pool_size, 2);
  EXPECT_EQ(cfg->worker.max_retry_attempts, 3);
  EXPECT_EQ(cfg->worker.stale_ingestion_threshold_minutes, 0);
  EXPECT_EQ(cfg->database.statement_timeout_seconds, 30);
  EXPECT_EQ(cfg->database.lock_timeout_seconds, 10);
  EXPECT_EQ(cfg->database.tcp_user_timeout_seconds, 30);
  EXPECT_EQ(cfg->worker.shutdown_grace_seconds, 600);
  EXPECT_DOUBLE_EQ(cfg->transcription.ocr_quality_threshold, 0.7);
  EXPECT_EQ(cfg->worker.retry_backoff_seconds, (std::vector<int64_t>{300, 1800}));
  EXPECT_EQ(cfg->aws.region, "eu-central-1");
  EXPECT_EQ(cfg->containers.memory_budget_bytes, int64_t{1} << 30);
  // Containers are taken apart on the embedded default.
  EXPECT_EQ(cfg->stages.enabled, "ingest,match,unpack");
  EXPECT_TRUE(stage_enabled(*cfg, "unpack"));
  EXPECT_EQ(cfg->outbox.events_webhook_types, "");
}

TEST_F(config_test, committed_default_file_holds_every_key_with_its_default) {
  std::ifstream in{test::source_dir() + "/config/ingestd.json"};
  ASSERT_TRUE(in) << "config/ingestd.json is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), default_config_json())
      << "regenerate it with: ingestd config defaults > config/ingestd.json";
  auto cfg = load_config(test::source_dir() + "/config/ingestd.json", {});
  EXPECT_TRUE(cfg) << cfg.error().message;
}

TEST_F(config_test, every_printed_key_has_an_environment_override) {
  // Each key of the defaults, set through INGESTD_<SECTION>__<KEY> (to another value where any
  // will do), is accepted and printed back: the file, the environment and printing share one table.
  // A derived integer (0 in the defaults) takes one less than its effective value, which agrees
  // with the keys it derives from.
  rapidjson::Document defaults;
  defaults.Parse(default_config_json().c_str());
  ASSERT_TRUE(defaults.IsObject());
  rapidjson::Document effective;
  effective.Parse(default_config().to_json().c_str());
  ASSERT_TRUE(effective.IsObject());
  auto upper = [](std::string s) {
    for (auto& c : s)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  int keys = 0;
  for (auto& section : defaults.GetObject()) {
    for (auto& key : section.value.GetObject()) {
      std::string env_name = "INGESTD_" + upper(section.name.GetString());
      env_name.append("__").append(upper(key.name.GetString()));
      std::string text, printed;
      auto& v = key.value;
      if (v.IsBool()) {
        text = v.GetBool() ? "false" : "true";
        printed = text;
      } else if (v.IsInt64()) {
        auto x = effective[section.name.GetString()][key.name.GetString()].GetInt64();
        text = std::to_string(x == 0 ? 1 : x - 1);
        printed = text;
      } else if (v.IsDouble()) {
        text = "0.5";
        printed = text;
      } else if (v.IsArray()) {
        text = "7,8";
        printed = "[7,8]";
      } else {
        text = v.GetString(); // its default: strings' rules and choices differ by key
        printed = "\"" + text + "\"";
      }
      ++keys;
      auto cfg = load_config(std::nullopt, {{env_name, text}});
      ASSERT_TRUE(cfg) << env_name << "=" << text << ": " << cfg.error().message;
      auto json = cfg->to_json();
      auto line = "\"" + std::string{key.name.GetString()} + "\":" + printed;
      EXPECT_NE(json.find(line), std::string::npos) << env_name << " not applied: " << json;
    }
  }
  EXPECT_GT(keys, 40);
}

TEST_F(config_test, file_values_and_environment_overrides_apply) {
  auto path = write(R"({"worker": {"max_in_flight": 50, "retry_backoff_seconds": [10, 20, 30]},
                        "queue": {"backend": "sqs"}, "_comment": "ignored"})");
  auto cfg = load_config(path, {{"INGESTD_WORKER__MAX_IN_FLIGHT", "70"},
                                {"INGESTD_STORAGE__PATH_STYLE", "false"},
                                {"INGESTD_TRANSCRIPTION__OCR_QUALITY_THRESHOLD", "0.55"},
                                {"INGESTD_WORKER__RETRY_BACKOFF_SECONDS", "60,600"},
                                {"UNRELATED", "x"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.max_in_flight, 70);
  EXPECT_EQ(cfg->queue.backend, "sqs");
  EXPECT_FALSE(cfg->storage.path_style);
  EXPECT_DOUBLE_EQ(cfg->transcription.ocr_quality_threshold, 0.55);
  EXPECT_EQ(cfg->worker.retry_backoff_seconds, (std::vector<int64_t>{60, 600}));
}

TEST_F(config_test, out_of_range_value_names_key_value_and_range) {
  auto text = failure(write(R"({"worker": {"heartbeat_rate_seconds": -5}})"));
  EXPECT_NE(text.find("worker.heartbeat_rate_seconds = -5"), std::string::npos) << text;
  EXPECT_NE(text.find("expected an integer from 0 to 3600"), std::string::npos) << text;
  text = failure(write(R"({"containers": {"memory_budget_bytes": 1000}})"));
  EXPECT_NE(text.find("containers.memory_budget_bytes = 1000"), std::string::npos) << text;
  EXPECT_NE(text.find("expected an integer from 1048576"), std::string::npos) << text;
}

TEST_F(config_test, wrong_types_are_rejected) {
  auto text = failure(write(R"({"worker": {"max_in_flight": "many"},
                                "transcription": {"ocr_quality_threshold": true},
                                "storage": {"path_style": 1},
                                "queue": {"name": 7},
                                "database": {"pool_size": 2.5}})"));
  for (auto key : {"worker.max_in_flight = \"many\"", "transcription.ocr_quality_threshold = true",
                   "storage.path_style = 1", "queue.name = 7", "database.pool_size = 2.5"})
    EXPECT_NE(text.find(key), std::string::npos) << key << " in:\n" << text;
}

TEST_F(config_test, bad_choice_lists_the_choices) {
  auto text = failure(write(R"({"queue": {"backend": "kafka"}})"));
  EXPECT_NE(text.find("queue.backend = \"kafka\""), std::string::npos) << text;
  EXPECT_NE(text.find("one of postgres, sqs"), std::string::npos) << text;
}

TEST_F(config_test, bad_lists_are_rejected) {
  EXPECT_NE(failure(write(R"({"worker": {"retry_backoff_seconds": []}})"))
                .find("worker.retry_backoff_seconds"),
            std::string::npos);
  EXPECT_NE(failure(write(R"({"worker": {"retry_backoff_seconds": [1, -1]}})"))
                .find("worker.retry_backoff_seconds"),
            std::string::npos);
  EXPECT_NE(failure(std::nullopt, {{"INGESTD_WORKER__RETRY_BACKOFF_SECONDS", "5,x"}})
                .find("INGESTD_WORKER__RETRY_BACKOFF_SECONDS"),
            std::string::npos);
}

TEST_F(config_test, event_type_lists_name_known_types) {
  auto cfg = load_config(std::nullopt, {{"INGESTD_OUTBOX__EVENTS_WEBHOOK_TYPES",
                                         " INGESTION_COMPLETED, INGESTION_FAILED"},
                                        {"INGESTD_OUTBOX__EVENTS_SQS_TYPES", "WORKER_STARTED"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(name_list(cfg->outbox.events_webhook_types),
            (std::vector<std::string>{"INGESTION_COMPLETED", "INGESTION_FAILED"}));
  auto text
      = failure(write(R"({"outbox": {"events_sqs_types": "INGESTION_COMPLETED,ingestion_done"}})"));
  EXPECT_NE(text.find("outbox.events_sqs_types"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ingestion_done\" is not one"), std::string::npos) << text;
}

TEST_F(config_test, unknown_keys_and_sections_are_rejected) {
  auto text = failure(write(R"({"worker": {"heartbeat_rate": 5}, "wroker": {}, "log": 3})"));
  EXPECT_NE(text.find("worker.heartbeat_rate (config file): unknown key"), std::string::npos)
      << text;
  EXPECT_NE(text.find("log (config file): expected an object"), std::string::npos) << text;
}

TEST_F(config_test, unknown_environment_key_is_rejected) {
  auto text = failure(std::nullopt, {{"INGESTD_WORKER__MAX_INFLIGHT", "5"}});
  EXPECT_NE(text.find("INGESTD_WORKER__MAX_INFLIGHT (environment): unknown"), std::string::npos)
      << text;
}

TEST_F(config_test, environment_values_are_validated) {
  auto text = failure(std::nullopt, {{"INGESTD_WORKER__MAX_IN_FLIGHT", "12abc"},
                                     {"INGESTD_STORAGE__PATH_STYLE", "yes"},
                                     {"INGESTD_TRANSCRIPTION__OCR_QUALITY_THRESHOLD", "1.5"},
                                     {"INGESTD_LOG__FORMAT", "xml"}});
  for (auto key : {"worker.max_in_flight = \"12abc\" (environment INGESTD_WORKER__MAX_IN_FLIGHT)",
                   "storage.path_style = \"yes\"", "transcription.ocr_quality_threshold = \"1.5\"",
                   "log.format = \"xml\""})
    EXPECT_NE(text.find(key), std::string::npos) << key << " in:\n" << text;
}

TEST_F(config_test, secrets_in_the_file_are_refused_and_point_to_the_environment) {
  auto text = failure(write(R"({"extraction": {"llm_api_key": "sk-live-123"}})"));
  EXPECT_NE(text.find("INGESTD_LLM_API_KEY"), std::string::npos) << text;
  EXPECT_EQ(text.find("sk-live-123"), std::string::npos) << "a secret must never be echoed";
}

TEST_F(config_test, deeply_nested_files_and_values_are_reported_not_crashes) {
  // A recursive parser (and writer, for the message) ran out of stack on deep nesting.
  EXPECT_NE(failure(write(std::string(1 << 20, '['))).find("not valid JSON"), std::string::npos);
  auto deep = std::string(100'000, '[') + std::string(100'000, ']');
  auto text = failure(write(R"({"worker": {"max_in_flight": )" + deep + "}}"));
  EXPECT_NE(text.find("worker.max_in_flight = an array nested deeper than 16 levels"),
            std::string::npos)
      << text.substr(0, 300);
}

TEST_F(config_test, malformed_and_missing_files_are_reported) {
  EXPECT_NE(failure(write("{\"worker\": ")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(failure(write("[1, 2]")).find("expected a JSON object"), std::string::npos);
  EXPECT_NE(failure(dir + "/missing.json").find("cannot read config file"), std::string::npos);
}

TEST_F(config_test, cross_key_rules_are_checked) {
  auto text = failure(
      write(R"({"worker": {"heartbeat_rate_seconds": 300, "heartbeat_extension_seconds": 300},
                                "database": {"url": "mysql://x"},
                                "transcription": {"provider": "document_ai"},
                                "extraction": {"provider": "llm", "llm_base_url": "api.openai.com"},
                                "intake": {"default_tenant": "acme"}})"));
  for (auto key :
       {"worker.heartbeat_rate_seconds = 300", "database.url", "transcription.document_ai_endpoint",
        "extraction.llm_base_url", "intake.default_tenant"})
    EXPECT_NE(text.find(key), std::string::npos) << key << " in:\n" << text;
}

TEST_F(config_test, effective_configuration_masks_secrets) {
  auto path = write(R"({"database": {"url": "postgresql://app:hunter2@db.internal/ingest"}})");
  auto cfg = load_config(path, {{"INGESTD_LLM_API_KEY", "sk-secret-value"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->secrets.llm_api_key, "sk-secret-value");
  auto json = cfg->to_json();
  EXPECT_EQ(json.find("hunter2"), std::string::npos) << json;
  EXPECT_EQ(json.find("sk-secret-value"), std::string::npos) << json;
  EXPECT_NE(json.find("postgresql://app:****@db.internal/ingest"), std::string::npos) << json;
  auto secret_line = json.substr(json.find("\"INGESTD_LLM_API_KEY\""));
  EXPECT_EQ(secret_line.substr(0, secret_line.find('\n')).find("(set)") == std::string::npos, false)
      << json;
  EXPECT_EQ(mask_url_password("postgresql://ingestd@127.0.0.1/x"),
            "postgresql://ingestd@127.0.0.1/x");
  // A password as a parameter of the URL or of a libpq key/value string, quoted or not.
  EXPECT_EQ(mask_url_password("postgresql://app@db/x?sslmode=require&password=hunter2&x=1"),
            "postgresql://app@db/x?sslmode=require&password=****&x=1");
  EXPECT_EQ(mask_url_password("postgresql://db/x?PASSWORD=hunter2"),
            "postgresql://db/x?PASSWORD=****");
  EXPECT_EQ(mask_url_password("host=db user=app password='hunter 2' dbname=x"),
            "host=db user=app password=**** dbname=x");
  EXPECT_EQ(mask_url_password("host=db password=hunter2"), "host=db password=****");
  // A name that only ends in "password" is not a password parameter.
  EXPECT_EQ(mask_url_password("postgresql://db/x?application_name=nopassword=1"),
            "postgresql://db/x?application_name=nopassword=1");
}

TEST_F(config_test, heartbeat_keys_and_visibility_derive_from_the_lease) {
  auto cfg = load_config(std::nullopt, {{"INGESTD_WORKER__LEASE_SECONDS", "60"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.lease_seconds, 60);
  EXPECT_EQ(cfg->queue.visibility_timeout_seconds, 65);
  EXPECT_EQ(cfg->worker.heartbeat_extension_seconds, 65);
  EXPECT_EQ(cfg->worker.heartbeat_rate_seconds, 20);
  // The printed configuration shows what derives; the defaults file keeps 0 ("derived").
  EXPECT_NE(cfg->to_json().find("\"heartbeat_rate_seconds\":20"), std::string::npos);
  EXPECT_NE(default_config_json().find("\"heartbeat_rate_seconds\":0"), std::string::npos);
  // The shortest lease still has a heartbeat of at least one second.
  cfg = load_config(std::nullopt, {{"INGESTD_WORKER__LEASE_SECONDS", "2"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.heartbeat_rate_seconds, 1);
  // The visibility stays within SQS's 12 hours.
  cfg = load_config(std::nullopt, {{"INGESTD_WORKER__LEASE_SECONDS", "43200"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->queue.visibility_timeout_seconds, 43200);
}

TEST_F(config_test, given_values_that_agree_with_the_lease_win) {
  auto cfg = load_config(write(R"({"worker": {"lease_seconds": 20, "heartbeat_rate_seconds": 10,
                                               "heartbeat_extension_seconds": 20},
                                   "queue": {"visibility_timeout_seconds": 600}})"),
                         {});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.heartbeat_rate_seconds, 10);
  EXPECT_EQ(cfg->worker.heartbeat_extension_seconds, 20);
  EXPECT_EQ(cfg->queue.visibility_timeout_seconds, 600);
}

TEST_F(config_test, the_old_stale_threshold_is_an_alias_of_the_lease) {
  auto cfg = load_config(write(R"({"worker": {"stale_ingestion_threshold_minutes": 2}})"), {});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.lease_seconds, 120);
  EXPECT_EQ(cfg->queue.visibility_timeout_seconds, 125);
  EXPECT_EQ(cfg->worker.heartbeat_rate_seconds, 40);
  cfg = load_config(std::nullopt, {{"INGESTD_WORKER__STALE_INGESTION_THRESHOLD_MINUTES", "3"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.lease_seconds, 180);
  // Both given: the lease wins, even when it equals its default.
  cfg = load_config(
      write(R"({"worker": {"stale_ingestion_threshold_minutes": 2, "lease_seconds": 15}})"), {});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.lease_seconds, 15);
  cfg = load_config(write(R"({"worker": {"stale_ingestion_threshold_minutes": 2}})"),
                    {{"INGESTD_WORKER__LEASE_SECONDS", "40"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->worker.lease_seconds, 40);
  // An older name is accepted but not advertised.
  EXPECT_EQ(default_config_json().find("stale_ingestion_threshold_minutes"), std::string::npos);
}

TEST_F(config_test, a_heartbeat_not_well_below_the_lease_is_refused_by_name) {
  EXPECT_EQ(
      failure(std::nullopt, {{"INGESTD_WORKER__HEARTBEAT_RATE_SECONDS", "8"}}),
      "worker.heartbeat_rate_seconds = 8: expected at most half of worker.lease_seconds (15), "
      "or one late heartbeat loses live claims");
  EXPECT_TRUE(load_config(std::nullopt, {{"INGESTD_WORKER__HEARTBEAT_RATE_SECONDS", "7"}}));
}

TEST_F(config_test, a_receive_of_more_than_ten_messages_is_for_the_postgres_queue_only) {
  auto cfg = load_config(std::nullopt, {{"INGESTD_QUEUE__MAX_MESSAGES", "100"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->queue.max_messages, 100);
  EXPECT_EQ(failure(std::nullopt,
                    {{"INGESTD_QUEUE__BACKEND", "sqs"}, {"INGESTD_QUEUE__MAX_MESSAGES", "11"}}),
            "queue.max_messages = 11: expected at most 10 with queue.backend = \"sqs\" (SQS's own "
            "limit)");
  EXPECT_NE(failure(std::nullopt, {{"INGESTD_QUEUE__MAX_MESSAGES", "101"}}).find("from 0 to 100"),
            std::string::npos);
  // Unset (or 0), a receive takes the backend's most.
  auto sqs = load_config(std::nullopt, {{"INGESTD_QUEUE__BACKEND", "sqs"}});
  ASSERT_TRUE(sqs) << sqs.error().message;
  EXPECT_EQ(sqs->queue.max_messages, 10);
  auto postgres = load_config(std::nullopt, {{"INGESTD_QUEUE__MAX_MESSAGES", "0"}});
  ASSERT_TRUE(postgres) << postgres.error().message;
  EXPECT_EQ(postgres->queue.max_messages, 100);
}

TEST_F(config_test, an_extension_or_visibility_shorter_than_the_lease_is_refused_by_name) {
  EXPECT_EQ(
      failure(write(R"({"worker": {"lease_seconds": 60, "heartbeat_extension_seconds": 59},
                              "queue": {"visibility_timeout_seconds": 30}})")),
      "queue.visibility_timeout_seconds = 30: expected at least worker.lease_seconds (60), or a "
      "message becomes visible to other nodes while its claim lasts\n"
      "worker.heartbeat_extension_seconds = 59: expected at least worker.lease_seconds (60), or a "
      "message becomes visible to other nodes while its claim lasts");
  // The lease set through the older name is checked the same way.
  EXPECT_EQ(
      failure(std::nullopt, {{"INGESTD_WORKER__STALE_INGESTION_THRESHOLD_MINUTES", "1"},
                             {"INGESTD_WORKER__HEARTBEAT_EXTENSION_SECONDS", "45"}}),
      "worker.heartbeat_extension_seconds = 45: expected at least worker.lease_seconds (60), or a "
      "message becomes visible to other nodes while its claim lasts");
}

TEST_F(config_test, lease_and_database_timeouts_are_range_checked) {
  auto text = failure(std::nullopt, {{"INGESTD_WORKER__LEASE_SECONDS", "1"},
                                     {"INGESTD_DATABASE__STATEMENT_TIMEOUT_SECONDS", "-1"},
                                     {"INGESTD_DATABASE__LOCK_TIMEOUT_SECONDS", "x"},
                                     {"INGESTD_DATABASE__TCP_USER_TIMEOUT_SECONDS", "3601"}});
  for (auto line :
       {"worker.lease_seconds = \"1\" (environment INGESTD_WORKER__LEASE_SECONDS): expected an "
        "integer from 2 to 43200",
        "database.statement_timeout_seconds = \"-1\"", "database.lock_timeout_seconds = \"x\"",
        "database.tcp_user_timeout_seconds = \"3601\""})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in:\n" << text;
}

TEST_F(config_test, the_providers_a_node_runs_are_those_whose_configuration_is_complete) {
  using names = std::vector<std::string>;
  auto with = [](const environment& env) {
    auto cfg = load_config(std::nullopt, env);
    EXPECT_TRUE(cfg) << cfg.error().message;
    return cfg ? *cfg : default_config();
  };
  // The embedded default: Tesseract and the local rules; the default LLM server has no key.
  auto plain = with({});
  EXPECT_EQ(available_transcription_providers(plain), (names{"tesseract"}));
  EXPECT_EQ(available_extraction_providers(plain), (names{"local"}));
  // Document AI needs its endpoint and its token.
  EXPECT_EQ(
      available_transcription_providers(with({{"INGESTD_TRANSCRIPTION__DOCUMENT_AI_ENDPOINT",
                                               "https://eu-documentai.googleapis.com/x:process"}})),
      (names{"tesseract"}));
  EXPECT_EQ(
      available_transcription_providers(with({{"INGESTD_TRANSCRIPTION__DOCUMENT_AI_ENDPOINT",
                                               "https://eu-documentai.googleapis.com/x:process"},
                                              {"INGESTD_DOCUMENT_AI_TOKEN", "t"}})),
      (names{"tesseract", "document_ai"}));
  // The LLM: a server of one's own, or a key for the default one; the configured one comes first.
  EXPECT_EQ(available_extraction_providers(
                with({{"INGESTD_EXTRACTION__LLM_BASE_URL", "http://127.0.0.1:8000"}})),
            (names{"local", "llm"}));
  EXPECT_EQ(available_extraction_providers(with({{"INGESTD_LLM_API_KEY", "sk-x"}})),
            (names{"local", "llm"}));
  EXPECT_EQ(available_extraction_providers(with({{"INGESTD_EXTRACTION__PROVIDER", "llm"}})),
            (names{"llm", "local"}));
  EXPECT_EQ(transcription_provider_list(), "tesseract, document_ai");
  EXPECT_EQ(extraction_provider_list(), "local, llm");
  EXPECT_NE(provider_requirement("document_ai").find("INGESTD_DOCUMENT_AI_TOKEN"),
            std::string_view::npos);
  EXPECT_TRUE(provider_requirement("tesseract").empty());
}

TEST_F(config_test, tenant_budgets_name_a_tenant_an_amount_and_maybe_an_action) {
  auto a = "0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0001";
  auto b = "0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0002";
  auto budgets = tenant_budgets_of(std::string{a} + ":250, " + b + ":12.5:hold");
  ASSERT_TRUE(budgets) << budgets.error().message;
  ASSERT_EQ(budgets->size(), 2u);
  EXPECT_EQ((*budgets)[0].tenant, a);
  EXPECT_DOUBLE_EQ((*budgets)[0].amount, 250);
  EXPECT_EQ((*budgets)[0].action, "");
  EXPECT_DOUBLE_EQ((*budgets)[1].amount, 12.5);
  EXPECT_EQ((*budgets)[1].action, "hold");
  auto cfg = load_config(std::nullopt, {{"INGESTD_USAGE__TENANT_BUDGETS", std::string{a} + ":5"},
                                        {"INGESTD_USAGE__BUDGET_ACTION", "hold"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->usage.budget_action, "hold");
  EXPECT_EQ(cfg->usage.budget_recheck_seconds, 60);
  EXPECT_DOUBLE_EQ(cfg->usage.monthly_budget, 0);
  // Each mistake named.
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"nobody:5", "the tenant must be a tenant id"},
           {std::string{a}, "expected TENANT_ID:AMOUNT"},
           {std::string{a} + ":-1", "the amount must be a number from 0 to 1e9"},
           {std::string{a} + ":5:pause", "the action must be downgrade or hold"},
           {std::string{a} + ":5," + a + ":6", "the tenant is listed twice"}}) {
    auto message = failure(std::nullopt, {{"INGESTD_USAGE__TENANT_BUDGETS", text}});
    EXPECT_NE(message.find("usage.tenant_budgets"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
  }
  EXPECT_NE(failure(std::nullopt, {{"INGESTD_USAGE__BUDGET_ACTION", "pause"}}).find("hold"),
            std::string::npos);
}

TEST_F(config_test, auto_approve_thresholds_are_shares_per_tenant) {
  auto a = "0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0001";
  auto b = "0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0002";
  auto listed = tenant_auto_approve_of(std::string{a} + ":0.98, " + b + ":0");
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].tenant, a);
  EXPECT_DOUBLE_EQ((*listed)[0].threshold, 0.98);
  EXPECT_DOUBLE_EQ((*listed)[1].threshold, 0);
  auto cfg = load_config(std::nullopt,
                         {{"INGESTD_REVIEW__AUTO_APPROVE", "0.95"},
                          {"INGESTD_REVIEW__TENANT_AUTO_APPROVE", std::string{a} + ":0.99"}});
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_DOUBLE_EQ(cfg->review.auto_approve, 0.95);
  EXPECT_EQ(cfg->review.calibration_min_reviews, 20);
  EXPECT_EQ(cfg->review.learning_recheck_seconds, 300);
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"nobody:0.9", "the tenant must be a tenant id"},
           {std::string{a}, "expected TENANT_ID:THRESHOLD"},
           {std::string{a} + ":1.5", "the threshold must be a number from 0 to 1"},
           {std::string{a} + ":0.9," + a + ":0.8", "the tenant is listed twice"}}) {
    auto message = failure(std::nullopt, {{"INGESTD_REVIEW__TENANT_AUTO_APPROVE", text}});
    EXPECT_NE(message.find("review.tenant_auto_approve"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
  }
  EXPECT_NE(
      failure(std::nullopt, {{"INGESTD_REVIEW__AUTO_APPROVE", "2"}}).find("review.auto_approve"),
      std::string::npos);
}

TEST_F(config_test, tenant_retention_names_a_tenant_and_days_per_kind) {
  auto a = "0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0001";
  auto days = tenant_retention_of(std::string{a} + ":originals=365:audit=0");
  ASSERT_TRUE(days) << days.error().message;
  ASSERT_EQ(days->size(), 1u);
  EXPECT_EQ((*days)[0].originals_days, 365);
  EXPECT_EQ((*days)[0].derived_days, -1) << "not given: the default";
  EXPECT_EQ((*days)[0].audit_days, 0);
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"nobody:originals=5", "the tenant must be a tenant id"},
           {std::string{a}, "expected TENANT_ID:KIND=DAYS"},
           {std::string{a} + ":pages=5", "the kind must be originals, derived, audit or events"},
           {std::string{a} + ":events=8", "at most outbox.retention_hours (168 h)"},
           {std::string{a} + ":audit=1.5", "a whole number from 0 to 36500"},
           {std::string{a} + ":audit", "a whole number from 0 to 36500"}}) {
    auto message = failure(std::nullopt, {{"INGESTD_RETENTION__TENANT_DAYS", text}});
    EXPECT_NE(message.find("retention.tenant_days"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
  }
  // Events are kept at most as long as the outbox keeps delivered rows.
  EXPECT_NE(
      failure(std::nullopt, {{"INGESTD_RETENTION__EVENTS_DAYS", "30"}})
          .find("retention.events_days = 30: expected at most outbox.retention_hours (168 h)"),
      std::string::npos);
  EXPECT_TRUE(load_config(std::nullopt, {{"INGESTD_RETENTION__EVENTS_DAYS", "30"},
                                         {"INGESTD_OUTBOX__RETENTION_HOURS", "720"}}));
}

TEST_F(config_test, mailboxes_name_a_tenant_an_imap_folder_and_where_its_password_is) {
  auto a = std::string{"0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0001"};
  auto boxes = mailboxes_of(a + ":imaps://ap%40buyer.example@mail.example:993/INBOX," + a
                            + ":imap://scans@mail.example/Scans%20In?processed=Done&"
                              "password_env=SCANS_PASSWORD");
  ASSERT_TRUE(boxes) << boxes.error().message;
  ASSERT_EQ(boxes->size(), 2u);
  EXPECT_EQ((*boxes)[0].tenant, a);
  EXPECT_EQ((*boxes)[0].url, "imaps://mail.example:993/INBOX");
  EXPECT_EQ((*boxes)[0].user, "ap@buyer.example");
  EXPECT_EQ((*boxes)[0].processed_folder, "Processed");
  EXPECT_EQ((*boxes)[0].password_env, "INGESTD_MAILBOX_PASSWORD");
  EXPECT_EQ((*boxes)[1].url, "imap://mail.example/Scans%20In");
  EXPECT_EQ((*boxes)[1].processed_folder, "Done");
  EXPECT_EQ((*boxes)[1].password_env, "SCANS_PASSWORD");
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"nobody:imaps://u@h/INBOX", "the tenant must be a tenant id"},
           {a + ":https://u@h/INBOX", "must be an imaps:// URL"},
           {a + ":imaps://h/INBOX", "must name the user"},
           {a + ":imaps://u:secret@h/INBOX", "no password in the URL"},
           {a + ":imaps://u@h", "must name a folder"},
           {a + ":imaps://u@h/INBOX?processed=INBOX", "must differ from the folder read"},
           {a + ":imaps://u@h/INBOX?sort=date", "unknown parameter \"sort\""},
           {std::string{a}.append(":imaps://u@h/INBOX,").append(a).append(":imaps://u@h/INBOX"),
            "listed twice"}}) {
    auto message = failure(std::nullopt, {{"INGESTD_ACQUISITION__MAILBOXES", text}});
    EXPECT_NE(message.find("acquisition.mailboxes"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
    EXPECT_EQ(message.find("secret"), std::string::npos) << "a password is never printed";
  }
  // A message is an e-mail container: mailboxes need the unpack stage.
  EXPECT_NE(failure(std::nullopt, {{"INGESTD_ACQUISITION__MAILBOXES", a + ":imaps://u@h/INBOX"},
                                   {"INGESTD_STAGES__ENABLED", "ingest,match"}})
                .find("unpack stage"),
            std::string::npos);
  EXPECT_TRUE(
      load_config(std::nullopt, {{"INGESTD_ACQUISITION__MAILBOXES", a + ":imaps://u@h/INBOX"}}));
}

TEST_F(config_test, buckets_name_a_tenant_a_bucket_a_prefix_and_the_queue_of_its_events) {
  auto a = std::string{"0b7e0a52-3d1e-4c55-9a55-7c2b7f0a0001"};
  auto buckets = buckets_of(a + ":s3://mail-in/ses/raw/?queue=https://sqs.example/1/mail-events,"
                            + a + ":s3://drop.example?queue=drops");
  ASSERT_TRUE(buckets) << buckets.error().message;
  ASSERT_EQ(buckets->size(), 2u);
  EXPECT_EQ((*buckets)[0].bucket, "mail-in");
  EXPECT_EQ((*buckets)[0].prefix, "ses/raw/");
  EXPECT_EQ((*buckets)[0].queue, "https://sqs.example/1/mail-events");
  EXPECT_EQ((*buckets)[1].bucket, "drop.example");
  EXPECT_EQ((*buckets)[1].prefix, "");
  EXPECT_EQ((*buckets)[1].queue, "drops");
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"nobody:s3://b-1?queue=q", "the tenant must be a tenant id"},
           {a + ":https://b-1?queue=q", "must be an s3:// URL"},
           {a + ":s3://Bad_Bucket?queue=q", "an S3 bucket name"},
           {a + ":s3://b-1/in/", "the queue of the bucket's notifications must be given"},
           {a + ":s3://b-1?topic=t", "expected queue=QUEUE"},
           {std::string{a}.append(":s3://b-1/x?queue=q,").append(a).append(":s3://b-1/x?queue=r"),
            "listed twice"}}) {
    auto message = failure(std::nullopt, {{"INGESTD_ACQUISITION__BUCKETS", text}});
    EXPECT_NE(message.find("acquisition.buckets"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
  }
}
