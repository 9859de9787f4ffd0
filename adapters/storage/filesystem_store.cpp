// Filesystem object store: validated keys, atomic writes, reads with a size limit.
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/support/thread_name.hpp"
#include "messages/error_codes.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ingestd {

namespace {

namespace fs = std::filesystem;

error io_error(const std::string& what, const std::string& path, int err) {
  // A full disk or a permission problem is not fixed by retrying the same document soon, but an
  // operator can fix it: transient, so the ingestion retries through the queue's backoff.
  return error::make_transient("storage.io", what + " " + path + ": " + std::strerror(err));
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    auto n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

filesystem_store::filesystem_store(std::string root, int threads) : root_(std::move(root)) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  for (int i = 0; i < std::max(threads, 1); ++i)
    threads_.emplace_back([this] { work(); });
}

filesystem_store::~filesystem_store() {
  {
    std::lock_guard guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void filesystem_store::post(std::function<void()> task) {
  {
    std::lock_guard guard{mtx_};
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void filesystem_store::work() {
  name_this_thread("ingestd-files");
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock guard{mtx_};
      cv_.wait(guard, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return; // stopping, and everything queued has run: every callback was called
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

result<std::string> filesystem_store::get_now(const std::string& key, size_t max_bytes) const {
  if (auto valid = storage_keys::validate_key(key); !valid)
    return valid.error();
  auto path = fs::path{root_} / key;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return error::make_permanent(errc::storage_not_found, "no object " + key);
    return io_error("cannot open", path.string(), errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error::make_permanent(errc::storage_not_found, "no object " + key + " (not a file)");
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return error::make_permanent("storage.too_large", key + " is " + std::to_string(st.st_size)
                                                          + " bytes, over the limit of "
                                                          + std::to_string(max_bytes));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    auto n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  int err = errno;
  ::close(fd);
  if (got != bytes.size())
    return io_error("short read of", path.string(), err);
  return bytes;
}

result<void> filesystem_store::put_now(const std::string& key, const std::string& bytes) const {
  if (auto valid = storage_keys::validate_key(key); !valid)
    return valid.error();
  auto path = fs::path{root_} / key;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return io_error("cannot create directory", path.parent_path().string(), ec.value());
  // Write beside the final name, make it durable, then rename over: a crash leaves either the
  // old object or the new one under the key, never a partial file.
  auto temp = path;
  temp += ".tmp-" + std::to_string(::getpid()) + "-"
          + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("cannot create", temp.string(), errno);
  if (!write_all(fd, bytes.data(), bytes.size()) || ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return io_error("cannot write", temp.string(), err);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return io_error("cannot rename into", path.string(), err);
  }
  fsync_directory(path.parent_path());
  return {};
}

result<bool> filesystem_store::exists_now(const std::string& key) const {
  if (auto valid = storage_keys::validate_key(key); !valid)
    return valid.error();
  struct stat st {};
  auto path = fs::path{root_} / key;
  if (::stat(path.c_str(), &st) == 0)
    return S_ISREG(st.st_mode);
  if (errno == ENOENT || errno == ENOTDIR)
    return false;
  return io_error("cannot stat", path.string(), errno);
}

result<void> filesystem_store::remove_now(const std::string& key) const {
  if (auto valid = storage_keys::validate_key(key); !valid)
    return valid.error();
  auto path = fs::path{root_} / key;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR)
    return io_error("cannot remove", path.string(), errno);
  // Directories left empty go too ("{tenant}/ingestions/{id}/"), the root stays.
  auto root = fs::path{root_}.lexically_normal();
  for (auto dir = path.parent_path(); dir.lexically_normal() != root && dir.has_relative_path();
       dir = dir.parent_path())
    if (::rmdir(dir.c_str()) != 0)
      break;
  return {};
}

result<std::vector<std::string>> filesystem_store::list_now(const std::string& prefix) const {
  std::vector<std::string> keys;
  auto slash = prefix.rfind('/');
  auto dir = slash == std::string::npos ? std::string{} : prefix.substr(0, slash);
  if (!dir.empty()) {
    if (auto valid = storage_keys::validate_key(dir); !valid)
      return valid.error();
  }
  auto start = dir.empty() ? fs::path{root_} : fs::path{root_} / dir;
  std::error_code ec;
  fs::recursive_directory_iterator it{start, ec};
  if (ec)
    return ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory
               ? result<std::vector<std::string>>{keys}
               : result<std::vector<std::string>>{
                   io_error("cannot list", start.string(), ec.value())};
  for (; it != fs::recursive_directory_iterator{}; it.increment(ec)) {
    if (ec)
      return io_error("cannot list", start.string(), ec.value());
    if (!it->is_regular_file(ec))
      continue;
    auto key = it->path().lexically_relative(root_).generic_string();
    if (key.compare(0, prefix.size(), prefix) == 0 && key.find(".tmp-") == std::string::npos)
      keys.push_back(std::move(key));
  }
  return keys;
}

void filesystem_store::get(std::string key, size_t max_bytes, callback<std::string> done) {
  post([this, key = std::move(key), max_bytes, done = std::move(done)] {
    done(get_now(key, max_bytes));
  });
}

void filesystem_store::put(std::string key, std::string bytes, std::string, callback<void> done) {
  post([this, key = std::move(key), bytes = std::move(bytes), done = std::move(done)] {
    done(put_now(key, bytes));
  });
}

void filesystem_store::exists(std::string key, callback<bool> done) {
  post([this, key = std::move(key), done = std::move(done)] { done(exists_now(key)); });
}

void filesystem_store::remove(std::string key, callback<void> done) {
  post([this, key = std::move(key), done = std::move(done)] { done(remove_now(key)); });
}

void filesystem_store::list(std::string prefix, callback<std::vector<std::string>> done) {
  post([this, prefix = std::move(prefix), done = std::move(done)] { done(list_now(prefix)); });
}

} // namespace ingestd
