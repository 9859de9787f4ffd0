// FIFO thread pool: the simplest executor that honours cpu_job's contract (run or expired,
// exactly once).

#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/support/thread_name.hpp"

#include <algorithm>

namespace ingestd {

thread_pool_executor::thread_pool_executor(unsigned threads,
                                           std::shared_ptr<sandbox::decoder> decoder)
    : decoder_(std::move(decoder)) {
  threads = std::max(1u, threads);
  for (unsigned i = 0; i < threads; ++i)
    threads_.emplace_back([this] { work(); });
}

thread_pool_executor::~thread_pool_executor() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void thread_pool_executor::submit(cpu_job job) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void thread_pool_executor::work() {
  name_this_thread("ingestd-ocr");
  for (;;) {
    cpu_job job;
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    bool late = job.deadline != std::chrono::steady_clock::time_point{}
                && std::chrono::steady_clock::now() >= job.deadline;
    if (late) {
      if (job.expired)
        job.expired();
    } else if (job.run) {
      job.run();
    }
  }
}

} // namespace ingestd
