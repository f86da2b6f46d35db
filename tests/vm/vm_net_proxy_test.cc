// SPDX-License-Identifier: Apache-2.0
// vm.net-proxy: `corral exec --backend vm --net proxy` reaches the run's egress proxy only
// through the corral.net relay, with the namespace backend's grants, leases and audit. One
// boot (VmNetSetup.NetProxyBoot) runs every check in the guest against a local upstream
// (relay_upstream.py); the VmNetProxy.InVm* tests judge its record. The VmNetProxy tests
// without a VM feed the host's relay hostile frames.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "harness.h"
#include "vm/relay.h"
#include "vm/relay_frame.h"
#include "vm_setup.h"

namespace corral::testing::vm {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

// The guest's HTTP client: perl (Essential, so in the guest's runtime; curl is not) speaking
// to the proxy the command's HTTP_PROXY names. METHOD URL UPLOAD|- [HEADER...]: the response
// head on stderr, its body on stdout (de-chunked: a leased upstream's responses pass the
// proxy's redactor, which sends them chunked).
const char kClient[] = R"PL(use IO::Socket::INET;
my ($method, $url, $upload, @headers) = @ARGV;
my ($hostport) = $url =~ m{^http://([^/]+)};
my ($proxy) = $ENV{HTTP_PROXY} =~ m{^http://([^/]+)};
my $s = IO::Socket::INET->new($proxy) or die "connect $proxy: $!\n";
my $len = $upload ne "-" ? -s $upload : 0;
print $s "$method $url HTTP/1.1\r\nHost: $hostport\r\nConnection: close\r\n";
print $s "$_\r\n" for @headers;
print $s "Content-Length: $len\r\n" if $method eq "POST";
print $s "\r\n";
if ($upload ne "-") { open(my $f, "<", $upload) or die; binmode $f; while (read($f, my $b, 65536)) { print $s $b } }
my $chunked = 0;
while (<$s>) { print STDERR $_; $chunked = 1 if /^Transfer-Encoding: *chunked/i; last if /^\r\n$/ }
binmode STDOUT;
if (!$chunked) { while (read($s, my $b, 65536)) { print $b } exit 0 }
while (my $size = <$s>) {
  $size = hex($size); last if $size == 0;
  while ($size > 0) { my $n = read($s, my $b, $size > 65536 ? 65536 : $size) or die "short chunk\n"; print $b; $size -= $n }
  <$s>;
}
)PL";

std::string freshSecret() {
  std::random_device rd;
  std::string s = "corral-sentinel-vmnet-";
  for (int i = 0; i < 16; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

bool hostConnects(const std::string& ip, int port) {
  RunResult r = run({"/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "10",
                     "http://" + ip + ":" + std::to_string(port) + "/host-control"});
  return r.exit_code == 0 && r.out.find("upstream ok") != std::string::npos;
}

}  // namespace

// The one boot: a granted upstream, a second one with a lease on it (a leased upstream's
// responses pass the proxy's redactor, so the large transfers go to the first, which the
// proxy splices), and every check in one guest script.
TEST(VmNetSetup, NetProxyBoot) {
  if (const std::string why = whyNoVm(); !why.empty()) {
    saveRecord("net_proxy", {{"skipped", why}});
    GTEST_SKIP() << why;
  }
  ::unlink(recordPath("net_proxy").c_str());
  TempDir up("vm-upstream"), ws("vm-net-ws");
  Process server = Process::start({"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/vm/relay_upstream.py", up.path()},
                                  RunOptions{.stdin_pipe = true, .deadline = std::chrono::minutes(15)});
  auto line = server.readLine(seconds(60));
  ASSERT_TRUE(line) << "relay_upstream.py did not start";
  const Json ports = Json::parse(*line, nullptr, false);
  ASSERT_TRUE(ports.is_object()) << *line;
  const int port = ports.value("port", 0), other = ports.value("other", 0), leased = ports.value("leased", 0);
  ws.write("h.pl", kClient);
  const std::string secret = freshSecret();
  std::string host_ip = hostIPv4NonLoopback();
  const bool host_ip_found = !host_ip.empty();
  if (!host_ip_found) host_ip = "192.0.2.1";  // TEST-NET: unrouted, and granted nowhere
  const std::string P = std::to_string(port), O = std::to_string(other);
  const std::string U = "http://127.0.0.1:" + P, L = "http://127.0.0.1:" + std::to_string(leased);
  const std::string H = "perl /workspace/h.pl";
  const std::string script =
      "t() { echo \"@@ $1\"; shift; \"$@\" 2>&1; }\n"
      "t granted " + H + " GET " + U + "/granted -\n"
      "t lease " + H + " GET " + L + "/lease - \"Authorization: Bearer $PLAIN_TOKEN\"\n"
      "t ungranted_host " + H + " GET http://ungranted.example/ -\n"
      "t other_port " + H + " GET http://127.0.0.1:" + O + "/ -\n"
      "t loopback_alias " + H + " GET http://127.0.0.2:" + P + "/ -\n"
      "t host_ip " + H + " GET http://" + host_ip + ":" + P + "/ -\n"
      "t big bash -c 's=$(date +%s%N); " + H + " GET " + U + "/big/33554432 - 2>/dev/null | sha256sum; e=$(date +%s%N); echo ns=$((e-s))'\n"
      "t concurrent bash -c 'for i in 1 2 3 4; do (" + H + " GET " + U + "/big/4194304 - 2>/dev/null | sha256sum > /tmp/c$i) & done; "
      "wait; cat /tmp/c1 /tmp/c2 /tmp/c3 /tmp/c4'\n"
      "t upload bash -c 'head -c 8388608 /dev/urandom > /tmp/up; sha256sum < /tmp/up; " + H + " POST " + U + "/upload /tmp/up 2>/dev/null; rm /tmp/up'\n"
      "t direct_loopback bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + P + " && echo CONNECTED'\n"
      "t direct_gateway timeout 10 bash -c 'exec 3<>/dev/tcp/10.0.2.2/" + P + " && echo CONNECTED'\n"
      "t direct_host timeout 10 bash -c 'exec 3<>/dev/tcp/" + host_ip + "/" + P + " && echo CONNECTED'\n"
      "t look bash -c 'env; tr \"\\0\" \"\\n\" < /proc/self/environ; grep -rs corral-sentinel /workspace /tmp /etc; true'\n";
  std::vector<std::string> opts = vmOptions();
  for (const std::string& o : {std::string("--net"), std::string("proxy"), std::string("--allow"), U, std::string("--allow"), L, std::string("--credential"),
                               "plain=PLAIN_TOKEN@" + L, std::string("--workspace"), ws.path(), std::string("--timeout"), std::string("600s")})
    opts.push_back(o);
  RunResult r = runCorral(opts, {"/bin/bash", "-c", script},
                          RunOptions{.env_extra = {"PLAIN_TOKEN=" + secret}, .deadline = seconds(800)});
  Json rec;
  rec["exit_code"] = r.exit_code;
  rec["stdout"] = r.out;
  rec["stderr"] = r.err;
  rec["report"] = r.report ? *r.report : Json(nullptr);
  rec["checks"] = checksOf(r.out);
  rec["secret"] = secret;
  rec["headers_log"] = up.read("headers.log");
  rec["hashes"] = Json::parse(up.read("hashes.json"), nullptr, false);
  rec["host_ip"] = host_ip;
  rec["host_ip_found"] = host_ip_found;
  // Controls, from the host: the other port answers (so a refusal is the proxy's), and so
  // does the host's own address (so the guest's failure to connect is the VM's).
  rec["host_reaches_other_port"] = hostConnects("127.0.0.1", other);
  rec["host_reaches_host_ip"] = host_ip_found && hostConnects(host_ip, port);
  saveRecord("net_proxy", rec);
  server.closeStdin();
  ASSERT_TRUE(r.report.has_value()) << "the --net proxy VM gave no report" << r.describe();
}

namespace {

std::string check(const Json& rec, const char* name) {
  return rec["checks"].contains(name) ? rec["checks"][name].get<std::string>() : std::string("<no check ") + name + ">";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The proxy's refusal, as the guest's client got it.
::testing::AssertionResult refusedByProxy(const std::string& out) {
  if (firstLine(out).rfind("HTTP/1.1 403", 0) == 0 && has(out, "X-Corral-Denied:")) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "not the proxy's refusal: " << out.substr(0, 400);
}

}  // namespace

TEST(VmNetProxy, InVmGrantedUpstreamAnswersThroughTheRelay) {
  CORRAL_VM_RECORD(rec, "net_proxy");
  ASSERT_EQ(rec["exit_code"], 0) << rec["stderr"].get<std::string>().substr(0, 2000);
  EXPECT_TRUE(has(check(rec, "granted"), "upstream ok /granted")) << claim("vm.net-proxy", "the granted upstream did not answer") << check(rec, "granted");
  const Json& report = rec["report"];
  bool allowed = false;
  for (const Json& e : report["egress"]) allowed |= e.value("decision", "") == "allow" && e.value("status", 0) == 200;
  EXPECT_TRUE(allowed) << claim("vm.net-proxy", "the report's egress audit has no allowed request") << report["egress"].dump();
  EXPECT_GE(report["vm"]["net_relay"].value("streams", 0), 10) << report["vm"].dump();
  EXPECT_FALSE(report["vm"]["net_relay"].contains("error")) << report["vm"]["net_relay"].dump();
}

TEST(VmNetProxy, InVmUngrantedHostOtherPortAndHostAddressesRefused) {
  CORRAL_VM_RECORD(rec, "net_proxy");
  EXPECT_TRUE(rec["host_reaches_other_port"].get<bool>()) << "control: the other port does not answer even the host";
  for (const char* c : {"ungranted_host", "other_port", "loopback_alias", "host_ip"})
    EXPECT_TRUE(refusedByProxy(check(rec, c))) << claim("vm.net-proxy", std::string("not refused: ") + c);
  size_t refused = 0;
  for (const Json& e : rec["report"]["egress"]) refused += e.value("decision", "") == "refuse";
  EXPECT_GE(refused, 4u) << claim("vm.net-proxy", "refusals missing from the audit") << rec["report"]["egress"].dump();
}

TEST(VmNetProxy, InVmLeaseInjectedAndTheGuestNeverHoldsTheSecret) {
  CORRAL_VM_RECORD(rec, "net_proxy");
  const std::string secret = rec["secret"];
  // Control: the upstream got the secret, so the lease was in play.
  EXPECT_TRUE(has(rec["headers_log"].get<std::string>(), "Authorization: Bearer " + secret))
      << claim("vm.net-proxy", "the lease was not injected upstream");
  EXPECT_TRUE(has(check(rec, "lease"), "upstream ok /lease")) << check(rec, "lease");
  EXPECT_TRUE(has(check(rec, "look"), "PLAIN_TOKEN=")) << "control: the guest's environment was not shown";
  for (const char* where : {"stdout", "stderr"})
    EXPECT_FALSE(has(rec[where].get<std::string>(), secret)) << claim("vm.net-proxy", std::string("the secret reached the guest's ") + where);
  EXPECT_FALSE(has(rec["report"].dump(), secret)) << claim("vm.net-proxy", "the secret is in the report");
}

TEST(VmNetProxy, InVmLargeTransferIntactAndConcurrentStreams) {
  CORRAL_VM_RECORD(rec, "net_proxy");
  const std::string big = rec["hashes"].value("33554432", "?"), four = rec["hashes"].value("4194304", "?");
  EXPECT_TRUE(has(check(rec, "big"), big)) << claim("vm.net-proxy", "32 MiB did not arrive intact") << check(rec, "big");
  const std::string conc = check(rec, "concurrent");
  size_t n = 0;
  for (size_t at = conc.find(four); at != std::string::npos; at = conc.find(four, at + 1)) ++n;
  EXPECT_EQ(n, 4u) << claim("vm.net-proxy", "concurrent streams did not all arrive intact") << conc;
  // The upload: the guest's own hash of what it sent, then the upstream's of what it got.
  const std::string upl = check(rec, "upload");
  const std::string sent = upl.substr(0, 64);
  EXPECT_TRUE(sent.size() == 64 && has(upl, "sha256=" + sent)) << claim("vm.net-proxy", "8 MiB upload not intact") << upl;
  const std::string b = check(rec, "big");
  if (size_t at = b.find("ns="); at != std::string::npos) {
    const double s = std::stod(b.substr(at + 3)) / 1e9;
    std::printf("vm net relay: 32 MiB in %.2f s (%.1f MiB/s, %s)\n", s, 32 / s, rec["report"]["vm"].value("accelerator", "?").c_str());
  }
}

TEST(VmNetProxy, InVmHostListenersStillUnreachableDirectly) {
  CORRAL_VM_RECORD(rec, "net_proxy");
  if (rec["host_ip_found"].get<bool>()) {
    EXPECT_TRUE(rec["host_reaches_host_ip"].get<bool>()) << "control: the host cannot reach its own listener";
  }
  for (const char* c : {"direct_loopback", "direct_gateway", "direct_host"})
    EXPECT_FALSE(has(check(rec, c), "CONNECTED")) << claim("vm.net-proxy", std::string("the guest connected directly: ") + c) << check(rec, c);
}

// --- the host's relay fed hostile frames (no VM) ---

namespace {

// The host's relay on one end of a socketpair (the "guest" writes the other), handing
// streams to a fake proxy channel. run() happens on a thread; the test reads what it did.
struct HostMux {
  UniqueFd guest, port, proxy_mine, proxy_theirs, stop_r, stop_w;
  std::thread thread;
  Result<void> result = {};
  bool ended = false;
  HostMux() {
    int a[2], b[2], s[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b), 0);
    EXPECT_EQ(::pipe2(s, O_CLOEXEC), 0);
    guest.reset(a[0]), port.reset(a[1]), proxy_mine.reset(b[0]), proxy_theirs.reset(b[1]), stop_r.reset(s[0]), stop_w.reset(s[1]);
    thread = std::thread([this] {
      corral::vm::relay::Mux mux(corral::vm::relay::Side::kHost, port.get());
      result = mux.run(stop_r.get(), -1, [this]() -> Result<UniqueFd> {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return sysError("socketpair");
        UniqueFd mine(sv[0]), theirs(sv[1]);
        RETURN_IF_ERROR(corral::vm::relay::handToProxy(proxy_theirs.get(), theirs));
        return mine;
      });
      ::shutdown(port.get(), SHUT_RDWR);  // as HostRelay closes its end: the "guest" sees it
      ended = true;
    });
  }
  ~HostMux() {
    (void)!::write(stop_w.get(), "x", 1);
    thread.join();
  }
  // Blocking, and without SIGPIPE: the relay may end (and close its end) before it read all.
  void send(const std::string& bytes) {
    for (size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::send(guest.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  // The connection the relay handed to the "proxy".
  UniqueFd accepted() {
    pollfd p{proxy_mine.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return UniqueFd();
    char byte;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov, msg.msg_iovlen = 1, msg.msg_control = control, msg.msg_controllen = sizeof control;
    if (::recvmsg(proxy_mine.get(), &msg, MSG_CMSG_CLOEXEC) != 1) return UniqueFd();
    int fd;
    std::memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof fd);
    return UniqueFd(fd);
  }
  bool endsWithin(seconds t) {
    for (auto until = std::chrono::steady_clock::now() + t; std::chrono::steady_clock::now() < until;) {
      if (ended) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return ended;
  }
};

std::string readSome(int fd, size_t want) {
  std::string out;
  char buf[65536];
  while (out.size() < want) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) break;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

using corral::vm::relay::encode;
using corral::vm::relay::Type;

}  // namespace

// Control: well-formed frames open a stream to the proxy, carry bytes both ways and close it.
TEST(VmNetProxy, ControlWellFormedFramesReachTheProxy) {
  HostMux m;
  m.send(encode(Type::kOpen, 1) + encode(Type::kData, 1, "GET / HTTP/1.1\r\n\r\n"));
  UniqueFd conn = m.accepted();
  ASSERT_TRUE(conn.valid()) << "the relay handed no connection to the proxy";
  EXPECT_EQ(readSome(conn.get(), 18), "GET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(::write(conn.get(), "HTTP/1.1 200 OK\r\n", 17), 17);
  const std::string back = readSome(m.guest.get(), 4 + 5 + 4 + 4 + 5 + 17);  // a window, then the data
  EXPECT_NE(back.find("HTTP/1.1 200 OK"), std::string::npos);
  // The guest's close arrives after its data was written: the proxy's end reads EOF.
  m.send(encode(Type::kClose, 1));
  char c;
  pollfd p{conn.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "the guest's close never reached the proxy's end";
  EXPECT_EQ(::read(conn.get(), &c, 1), 0);
  EXPECT_FALSE(m.ended);
}

// Each malformed stream ends the relay (run returns its error), closes the streams it had
// open, and the host process carries on: the test itself is the host.
TEST(VmNetProxy, MalformedGuestFramesEndTheRelayNotTheHost) {
  const std::string open1 = encode(Type::kOpen, 1);
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"length 0", open1 + std::string("\0\0\0\0", 4)},
      {"length above the cap", open1 + std::string("\0\x10\0\0", 4) + "d"},
      {"unknown type", open1 + std::string("\0\0\0\x05", 4) + "z" + std::string("\0\0\0\1", 4)},
      {"unknown stream id", open1 + encode(Type::kData, 7, "x")},
      {"duplicate open", open1 + open1},
      {"stream id 0", open1 + encode(Type::kOpen, 0)},
      {"data after close", open1 + encode(Type::kClose, 1) + encode(Type::kData, 1, "x")},
      {"window for bytes never sent", open1 + corral::vm::relay::encodeWindow(1, 1)},
      // The proxy's end reads nothing: once its socket buffer is full, the relay holds what
      // comes, up to the window, and no more.
      {"data beyond the window", [&] {
         std::string s = open1;
         const std::string chunk(corral::vm::relay::kMaxData, 'a');
         for (uint32_t sent = 0; sent <= 8 * corral::vm::relay::kWindow; sent += chunk.size()) s += encode(Type::kData, 1, chunk);
         return s;
       }()},
      {"payload on a close", open1 + encode(Type::kClose, 1, "x")},
  };
  for (const auto& [what, bytes] : cases) {
    HostMux m;
    m.send(bytes);
    UniqueFd conn = m.accepted();
    EXPECT_TRUE(conn.valid()) << what << ": control: the first open reached the proxy";
    ASSERT_TRUE(m.endsWithin(seconds(10))) << claim("vm.net-proxy", std::string("the relay went on after ") + what);
    EXPECT_FALSE(m.result.ok()) << claim("vm.net-proxy", std::string("the relay ended without an error after ") + what);
    // The stream it had open is closed: the proxy's end reads EOF (after any data it was sent).
    readSome(conn.get(), SIZE_MAX);
    char c;
    EXPECT_EQ(::read(conn.get(), &c, 1), 0) << what << ": the open stream was left open";
  }
}

}  // namespace corral::testing::vm

namespace corral::testing::vm {

// The stream table alone: the cap on open streams, a reset stream's late frames dropped (not
// an error), and an id never opened refused even after others were retired.
TEST(VmNetProxy, StreamTableCapsStreamsAndDropsOnlyRetiredOnes) {
  using namespace corral::vm::relay;
  Streams t(Side::kHost);
  for (uint32_t id = 1; id <= kMaxStreams; ++id) ASSERT_TRUE(t.receive({Type::kOpen, id, ""}).ok()) << id;
  EXPECT_FALSE(t.receive({Type::kOpen, kMaxStreams + 1, ""}).ok()) << claim("vm.net-proxy", "a 65th stream was opened");
  Streams u(Side::kHost);
  ASSERT_TRUE(u.receive({Type::kOpen, 1, ""}).ok());
  ASSERT_TRUE(u.receive({Type::kReset, 1, ""}).ok());
  auto late = u.receive({Type::kData, 1, "late"});
  ASSERT_TRUE(late.ok()) << "control: data in flight for a reset stream must not end the relay";
  EXPECT_EQ(*late, Streams::Verdict::kDrop);
  EXPECT_FALSE(u.receive({Type::kOpen, 1, ""}).ok()) << claim("vm.net-proxy", "a retired id was opened again");
  Streams w(Side::kHost);
  ASSERT_TRUE(w.receive({Type::kOpen, 3, ""}).ok());
  EXPECT_FALSE(w.receive({Type::kData, 4, "x"}).ok()) << claim("vm.net-proxy", "data for an id never opened was taken");
  // The guest side never takes an open.
  Parser g(Side::kGuest);
  g.feed(encode(Type::kOpen, 1));
  EXPECT_FALSE(g.next().ok()) << claim("vm.net-proxy", "the guest's parser took an open from the host");
}

}  // namespace corral::testing::vm
