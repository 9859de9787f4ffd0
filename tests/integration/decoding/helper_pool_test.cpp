// Decoder helpers as processes (adapters/sandbox): this test program is its own helper
// (`<test> decoder ...` serves the production handlers and the test-only kinds below), started by
// a helper_pool like the daemon's. What one document can do to a helper costs that document a
// named error and nothing else: out of memory, a crash, an overrun deadline; inside, the seccomp
// filter refuses the network, writes and new programs, and the environment is empty. The same
// document gives the same text through helpers (the ingestd binary's `decoder`) as in process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "adapters/containers/unpacker.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/sandbox/decoder.hpp"
#include "adapters/sandbox/decoders.hpp"
#include "adapters/sandbox/helper_pool.hpp"
#include "messages/error_codes.hpp"
#include "review/page_images.hpp"
#include "tests/support/ocr/ocr_support.hpp"

extern char** environ;

using namespace ingestd;
using namespace ingestd::sandbox;
using namespace std::chrono_literals;

namespace {

// -- the test-only kinds this program's helper serves ------------------------------------------

enum test_kind : uint8_t {
  echo = first_test_kind, ///< the bytes back
  allocate,               ///< allocates until the memory limit stops it
  segfault,               ///< writes through a null pointer
  spin,                   ///< loops until killed
  probe,                  ///< tries a system call named by the params: "ok" or "errno=N"
  environment,            ///< its environment, one variable a line
  foreign_error,          ///< answers an error code no handler may answer
};

std::string errno_text(long rc) {
  return rc >= 0 ? "ok" : "errno=" + std::to_string(errno);
}

result<std::string> on_probe(request& req, clock_type::time_point) {
  std::string what = req.params;
  if (what == "socket")
    return errno_text(::socket(AF_INET, SOCK_STREAM, 0));
  if (what == "socketpair") {
    int fds[2];
    return errno_text(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds));
  }
  if (what == "open_write")
    return errno_text(::open(req.bytes.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
  if (what == "open_rdwr")
    return errno_text(::open(req.bytes.c_str(), O_RDWR));
  if (what == "open_read")
    return errno_text(::open(req.bytes.c_str(), O_RDONLY | O_CLOEXEC));
  if (what == "mkdir")
    return errno_text(::mkdir(req.bytes.c_str(), 0700));
  if (what == "exec") {
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    return errno_text(::execve("/bin/true", argv, environ));
  }
  if (what == "fork") {
    auto pid = ::fork();
    if (pid == 0)
      ::_exit(0);
    return errno_text(pid);
  }
  if (what == "kill_parent")
    return errno_text(::kill(::getppid(), 0));
  if (what == "thread") {
    // Threads stay allowed (OpenMP, OpenCV): clone with CLONE_THREAD.
    std::atomic<bool> ran{false};
    std::thread t{[&] { ran = true; }};
    t.join();
    return std::string{ran ? "ok" : "not run"};
  }
  return error::make_permanent("decode.test", "unknown probe " + what);
}

std::map<uint8_t, handler> test_handlers() {
  std::map<uint8_t, handler> h;
  h[echo] = [](request& req, clock_type::time_point) -> result<std::string> {
    return std::move(req.bytes);
  };
  h[allocate] = [](request&, clock_type::time_point) -> result<std::string> {
    std::vector<std::unique_ptr<char[]>> held;
    for (;;) {
      held.emplace_back(new char[64u << 20]);
      std::memset(held.back().get(), 1, 64u << 20);
    }
  };
  h[segfault] = [](request&, clock_type::time_point) -> result<std::string> {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
    return std::string{};
  };
  h[spin] = [](request&, clock_type::time_point) -> result<std::string> {
    volatile uint64_t n = 0;
    for (;;)
      n = n + 1;
  };
  h[probe] = on_probe;
  h[environment] = [](request&, clock_type::time_point) -> result<std::string> {
    std::string out;
    for (char** e = environ; e && *e; ++e)
      out += std::string{*e} + "\n";
    return out;
  };
  h[foreign_error] = [](request&, clock_type::time_point) -> result<std::string> {
    return error::make_transient("pg.connection", "not a decoder's error");
  };
  return h;
}

// -- fixtures ----------------------------------------------------------------------------------

std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

std::string source_dir() {
  const char* dir = std::getenv("INGESTD_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string corpus(const std::string& name) {
  auto bytes = read_file(source_dir() + "/tests/fixtures/corpus/" + name);
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes;
}

helper_pool_options test_pool_options(int helpers, const std::vector<std::string>& command = {}) {
  helper_pool_options o;
  o.command = command.empty() ? std::vector<std::string>{self_exe(), "decoder"} : command;
  o.helpers = helpers;
  o.settings.tesseract.languages = "eng+deu";
  o.settings.max_frame_bytes = 64u << 20;
  o.memory_limit_bytes = uint64_t{1536} << 20;
  o.grace = 200ms;
  return o;
}

result<std::string> call(decoder& d, uint8_t kind, const std::string& params = {},
                         const std::string& bytes = {}, std::chrono::milliseconds within = 60s) {
  return d.call(request_view{kind, static_cast<uint32_t>(within.count()), params, bytes},
                clock_type::now() + within);
}

/// A TIFF that declares a 30000 x 30000 grey image and holds a few bytes of it: decoding it would
/// ask for 900 MB.
std::string huge_tiff() {
  std::string t = "II";
  auto u16 = [&t](uint16_t v) {
    t.push_back(static_cast<char>(v & 0xff));
    t.push_back(static_cast<char>(v >> 8));
  };
  auto u32 = [&t](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      t.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  u16(42);
  u32(8);
  const uint16_t entries = 9;
  const uint32_t data_at = 8 + 2 + entries * 12 + 4;
  u16(entries);
  auto entry = [&](uint16_t tag, uint16_t type, uint32_t value) {
    u16(tag);
    u16(type);
    u32(1);
    if (type == 3) {
      u16(static_cast<uint16_t>(value));
      u16(0);
    } else {
      u32(value);
    }
  };
  entry(256, 4, 30000);     // ImageWidth
  entry(257, 4, 30000);     // ImageLength
  entry(258, 3, 8);         // BitsPerSample
  entry(259, 3, 1);         // Compression: none
  entry(262, 3, 1);         // PhotometricInterpretation: min-is-black
  entry(273, 4, data_at);   // StripOffsets
  entry(277, 3, 1);         // SamplesPerPixel
  entry(278, 4, 30000);     // RowsPerStrip
  entry(279, 4, 900000000); // StripByteCounts
  u32(0);
  t.append(64, '\x80');
  return t;
}

class HelperPool : public ::testing::Test {
protected:
  static void SetUpTestSuite() { ::setenv("INGESTD_LLM_API_KEY", "a-secret-of-the-daemon", 1); }
};

} // namespace

// -- the sandbox -------------------------------------------------------------------------------

TEST_F(HelperPool, TheEnvironmentIsEmpty) {
  helper_pool pool{test_pool_options(1)};
  auto env = call(pool, environment);
  ASSERT_TRUE(env) << env.error().describe();
  EXPECT_EQ(*env, "");
}

TEST_F(HelperPool, SeccompRefusesTheNetworkWritesAndNewPrograms) {
  helper_pool pool{test_pool_options(1)};
  auto dir
      = std::filesystem::temp_directory_path() / ("ingestd-sandbox-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto target = (dir / "written.txt").string();
  std::string readable = source_dir() + "/tests/fixtures/corpus/manifest.json";
  std::ofstream{dir / "existing.txt"} << "kept";
  auto existing = (dir / "existing.txt").string();

  EXPECT_EQ(call(pool, probe, "socket").value(), "errno=" + std::to_string(EPERM));
  EXPECT_EQ(call(pool, probe, "socketpair").value(), "errno=" + std::to_string(EPERM));
  EXPECT_EQ(call(pool, probe, "open_write", target).value(), "errno=" + std::to_string(EPERM));
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_EQ(call(pool, probe, "open_rdwr", existing).value(), "errno=" + std::to_string(EPERM));
  EXPECT_EQ(call(pool, probe, "mkdir", (dir / "sub").string()).value(),
            "errno=" + std::to_string(EPERM));
  EXPECT_FALSE(std::filesystem::exists(dir / "sub"));
  EXPECT_EQ(call(pool, probe, "exec").value(), "errno=" + std::to_string(EPERM));
  EXPECT_EQ(call(pool, probe, "fork").value(), "errno=" + std::to_string(EPERM));
  EXPECT_EQ(call(pool, probe, "kill_parent").value(), "errno=" + std::to_string(EPERM));
  // What the decoders need stays allowed: read-only opens and threads.
  EXPECT_EQ(call(pool, probe, "open_read", readable).value(), "ok");
  EXPECT_EQ(call(pool, probe, "thread").value(), "ok");
  EXPECT_EQ(read_file(existing), "kept");
  std::filesystem::remove_all(dir);
  // Every probe ran in the same helper: none of them ended it.
  EXPECT_EQ(pool.stats().started, 1u);
}

// -- a helper that dies costs one request ------------------------------------------------------

TEST_F(HelperPool, ACrashIsDecodeCrashedAndThePoolGoesOn) {
  helper_pool pool{test_pool_options(1)};
  ASSERT_EQ(call(pool, echo, "", "before").value(), "before");
  auto first = pool.pids().front();
  auto crashed = call(pool, segfault);
  ASSERT_FALSE(crashed);
  EXPECT_EQ(crashed.error().code, errc::decode_crashed);
  EXPECT_TRUE(crashed.error().transient());
  EXPECT_TRUE(decoder_crash(crashed.error()));
  EXPECT_NE(crashed.error().message.find("SIGSEGV"), std::string::npos) << crashed.error().message;
  EXPECT_EQ(call(pool, echo, "", "after").value(), "after");
  EXPECT_NE(pool.pids().front(), first);
  EXPECT_EQ(pool.stats().crashed, 1u);
  EXPECT_EQ(pool.stats().started, 2u);
}

TEST_F(HelperPool, ADeadlineOverrunIsDecodeTimeoutAndThePoolGoesOn) {
  helper_pool pool{test_pool_options(1)};
  ASSERT_EQ(call(pool, echo, "", "warm").value(), "warm");
  auto start = clock_type::now();
  auto late = call(pool, spin, "", "", 300ms);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, errc::decode_timeout);
  EXPECT_TRUE(decoder_crash(late.error()));
  // Killed at the deadline plus the grace, not left to run.
  EXPECT_LT(clock_type::now() - start, 10s);
  EXPECT_EQ(call(pool, echo, "", "after").value(), "after");
  EXPECT_EQ(pool.stats().timed_out, 1u);
}

/// The process's CPU time so far (user + system) in clock ticks, from /proc/PID/stat.
long process_cpu_ticks(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  std::getline(in, line);
  auto paren = line.rfind(')');
  if (paren == std::string::npos)
    return -1;
  std::istringstream fields{line.substr(paren + 2)};
  std::string field;
  long utime = 0, stime = 0;
  // After the name: state (3), ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
  // cmajflt, utime (14), stime (15).
  for (int k = 3; k <= 15 && fields >> field; ++k) {
    if (k == 14)
      utime = std::stol(field);
    if (k == 15)
      stime = std::stol(field);
  }
  return utime + stime;
}

TEST_F(HelperPool, AStoppedCallEndsItsHelperAtOnceAndCountsNoCrash) {
  helper_pool pool{test_pool_options(1)};
  ASSERT_EQ(call(pool, echo, "", "warm").value(), "warm");
  auto pid = pool.pids().front();
  std::stop_source cancel;
  auto start = clock_type::now();
  auto stopped = std::async(std::launch::async, [&] {
    return pool.call(request_view{spin, 60'000, "", ""}, clock_type::now() + 60s,
                     cancel.get_token());
  });
  // Until the helper runs the request: it spins, so its CPU time grows by a tenth of a second
  // (the end of the echo before it takes far less), within a deadline far beyond what it takes.
  auto ticks = process_cpu_ticks(pid);
  auto tenth = std::max(1L, ::sysconf(_SC_CLK_TCK) / 10);
  auto limit = clock_type::now() + 30s;
  while (process_cpu_ticks(pid) < ticks + tenth && clock_type::now() < limit)
    std::this_thread::sleep_for(1ms); // polling a condition, with a deadline
  ASSERT_GE(process_cpu_ticks(pid), ticks + tenth) << "the helper did not start the request";
  cancel.request_stop();
  auto r = stopped.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::decode_cancelled) << r.error().describe();
  EXPECT_FALSE(decoder_crash(r.error()));
  // Long before the request's deadline; the helper ended, nothing counted against the document.
  EXPECT_LT(clock_type::now() - start, 30s);
  EXPECT_NE(pool.pids().front(), pid);
  EXPECT_EQ(pool.stats().crashed, 0u);
  EXPECT_EQ(pool.stats().timed_out, 0u);
  EXPECT_EQ(call(pool, echo, "", "after").value(), "after");
  // A call stopped before it starts never reaches a helper.
  std::stop_source before;
  before.request_stop();
  auto helper = pool.pids().front();
  auto early
      = pool.call(request_view{echo, 1000, "", "x"}, clock_type::now() + 1s, before.get_token());
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, errc::decode_cancelled);
  EXPECT_EQ(pool.pids().front(), helper);
}

TEST_F(HelperPool, OutOfMemoryFailsThatRequestWhileOthersInFlightComplete) {
  helper_pool pool{test_pool_options(3)};
  auto page = corpus("inv01_en_classic_scan.png");
  page_options options;
  options.tesseract.languages = "eng+deu";
  options.allow_preprocessing = false;
  auto deadline = clock_type::now() + 120s;
  auto ocr = std::async(std::launch::async, [&] {
    return transcribe_page(pool, page, "image/png", 0, options, deadline);
  });
  std::string payload(8u << 20, 'p');
  auto echoed = std::async(std::launch::async, [&] { return call(pool, echo, "", payload); });
  auto oom = call(pool, allocate);
  ASSERT_FALSE(oom);
  EXPECT_EQ(oom.error().code, errc::decode_out_of_memory);
  EXPECT_TRUE(decoder_crash(oom.error()));
  auto text = ocr.get();
  ASSERT_TRUE(text) << text.error().describe();
  EXPECT_NE(text->outcome.page.text.find("Invoice"), std::string::npos) << text->outcome.page.text;
  auto back = echoed.get();
  ASSERT_TRUE(back) << back.error().describe();
  EXPECT_EQ(*back, payload);
  EXPECT_EQ(pool.stats().out_of_memory, 1u);
  EXPECT_EQ(pool.stats().crashed, 0u);
}

TEST_F(HelperPool, ATiffThatDeclaresAHugeImageIsRefusedBeforeItIsDecoded) {
  auto options = test_pool_options(1);
  options.memory_limit_bytes = uint64_t{1536} << 20;
  helper_pool pool{options};
  auto rendered = render_page(pool, huge_tiff(), "image/tiff", 0, 110, 1800, 64u << 20,
                              clock_type::now() + 60s);
  ASSERT_FALSE(rendered);
  EXPECT_EQ(rendered.error().code, errc::review_unreadable) << rendered.error().describe();
  EXPECT_TRUE(rendered.error().permanent());
  EXPECT_NE(rendered.error().message.find("900000000 pixels"), std::string::npos)
      << rendered.error().describe();
  // The helper answered: it neither ran out of memory nor crashed, and a real TIFF renders.
  auto tiff = corpus("inv03_en_compact_scan.tiff");
  auto ok = render_page(pool, tiff, "image/tiff", 0, 110, 1800, 64u << 20, clock_type::now() + 60s);
  ASSERT_TRUE(ok) << ok.error().describe();
  EXPECT_EQ(ok->content_type, "image/png");
  EXPECT_EQ(ok->bytes.substr(0, 4), "\x89PNG");
  EXPECT_EQ(pool.stats().out_of_memory, 0u);
  EXPECT_EQ(pool.stats().crashed, 0u);
}

TEST_F(HelperPool, AnErrorNoHandlerMayAnswerIsTreatedAsACrash) {
  helper_pool pool{test_pool_options(1)};
  auto r = call(pool, foreign_error);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::decode_crashed);
  EXPECT_EQ(call(pool, echo, "", "x").value(), "x");
}

TEST_F(HelperPool, AnUnknownKindIsAPermanentErrorAndTheHelperStays) {
  helper_pool pool{test_pool_options(1)};
  auto r = call(pool, 250);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "decode.unknown_kind");
  EXPECT_TRUE(r.error().permanent());
  EXPECT_EQ(pool.stats().started, 1u);
}

TEST_F(HelperPool, ABusyPoolAnswersOcrBusyAtTheDeadline) {
  auto options = test_pool_options(1);
  options.grace = 2s;
  helper_pool pool{options};
  ASSERT_EQ(call(pool, echo, "", "ready").value(), "ready");
  auto held = std::async(std::launch::async, [&] { return call(pool, spin, "", "", 3s); });
  // Until the spin has the one helper, an echo may still get it first: polled with a pause that
  // lets the spin's thread take the helper (a loop of back-to-back echoes could keep it from
  // it on a loaded machine), until the echo finds the helper busy or a deadline passes.
  result<std::string> busy = std::string{};
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (busy && std::chrono::steady_clock::now() < deadline) {
    busy = call(pool, echo, "", "x", 50ms);
    if (busy)
      std::this_thread::sleep_for(5ms); // polling a condition, with a deadline
  }
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, errc::ocr_busy);
  EXPECT_TRUE(never_started(busy.error()));
  EXPECT_EQ(held.get().error().code, errc::decode_timeout);
}

// -- the production handlers through helpers ---------------------------------------------------

TEST_F(HelperPool, AContainerIsUnpackedInAHelperAsInProcess) {
  helper_pool pool{test_pool_options(1)};
  // An e-mail with one attachment.
  std::string eml = "From: a@example.com\r\nTo: b@example.com\r\nSubject: Invoice\r\n"
                    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
                    "--XX\r\nContent-Type: text/plain\r\n\r\nPlease find it attached.\r\n"
                    "--XX\r\nContent-Type: application/pdf\r\n"
                    "Content-Disposition: attachment; filename=\"inv.pdf\"\r\n"
                    "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n";
  unpack_limits limits;
  auto helped = unpack(pool, eml, container_kind::eml, limits, clock_type::now() + 60s);
  ASSERT_TRUE(helped) << helped.error().describe();
  auto local = mime_unpacker{}.unpack(eml, container_kind::eml, limits);
  ASSERT_TRUE(local);
  ASSERT_EQ(helped->members.size(), local->members.size());
  ASSERT_EQ(helped->members.size(), 1u);
  EXPECT_EQ(helped->members[0].name, "inv.pdf");
  EXPECT_EQ(helped->members[0].bytes, local->members[0].bytes);
  EXPECT_EQ(helped->subject, "Invoice");
  EXPECT_EQ(helped->body_text, local->body_text);
}

TEST_F(HelperPool, AnOutlookDataFileIsUnpackedInAHelperThatRetiresAfterIt) {
  auto ost = read_file(source_dir()
                       + "/tests/fixtures/outlook/node_modules/pst-extractor/"
                         "example/testdata/pstextractortestpdf@outlook.com.ost");
  ASSERT_FALSE(ost.empty()) << "run deploy/install-deps.sh for tests/fixtures/outlook/";
  helper_pool pool{test_pool_options(1)};
  unpack_limits limits;
  limits.max_total_bytes = uint64_t{64} << 20;
  auto helped = unpack(pool, ost, container_kind::pst, limits, clock_type::now() + 60s);
  ASSERT_TRUE(helped) << helped.error().describe();
  auto local = pst_unpacker{}.unpack(ost, container_kind::pst, limits);
  ASSERT_TRUE(local) << local.error().describe();
  ASSERT_EQ(helped->members.size(), 2u);
  EXPECT_EQ(helped->members[0].name, local->members[0].name);
  EXPECT_EQ(helped->members[1].bytes.size(), local->members[1].bytes.size());
  EXPECT_EQ(helped->problems, local->problems);
  // libpst leaves memory behind on an .ost: that helper retired, a fresh one takes the next.
  EXPECT_EQ(pool.stats().retired, 1u);
  auto next = unpack(pool, helped->members[0].bytes, container_kind::eml, limits,
                     clock_type::now() + 60s);
  ASSERT_TRUE(next) << next.error().describe();
  ASSERT_EQ(next->members.size(), 1u);
  EXPECT_EQ(next->members[0].name, "Clinometer Usage.pdf");
  EXPECT_EQ(pool.stats().started, 2u);
  EXPECT_EQ(pool.stats().crashed, 0u);
}

TEST_F(HelperPool, APdfPageRendersInAHelperAsInProcess) {
  helper_pool pool{test_pool_options(1)};
  auto pdf = corpus("inv01_en_classic.pdf");
  auto helped
      = render_page(pool, pdf, "application/pdf", 0, 110, 1800, 64u << 20, clock_type::now() + 60s);
  ASSERT_TRUE(helped) << helped.error().describe();
  auto local = ingestd::render_page(pdf, "application/pdf", 0);
  ASSERT_TRUE(local);
  EXPECT_EQ(helped->bytes, local->bytes);
  EXPECT_EQ(helped->page_count, local->page_count);
  auto missing
      = render_page(pool, pdf, "application/pdf", 9, 110, 1800, 64u << 20, clock_type::now() + 60s);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::review_page_out_of_range);
}

namespace {

result<transcription> transcribe_with(cpu_executor& pool, const std::string& bytes,
                                      const std::string& mime) {
  local_transcriber_options opts;
  opts.tesseract.languages = "eng+deu";
  local_transcriber provider{pool, opts};
  transcription_request req;
  req.bytes = bytes;
  req.mime_type = mime;
  std::promise<result<transcription>> done;
  auto f = done.get_future();
  provider.transcribe(std::move(req),
                      [&done](result<transcription> r) { done.set_value(std::move(r)); });
  if (f.wait_for(300s) != std::future_status::ready)
    return error::make_permanent("test.timeout", "no answer in 300 s");
  return f.get();
}

} // namespace

TEST_F(HelperPool, DocumentsTranscribeThroughTheIngestdHelperWithTheSameTextAsInProcess) {
  const char* binary = std::getenv("INGESTD_BINARY");
  if (!binary || !std::filesystem::exists(binary))
    GTEST_SKIP() << "INGESTD_BINARY does not name the ingestd program";
  auto helpers = std::make_shared<helper_pool>(test_pool_options(2, {binary, "decoder"}));
  thread_pool_executor in_helpers{2, helpers};
  thread_pool_executor in_process{2};
  for (auto [file, mime] : std::vector<std::pair<std::string, std::string>>{
           {"inv01_en_classic_scan.png", "image/png"},
           {"inv01_en_classic.pdf", "application/pdf"},
           {"inv05_en_modern_scanned.pdf", "application/pdf"},
           {"inv03_en_compact_scan.tiff", "image/tiff"},
           {"inv01_en_classic_dark.png", "image/png"}}) {
    SCOPED_TRACE(file);
    auto bytes = corpus(file);
    auto local = transcribe_with(in_process, bytes, mime);
    auto sandboxed = transcribe_with(in_helpers, bytes, mime);
    ASSERT_TRUE(local) << local.error().describe();
    ASSERT_TRUE(sandboxed) << sandboxed.error().describe();
    EXPECT_FALSE(local->text.empty());
    EXPECT_EQ(sandboxed->text, local->text);
    EXPECT_EQ(sandboxed->page_count, local->page_count);
    EXPECT_EQ(sandboxed->native_text, local->native_text);
    EXPECT_EQ(sandboxed->preprocessed, local->preprocessed);
    EXPECT_EQ(sandboxed->derived_file, local->derived_file);
    EXPECT_DOUBLE_EQ(sandboxed->quality_score, local->quality_score);
    EXPECT_EQ(sandboxed->metadata, local->metadata);
    EXPECT_EQ(local->metadata.empty(), mime != "application/pdf");
    ASSERT_EQ(sandboxed->pages.size(), local->pages.size());
    for (size_t i = 0; i < local->pages.size(); ++i) {
      EXPECT_EQ(sandboxed->pages[i].number, local->pages[i].number);
      EXPECT_EQ(sandboxed->pages[i].defects.size(), local->pages[i].defects.size());
    }
  }
  // Errors are the same too: a damaged file.
  auto local = transcribe_with(in_process, "%PDF-1.4 broken", "application/pdf");
  auto sandboxed = transcribe_with(in_helpers, "%PDF-1.4 broken", "application/pdf");
  ASSERT_FALSE(local);
  ASSERT_FALSE(sandboxed);
  EXPECT_EQ(sandboxed.error().code, local.error().code);
  EXPECT_EQ(helpers->stats().crashed, 0u);
}

TEST_F(HelperPool, APageTheMemoryLimitCannotHoldIsOutOfMemoryNotACorruptFile) {
  // Leptonica answers a failed allocation with no image, which its readers call undecodable: in
  // a helper its allocator ends the helper as out of memory instead.
  const char* binary = std::getenv("INGESTD_BINARY");
  if (!binary || !std::filesystem::exists(binary))
    GTEST_SKIP() << "INGESTD_BINARY does not name the ingestd program";
  auto options = test_pool_options(1, {binary, "decoder"});
  // AddressSanitizer's shadow and quarantine count in a helper's resident set there.
  options.memory_limit_bytes = uint64_t{address_sanitizer ? 1536u : 512u} << 20;
  auto helpers = std::make_shared<helper_pool>(options);
  thread_pool_executor in_helpers{1, helpers};
  auto big = transcribe_with(in_helpers, ingestd::test::blank_png(7600), "image/png");
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, errc::decode_out_of_memory) << big.error().describe();
  // An ordinary scan fits the same limit.
  auto scan = transcribe_with(in_helpers, corpus("inv01_en_classic_scan.png"), "image/png");
  ASSERT_TRUE(scan) << scan.error().describe();
  EXPECT_EQ(helpers->stats().out_of_memory, 1u);
}

int main(int argc, char** argv) {
  // The helper: this program started by a helper_pool.
  if (argc >= 2 && std::strcmp(argv[1], "decoder") == 0)
    return decoder_main(argc, argv, 2, test_handlers());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
