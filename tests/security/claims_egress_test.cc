// SPDX-License-Identifier: Apache-2.0
// Egress claims (claims/egress.toml): real clients inside `corral exec --net proxy` (curl,
// python3 urllib and raw sockets, git over smart HTTP) against real servers on the host's
// loopback (egress_servers.py: HTTP, HTTPS with a test CA, git http-backend). Each refusal
// is checked at the server too: a request that was refused never arrived.
#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "egress_fixture.h"
#include "harness.h"
#include "jdk.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

Args proxyOpts(const EgressWorkspace& ws, const Args& grants) {
  Args o = {"--net", "proxy", "--workspace", ws.dir.path(), "--timeout", "60s"};
  for (const std::string& g : grants) o.insert(o.end(), {"--allow", g});
  return o;
}

// curl inside the sandbox printing the HTTP status, then the X-Corral-Denied value on a
// second line when there is one (an HTTP error status is not a curl failure).
Args curlStatus(const std::string& url) {
  return {"sh", "-c",
          "curl -sS -o /dev/null -D /tmp/h --cacert /workspace/ca.pem --max-time 20 -w '%{http_code}\\n' '" + url +
              "'; rc=$?; grep -i '^x-corral-denied:' /tmp/h | tr -d '\\r' | sed 's/^[^:]*: //' || true; exit $rc"};
}

TEST(EgressAllowlistOnly, CurlReachesAGrantedHttpHost) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl()}), {"curl", "-sS", "--max-time", "20", s.httpUrl() + "/granted"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "upstream ok /granted");
  EXPECT_EQ(s.count(false), 1);
}

TEST(EgressAllowlistOnly, OtherPortsSchemesAndNamesOfTheSameHostAreRefused) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  const Args grant = {s.httpUrl()};
  // Another port on the granted host: the git server listens there, so only the grant stops it.
  RunResult port = runCorral(proxyOpts(ws, grant), curlStatus(s.gitUrl() + "/repo.git/info/refs"));
  EXPECT_EQ(splitLines(port.out), (Args{"403", "port-mismatch"})) << claim("egress.allowlist-only", "another port was reached") << port.describe();
  // https to the http server's port: a different scheme is a different grant.
  RunResult scheme = runCorral(proxyOpts(ws, grant), curlStatus("https://127.0.0.1:" + std::to_string(s.http) + "/"));
  EXPECT_NE(scheme.exit_code, 0) << claim("egress.allowlist-only", "https opened by an http grant") << scheme.describe();
  EXPECT_NE(scheme.out.find("scheme-mismatch"), std::string::npos) << scheme.describe();
  // The HTTPS server is not granted at all.
  RunResult tls = runCorral(proxyOpts(ws, grant), curlStatus(s.httpsUrl() + "/"));
  EXPECT_NE(tls.exit_code, 0) << tls.describe();
  EXPECT_EQ(s.count(false), 0) << claim("egress.allowlist-only", "a refused request reached the server");
  EXPECT_EQ(s.count(true), 0) << claim("egress.allowlist-only", "a refused tunnel reached the server");
  // Control: the same client, granted, gets through (the refusals above are the grant's).
  RunResult control = runCorral(proxyOpts(ws, {s.httpsUrl()}), curlStatus(s.httpsUrl() + "/ok"));
  EXPECT_EQ(splitLines(control.out), (Args{"200"})) << control.describe();
  EXPECT_EQ(s.count(true), 1);
}

TEST(EgressAllowlistOnly, AnEmptyAllowlistDeniesEverything) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  RunResult r = runCorral(proxyOpts(ws, {}), curlStatus(s.httpUrl() + "/x"));
  EXPECT_EQ(splitLines(r.out), (Args{"403", "no-grant"})) << r.describe();
  RunResult t = runCorral(proxyOpts(ws, {}), curlStatus(s.httpsUrl() + "/x"));
  EXPECT_NE(t.exit_code, 0) << t.describe();
  EXPECT_EQ(s.count(false), 0);
  EXPECT_EQ(s.count(true), 0);
}

TEST(EgressAllowlistOnly, PythonUrllibUsesTheProxyForHttps) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  const std::string py =
      "import ssl, urllib.request\n"
      "ctx = ssl.create_default_context(cafile='/workspace/ca.pem')\n"
      "print(urllib.request.urlopen('" + s.httpsUrl() + "/py', context=ctx, timeout=20).read().decode())\n";
  RunResult r = runCorral(proxyOpts(ws, {s.httpsUrl()}), {"python3", "-c", py});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "upstream ok /py\n");
  EXPECT_EQ(s.count(true), 1);
  ASSERT_TRUE(r.report) << r.describe();
  const auto& ev = (*r.report)["egress"];
  ASSERT_EQ(ev.size(), 1u) << r.report->dump();
  EXPECT_EQ(ev[0]["kind"], "connect");
  EXPECT_EQ(ev[0]["decision"], "allow");
  EXPECT_EQ(ev[0]["destination"], "127.0.0.1:" + std::to_string(s.https));
}

// The JVM reads no proxy variable: JAVA_TOOL_OPTIONS carries its http(s).proxyHost/Port. The
// control: the same client with the properties cleared on its command line has no way out
// (socksProxyHost too: without http.proxyHost the JVM's selector falls back to SOCKS for http).
TEST(EgressAllowlistOnly, JavaClientsGoThroughTheProxyByJavaToolOptions) {
  const std::string jdk = sandboxableJava();
  if (jdk.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm whose conf is not under /etc";
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  ws.dir.write("Fetch.java",
               "public class Fetch { public static void main(String[] a) throws Exception {\n"
               "  try (var in = new java.net.URL(a[0]).openStream()) { System.out.println(new String(in.readAllBytes())); }\n"
               "} }\n");
  RunResult javac = run({jdk + "/bin/javac", "-d", ws.dir.path(), ws.dir / "Fetch.java"});
  ASSERT_EQ(javac.exit_code, 0) << javac.describe();
  const std::string url = s.httpUrl() + "/java";
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl()}), {jdk + "/bin/java", "-cp", "/workspace", "Fetch", url});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "upstream ok /java\n");
  EXPECT_NE(r.err.find("Picked up JAVA_TOOL_OPTIONS: -Dhttp.proxyHost=127.0.0.1"), std::string::npos) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  ASSERT_EQ((*r.report)["egress"].size(), 1u) << r.report->dump();
  EXPECT_EQ((*r.report)["egress"][0]["kind"], "forward");
  RunResult control = runCorral(proxyOpts(ws, {s.httpUrl()}), {jdk + "/bin/java", "-Dhttp.proxyHost=", "-DsocksProxyHost=", "-cp", "/workspace", "Fetch", url});
  EXPECT_NE(control.exit_code, 0) << "a JVM without the proxy properties got out: " << control.describe();
  EXPECT_EQ(s.count(false), 1) << claim("egress.allowlist-only", "the JVM reached the server directly");
}

TEST(EgressAllowlistOnly, GitClonesOverSmartHttpThroughTheProxy) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  const std::string script = "git clone -q " + s.gitUrl() + "/repo.git /tmp/c && git -C /tmp/c log -1 --format=%s";
  RunResult r = runCorral(proxyOpts(ws, {s.gitUrl()}), {"sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "corral-egress-git-marker\n");
  // Control: without the grant, the same clone fails.
  RunResult denied = runCorral(proxyOpts(ws, {s.httpUrl()}), {"sh", "-c", script});
  EXPECT_NE(denied.exit_code, 0) << claim("egress.allowlist-only", "git reached an ungranted server") << denied.describe();
}

TEST(EgressAllowlistOnly, DirectConnectionsBypassingTheProxyFail) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  // The proxy variables ignored: the host's loopback is another namespace's.
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl()}),
                          {"curl", "-sS", "--noproxy", "*", "--max-time", "10", s.httpUrl() + "/direct"});
  EXPECT_NE(r.exit_code, 0) << claim("egress.allowlist-only", "a direct connection reached the host") << r.describe();
  const std::string host_ip = hostIPv4NonLoopback();
  if (!host_ip.empty()) {
    RunResult ext = runCorral(proxyOpts(ws, {s.httpUrl()}),
                              {"curl", "-sS", "--noproxy", "*", "--max-time", "5", "http://" + host_ip + ":" + std::to_string(s.http) + "/"});
    EXPECT_NE(ext.exit_code, 0) << ext.describe();
  }
  EXPECT_EQ(s.count(false), 0);
  // No resolver inside: names are the proxy's to resolve.
  RunResult dns = runCorral(proxyOpts(ws, {}), {"python3", "-c", "import socket; socket.getaddrinfo('example.com', 80)"});
  EXPECT_NE(dns.exit_code, 0) << claim("egress.allowlist-only", "a name resolved inside the sandbox") << dns.describe();
}

TEST(EgressAllowlistOnly, TheReportRecordsEachAttemptWithoutPathsOrQueries) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  const std::string sentinel = "corral-sentinel-path-5be1";
  const std::string script = "curl -sS -o /dev/null '" + s.httpUrl() + "/" + sentinel + "?q=" + sentinel +
                             "'; curl -sS -o /dev/null '" + s.gitUrl() + "/" + sentinel + "'; true";
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl()}), {"sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  const auto& ev = (*r.report)["egress"];
  ASSERT_EQ(ev.size(), 2u) << r.report->dump();
  // The order is completion order; find each by decision.
  const nlohmann::json* allowed = nullptr;
  const nlohmann::json* refused = nullptr;
  for (const auto& e : ev) (e["decision"] == "allow" ? allowed : refused) = &e;
  ASSERT_TRUE(allowed && refused) << r.report->dump();
  EXPECT_EQ((*allowed)["resolved"], "127.0.0.1:" + std::to_string(s.http));
  EXPECT_EQ((*allowed)["status"], 200);
  EXPECT_GT((*allowed)["bytes_down"].get<int>(), 0);
  EXPECT_EQ((*refused)["rule"], "port-mismatch");
  EXPECT_EQ((*refused)["status"], 403);
  EXPECT_TRUE((*allowed)["tag"].get<std::string>().starts_with("exec-"));
  EXPECT_EQ(r.err.find(sentinel), std::string::npos) << "a path or query reached the log or report: " << r.err;
}

// Requests the proxy refuses before deciding a destination are in the record too, with where
// they were aimed when that can be told, and never with their path: an origin-form or
// one-slash target ("/p", "http:/host/p") was recorded whole, path included, and a head
// refused for its framing (Content-Length with Transfer-Encoding) was recorded without any
// target at all.
TEST(EgressAllowlistOnly, RefusedHeadsAreRecordedWithTheirTargetButNeverItsPath) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  const std::string hp = std::to_string(s.http), sentinel = "corral-sentinel-path-77d0";
  const std::string script = R"PY(
import socket
def ask(raw):
    c = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    c.sendall(raw.encode())
    while c.recv(65536):
        pass
    c.close()
HP, S = ")PY" + hp + R"PY(", ")PY" + sentinel + R"PY("
ask("GET /%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (S, HP))
ask("GET http:/127.0.0.1:%s/%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (HP, S, HP))
ask("POST http://127.0.0.1:%s/%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % (HP, S, HP))
)PY";
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl()}), {"python3", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  std::vector<std::string> requested;
  for (const auto& e : (*r.report)["egress"]) requested.push_back(e.value("requested", "?") + " " + e.value("rule", "?"));
  std::sort(requested.begin(), requested.end());
  EXPECT_EQ(requested, (Args{" bad-target", "127.0.0.1:" + hp + " content-length-and-transfer-encoding", "http: bad-target"}))
      << claim("egress.allowlist-only", "a refused head's record is wrong") << r.report->dump();
  EXPECT_EQ(r.err.find(sentinel), std::string::npos) << "a path reached the log or report: " << r.err;
  EXPECT_EQ(s.count(false), 0);
}

TEST(EgressNoPrivateTargets, AGrantedNameThatResolvesToLoopbackIsRefused) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  // "localhost" is granted by name; it resolves to 127.0.0.1 on the host, where the server
  // listens. Only a grant of the IP literal itself opens loopback.
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl("localhost")}), curlStatus(s.httpUrl("localhost") + "/rebind"));
  EXPECT_EQ(splitLines(r.out), (Args{"403", "private-address"}))
      << claim("egress.no-private-targets", "a name resolving to loopback was dialled") << r.describe();
  // Cloud metadata, not granted.
  RunResult meta = runCorral(proxyOpts(ws, {s.httpUrl()}), curlStatus("http://169.254.169.254/latest/meta-data/"));
  EXPECT_EQ(splitLines(meta.out), (Args{"403", "no-grant"})) << meta.describe();
  EXPECT_EQ(s.count(false), 0) << claim("egress.no-private-targets", "the loopback server was reached");
  // Control: the IP literal, granted on purpose, is reachable.
  RunResult control = runCorral(proxyOpts(ws, {s.httpUrl()}), curlStatus(s.httpUrl() + "/literal"));
  EXPECT_EQ(splitLines(control.out), (Args{"200"})) << control.describe();
  EXPECT_EQ(s.count(false), 1);
}

// Raw requests to the proxy from inside, one per line of output: "<case> <status> <rule>".
std::string rawCasesScript(const EgressServers& s) {
  const std::string hp = std::to_string(s.http), tp = std::to_string(s.https);
  return R"PY(
import socket, ssl
def ask(raw):
    c = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    c.sendall(raw)
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = head[0].split(" ")[1] if " " in head[0] else "none"
    rule = "-"
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.lower() == "x-corral-denied":
            rule = v.strip()
    return status + " " + rule
HP = ")PY" + hp + R"PY("
cases = [
    ("decimal", "GET http://2130706433:%s/a HTTP/1.1\r\nHost: 2130706433:%s\r\n\r\n" % (HP, HP)),
    ("hex", "GET http://0x7f.0.0.1:%s/a HTTP/1.1\r\nHost: 0x7f.0.0.1:%s\r\n\r\n" % (HP, HP)),
    ("short", "GET http://127.1:%s/a HTTP/1.1\r\nHost: 127.1:%s\r\n\r\n" % (HP, HP)),
    ("mapped", "GET http://[::ffff:127.0.0.1]:%s/a HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:%s\r\n\r\n" % (HP, HP)),
    ("nul", "GET http://127.0.0.1\x00.evil.example:%s/a HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (HP, HP)),
    ("host-header-other", "GET http://127.0.0.1:%s/a HTTP/1.1\r\nHost: evil.example\r\n\r\n" % HP),
    ("userinfo", "GET http://evil.example@127.0.0.1:%s/a HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (HP, HP)),
    ("percent", "GET http://127.0.0.1%%2f:%s/a HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (HP, HP)),
    ("cl-and-te", "POST http://127.0.0.1:%s/a HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % (HP, HP)),
    ("origin-form", "GET /a HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % HP),
]
for name, raw in cases:
    print(name, ask(raw.encode()))
def tunnel(sni):
    c = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    c.sendall(b"CONNECT 127.0.0.1:)PY" + tp + R"PY( HTTP/1.1\r\nHost: 127.0.0.1:)PY" + tp + R"PY(\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        b = c.recv(1)
        if not b:
            return "no-tunnel"
        head += b
    if b" 200 " not in head.split(b"\r\n")[0]:
        return "no-tunnel"
    ctx = ssl.create_default_context(cafile="/workspace/ca.pem")
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(c, server_hostname=sni)
        t.sendall(b"GET /tls HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return "tls " + t.recv(100).split(b"\r\n")[0].decode()
    except (ssl.SSLError, OSError) as e:
        return "refused " + type(e).__name__
print("sni-other", tunnel("evil.example"))
print("sni-none", tunnel("127.0.0.1"))
)PY";
}

TEST(EgressNameConsistent, HostileSpellingsAreCanonicalisedOrRefused) {
  EgressServers s;
  REQUIRE_SERVERS(s);
  EgressWorkspace ws(s);
  RunResult r = runCorral(proxyOpts(ws, {s.httpUrl(), s.httpsUrl()}), {"python3", "-c", rawCasesScript(s)});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Args want = {
      "decimal 200 -",  // other spellings of the granted address reach it...
      "hex 200 -",
      "short 200 -",
      "mapped 200 -",
      "nul 400 nul-byte",
      "host-header-other 400 host-header-mismatch",  // ...but a disagreeing Host does not
      "userinfo 400 bad-target",
      "percent 400 bad-host",
      "cl-and-te 400 content-length-and-transfer-encoding",
      "origin-form 400 bad-target",
      "sni-other refused",  // the tunnel's TLS must name the CONNECT target
      "sni-none tls HTTP/1.1 200 OK",
  };
  Args got = splitLines(r.out);
  // Which exception the refused handshake raises (SSLError, SSLEOFError, ...) is Python's.
  for (std::string& l : got)
    if (l.starts_with("sni-other refused")) l = "sni-other refused";
  EXPECT_EQ(got, want) << claim("egress.name-consistent", "a spelling was mis-decided") << r.describe();
  // 4 canonical spellings and the control tunnel reached the servers; nothing else did.
  EXPECT_EQ(s.count(false), 4);
  EXPECT_EQ(s.count(true), 1);
}

}  // namespace
}  // namespace corral::testing
