// SPDX-License-Identifier: Apache-2.0
// Test-side child processes: spawn with pipes, leaked fds or a terminal, read lines, reap.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::testing {

struct RunOptions {
  std::vector<std::string> env_extra;            // "K=V" added to (or replacing in) the test's environment
  std::optional<std::vector<std::string>> env;   // the complete environment instead
  std::vector<std::pair<int, int>> leak_fds;     // {fd in the test, number in the child}, inheritable
  int stdin_fd = -1;                             // -1: /dev/null (or a pipe when stdin_pipe)
  bool stdin_pipe = false;                       // Process::closeStdin() ends it
  bool ctty = false;                             // new session with stdin_fd (a tty) as controlling terminal
  std::optional<uid_t> as_user;                  // drop to this uid (and gid) before exec: root only
  std::string cwd;
  std::chrono::milliseconds deadline{60'000};    // then SIGKILL, and deadline_hit is set
};

// What one child did. `probe()` reads the first stdout line the corral-probe way.
struct ProbeLine {
  std::string raw;
  std::string status;  // "ok", "refused", "errno", or "" when there was no line
  std::string err;     // "EPERM" when status == "errno"
  bool ok() const { return status == "ok"; }
  bool has(const std::string& key) const;
  std::string get(const std::string& key) const;        // unescaped value, "" when absent
  long long num(const std::string& key) const;          // -1 when absent or not a number
  std::vector<std::string> list(const std::string& key) const;  // comma-separated, unescaped
  bool word(const std::string& w) const;                // a bare token such as "ready"
};
ProbeLine parseProbeLine(const std::string& line);

struct RunResult {
  std::string argv_text;
  int exit_code = -1;        // -1 when the child ended by a signal
  int term_signal = 0;
  bool deadline_hit = false;
  std::string out, err;
  std::optional<nlohmann::json> report;  // --json: the last stderr line, when it is a JSON object

  ProbeLine probe() const;
  std::vector<std::string> stderrLines() const;  // without the JSON report line
  std::string reportStr(const char* key) const;  // "" when absent or not a string
  long long reportInt(const char* key) const;    // -1 when absent, null or not a number
  std::string describe() const;                  // for failure messages
};

class Process {
 public:
  static Process start(const std::vector<std::string>& argv, const RunOptions& opts = {});
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  ~Process();  // kills and reaps a child nobody waited for

  pid_t pid() const { return pid_; }
  // Reads stdout until one full line is available (returned without '\n'), the child's
  // output ends, or the timeout passes (nullopt).
  std::optional<std::string> readLine(std::chrono::milliseconds timeout);
  void closeStdin();
  void signal(int sig);
  bool exitedWithin(std::chrono::milliseconds timeout);  // pumps output meanwhile
  RunResult wait();

 private:
  Process() = default;
  bool pump(int timeout_ms);  // reads what is available; false once the child has exited
  pid_t pid_ = -1;
  int pidfd_ = -1, out_ = -1, err_ = -1, in_ = -1;
  bool exited_ = false;
  int status_ = 0;
  size_t line_pos_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  bool deadline_hit_ = false;
  RunResult result_;
};

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts = {});

// A pseudo-terminal pair; the slave is put in raw mode so injected bytes are readable at once.
struct Pty {
  int master = -1, slave = -1;
  Pty();
  ~Pty();
  std::string drainSlaveInput() const;  // whatever sits in the slave's input queue
};

}  // namespace corral::testing
