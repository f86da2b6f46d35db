// SPDX-License-Identifier: Apache-2.0
// The market server's lifecycle: one order, stated here, for every start.
#include "market/server.h"

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/unique_fd.h"
#include "market/keys.h"
#include "market/admin_socket.h"
#include "market/api.h"
#include "market/db_pool.h"
#include "market/http_server.h"
#include "market/schema.h"

namespace corral::market {

std::string defaultAdminSocket(const std::string& db_url) {
  if (db_url.rfind("sqlite:", 0) == 0) return db_url.substr(7) + ".admin.sock";
  return "corral-market-admin.sock";
}

Result<std::string> readAdminToken(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sysError("--admin-token-file " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Error(Errc::kInvalidArgument, "--admin-token-file is not a regular file");
  if ((st.st_mode & 077) != 0) return Error(Errc::kInvalidArgument, "--admin-token-file must not be readable by group or others (chmod 600)");
  std::string token(256, '\0');
  const ssize_t n = ::read(fd.get(), token.data(), token.size());
  if (n < 0) return sysError("read --admin-token-file");
  token.resize(static_cast<size_t>(n));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.size() < 32 || token.size() > 200) return Error(Errc::kInvalidArgument, "--admin-token-file must hold 32..200 bytes");
  for (unsigned char c : token)
    if (c <= 0x20 || c >= 0x7f) return Error(Errc::kInvalidArgument, "--admin-token-file holds a byte that is not printable ASCII");
  return token;
}

Result<void> serve(const ServeOptions& opts) {
  ServeOptions o = opts;
  // A server logs each request (ids, route shape, status): info, not the CLI's default warn.
  log::setLevel(log::Level::kInfo);
  if (o.admin_socket.empty()) o.admin_socket = defaultAdminSocket(o.db_url);
  // Block the stop signals before any thread starts, so only sigwait below sees them.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Config cfg;
  cfg.fee_bps = o.fee_bps;
  cfg.suspend_after_strikes = o.suspend_after_strikes;
  cfg.claim_seconds = o.claim_seconds;
  cfg.now = [] { return static_cast<int64_t>(std::time(nullptr)); };

  ASSIGN_OR_RETURN(auto pool, DbPool::open(o.db_url, o.pool_size));
  // Order: schema first; then recovery, before any request can start a movement, so every
  // movement a killed process left in flight is finished or reverted by its key.
  {
    auto lease = pool->acquire();
    ASSIGN_OR_RETURN(int version, migrate(lease.db()));
    Market m(lease.db(), lease.provider(), cfg);
    ASSIGN_OR_RETURN(int64_t recovered, m.recover());
    log::info("market_start", "schema=" + std::to_string(version) + " recovered=" + std::to_string(recovered));
  }
  ApiOptions api_opts{.rate_per_minute = o.rate_per_minute};
  if (!o.admin_token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token, readAdminToken(o.admin_token_file));
    api_opts.admin_token_hash = keys::hashApiKey(token);
  }
  Api api(*pool, cfg, api_opts);
  ASSIGN_OR_RETURN(auto http, HttpServer::start(o.listen, o.tls_cert, o.tls_key, {},
                                                [&api](const HttpRequest& r) { return api.handle(r); }));
  ASSIGN_OR_RETURN(auto admin, AdminSocket::start(o.admin_socket, *pool, cfg));
  std::thread http_thread([&] { http->run(); });

  // The sweep: overdue claims and tasks, and movements another (dead) replica left behind.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread sweeper([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::seconds(o.sweep_seconds), [&] { return stopping; })) {
      lock.unlock();
      {
        auto lease = pool->acquire();
        Market m(lease.db(), lease.provider(), cfg);
        if (auto swept = m.sweep(); !swept) log::error("market_sweep_failed", swept.error());
      }
      lock.lock();
    }
  });

  const std::string where = o.listen.substr(0, o.listen.rfind(':')) + ":" + std::to_string(http->port());
  std::printf("corral market: listening on %s admin=%s test_mode=ledger\n", where.c_str(), o.admin_socket.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_set, &sig);
  log::info("market_stop", "signal=" + std::to_string(sig));
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  sweeper.join();
  http->stop();
  http_thread.join();
  return {};
}

}  // namespace corral::market
