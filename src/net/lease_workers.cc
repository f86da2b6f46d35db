// SPDX-License-Identifier: Apache-2.0
// LeaseWorkers: a queue and threads started on demand.
#include "net/lease_workers.h"

namespace corral::net {

void LeaseWorkers::submit(std::function<void()> job, size_t max_threads) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return;  // the proxy is going away; the job's connection is already closed
  queue_.push_back(std::move(job));
  if (idle_ == 0 && threads_.size() < std::max<size_t>(max_threads, 1)) {
    threads_.emplace_back([this] { loop(); });
  } else {
    cv_.notify_one();
  }
}

void LeaseWorkers::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    ++idle_;
    cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping and nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    job();
    job = nullptr;  // its captures die here, outside the lock
    l.lock();
  }
}

void LeaseWorkers::stop() {
  std::vector<std::thread> joining;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    joining.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : joining) t.join();
}

size_t LeaseWorkers::threads() {
  std::lock_guard<std::mutex> l(mu_);
  return threads_.size();
}

}  // namespace corral::net
