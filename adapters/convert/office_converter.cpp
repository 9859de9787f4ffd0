// LibreOffice in a confined process per document (see office_converter.hpp).
#include "adapters/convert/office_converter.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <linux/mount.h>
#include <mutex>
#include <poll.h>
#include <sched.h>
#include <set>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapters/sandbox/sandbox.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr int exit_cannot_run = 127;
constexpr int exit_not_confined = 126;
/// What is kept of LibreOffice's own output for an error message.
constexpr size_t kept_output = 2048;

error unavailable(std::string what) {
  return error::make_permanent("convert.unavailable", std::move(what));
}

/// This machine's resources (a folder, a pipe, a process) ran short: another attempt may do.
error short_of(std::string what) {
  return error::make_transient("convert.unavailable", std::move(what));
}

error failed(std::string what) {
  return error::make_permanent("convert.failed", std::move(what));
}

/// A work folder removed when the conversion ends, however it ends.
struct work_folder {
  fs::path path;
  ~work_folder() {
    std::error_code ec;
    if (!path.empty())
      fs::remove_all(path, ec);
  }
};

/// Work folders of conversions that never ended their own way (a node killed during one): this
/// user's `ingestd-convert-*` folders under `base` unchanged for an hour (a conversion has
/// minutes), removed before the process's first conversion there.
void remove_stale_folders(const std::string& base) {
  static std::mutex mtx;
  static std::set<std::string> done;
  std::lock_guard guard{mtx};
  if (!done.insert(base).second)
    return;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    struct stat st {};
    if (!entry.path().filename().string().starts_with("ingestd-convert-")
        || ::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)
        || st.st_uid != ::geteuid())
      continue;
    auto changed = fs::last_write_time(entry.path(), ec);
    if (!ec && now - changed > std::chrono::hours{1})
      fs::remove_all(entry.path(), ec);
  }
}

result<fs::path> make_work_folder(const std::string& root) {
  std::string base = root;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  remove_stale_folders(base);
  std::string pattern = (fs::path{base} / "ingestd-convert-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return short_of("no work folder under " + base + ": " + std::strerror(errno));
  return fs::path{pattern};
}

bool write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out{path, std::ios::binary};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out.flush());
}

/// The end of LibreOffice's output, on one line, for an error message.
std::string said(const std::string& output) {
  std::string line;
  for (char c : output)
    line += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return line.empty() ? "" : " (LibreOffice said: " + line + ")";
}

/// Writes `text` to `path` (the namespace's id maps).
bool write_proc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

enum class namespaces { entered, refused, broken };

/// New user, mount, PID, IPC and network namespaces: `refused` when the kernel does not allow
/// them (a container without unprivileged user namespaces): the conversion then runs with the
/// seccomp filter and the limits alone. In the new PID namespace the caller forks: the child is
/// its first process.
namespaces enter_namespaces() {
  auto uid = ::getuid();
  auto gid = ::getgid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET) != 0)
    return namespaces::refused;
  bool mapped
      = write_proc("/proc/self/setgroups", "deny")
        && write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1")
        && write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
  return mapped ? namespaces::entered : namespaces::broken;
}

/// In the new mount namespace: every mount read-only, fresh empty /tmp and /dev/shm (LibreOffice
/// keeps its pipe in /tmp; nothing of the host's is seen there), the PID namespace's /proc, and
/// `work` writable at its own path.
bool read_only_but(const char* work) {
  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return false;
  // The work folder's mount, detached before the rest turns read-only.
  int tree = static_cast<int>(
      ::syscall(SYS_open_tree, AT_FDCWD, work, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
  if (tree < 0 || ::syscall(SYS_mount_setattr, -1, "/", AT_RECURSIVE, &ro, sizeof ro) != 0)
    return false;
  for (const char* scratch : {"/tmp", "/dev/shm"})
    if (::access(scratch, F_OK) == 0
        && ::mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0)
      return false;
  // The namespace's own processes alone in /proc (where the kernel lets a proc be mounted).
  ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  std::error_code ec;
  fs::create_directories(work, ec); // within the new /tmp when it was there
  return ::syscall(SYS_move_mount, tree, "", AT_FDCWD, work, MOVE_MOUNT_F_EMPTY_PATH) == 0;
}

} // namespace

result<std::string> convert_to_pdf(std::string_view bytes, const file_type& type,
                                   const office_converter_options& options,
                                   clock_type::time_point deadline) {
  auto made = make_work_folder(options.work_root);
  if (!made)
    return made.error();
  work_folder work{*made};
  auto input = work.path / ("document." + std::string{type.ext});
  std::error_code ec;
  fs::create_directory(work.path / "out", ec);
  if (ec || !write_file(input, bytes))
    return short_of("the document could not be written to " + work.path.string());

  // Everything the child needs is made before fork: between fork and exec it calls only
  // async-signal-safe functions.
  std::vector<std::string> args = options.launcher;
  args.push_back(work.path.string());
  args.push_back(options.program);
  args.push_back(input.string());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env{"HOME=" + work.path.string(), "TMPDIR=" + work.path.string(),
                               "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                               "OMP_THREAD_LIMIT=1"};
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  auto seconds_left = std::chrono::ceil<std::chrono::seconds>(deadline - clock_type::now());
  if (seconds_left.count() <= 0)
    return error::make_transient(errc::convert_timeout, "no time was left to convert the document");
  rlimit as{options.memory_limit_bytes, options.memory_limit_bytes};
  rlimit fsize{options.max_output_bytes, options.max_output_bytes};
  auto cpu_seconds = static_cast<rlim_t>(seconds_left.count()) + 5;
  rlimit cpu{cpu_seconds, cpu_seconds};
  rlimit none{0, 0};
  rlimit files{1024, 1024};

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return short_of(std::string{"pipe: "} + std::strerror(errno));
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = devnull < 0 ? -1 : ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::dup2(devnull, 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(out[1], 2) < 0)
      ::_exit(exit_cannot_run);
    if (::syscall(SYS_close_range, 3, ~0U, 0) != 0)
      for (int fd = 3; fd < 4096; ++fd)
        ::close(fd);
    if (::setrlimit(RLIMIT_AS, &as) != 0 || ::setrlimit(RLIMIT_FSIZE, &fsize) != 0
        || ::setrlimit(RLIMIT_CPU, &cpu) != 0 || ::setrlimit(RLIMIT_CORE, &none) != 0
        || ::setrlimit(RLIMIT_NOFILE, &files) != 0)
      ::_exit(exit_cannot_run);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(exit_cannot_run);
  }
  auto fork_errno = errno;
  ::close(out[1]);
  if (devnull >= 0)
    ::close(devnull);
  if (pid < 0) {
    ::close(out[0]);
    return short_of(std::string{"fork: "} + std::strerror(fork_errno));
  }

  // Its output (kept to the last kept_output bytes) until it closes, or the deadline.
  std::string output;
  bool timed_out = false;
  std::array<char, 4096> buffer{};
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR)
      break;
    if (ready <= 0)
      continue;
    auto n = ::read(out[0], buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // every process of the conversion has closed it: they are done
    output.append(buffer.data(), static_cast<size_t>(n));
    if (output.size() > 2 * kept_output)
      output.erase(0, output.size() - kept_output);
  }
  ::close(out[0]);
  if (timed_out)
    ::kill(-pid, SIGKILL);
  // Whatever is left of its group goes once it has ended (with namespaces, the end of the
  // namespace's first process took the rest already). It is reaped only after: until then the
  // group's id cannot be another's.
  siginfo_t ended{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (output.size() > kept_output)
    output.erase(0, output.size() - kept_output);

  auto seconds = std::to_string(seconds_left.count());
  if (timed_out)
    return error::make_transient(errc::convert_timeout,
                                 "LibreOffice did not convert the " + std::string{type.ext}
                                     + " document in " + seconds + " s; it was stopped");
  if (WIFEXITED(status) && WEXITSTATUS(status) == exit_cannot_run)
    return unavailable("LibreOffice (" + options.program
                       + ") could not be run: install libreoffice-writer-nogui and "
                         "libreoffice-calc-nogui"
                       + said(output));
  if (WIFEXITED(status) && WEXITSTATUS(status) == exit_not_confined)
    return unavailable("the conversion's confinement could not be installed" + said(output));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGXFSZ)
      return error::make_permanent("convert.too_large",
                                   "the conversion wrote a file over "
                                       + std::to_string(options.max_output_bytes) + " bytes");
    return error::make_transient(errc::convert_crashed,
                                 "LibreOffice ended on signal " + std::to_string(sig) + " ("
                                     + ::strsignal(sig) + ") converting the "
                                     + std::string{type.ext} + " document" + said(output));
  }
  auto pdf_path = work.path / "out" / "document.pdf";
  auto size = fs::file_size(pdf_path, ec);
  if (ec || size == 0)
    return failed("LibreOffice could not convert the " + std::string{type.ext}
                  + " document to PDF (damaged, encrypted, or not what its first bytes say; exit "
                  + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")"
                  + said(output));
  if (size > options.max_output_bytes)
    return error::make_permanent("convert.too_large",
                                 "the PDF has " + std::to_string(size) + " bytes; the limit is "
                                     + std::to_string(options.max_output_bytes));
  std::string pdf(size, '\0');
  std::ifstream in{pdf_path, std::ios::binary};
  if (!in.read(pdf.data(), static_cast<std::streamsize>(size)) || !pdf.starts_with("%PDF-"))
    return failed("LibreOffice's output is not a PDF");
  return pdf;
}

int converter_main(int argc, char** argv, int first) {
  if (argc - first != 3)
    return exit_cannot_run;
  std::string work = argv[first];
  const char* program = argv[first + 1];
  std::string input = argv[first + 2];
  auto confined = enter_namespaces();
  if (confined == namespaces::broken)
    return exit_not_confined;
  if (confined == namespaces::entered) {
    // The first process of the new PID namespace runs LibreOffice; when it ends, the kernel
    // ends every other process in the namespace.
    pid_t child = ::fork();
    if (child < 0)
      return exit_not_confined;
    if (child > 0) {
      int status = 0;
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status))
        ::raise(WTERMSIG(status));
      return WIFEXITED(status) ? WEXITSTATUS(status) : exit_cannot_run;
    }
    if (!read_only_but(work.c_str()))
      ::_exit(exit_not_confined);
  }
  if (::chdir(work.c_str()) != 0
      || !sandbox::install_seccomp_filter(sandbox::filter_profile::converter))
    return exit_not_confined;
  std::string profile = "-env:UserInstallation=file://" + work + "/profile";
  std::string outdir = work + "/out";
  std::vector<const char*> args{program,        "--headless",  "--invisible",   "--nologo",
                                "--nodefault",  "--norestore", "--nolockcheck", profile.c_str(),
                                "--convert-to", "pdf",         "--outdir",      outdir.c_str()};
  // HTML into Writer itself: Writer/Web, LibreOffice's default for it, loses the first paragraph.
  if (input.ends_with(".html"))
    args.push_back("--infilter=HTML (StarWriter)");
  args.push_back(input.c_str());
  args.push_back(nullptr);
  ::execvp(program, const_cast<char* const*>(args.data()));
  std::fprintf(stderr, "%s: %s\n", program, std::strerror(errno));
  return exit_cannot_run;
}

} // namespace ingestd
