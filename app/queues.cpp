#include "app/queues.hpp"

#include "adapters/aws/aws_credentials.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/queue/priority_queues.hpp"
#include "adapters/queue/sqs_queue.hpp"
#include "adapters/support/blocking_call.hpp"

namespace ingestd {

namespace {

constexpr std::chrono::seconds call_timeout{60};

result<sqs_connection> sqs_connection_of(const config& cfg) {
  auto creds = aws::credentials_from_env();
  if (!creds)
    return creds.error();
  sqs_connection conn;
  conn.credentials = *creds;
  conn.region = cfg.aws.region;
  conn.endpoint = cfg.aws.endpoint;
  return conn;
}

error missing(const queue_spec& q, const error& why) {
  return error::make_permanent("queue.missing", "the " + q.stage + " stage's queue \"" + q.name
                                                    + "\" does not exist (" + why.describe()
                                                    + "): create it with `ingestd queues create`");
}

bool is_missing(const error& e) {
  return e.code == "sqs.QueueDoesNotExist" || e.code == "sqs.NonExistentQueue"
         || e.code.find("QueueDoesNotExist") != std::string::npos;
}

} // namespace

std::vector<std::string> sqs_queue_names(const config& cfg, const queue_spec& spec) {
  if (spec.stage != "ingest" || cfg.queue.priority_classes.empty())
    return {spec.name};
  std::vector<std::string> out;
  for (auto bound : cfg.queue.priority_classes)
    out.push_back(spec.name + "-p" + std::to_string(bound));
  return out;
}

result<std::vector<std::string>> create_queues(const config& cfg) {
  std::vector<std::string> lines;
  auto redrive = [](const queue_spec& q) {
    return q.max_receive_count > 0 ? "dead letters to " + q.dead_letter + " after "
                                         + std::to_string(q.max_receive_count) + " receives"
                                   : "dead-letter queue " + q.dead_letter
                                         + " (no redrive: queue.max_receive_count is 0)";
  };
  if (cfg.queue.backend == "postgres") {
    postgres_queue_scheduling scheduling;
    scheduling.ageing_per_minute = cfg.queue.priority_ageing_per_minute;
    scheduling.fair_spacing_seconds = cfg.queue.tenant_fair_spacing_seconds;
    auto weights = tenant_weights_of(cfg.queue.tenant_weights);
    if (!weights)
      return weights.error();
    for (auto& w : *weights)
      scheduling.tenant_weights.emplace_back(w.tenant, w.weight);
    for (auto& q : configured_queues(cfg)) {
      auto r = create_postgres_queue(cfg.database.url, q.name, q.dead_letter, q.max_receive_count,
                                     scheduling);
      if (!r)
        return error{r.error().cls, r.error().code,
                     "creating queue " + q.name + ": " + r.error().message};
      lines.push_back(q.stage + ": " + q.name + " (postgres), " + redrive(q));
    }
    return lines;
  }
  auto conn = sqs_connection_of(cfg);
  if (!conn)
    return conn.error();
  auto http = std::make_shared<curl_engine>();
  sqs_client client{http, *conn};
  std::vector<queue_spec> all;
  for (auto& spec : configured_queues(cfg))
    for (auto& name : sqs_queue_names(cfg, spec)) {
      all.push_back(spec);
      all.back().name = name;
    }
  for (auto& q : all) {
    sqs_queue_settings settings;
    settings.visibility_timeout_seconds = cfg.queue.visibility_timeout_seconds;
    if (q.max_receive_count > 0) {
      auto r = blocking_call<std::pair<std::string, std::string>>(
          call_timeout, "sqs.timeout", "SQS CreateQueue", [&](auto cb) {
            client.create_queue_with_dead_letter(q.name, q.dead_letter, q.max_receive_count,
                                                 settings, cb);
          });
      if (!r)
        return error{r.error().cls, r.error().code,
                     "creating queue " + q.name + ": " + r.error().message};
    } else {
      for (auto* name : {&q.dead_letter, &q.name}) {
        auto r = blocking_call<std::string>(
            call_timeout, "sqs.timeout", "SQS CreateQueue",
            [&](auto cb) { client.create_queue(*name, settings, cb); });
        if (!r)
          return error{r.error().cls, r.error().code,
                       "creating queue " + *name + ": " + r.error().message};
      }
    }
    lines.push_back(q.stage + ": " + q.name + " (sqs), " + redrive(q));
  }
  return lines;
}

namespace {
/// An SQS queue by the spec's URL, or its name looked up.
result<std::shared_ptr<queue>>
open_sqs_queue(const config& cfg, const queue_spec& spec,
               const std::function<std::shared_ptr<curl_engine>()>& http);
} // namespace

result<std::shared_ptr<queue>> open_queue(const config& cfg, const queue_spec& spec,
                                          const std::function<std::shared_ptr<curl_engine>()>& http,
                                          bool require_registered) {
  pg::session_options session{std::chrono::seconds{cfg.database.statement_timeout_seconds},
                              std::chrono::seconds{cfg.database.lock_timeout_seconds},
                              std::chrono::seconds{cfg.database.tcp_user_timeout_seconds}};
  if (cfg.queue.backend == "postgres") {
    if (require_registered) {
      auto exists = postgres_queue_exists(cfg.database.url, spec.name);
      if (!exists)
        return error{exists.error().cls, exists.error().code,
                     "checking queue " + spec.name + ": " + exists.error().message};
      if (!*exists)
        return missing(spec, error::make_permanent("queue.missing", "not registered"));
    }
    postgres_queue_options opts;
    opts.max_receive_count = spec.max_receive_count;
    opts.dead_letter_queue = spec.max_receive_count > 0 ? spec.dead_letter : std::string{};
    opts.session = session;
    return std::shared_ptr<queue>{
        std::make_shared<postgres_queue>(cfg.database.url, spec.name, opts)};
  }
  return open_sqs_queue(cfg, spec, http);
}

result<std::shared_ptr<queue>>
open_sqs_queue_named(const config& cfg, const std::string& name, const std::string& what,
                     const std::function<std::shared_ptr<curl_engine>()>& http) {
  queue_spec spec;
  spec.stage = what;
  if (name.rfind("http://", 0) == 0 || name.rfind("https://", 0) == 0) {
    spec.url = name;
    spec.name = name.substr(name.rfind('/') + 1);
  } else {
    spec.name = name;
  }
  return open_sqs_queue(cfg, spec, http);
}

namespace {

result<std::shared_ptr<queue>>
open_sqs_queue(const config& cfg, const queue_spec& spec,
               const std::function<std::shared_ptr<curl_engine>()>& http) {
  auto conn = sqs_connection_of(cfg);
  if (!conn)
    return conn.error();
  if (auto names = sqs_queue_names(cfg, spec); names.size() > 1) {
    // Priority classes: one queue per class, polled with weights.
    std::vector<priority_class> classes;
    for (size_t i = 0; i < names.size(); ++i) {
      auto one = spec;
      one.stage = spec.stage + " (priority class)";
      one.name = names[i];
      one.url.clear();
      auto q = open_sqs_queue(cfg, one, http);
      if (!q)
        return q.error();
      classes.push_back(priority_class{static_cast<int32_t>(cfg.queue.priority_classes[i]),
                                       static_cast<int32_t>(cfg.queue.priority_class_weights[i]),
                                       *q});
    }
    return std::shared_ptr<queue>{std::make_shared<priority_queues>(std::move(classes))};
  }
  auto url = spec.url;
  if (url.empty()) {
    sqs_client client{http(), *conn};
    auto found = blocking_call<std::string>(call_timeout, "sqs.timeout", "SQS GetQueueUrl",
                                            [&](auto cb) { client.get_queue_url(spec.name, cb); });
    if (!found) {
      if (is_missing(found.error()))
        return missing(spec, found.error());
      return error{found.error().cls, found.error().code,
                   "looking up SQS queue " + spec.name + ": " + found.error().message};
    }
    url = *found;
  }
  return std::shared_ptr<queue>{
      std::make_shared<sqs_queue>(http(), sqs_queue_options{*conn, url, spec.name})};
}

} // namespace

} // namespace ingestd
