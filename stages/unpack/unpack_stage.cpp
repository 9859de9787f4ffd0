// The unpack stage's steps, between the claim of a container's ingestion and the outcome (the
// lifecycle around them is actors/job.cpp's):
//
//   load (the container's file, type and depth) ─► fetch ─► reserve (the node's memory budget:
//   the container's bytes and its members' bound; waits in arrival order, its deadline stopped)
//   ─► unpack (CPU pool: libarchive or GMime, under the limits) ─► sort (CPU pool: each member a
//   document, a container or skipped, hashed; too deep fails whole) ─► store (each child's bytes)
//   ─► complete (one transaction: the children, their ingestions and work items with their
//   messages, the parent's body and errors, the parent's work item completed)
//
// A limit broken (size, members, ratio, unsafe path, encryption, depth) fails the container at
// once (permanent) before anything is stored: nothing of it is left behind. A corrupt archive
// keeps the members that could be read; the error goes on the parent, which goes to review.
// The memory reserved goes back once the children's bytes are stored, or when the job ends.
#include "stages/unpack/unpack_stage.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <mutex>
#include <set>

#include "actors/job.hpp"
#include "actors/metrics.hpp"
#include "adapters/aws/encoding.hpp"
#include "adapters/db/pg_container_repository.hpp"
#include "messages/file_type.hpp"
#include "stages/registry.hpp"

namespace ingestd {

namespace {

/// A stable id from `seed` (a version-8 UUID of its SHA-256): a retried unpack proposes the same
/// child ids and overwrites the same objects instead of leaving orphans.
uuid derived_uuid(const std::string& seed) {
  auto h = aws::sha256_hex(seed);
  h[12] = '8';
  static constexpr char variant[] = "89ab";
  h[16] = variant[std::stoi(h.substr(16, 1), nullptr, 16) & 3];
  auto text = h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4)
              + "-" + h.substr(20, 12);
  return uuid::parse(text).value_or(uuid::v4());
}

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void put(json_writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines)
    out.append(out.empty() ? "" : "; ").append(l);
  return out;
}

/// A member without a type ingestd reads, or a second copy of the same content.
struct skipped_member {
  std::string name;
  std::string reason;
};

/// What the members became: children (with their member's index) and skipped entries.
struct sorted_members {
  std::vector<unpack_child> children;
  std::vector<size_t> member_of;
  std::vector<skipped_member> skipped;
};

/// Sorts the members (CPU work: type detection and a SHA-256 of each): a document, a container
/// (its own unpack) or skipped; a container nested deeper than `max_depth` fails the whole. The
/// children are stored under the parent's tenant.
result<sorted_members> sort_members(const unpacked& content, const uuid& parent, const uuid& tenant,
                                    int32_t depth, int max_depth, const unpack_settings& settings) {
  sorted_members out;
  std::set<std::string> hashes;
  for (size_t i = 0; i < content.members.size(); ++i) {
    auto& m = content.members[i];
    unpack_child child;
    std::string ext;
    if (auto doc = detect_file_type(m.bytes)) {
      child.mime_type = doc->mime;
      ext = doc->ext;
      child.stage = "ingest";
      child.queue = settings.ingest_queue;
    } else if (auto inner = detect_container_type(m.bytes)) {
      if (depth + 2 > max_depth)
        return error::make_permanent(
            "container.too_deep",
            "member \"" + m.name + "\" is a container nested deeper than containers.max_depth ("
                + std::to_string(max_depth) + ")");
      child.mime_type = inner->mime;
      ext = inner->ext;
      child.stage = "unpack";
      child.queue = settings.queue_name;
    } else {
      out.skipped.push_back({m.name, "not a PDF, image or container"});
      continue;
    }
    child.content_hash = aws::sha256_hex(m.bytes);
    if (!hashes.insert(child.content_hash).second) {
      out.skipped.push_back({m.name, "the same content as another member"});
      continue;
    }
    auto seed = parent.str() + ":" + std::to_string(i);
    child.document_id = derived_uuid(seed + ":document");
    child.ingestion_id = derived_uuid(seed + ":ingestion");
    child.file_path = storage_keys::document(tenant.str(), child.document_id.str(), ext);
    child.member_name = m.name;
    out.member_of.push_back(i);
    out.children.push_back(std::move(child));
  }
  return out;
}

class unpack_job final : public stage_job {
public:
  unpack_job(std::shared_ptr<const unpack_ports> ports,
             std::shared_ptr<const unpack_settings> settings)
      : ports_(std::move(ports)), settings_(std::move(settings)) {}

  void run(job_handle& job) override {
    job_ = &job;
    load();
  }

private:
  void load() {
    job_->request<container_details>(
        "load", [&](auto cb) { ports_->db->load(job_->claim().item, std::move(cb)); },
        [this](result<container_details> r) {
          if (!r)
            return job_->step_failed(r.error());
          details_ = std::move(*r);
          job_->step_done("ok", "depth " + std::to_string(details_.depth));
          fetch();
        });
  }

  void fetch() {
    job_->request<std::string>(
        "fetch",
        [&](auto cb) {
          ports_->storage->get(details_.file_path, settings_->max_file_bytes, std::move(cb));
        },
        [this](result<std::string> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok", std::to_string(r->size()) + " bytes");
          bytes_ = std::move(*r);
          auto type = container_type_of_mime(details_.mime_type);
          if (!type)
            type = detect_container_type(bytes_);
          if (!type) {
            job_->begin_local("unpack");
            return job_->step_failed(error::make_permanent(
                "container.unsupported", "not a ZIP, TAR, .tar.gz, e-mail or mbox"));
          }
          type_ = *type;
          reserve();
        });
  }

  /// The container's share of the node's memory budget, before its members are asked for. The
  /// wait for it stops the step's deadline: a container waits for room, it never fails for it.
  void reserve() {
    if (!ports_->budget)
      return unpack();
    auto bytes = unpack_memory_bound(ports_->unpacker->limits(), type_.kind, bytes_.size());
    job_->request<std::shared_ptr<memory_budget::reservation>>(
        "reserve",
        [&](auto cb) {
          auto call = job_->port_call();
          auto granted = [cb](std::shared_ptr<memory_budget::reservation> r) { cb(std::move(r)); };
          if (!ports_->budget->reserve(bytes, std::move(granted), job_->cancel_token())
              && call.waiting)
            call.waiting();
        },
        [this, bytes](result<std::shared_ptr<memory_budget::reservation>> r) {
          if (r && !*r) // withdrawn: the work was cancelled while it waited
            return job_->fail(error::make_transient(std::string{errc::work_cancelled},
                                                    "cancelled while waiting"));
          if (!r)
            return job_->step_failed(r.error());
          reservation_ = std::move(*r);
          job_->step_done("ok", std::to_string(bytes) + " bytes reserved");
          unpack();
        });
  }

  void unpack() {
    job_->request<unpacked>(
        "unpack",
        [&](auto cb) {
          unpack_request req{std::move(bytes_), type_.kind, job_->wait_for_cpu(),
                             job_->cancel_token()};
          ports_->unpacker->unpack(std::move(req), std::move(cb));
        },
        [this](result<unpacked> r) {
          if (!r)
            return job_->step_failed(r.error());
          content_ = std::make_shared<unpacked>(std::move(*r));
          job_->step_done(
              "ok", std::to_string(content_->members.size()) + " members"
                        + (content_->problems.empty() ? "" : ", " + join(content_->problems)));
          sort();
        });
  }

  void sort() {
    job_->on_cpu<sorted_members>(
        "sort",
        // The members stay alive with the work (the job may be gone when a late worker runs it).
        [content = content_, parent = job_->claim().item, tenant = job_->claim().tenant_id,
         depth = details_.depth, settings = settings_] {
          return sort_members(*content, parent, tenant, depth, settings->max_depth, *settings);
        },
        [this](result<sorted_members> r) {
          if (!r)
            return job_->step_failed(r.error());
          sorted_ = std::move(*r);
          job_->step_done("ok", std::to_string(sorted_.children.size()) + " children, "
                                    + std::to_string(sorted_.skipped.size()) + " skipped");
          store();
        });
  }

  /// Every child's bytes, written at once; the step answers when the last write does.
  void store() {
    job_->request<void>(
        "store",
        [&](auto cb) {
          if (sorted_.children.empty())
            return cb(result<void>{});
          struct gather {
            std::mutex mtx;
            size_t left;
            std::optional<error> first;
            callback<void> done;
          };
          auto g = std::make_shared<gather>();
          g->left = sorted_.children.size();
          g->done = std::move(cb);
          for (size_t k = 0; k < sorted_.children.size(); ++k) {
            auto& child = sorted_.children[k];
            ports_->storage->put(child.file_path,
                                 std::move(content_->members[sorted_.member_of[k]].bytes),
                                 child.mime_type, [g](result<void> r) {
                                   std::unique_lock<std::mutex> lock{g->mtx};
                                   if (!r && !g->first)
                                     g->first = r.error();
                                   if (--g->left > 0)
                                     return;
                                   auto first = g->first;
                                   lock.unlock();
                                   first ? g->done(*first) : g->done(result<void>{});
                                 });
          }
        },
        [this](result<void> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok", std::to_string(sorted_.children.size()) + " objects");
          // The members are stored: their memory goes back to the node's budget.
          reservation_.reset();
          complete();
        });
  }

  std::string summary() const {
    rapidjson::StringBuffer buf;
    json_writer w{buf};
    w.StartObject();
    w.Key("container");
    w.StartObject();
    put(w, "kind", std::string{type_.ext});
    w.Key("members");
    w.Uint64(content_->members.size());
    w.Key("children");
    w.StartArray();
    for (auto& c : sorted_.children) {
      w.StartObject();
      put(w, "name", c.member_name);
      put(w, "document_id", c.document_id.str());
      put(w, "mime_type", c.mime_type);
      w.EndObject();
    }
    w.EndArray();
    w.Key("skipped");
    w.StartArray();
    for (auto& s : sorted_.skipped) {
      w.StartObject();
      put(w, "name", s.name);
      put(w, "reason", s.reason);
      w.EndObject();
    }
    w.EndArray();
    if (!content_->problems.empty())
      put(w, "error", join(content_->problems));
    if (type_.kind == container_kind::eml) {
      w.Key("email");
      w.StartObject();
      put(w, "from", content_->from);
      put(w, "to", content_->to);
      put(w, "subject", content_->subject);
      put(w, "date", content_->date);
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
    return buf.GetString();
  }

  void complete() {
    job_->storing_outcome();
    job_->request<unpack_counts>(
        "complete",
        [&](auto cb) {
          unpack_completion c{sorted_.children, content_->body_text, summary(),
                              join(content_->problems)};
          ports_->db->complete_unpack(job_->outcome(), std::move(c), std::move(cb));
        },
        [this](result<unpack_counts> r) {
          if (!r)
            return job_->fail(r.error());
          job_->step_done("ok", std::to_string(r->created) + " children created, "
                                    + std::to_string(r->known) + " already known");
          job_->completed();
        });
  }

  std::shared_ptr<const unpack_ports> ports_;
  std::shared_ptr<const unpack_settings> settings_;
  job_handle* job_ = nullptr;
  container_details details_;
  container_type type_;
  /// The container's bytes, from the fetch to the unpacking.
  std::string bytes_;
  /// Its share of the node's memory budget, held until its members are stored (or the job ends).
  std::shared_ptr<memory_budget::reservation> reservation_;
  std::shared_ptr<unpacked> content_;
  sorted_members sorted_;
};

} // namespace

std::shared_ptr<stage> make_unpack_stage(std::shared_ptr<const unpack_ports> ports,
                                         const unpack_settings& settings) {
  auto s = std::make_shared<stage>();
  s->name = "unpack";
  s->label = "unpack";
  s->item_log_key = "ingestion_id";
  s->queue = settings.queue;
  s->queue_name = settings.queue_name;
  s->max_in_flight = settings.max_in_flight;
  s->max_attempts = settings.max_attempts;
  s->retry_backoff = settings.retry_backoff;
  s->dead_letter = settings.dead_letter ? dead_letter_policy::always : dead_letter_policy::never;
  s->uses_cpu = true;
  s->audit = true;
  s->skips_known_files = true;
  s->cancellable = true;
  auto held = std::make_shared<const unpack_settings>(settings);
  s->make_job
      = [ports = std::move(ports), held] { return std::make_unique<unpack_job>(ports, held); };
  return s;
}

std::vector<queue_spec> unpack_queues(const config& cfg) {
  auto& c = cfg.containers;
  return {{"unpack", c.queue_name, c.queue_url, c.dead_letter_name, c.max_receive_count}};
}

result<std::vector<std::shared_ptr<const stage>>> unpack_stages(stage_env& env) {
  auto& cfg = env.cfg;
  auto spec = unpack_queues(cfg).front();
  auto q = env.open_queue(spec);
  if (!q)
    return q.error();
  unpack_limits limits;
  limits.max_total_bytes = static_cast<uint64_t>(cfg.containers.max_total_bytes);
  limits.max_members = cfg.containers.max_members;
  limits.max_ratio = cfg.containers.max_ratio;
  limits.max_member_bytes = static_cast<uint64_t>(cfg.containers.max_member_bytes);
  auto ports = std::make_shared<unpack_ports>();
  ports->db = std::make_shared<pg_container_repository>(
      cfg.database.url, pg_container_options{1, env.session, env.via_outbox});
  ports->storage = env.storage;
  ports->unpacker = std::make_shared<container_unpacker>(
      *env.cpu, limits, std::chrono::seconds{cfg.containers.timeout_seconds});
  ports->budget
      = std::make_shared<memory_budget>(static_cast<uint64_t>(cfg.containers.memory_budget_bytes));
  if (env.metrics)
    env.metrics->watch(std::shared_ptr<const memory_budget>{ports->budget});
  unpack_settings settings;
  settings.queue = std::move(*q);
  settings.queue_name = spec.name;
  settings.max_in_flight = cfg.containers.max_in_flight;
  settings.max_attempts = cfg.worker.max_retry_attempts;
  settings.retry_backoff.clear();
  for (auto x : cfg.worker.retry_backoff_seconds)
    settings.retry_backoff.emplace_back(x);
  settings.dead_letter = cfg.queue.max_receive_count > 0;
  settings.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
  settings.max_depth = cfg.containers.max_depth;
  // A container's documents go to the ingest stage's queue (its small class's, with classes).
  settings.ingest_queue = cfg.queue.name;
  return std::vector<std::shared_ptr<const stage>>{make_unpack_stage(std::move(ports), settings)};
}

} // namespace ingestd
