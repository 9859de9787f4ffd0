// Amazon SQS over the HTTP engine: signs each JSON-protocol call, splits batches, maps answers
// (including partial batch failures) back to the caller's entries in order.
#include "adapters/queue/sqs_queue.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <thread>
#include <utility>

#include "adapters/aws/sigv4.hpp"
#include "adapters/queue/sqs_protocol.hpp"

namespace ingestd {

namespace {

/// Delivers a result that is known before any I/O from another thread, as the port promises
/// (a caller may hold a lock or be an actor that must not re-enter). Rare: bad arguments,
/// empty batches, configuration errors.
template <class T>
void deliver_later(callback<T> done, result<T> value) {
  std::thread([done = std::move(done), value = std::move(value)]() mutable {
    done(std::move(value));
  }).detach();
}

error bad_argument(std::string message) {
  return error::make_permanent("sqs.bad_argument", std::move(message));
}

/// Parses an entry id that this client assigned (the entry's index in the caller's vector).
std::optional<size_t> entry_index(std::string_view id) {
  size_t out = 0;
  auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), out);
  if (ec != std::errc{} || ptr != id.data() + id.size())
    return std::nullopt;
  return out;
}

enum class batch_kind { remove, visibility, send };

/// One caller's batch operation spread over several SQS calls; completes when all are in.
struct batch_job {
  std::mutex mu;
  std::vector<batch_entry_result> results;
  size_t pending = 0;
  callback<std::vector<batch_entry_result>> done;

  void finish_call() {
    std::vector<batch_entry_result> out;
    {
      std::lock_guard guard{mu};
      if (--pending != 0)
        return;
      out = std::move(results);
    }
    done(std::move(out));
  }
};

/// Applies one SQS batch call's outcome to the entries `chunk` of `job`.
void apply_answer(batch_job& job, batch_kind kind, const std::vector<size_t>& chunk,
                  result<std::string> answer) {
  std::lock_guard guard{job.mu};
  auto fail_all = [&](const error& err) {
    for (auto i : chunk) {
      job.results[i].failed = true;
      job.results[i].error = err;
    }
  };
  if (!answer) {
    auto& err = answer.error();
    // A whole-call "invalid receipt" for a one-entry delete is that entry's answer.
    std::string_view code{err.code};
    if (kind == batch_kind::remove && chunk.size() == 1 && code.starts_with("sqs.")
        && sqs::is_stale_receipt(code.substr(4)))
      return;
    fail_all(err);
    return;
  }
  auto entries = sqs::parse_batch(*answer);
  if (!entries) {
    fail_all(entries.error());
    return;
  }
  std::vector<bool> seen(job.results.size(), false);
  for (auto& e : *entries) {
    auto idx = entry_index(e.id);
    if (!idx || std::find(chunk.begin(), chunk.end(), *idx) == chunk.end())
      continue; // not an id we sent: ignore rather than misattribute
    seen[*idx] = true;
    auto& r = job.results[*idx];
    if (e.ok) {
      if (kind == batch_kind::send)
        r.ref = e.message_id;
      continue;
    }
    // Deleting with a receipt that no longer names an in-flight message: the message is gone
    // or will be delivered again; either way there is nothing left for this receipt to do.
    if (kind == batch_kind::remove && sqs::is_stale_receipt(e.code))
      continue;
    r.failed = true;
    r.error = sqs::entry_error(e);
  }
  for (auto i : chunk) {
    if (!seen[i]) {
      job.results[i].failed = true;
      job.results[i].error = error::make_transient(
          "sqs.bad_response", "SQS's batch answer did not mention entry " + std::to_string(i));
    }
  }
}

} // namespace

// ---- sqs_client -----------------------------------------------------------------------------

sqs_client::sqs_client(std::shared_ptr<http_client> http, sqs_connection connection)
    : http_(std::move(http)),
      connection_(std::make_shared<const sqs_connection>(std::move(connection))) {
  region_ = connection_->region.empty() ? connection_->credentials.region : connection_->region;
  endpoint_ = aws::service_endpoint("sqs", region_, connection_->endpoint);
}

void sqs_client::call(const std::string& operation, std::string body,
                      std::chrono::milliseconds timeout, callback<std::string> done) const {
  http_request req;
  req.method = "POST";
  req.url = endpoint_ + "/";
  req.headers = {{"Content-Type", std::string{sqs::content_type}},
                 {"X-Amz-Target", sqs::target(operation)},
                 // Asks SQS for the legacy error code in x-amzn-query-error, as the SDKs do.
                 {"x-amzn-query-mode", "true"}};
  req.body = std::move(body);
  req.connect_timeout = connection_->connect_timeout;
  req.total_timeout = timeout;
  // Answers are small (at most 10 messages of 1 MiB); anything larger is not SQS.
  req.max_response_bytes = size_t{16} * 1024 * 1024;
  auto signed_req
      = aws::sign_request(req, connection_->credentials, aws::service_signing("sqs", region_));
  if (!signed_req) {
    deliver_later<std::string>(std::move(done), signed_req.error());
    return;
  }
  http_->submit(std::move(req), [done = std::move(done)](result<http_response> r) {
    if (!r) {
      done(std::move(r.error()));
      return;
    }
    if (r->status >= 200 && r->status < 300) {
      done(std::move(r->body));
      return;
    }
    done(sqs::parse_error(*r));
  });
}

void sqs_client::get_queue_url(const std::string& name, callback<std::string> done) const {
  call("GetQueueUrl", sqs::get_queue_url_request(name), connection_->call_timeout,
       [done = std::move(done)](result<std::string> r) {
         if (!r) {
           done(std::move(r.error()));
           return;
         }
         done(sqs::parse_queue_url(*r));
       });
}

void sqs_client::create_queue(const std::string& name, sqs_queue_settings settings,
                              callback<std::string> done) const {
  auto attributes = std::move(settings.extra);
  if (settings.visibility_timeout_seconds)
    attributes["VisibilityTimeout"] = std::to_string(*settings.visibility_timeout_seconds);
  if (settings.message_retention_seconds)
    attributes["MessageRetentionPeriod"] = std::to_string(*settings.message_retention_seconds);
  if (settings.receive_wait_seconds)
    attributes["ReceiveMessageWaitTimeSeconds"] = std::to_string(*settings.receive_wait_seconds);
  if (!settings.dead_letter_arn.empty()) {
    if (settings.max_receive_count < 1 || settings.max_receive_count > 1000) {
      deliver_later<std::string>(std::move(done),
                                 bad_argument("max_receive_count must be 1..1000, not "
                                              + std::to_string(settings.max_receive_count)));
      return;
    }
    attributes["RedrivePolicy"]
        = sqs::redrive_policy(settings.dead_letter_arn, settings.max_receive_count);
  }
  call("CreateQueue", sqs::create_queue_request(name, attributes), connection_->call_timeout,
       [done = std::move(done)](result<std::string> r) {
         if (!r) {
           done(std::move(r.error()));
           return;
         }
         done(sqs::parse_queue_url(*r));
       });
}

void sqs_client::create_queue_with_dead_letter(
    std::string name, const std::string& dead_letter_name, int max_receive_count,
    sqs_queue_settings settings, callback<std::pair<std::string, std::string>> done) const {
  auto self = *this;
  create_queue(dead_letter_name, {},
               [self, name = std::move(name), max_receive_count, settings = std::move(settings),
                done = std::move(done)](result<std::string> dlq) mutable {
                 if (!dlq) {
                   done(std::move(dlq.error()));
                   return;
                 }
                 auto dlq_url = *dlq;
                 self.queue_arn(dlq_url, [self, name = std::move(name), max_receive_count, dlq_url,
                                          settings = std::move(settings),
                                          done = std::move(done)](result<std::string> arn) mutable {
                   if (!arn) {
                     done(std::move(arn.error()));
                     return;
                   }
                   settings.dead_letter_arn = *arn;
                   settings.max_receive_count = max_receive_count;
                   self.create_queue(name, std::move(settings),
                                     [dlq_url, done = std::move(done)](result<std::string> url) {
                                       if (!url) {
                                         done(std::move(url.error()));
                                         return;
                                       }
                                       done(std::pair{*url, dlq_url});
                                     });
                 });
               });
}

void sqs_client::delete_queue(const std::string& url, callback<void> done) const {
  call("DeleteQueue", sqs::delete_queue_request(url), connection_->call_timeout,
       [done = std::move(done)](result<std::string> r) {
         if (!r) {
           done(std::move(r.error()));
           return;
         }
         done(unit{});
       });
}

void sqs_client::queue_attributes(const std::string& url, const std::vector<std::string>& names,
                                  callback<std::map<std::string, std::string>> done) const {
  call("GetQueueAttributes", sqs::get_attributes_request(url, names), connection_->call_timeout,
       [done = std::move(done)](result<std::string> r) {
         if (!r) {
           done(std::move(r.error()));
           return;
         }
         done(sqs::parse_attributes(*r));
       });
}

void sqs_client::queue_arn(const std::string& url, callback<std::string> done) const {
  queue_attributes(
      url, {"QueueArn"}, [done = std::move(done)](result<std::map<std::string, std::string>> r) {
        if (!r) {
          done(std::move(r.error()));
          return;
        }
        auto it = r->find("QueueArn");
        if (it == r->end() || it->second.empty()) {
          done(error::make_transient("sqs.bad_response", "GetQueueAttributes gave no QueueArn"));
          return;
        }
        done(it->second);
      });
}

// ---- sqs_queue ------------------------------------------------------------------------------

namespace detail {

/// What outlives an sqs_queue while its calls are in flight: the queue's name and, once known,
/// its URL.
struct sqs_queue_state {
  std::mutex mu;
  std::string url;
  std::string name;
};

} // namespace detail

namespace {

using queue_state = std::shared_ptr<detail::sqs_queue_state>;

/// Runs `next` with the queue URL, looking it up first when only the name is known. Two first
/// calls at once may both look it up; the answers are the same.
void resolve_url(const sqs_client& client, const queue_state& st, callback<std::string> next) {
  std::string url;
  {
    std::lock_guard guard{st->mu};
    url = st->url;
  }
  if (!url.empty()) {
    next(std::move(url));
    return;
  }
  if (st->name.empty()) {
    deliver_later<std::string>(
        std::move(next),
        error::make_permanent("sqs.config", "neither a queue URL nor a queue name is configured"));
    return;
  }
  client.get_queue_url(st->name, [st, next = std::move(next)](result<std::string> r) {
    if (r) {
      std::lock_guard guard{st->mu};
      st->url = *r;
    }
    next(std::move(r));
  });
}

using body_builder
    = std::function<std::string(const std::string& url, const std::vector<size_t>& chunk)>;

/// Sends the chunks of `job` (each a list of entry indices, at most 10) in parallel once the URL
/// is known, and completes the job when the last answer is in.
void run_batch(const sqs_client& client, const queue_state& st,
               const std::shared_ptr<batch_job>& job, batch_kind kind,
               std::vector<std::vector<size_t>> chunks, body_builder build) {
  if (chunks.empty()) {
    // Nothing to send: empty input, or every entry refused before sending.
    deliver_later<std::vector<batch_entry_result>>(std::move(job->done), std::move(job->results));
    return;
  }
  job->pending = chunks.size();
  static constexpr const char* operations[]
      = {"DeleteMessageBatch", "ChangeMessageVisibilityBatch", "SendMessageBatch"};
  std::string op = operations[static_cast<int>(kind)];
  resolve_url(client, st,
              [client, job, kind, op, chunks = std::move(chunks),
               build = std::move(build)](result<std::string> url) {
                for (auto& chunk : chunks) {
                  if (!url) {
                    apply_answer(*job, kind, chunk, url.error());
                    job->finish_call();
                    continue;
                  }
                  client.call(op, build(*url, chunk), client.connection().call_timeout,
                              [job, kind, chunk](result<std::string> r) {
                                apply_answer(*job, kind, chunk, std::move(r));
                                job->finish_call();
                              });
                }
              });
}

/// Splits the indices of the entries still to send into chunks of at most 10.
std::vector<std::vector<size_t>> chunk_by_count(const std::vector<batch_entry_result>& results) {
  std::vector<std::vector<size_t>> chunks;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].failed)
      continue;
    if (chunks.empty() || chunks.back().size() == sqs::max_batch_entries)
      chunks.emplace_back();
    chunks.back().push_back(i);
  }
  return chunks;
}

} // namespace

sqs_queue::sqs_queue(std::shared_ptr<http_client> http, sqs_queue_options options)
    : client_(std::move(http), std::move(options.connection)),
      state_(std::make_shared<detail::sqs_queue_state>()) {
  state_->url = std::move(options.queue_url);
  state_->name = std::move(options.queue_name);
}

void sqs_queue::queue_url(callback<std::string> done) {
  // Always from another thread, also when the URL is already known.
  auto client = client_;
  auto st = state_;
  std::string url;
  {
    std::lock_guard guard{st->mu};
    url = st->url;
  }
  if (!url.empty()) {
    deliver_later<std::string>(std::move(done), std::move(url));
    return;
  }
  resolve_url(client, st, std::move(done));
}

void sqs_queue::receive(int max_messages, std::chrono::seconds wait,
                        std::chrono::seconds visibility,
                        callback<std::vector<queue_message>> done) {
  using vec = std::vector<queue_message>;
  if (max_messages < 1 || max_messages > static_cast<int>(sqs::max_batch_entries)) {
    deliver_later<vec>(std::move(done), bad_argument("max_messages must be 1..10, not "
                                                     + std::to_string(max_messages)));
    return;
  }
  if (wait.count() < 0 || wait.count() > sqs::max_wait_seconds) {
    deliver_later<vec>(std::move(done),
                       bad_argument("wait must be 0..20 s, not " + std::to_string(wait.count())));
    return;
  }
  if (visibility.count() < 0 || visibility.count() > sqs::max_visibility_seconds) {
    deliver_later<vec>(std::move(done), bad_argument("visibility must be 0..43200 s, not "
                                                     + std::to_string(visibility.count())));
    return;
  }
  auto client = client_;
  resolve_url(client, state_,
              [client, max_messages, wait, visibility,
               done = std::move(done)](result<std::string> url) mutable {
                if (!url) {
                  done(std::move(url.error()));
                  return;
                }
                auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(wait)
                               + client.connection().receive_margin;
                client.call("ReceiveMessage",
                            sqs::receive_request(*url, max_messages, static_cast<int>(wait.count()),
                                                 static_cast<int>(visibility.count())),
                            timeout, [done = std::move(done)](result<std::string> r) {
                              if (!r) {
                                done(std::move(r.error()));
                                return;
                              }
                              done(sqs::parse_receive(*r));
                            });
              });
}

void sqs_queue::remove(std::vector<std::string> receipts,
                       callback<std::vector<batch_entry_result>> done) {
  auto job = std::make_shared<batch_job>();
  job->done = std::move(done);
  job->results.resize(receipts.size());
  for (size_t i = 0; i < receipts.size(); ++i) {
    job->results[i].ref = receipts[i];
    if (receipts[i].empty()) {
      job->results[i].failed = true;
      job->results[i].error = bad_argument("empty receipt handle");
    }
  }
  auto chunks = chunk_by_count(job->results);
  run_batch(
      client_, state_, job, batch_kind::remove, std::move(chunks),
      [receipts = std::move(receipts)](const std::string& url, const std::vector<size_t>& chunk) {
        std::vector<sqs::receipt_entry> entries;
        entries.reserve(chunk.size());
        for (auto i : chunk)
          entries.push_back({std::to_string(i), receipts[i]});
        return sqs::delete_batch_request(url, entries);
      });
}

void sqs_queue::change_visibility(std::vector<visibility_change> changes,
                                  callback<std::vector<batch_entry_result>> done) {
  auto job = std::make_shared<batch_job>();
  job->done = std::move(done);
  job->results.resize(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    auto& r = job->results[i];
    r.ref = changes[i].receipt;
    auto t = changes[i].timeout.count();
    if (changes[i].receipt.empty()) {
      r.failed = true;
      r.error = bad_argument("empty receipt handle");
    } else if (t < 0 || t > sqs::max_visibility_seconds) {
      r.failed = true;
      r.error = bad_argument("visibility timeout must be 0..43200 s, not " + std::to_string(t));
    }
  }
  auto chunks = chunk_by_count(job->results);
  run_batch(
      client_, state_, job, batch_kind::visibility, std::move(chunks),
      [changes = std::move(changes)](const std::string& url, const std::vector<size_t>& chunk) {
        std::vector<sqs::visibility_entry> entries;
        entries.reserve(chunk.size());
        for (auto i : chunk)
          entries.push_back({std::to_string(i), changes[i].receipt,
                             static_cast<int>(changes[i].timeout.count())});
        return sqs::change_visibility_batch_request(url, entries);
      });
}

void sqs_queue::send(std::vector<outgoing_message> messages,
                     callback<std::vector<batch_entry_result>> done) {
  auto job = std::make_shared<batch_job>();
  job->done = std::move(done);
  job->results.resize(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    auto& r = job->results[i];
    auto delay = messages[i].delay.count();
    if (auto ok = sqs::validate_body(messages[i].body); !ok) {
      r.failed = true;
      r.error = ok.error();
    } else if (delay < 0 || delay > sqs::max_delay_seconds) {
      r.failed = true;
      r.error = bad_argument("delay must be 0..900 s, not " + std::to_string(delay));
    }
  }
  // At most 10 entries and at most 1 MiB of bodies per call (SQS's BatchRequestTooLong).
  std::vector<std::vector<size_t>> chunks;
  size_t chunk_bytes = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (job->results[i].failed)
      continue;
    auto size = messages[i].body.size();
    for (const auto& [name, value] : messages[i].attributes)
      size += name.size() + value.size() + 6; // and the data type, "String"
    if (chunks.empty() || chunks.back().size() == sqs::max_batch_entries
        || chunk_bytes + size > sqs::max_message_bytes) {
      chunks.emplace_back();
      chunk_bytes = 0;
    }
    chunks.back().push_back(i);
    chunk_bytes += size;
  }
  run_batch(
      client_, state_, job, batch_kind::send, std::move(chunks),
      [messages = std::move(messages)](const std::string& url, const std::vector<size_t>& chunk) {
        std::vector<sqs::send_entry> entries;
        entries.reserve(chunk.size());
        for (auto i : chunk)
          entries.push_back({std::to_string(i), messages[i].body,
                             static_cast<int>(messages[i].delay.count()), messages[i].attributes,
                             messages[i].tenant});
        return sqs::send_batch_request(url, entries);
      });
}

void sqs_queue::stats(callback<queue_stats> done) {
  auto client = client_;
  resolve_url(client, state_, [client, done = std::move(done)](result<std::string> url) mutable {
    if (!url) {
      done(std::move(url.error()));
      return;
    }
    client.call("GetQueueAttributes",
                sqs::get_attributes_request(*url, {"ApproximateNumberOfMessages",
                                                   "ApproximateNumberOfMessagesNotVisible",
                                                   "ApproximateNumberOfMessagesDelayed"}),
                client.connection().call_timeout, [done = std::move(done)](result<std::string> r) {
                  if (!r) {
                    done(std::move(r.error()));
                    return;
                  }
                  done(sqs::parse_stats(*r));
                });
  });
}

} // namespace ingestd
