// The unpack stage's port: the container's reader (libarchive or GMime) run on a CPU worker, in
// one of its decoder helpers when it has them (adapters/sandbox), else in process.
#include <algorithm>
#include <exception>
#include <memory>

#include "adapters/containers/unpacker.hpp"
#include "adapters/sandbox/decoder.hpp"
#include "adapters/support/cpu_executor.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

uint64_t unpack_memory_bound(const unpack_limits& limits, container_kind kind,
                             uint64_t container_bytes) {
  uint64_t members = limits.max_total_bytes;
  if (!is_mail(kind)) {
    auto ratio = limits.max_ratio * static_cast<double>(container_bytes);
    auto expanded = ratio >= static_cast<double>(members) ? members : static_cast<uint64_t>(ratio);
    members = std::min(members, std::max(expanded, limits.ratio_floor_bytes));
  }
  return container_bytes + members;
}

const unpacker& unpacker_for(container_kind kind) {
  static const archive_unpacker archives;
  static const mime_unpacker mail;
  static const msg_unpacker outlook;
  static const pst_unpacker outlook_files;
  if (kind == container_kind::msg)
    return outlook;
  if (kind == container_kind::pst)
    return outlook_files;
  if (is_mail(kind))
    return mail;
  return archives;
}

container_unpacker::container_unpacker(cpu_executor& cpu, const unpack_limits& limits,
                                       std::chrono::seconds deadline)
    : cpu_(cpu), limits_(limits), deadline_(deadline) {}

void container_unpacker::unpack(unpack_request req, callback<unpacked> done) {
  auto shared = std::make_shared<std::pair<unpack_request, callback<unpacked>>>(std::move(req),
                                                                                std::move(done));
  cpu_job job;
  job.deadline = std::chrono::steady_clock::now() + deadline_;
  job.run = [this, shared] {
    auto& [request, answer] = *shared;
    if (request.started)
      request.started();
    if (request.stop.stop_requested())
      return answer(error::make_transient(errc::decode_cancelled,
                                          "the container's work was cancelled before it ran"));
    if (auto decoder = cpu_.decoder()) {
      // A decoder helper takes the container apart; its answer is checked again here.
      auto out = sandbox::unpack(*decoder, request.bytes, request.kind, limits_,
                                 std::chrono::steady_clock::now() + deadline_, request.stop);
      if (out && !is_mail(request.kind))
        for (auto& m : out->members)
          if (auto safe = check_member_path(m.name); !safe)
            return answer(error::make_transient(
                errc::decode_crashed, "the decoder helper answered an unsafe member path"));
      return answer(std::move(out));
    }
    try {
      answer(unpacker_for(request.kind).unpack(request.bytes, request.kind, limits_));
    } catch (const std::exception& e) {
      // std::bad_alloc and the like: the libraries are C, but our copies may throw.
      answer(
          error::make_transient("container.memory", std::string{"unpacking failed: "} + e.what()));
    }
  };
  job.expired = [shared] {
    shared->second(error::make_transient(errc::ocr_busy,
                                         "no CPU worker was free to unpack the container in time"));
  };
  cpu_.submit(std::move(job));
}

} // namespace ingestd
