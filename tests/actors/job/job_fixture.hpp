// The job actor tests' fixture (tests/actors/job/): the actor fixture with a heartbeat, a
// document and its stored transcription, and what the fakes recorded (the audit rows and who wrote
// them, the queue's visibility calls, the timers the actor clock holds for a job).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "adapters/extraction/fallback_extractor.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/storage/object_store.hpp"
#include "tests/actors/support/actor_fixture.hpp"

namespace ingestd {
namespace {

struct job_fixture : test::actor_fixture {
  heartbeat_actor hb = heartbeat();

  uuid add_document(const std::string& text = "Invoice INV-1 total 119.00", int attempts = 0) {
    auto id = db->add("documents/d.txt", "text/plain", attempts);
    store->set("documents/d.txt", text);
    return id;
  }

  /// Timers and delayed messages the actor clock holds for `job` (each keeps the actor alive).
  size_t clock_entries_for(const job_actor& job) {
    using clk = caf::detail::simple_actor_clock;
    auto addr = caf::actor_cast<caf::strong_actor_ptr>(job);
    size_t n = 0;
    for (auto& [due, event] : sched.clock().schedule()) {
      if (auto* t = dynamic_cast<clk::ordinary_timeout*>(event.get());
          t != nullptr && t->self == addr)
        ++n;
      if (auto* m = dynamic_cast<clk::actor_msg*>(event.get()); m != nullptr && m->receiver == addr)
        ++n;
    }
    return n;
  }

  /// Where the ingestion's transcription is stored (under its document's tenant).
  std::string transcription_key(const uuid& id) {
    return storage_keys::transcription(db->row(id).tenant_id.str(), id.str());
  }

  /// A stored transcription of `text`, as an earlier attempt leaves it (the item was claimed
  /// before); `derived_ext`: it names a derived file of that kind (stored before it).
  void store_transcription(const uuid& id, const std::string& text,
                           const std::string& derived_ext = {}) {
    transcription t;
    t.derived_ext = derived_ext;
    t.text = text;
    t.pages.push_back(transcription_page{1, text, 0.9, {}});
    t.page_count = 1;
    t.quality_score = 0.9;
    t.provider = "earlier";
    store->set(transcription_key(id), to_json(t));
    work->update(id, [](test::fake_work_item& w) { w.started = true; });
  }

  /// The calls that wrote `item`'s audit rows.
  std::set<std::string> written_by(const uuid& item) {
    std::set<std::string> out;
    for (auto& row : work->audit_rows())
      if (row.event.item == item)
        out.insert(row.written_by);
    return out;
  }

  std::chrono::seconds last_visibility() {
    auto calls = queue->visibility_calls();
    CAF_REQUIRE(!calls.empty());
    return calls.back().timeout;
  }
};

using strings = std::vector<std::string>;

} // namespace
} // namespace ingestd
