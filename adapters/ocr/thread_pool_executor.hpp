// A plain thread pool behind the cpu_executor port, for running the local provider outside the
// daemon (`ingestd transcribe FILE`, benchmarks, tests). The daemon uses its actor CPU pool.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/support/cpu_executor.hpp"

namespace ingestd {

class thread_pool_executor final : public cpu_executor {
public:
  /// Starts `threads` workers (at least 1). `decoder`: the helpers its jobs parse documents in
  /// (cpu_executor::decoder()); null: in process.
  explicit thread_pool_executor(unsigned threads,
                                std::shared_ptr<sandbox::decoder> decoder = nullptr);
  /// Runs what is queued (or expires it, past its deadline), then joins the workers.
  ~thread_pool_executor() override;

  thread_pool_executor(const thread_pool_executor&) = delete;
  thread_pool_executor& operator=(const thread_pool_executor&) = delete;

  /// FIFO; a job whose deadline has passed when a worker takes it gets `expired` instead.
  void submit(cpu_job job) override;
  std::shared_ptr<sandbox::decoder> decoder() const override { return decoder_; }

private:
  void work();

  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<cpu_job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::shared_ptr<sandbox::decoder> decoder_;
};

} // namespace ingestd
