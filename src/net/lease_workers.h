// SPDX-License-Identifier: Apache-2.0
// A bounded pool of threads for the blocking part of lease requests (verified TLS upstream),
// so the proxy's event loop never waits on one.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace corral::net {

class LeaseWorkers {
 public:
  LeaseWorkers() = default;
  ~LeaseWorkers() { stop(); }
  LeaseWorkers(const LeaseWorkers&) = delete;
  LeaseWorkers& operator=(const LeaseWorkers&) = delete;

  // Runs job on a worker. Threads are started on demand, at most max_threads; beyond that,
  // jobs wait in order. Nothing is started until the first lease request.
  void submit(std::function<void()> job, size_t max_threads);
  // Runs what is queued, then joins every thread. Callers cancel their jobs first (the
  // proxy shuts their sockets down), so this does not wait on the network.
  void stop();
  size_t threads();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace corral::net
