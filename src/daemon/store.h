// SPDX-License-Identifier: Apache-2.0
// The daemon's state in SQLite: sessions and their commands, a schema version and its
// migrations. Every state change is its own synchronous transaction.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "daemon/sqlite.h"

namespace corral::daemon {

inline constexpr int kSchemaVersion = 2;

struct SessionRow {
  std::string id, name, state, secret, spec;  // spec: sessionSpecJson, env values included (0600 file)
  int64_t owner_uid = 0, shim_pid = 0, shim_start = 0, init_pid = 0, init_start = 0, created_at = 0;
  int64_t expires_at = 0;  // unix ms (--ttl); 0: never
};

struct CommandRow {
  std::string session_id;
  int64_t cmd = 0;
  std::string state;  // starting, running, exited, failed
  int64_t argc = 0;
  std::optional<int64_t> exit_code;
  std::string report;  // the status JSON, once known
  int64_t created_at = 0;
};

class Store {
 public:
  static Result<Store> open(const std::string& path);
  Store(Store&& o) noexcept : db_(std::move(o.db_)) {}

  Result<int> schemaVersion();
  Result<void> insertSession(const SessionRow& s);
  Result<void> setSessionState(const std::string& id, const std::string& state);
  Result<void> setSessionProcesses(const std::string& id, int64_t shim_pid, int64_t shim_start, int64_t init_pid,
                                   int64_t init_start);
  Result<std::vector<SessionRow>> sessions();
  Result<std::optional<SessionRow>> session(const std::string& id);
  Result<void> deleteSession(const std::string& id);  // its commands too

  // A new command number for the session (never reused), recorded as "starting".
  Result<int64_t> addCommand(const std::string& session_id, int64_t argc);
  Result<void> setCommand(const std::string& session_id, int64_t cmd, const std::string& state,
                          std::optional<int64_t> exit_code, const std::string& report);
  Result<std::vector<CommandRow>> commands(const std::string& session_id);
  Result<std::optional<CommandRow>> command(const std::string& session_id, int64_t cmd);

 private:
  explicit Store(Sqlite db) : db_(std::move(db)) {}
  Result<void> migrate();
  std::mutex mu_;
  Sqlite db_;
};

}  // namespace corral::daemon
