// The decoder helper's main loop (helper.hpp).
#include "adapters/sandbox/helper.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <malloc.h>
#include <new>
#include <sys/resource.h>
#include <unistd.h>

#include "adapters/sandbox/sandbox.hpp"

#if INGESTD_ADDRESS_SANITIZER
#  include <sanitizer/asan_interface.h>
#endif

namespace ingestd::sandbox {

namespace {

using clock_type = std::chrono::steady_clock;

double cpu_seconds_used() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
         + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// RLIMIT_CPU's soft limit to what is used plus this request's budget (never above the hard
/// limit the pool set): past it the kernel sends SIGXCPU, which ends the helper.
void limit_cpu_for(uint32_t timeout_ms, uint32_t margin_s) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_CPU, &lim) != 0)
    return;
  auto budget = static_cast<rlim_t>(cpu_seconds_used()) + 1 + timeout_ms / 1000 + margin_s;
  if (lim.rlim_max != RLIM_INFINITY && budget > lim.rlim_max)
    budget = lim.rlim_max;
  lim.rlim_cur = budget;
  ::setrlimit(RLIMIT_CPU, &lim);
}

bool send(const answer& a, uint32_t max) {
  auto payload = encode_answer(a);
  if (payload.size() > max) {
    answer too_large;
    too_large.status = answer_status::error;
    too_large.retiring = a.retiring;
    too_large.err = error::make_permanent(
        "decode.answer_too_large", "the answer has " + std::to_string(payload.size())
                                       + " bytes; a frame holds at most " + std::to_string(max));
    payload = encode_answer(too_large);
  }
  return write_frame(answer_fd, payload, max) == io_status::ok;
}

answer failure(error e) {
  answer a;
  a.status = answer_status::error;
  a.err = std::move(e);
  return a;
}

} // namespace

void out_of_memory_exit() {
  ::_exit(exit_out_of_memory);
}

std::string sanitizer_options(uint64_t memory_limit_bytes) {
  if (!address_sanitizer)
    return {};
  auto mb = std::to_string(std::max<uint64_t>(memory_limit_bytes >> 20, 1));
  // A crash by a signal ends the helper by that signal, as in any other build (ASan's own
  // handler would exit 1); its symbolizer is a program the filter does not let it start.
  return "ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:symbolize=0:"
         "allocator_may_return_null=1:max_allocation_size_mb="
         + mb + ":soft_rss_limit_mb=" + mb;
}

std::vector<std::string> helper_arguments(const helper_settings& s) {
  return {"--max-frame",
          std::to_string(s.max_frame_bytes),
          "--languages",
          s.tesseract.languages,
          "--other-languages",
          s.tesseract.other_languages,
          "--tessdata",
          s.tesseract.tessdata_path,
          "--psm",
          std::to_string(s.tesseract.page_segmentation_mode),
          "--retire-cpu",
          std::to_string(s.retire_cpu_seconds),
          "--cpu-margin",
          std::to_string(s.cpu_margin_seconds)};
}

result<helper_settings> parse_helper_arguments(int argc, char** argv, int first) {
  helper_settings s;
  auto number = [](const char* text, uint32_t& out) {
    char* end = nullptr;
    auto v = std::strtoul(text, &end, 10);
    if (end == text || *end != '\0' || v > UINT32_MAX)
      return false;
    out = static_cast<uint32_t>(v);
    return true;
  };
  for (int i = first; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return error::make_permanent("decode.usage", flag + " needs a value");
    const char* value = argv[++i];
    uint32_t psm = 0;
    bool ok = true;
    if (flag == "--max-frame")
      ok = number(value, s.max_frame_bytes);
    else if (flag == "--languages")
      s.tesseract.languages = value;
    else if (flag == "--other-languages")
      s.tesseract.other_languages = value;
    else if (flag == "--tessdata")
      s.tesseract.tessdata_path = value;
    else if (flag == "--psm")
      ok = number(value, psm), s.tesseract.page_segmentation_mode = static_cast<int>(psm);
    else if (flag == "--retire-cpu")
      ok = number(value, s.retire_cpu_seconds);
    else if (flag == "--cpu-margin")
      ok = number(value, s.cpu_margin_seconds);
    else
      return error::make_permanent("decode.usage", "unknown option " + flag);
    if (!ok)
      return error::make_permanent("decode.usage", flag + " needs a number");
  }
  if (s.max_frame_bytes < 64)
    return error::make_permanent("decode.usage", "--max-frame is too small");
  return s;
}

namespace {
bool retire_requested = false;
} // namespace

void retire_after_this_request() {
  retire_requested = true;
}

int helper_main(const helper_settings& settings, const handler_table& table) {
  // A failed allocation anywhere in C++ code ends the helper with a code the pool reads; so
  // does a library's own out-of-memory hook (the handlers' warm_up installs them).
  std::set_new_handler([] { out_of_memory_exit(); });
#if INGESTD_ADDRESS_SANITIZER
  // Under ASan a failed operator new is reported by ASan instead (the handler above never runs).
  __asan_set_error_report_callback([](const char* report) {
    for (const char* kind : {"out-of-memory", "allocation-size-too-big", "rss-limit-exceeded"})
      if (std::strstr(report, kind) != nullptr)
        out_of_memory_exit();
  });
#endif
  // One malloc arena: the address space (RLIMIT_AS) goes to the document, not to per-thread
  // arenas of OpenMP's threads.
  ::mallopt(M_ARENA_MAX, 1);
  try {
    if (table.warm_up)
      table.warm_up(settings);
  } catch (const std::exception&) {
    return exit_startup_failed;
  }
  clear_environment();
  if (auto filtered = install_seccomp_filter(); !filtered)
    return exit_startup_failed; // never serve unconfined
  answer ready;
  ready.status = answer_status::ready;
  if (!send(ready, settings.max_frame_bytes))
    return 0;

  std::string frame;
  for (;;) {
    auto got = read_frame(request_fd, settings.max_frame_bytes, frame);
    if (got == io_status::closed)
      return 0;
    if (got != io_status::ok)
      return 2; // a frame the protocol does not allow: the pool is not speaking to us properly
    auto req = decode_request(frame);
    frame.clear();
    frame.shrink_to_fit();
    answer a;
    if (!req) {
      a = failure(req.error());
    } else {
      auto deadline = clock_type::now() + std::chrono::milliseconds{req->timeout_ms};
      limit_cpu_for(req->timeout_ms, settings.cpu_margin_seconds);
      auto h = table.handlers.find(req->kind);
      if (h == table.handlers.end()) {
        a = failure(error::make_permanent("decode.unknown_kind", "no handler for request kind "
                                                                     + std::to_string(req->kind)));
      } else {
        result<std::string> body = error::make_permanent("decode.internal", "");
        try {
          body = h->second(*req, deadline);
        } catch (const std::bad_alloc&) {
          out_of_memory_exit();
        } catch (const std::exception& e) {
          body = error::make_permanent("decode.internal",
                                       std::string{"the handler failed: "} + e.what());
        }
        if (body) {
          a.status = answer_status::ok;
          a.body = std::move(*body);
        } else {
          a = failure(std::move(body.error()));
        }
      }
    }
    a.retiring = retire_requested || cpu_seconds_used() >= settings.retire_cpu_seconds;
    if (!send(a, settings.max_frame_bytes))
      return 0;
    if (a.retiring)
      return 0;
  }
}

} // namespace ingestd::sandbox
