// SPDX-License-Identifier: Apache-2.0
#include "egress_fixture.h"

#include <nlohmann/json.hpp>

namespace corral::testing {

EgressServers::EgressServers(const std::vector<std::string>& env_extra) : dir_("egress-servers") {
  RunOptions o;
  o.stdin_pipe = true;
  o.env_extra = env_extra;
  o.deadline = std::chrono::minutes(10);
  proc_.emplace(Process::start(
      {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/egress_servers.py", dir_.path()}, o));
  auto line = proc_->readLine(std::chrono::seconds(60));
  if (!line) return;
  auto j = nlohmann::json::parse(*line, nullptr, false);
  if (!j.is_object()) return;
  http = j.value("http", 0);
  https = j.value("https", 0);
  git = j.value("git", 0);
  http_alias = j.value("http_alias", 0);
}

EgressServers::~EgressServers() {
  if (proc_) {
    proc_->closeStdin();
    proc_->exitedWithin(std::chrono::seconds(5));
  }
}

std::string EgressServers::ask(bool tls, const std::string& path) const {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "10"};
  if (tls) argv.insert(argv.end(), {"--cacert", cafile()});
  argv.push_back((tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(tls ? https : http) + path);
  RunResult r = run(argv);
  return r.exit_code == 0 ? r.out : "";
}

int EgressServers::count(bool tls) const {
  std::string out = ask(tls, "/__count");
  return out.empty() ? -1 : std::stoi(out);
}

std::string EgressServers::lastHeaders(bool tls) const { return ask(tls, "/__last"); }

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

}  // namespace corral::testing
