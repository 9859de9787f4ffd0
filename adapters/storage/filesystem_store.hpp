// The filesystem object store: objects as files under a root directory, written atomically
// (temporary file, fsync, rename, fsync of the directory). The embedded default's storage.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/storage/object_store.hpp"

namespace ingestd {

class filesystem_store : public object_store {
public:
  /// Creates `root` if needed. File I/O runs on `threads` threads of its own, never the caller's.
  explicit filesystem_store(std::string root, int threads = 2);
  ~filesystem_store() override;

  void get(std::string key, size_t max_bytes, callback<std::string> done) override;
  void put(std::string key, std::string bytes, std::string content_type,
           callback<void> done) override;
  void exists(std::string key, callback<bool> done) override;
  /// Also removes the directories the object leaves empty, up to the root: their names hold ids.
  void remove(std::string key, callback<void> done) override;
  /// Walks the directory that holds `prefix`; a write in progress (its temporary file) is not
  /// listed.
  void list(std::string prefix, callback<std::vector<std::string>> done) override;
  std::string name() const override { return "filesystem"; }

  /// Blocking forms, for the command line and tests.
  result<std::string> get_now(const std::string& key, size_t max_bytes) const;
  result<void> put_now(const std::string& key, const std::string& bytes) const;
  result<bool> exists_now(const std::string& key) const;
  result<void> remove_now(const std::string& key) const;
  result<std::vector<std::string>> list_now(const std::string& prefix) const;

  const std::string& root() const { return root_; }

private:
  void post(std::function<void()> task);
  void work();

  std::string root_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace ingestd
