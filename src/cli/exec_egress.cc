// SPDX-License-Identifier: Apache-2.0
// `corral exec --net proxy`: the run's egress proxy and what it saw (corral-core only: in its
// own exec, and in the proxy process the launcher starts, cli/egress_process.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "audit/sha256.h"
#include "cli/exec.h"
#include "cli/exec_options.h"
#include "cli/ssh_agent_exposure.h"
#include "net/lease_table.h"
#include "net/sandbox_egress.h"
#include "net/upstream_proxy.h"

namespace corral::cli {
namespace {

std::string runTag() {
  uint8_t bytes[8];
  if (!net::systemRandom(bytes)) return "exec-" + std::to_string(::getpid());
  return "exec-" + audit::toHex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

// Events recorded one by one in a run, of each kind, and their bytes. Every request the
// sandbox makes costs the host memory in the record (the events file, the launcher's report),
// outside any limit the run has; past either bound, further events are counted by decision
// and rule instead, and the report says so ("egress_overflow"). An event's fields are bounded
// (a method or target the sandbox chose is recorded by hash past a few hundred bytes), so the
// count is the usual bound; the bytes are the backstop.
constexpr size_t kMaxEventsPerKind = 20'000;
constexpr size_t kMaxEventBytesPerKind = size_t{16} * 1024 * 1024;

// The parent proxy from --upstream-proxy and --upstream-proxy-auth, read from corral's own
// environment (the host side): nothing of it is in the sandbox's.
Result<std::shared_ptr<net::UpstreamProxy>> upstreamProxy(const ExecInvocation& inv) {
  auto parent = *inv.upstream_proxy == "env" ? net::upstreamFromEnvironment(net::processEnvironment)
                                             : net::parseUpstreamProxy(*inv.upstream_proxy);
  if (!parent) return parent.error();
  if (inv.upstream_proxy_auth) {
    std::optional<std::string> value = net::processEnvironment(*inv.upstream_proxy_auth);
    if (!value || value->empty())
      return Error(Errc::kInvalidArgument, "--upstream-proxy-auth: variable " + *inv.upstream_proxy_auth + " is not set");
    parent->authorization = std::make_unique<Secret>(net::basicAuthorization(*value));
    std::fill(value->begin(), value->end(), '\0');
  }
  return std::make_shared<net::UpstreamProxy>(std::move(*parent));
}

// Events arrive on the proxy thread.
class ProxyEgress final : public ExecEgress {
 public:
  explicit ProxyEgress(bool with_leases) : with_leases_(with_leases) {}

  // The proxy logs each refusal at once (warn: shown by default), so a user sees why a
  // request was blocked without asking for the report; every event goes into the report.
  Result<void> start(ExecInvocation& inv, EgressWiring wiring) {
    net::EgressConfig config;
    config.tag = runTag();
    config.grants = inv.allow;
    config.internal = inv.internal;
    config.sandbox_port = inv.spec.proxy.port;
    events_file_ = std::move(wiring.events_file);
    config.on_event = [this](const net::ConnectionEvent& e) {
      std::lock_guard lock(mu_);
      record(egress_, net::eventJson(e));
    };
    if (inv.upstream_proxy) {
      ASSIGN_OR_RETURN(config.upstream, upstreamProxy(inv));
    }
    config.leases = inv.credentials;
    if (inv.lease_ca) config.tls.ca_bundle_path = *inv.lease_ca;
    config.env_lookup = net::processEnvironment;
    if (wiring.placeholder_random) config.placeholder_random = std::move(wiring.placeholder_random);
    config.on_lease_event = [this](const net::LeaseEvent& e) {
      std::lock_guard lock(mu_);
      record(leases_, net::leaseEventJson(e));
    };
    if (inv.ssh_key) {
      config.ssh_key_path = *inv.ssh_key;
      config.ssh_agent_listener = std::move(wiring.ssh_agent_listener);
      if (!config.ssh_agent_listener.valid()) {  // in this process: the socket is made here
        auto sock = net::AgentSocket::create();
        if (!sock) return sock.error();
        agent_socket_.emplace(std::move(*sock));
        config.ssh_agent_listener = agent_socket_->takeListener();
        exposeAgentSocket(inv, agent_socket_->hostPath());
      }
    }
    ASSIGN_OR_RETURN(proxy_, net::SandboxEgress::start(std::move(config)));
    if (wiring.proxy_end.valid()) {
      proxy_->adopt(std::move(wiring.proxy_end));
      return {};
    }
    ASSIGN_OR_RETURN(channel_, proxy_->attach());
    inv.spec.proxy.channel = channel_.get();
    for (std::string& kv : proxy_->sandboxEnvironment()) inv.spec.env.push_back(std::move(kv));
    return {};
  }

  Result<void> stop() override {
    proxy_.reset();  // joins the proxy thread: no event comes after this
    std::lock_guard lock(mu_);
    if (!overflow_.empty() && events_file_.valid())
      append("overflow", overflow_.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    if (lost_ > 0)
      return Error(file_error_, "the egress proxy could not record " + std::to_string(lost_) + " of its events");
    return {};
  }

  void addToReport(nlohmann::ordered_json& extra) override {
    std::lock_guard lock(mu_);
    extra["egress"] = std::move(egress_.list);
    if (!overflow_.empty()) extra["egress_overflow"] = overflow_;
    if (with_leases_) extra["leases"] = std::move(leases_.list);
  }

 private:
  // One kind of event: what is recorded one by one, and how much of it.
  struct Kind {
    const char* name;  // the events file's line prefix and the overflow's key
    size_t recorded = 0, bytes = 0;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();  // in-process only
  };

  void record(Kind& kind, nlohmann::ordered_json event) {
    const std::string text = event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    if (kind.recorded >= kMaxEventsPerKind || kind.bytes + text.size() > kMaxEventBytesPerKind) {
      nlohmann::ordered_json& counts = overflow_[kind.name];
      if (!counts.is_object()) counts = nlohmann::ordered_json::object();
      const std::string key = event.value("decision", "") + "/" + event.value("rule", "");
      counts[key] = counts.value(key, uint64_t{0}) + 1;
      return;
    }
    ++kind.recorded;
    kind.bytes += text.size();
    if (events_file_.valid()) return append(kind.name, text);
    kind.list.push_back(std::move(event));
  }

  // One line per event, in one write(2) where it fits: a proxy killed mid-write leaves at most
  // its last line cut short, which the reader drops. A failed write is counted and fails the
  // run at the stop (an audit record with a hole is not a complete one).
  void append(const char* kind, std::string_view text) {
    std::string line(kind);
    line += ' ';
    line += text;
    line += '\n';
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(events_file_.get(), line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (lost_++ == 0) file_error_ = n < 0 ? errno : EIO;
        return;
      }
      done += static_cast<size_t>(n);
    }
  }

  const bool with_leases_;
  std::mutex mu_;
  UniqueFd events_file_;
  size_t lost_ = 0;
  int file_error_ = 0;
  Kind egress_{"egress"}, leases_{"lease"};
  nlohmann::ordered_json overflow_ = nlohmann::ordered_json::object();  // kind -> "decision/rule" -> count
  std::unique_ptr<net::SandboxEgress> proxy_;
  UniqueFd channel_;  // the sandbox's end
  std::optional<net::AgentSocket> agent_socket_;  // --ssh-key in this process: removed after the run
};

}  // namespace

Result<std::unique_ptr<ExecEgress>> startExecEgress(ExecInvocation& inv, EgressWiring wiring) {
  auto egress = std::make_unique<ProxyEgress>(!inv.credentials.empty());
  RETURN_IF_ERROR(egress->start(inv, std::move(wiring)));
  return std::unique_ptr<ExecEgress>(std::move(egress));
}

}  // namespace corral::cli
