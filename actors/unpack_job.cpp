// The unpack stage's steps, between the claim of a container's ingestion (stage `unpack`) and the
// outcome (the lifecycle around them is actors/job.cpp's, as for every stage):
//
//   depth ─► fetch ─► unpack (CPU pool: libarchive or GMime, under the limits) ─► sort (each
//   member a document, a container or skipped; too deep fails whole) ─► store (each child's
//   bytes) ─► complete (one transaction: children, their ingestions and messages, the parent's
//   body and errors, the parent completed)
//
// A limit broken (size, members, ratio, unsafe path, encryption, depth) fails the container at
// once (permanent) before anything is stored: nothing of it is left behind. A corrupt archive
// keeps the members that could be read; the error goes on the parent, which goes to review.
#include "actors/unpack_job.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <mutex>
#include <set>

#include "actors/ingestion_stage_job.hpp"
#include "actors/job.hpp"
#include "adapters/aws/encoding.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

namespace {

/// A stable id from `seed` (a version-8 UUID of its SHA-256): a retried unpack proposes the same
/// child ids and overwrites the same objects instead of leaving orphans.
uuid derived_uuid(const std::string& seed) {
  auto h = aws::sha256_hex(seed);
  h[12] = '8';
  static constexpr char variant[] = "89ab";
  h[16] = variant[std::stoi(h.substr(16, 1), nullptr, 16) & 3];
  auto text = h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-"
              + h.substr(20, 12);
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

class unpack_job final : public ingestion_stage_job {
public:
  unpack_job(std::shared_ptr<worker_context> ctx, int max_depth)
    : ingestion_stage_job(std::move(ctx), "unpack", "its unpacking"), max_depth_(max_depth) {}

  void run(job_handle& job) override {
    take_claim(job);
    read_depth();
  }

private:
  void read_depth() {
    job_->request<int32_t>(
      "depth", [&](auto cb) { ctx_->ports.containers->depth_of(claim_.document_id, std::move(cb)); },
      [this](result<int32_t> r) {
        if (!r)
          return job_->fail(r.error());
        depth_ = *r;
        job_->step_done("ok", std::to_string(depth_));
        fetch();
      });
  }

  void fetch() {
    job_->request<std::string>(
      "fetch",
      [&](auto cb) { ctx_->ports.storage->get(claim_.file_path, ctx_->settings.max_file_bytes, std::move(cb)); },
      [this](result<std::string> r) {
        if (!r)
          return job_->fail(r.error());
        job_->step_done("ok", std::to_string(r->size()) + " bytes");
        unpack(std::move(*r));
      });
  }

  void unpack(std::string bytes) {
    auto type = container_type_of_mime(claim_.mime_type);
    if (!type)
      type = detect_container_type(bytes);
    if (!type) {
      job_->begin_local("unpack");
      auto err = error::make_permanent("container.unsupported", "not a ZIP, TAR, .tar.gz, e-mail or mbox");
      return job_->step_failed(err);
    }
    type_ = *type;
    job_->request<unpacked>(
      "unpack",
      [&](auto cb) {
        unpack_request req{std::move(bytes), type->kind, job_->wait_for_cpu()};
        ctx_->ports.unpacker->unpack(std::move(req), std::move(cb));
      },
      [this](result<unpacked> r) {
        if (!r)
          return job_->step_failed(r.error());
        content_ = std::move(*r);
        job_->step_done("ok", std::to_string(content_.members.size()) + " members"
                                + (content_.problems.empty() ? "" : ", " + join(content_.problems)));
        sort();
      });
  }

  /// Each member becomes a document, a container or a skipped entry; nested too deep fails.
  void sort() {
    job_->begin_local("sort");
    std::set<std::string> hashes;
    for (size_t i = 0; i < content_.members.size(); ++i) {
      auto& m = content_.members[i];
      unpack_child child;
      std::string ext;
      if (auto doc = detect_file_type(m.bytes)) {
        child.mime_type = doc->mime;
        ext = doc->ext;
      } else if (auto inner = detect_container_type(m.bytes)) {
        if (depth_ + 2 > max_depth_) {
          auto err = error::make_permanent(
            "container.too_deep", "member \"" + m.name + "\" is a container nested deeper than containers.max_depth ("
                                    + std::to_string(max_depth_) + ")");
          job_->step_done("failed", err.message);
          return job_->fail(err);
        }
        child.mime_type = inner->mime;
        child.container = true;
        ext = inner->ext;
      } else {
        skipped_.push_back({m.name, "not a PDF, image or container"});
        continue;
      }
      child.content_hash = aws::sha256_hex(m.bytes);
      if (!hashes.insert(child.content_hash).second) {
        skipped_.push_back({m.name, "the same content as another member"});
        continue;
      }
      auto seed = claim_.ingestion_id.str() + ":" + std::to_string(i);
      child.document_id = derived_uuid(seed + ":document");
      child.ingestion_id = derived_uuid(seed + ":ingestion");
      child.file_path = storage_keys::document(child.document_id.str(), ext);
      child.member_name = m.name;
      member_of_.push_back(i);
      children_.push_back(std::move(child));
    }
    job_->step_done("ok", std::to_string(children_.size()) + " children, " + std::to_string(skipped_.size())
                            + " skipped");
    store();
  }

  /// Every child's bytes, written at once; the step answers when the last write does.
  void store() {
    job_->request<void>(
      "store",
      [&](auto cb) {
        if (children_.empty())
          return cb(result<void>{});
        struct gather {
          std::mutex mtx;
          size_t left;
          std::optional<error> first;
          callback<void> done;
        };
        auto g = std::make_shared<gather>();
        g->left = children_.size();
        g->done = std::move(cb);
        for (size_t k = 0; k < children_.size(); ++k) {
          auto& bytes = content_.members[member_of_[k]].bytes;
          ctx_->ports.storage->put(children_[k].file_path, std::move(bytes), children_[k].mime_type,
                                   [g](result<void> r) {
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
        job_->step_done("ok", std::to_string(children_.size()) + " objects");
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
    w.Uint64(content_.members.size());
    w.Key("children");
    w.StartArray();
    for (auto& c : children_) {
      w.StartObject();
      put(w, "name", c.member_name);
      put(w, "document_id", c.document_id.str());
      put(w, "mime_type", c.mime_type);
      w.EndObject();
    }
    w.EndArray();
    w.Key("skipped");
    w.StartArray();
    for (auto& s : skipped_) {
      w.StartObject();
      put(w, "name", s.name);
      put(w, "reason", s.reason);
      w.EndObject();
    }
    w.EndArray();
    if (!content_.problems.empty())
      put(w, "error", join(content_.problems));
    if (type_.kind == container_kind::eml) {
      w.Key("email");
      w.StartObject();
      put(w, "from", content_.from);
      put(w, "to", content_.to);
      put(w, "subject", content_.subject);
      put(w, "date", content_.date);
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
    return buf.GetString();
  }

  void complete() {
    job_->storing_outcome();
    unpack_completion c{children_, content_.body_text, summary(), join(content_.problems)};
    job_->request<unpack_counts>(
      "complete",
      [&](auto cb) { ctx_->ports.containers->complete_unpack(job_->lease(), std::move(c), std::move(cb)); },
      [this](result<unpack_counts> r) {
        if (!r)
          return job_->fail(r.error());
        job_->step_done("ok", std::to_string(r->created) + " children created, " + std::to_string(r->known)
                                + " already known");
        job_->completed();
      });
  }

  int max_depth_;
  int32_t depth_ = 0;
  container_type type_;
  unpacked content_;
  std::vector<unpack_child> children_;
  /// children_[k]'s member in content_.members.
  std::vector<size_t> member_of_;
  std::vector<skipped_member> skipped_;
};

} // namespace

std::shared_ptr<stage> make_unpack_stage(const worker_context& ctx, unpack_stage_settings settings) {
  auto s = std::make_shared<stage>();
  auto& set = ctx.settings;
  s->name = "unpack";
  s->queue = std::move(settings.queue);
  s->queue_name = std::move(settings.queue_name);
  s->max_in_flight = settings.max_in_flight;
  s->max_attempts = set.max_attempts;
  s->retry_backoff = set.retry_backoff;
  s->dead_letter = set.dead_letter_on_final_failure ? dead_letter_policy::always : dead_letter_policy::never;
  s->uses_cpu = true;
  s->audit = true;
  s->renew_leases = [db = ctx.ports.db](std::vector<lease_ref> refs, std::chrono::seconds lease,
                                        callback<std::vector<lease_ref>> done) {
    db->renew_leases(std::move(refs), lease, std::move(done));
  };
  s->make_job = [depth = settings.max_depth](const std::shared_ptr<worker_context>& c) {
    return std::make_unique<unpack_job>(c, depth);
  };
  return s;
}

} // namespace ingestd
