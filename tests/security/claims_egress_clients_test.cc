// SPDX-License-Identifier: Apache-2.0
// Clients that ignore the proxy variables, or honour only some (docs/egress-proxy.md,
// "Clients"): Node.js fetch and http, npm, Go's net/http and net.Dial, and java.net.Socket,
// inside `corral exec --net proxy` against real servers (client_servers.py: HTTP, HTTPS and a
// minimal npm registry) on an internal address of the test's own network namespace
// (private_netns.h), reached by names only the host resolves. A client that ignores the
// variables gets every grant it would need and must still have no way out; each refusal is
// checked at the server, and in the report (it never reached the proxy either).
#include <unistd.h>

#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "jdk.h"
#include "private_netns.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

constexpr char kAddress[] = "10.77.0.1";
constexpr char kInternal[] = "10.77.0.0/16";
constexpr char kHosts[] = "127.0.0.1 localhost\n10.77.0.1 registry.corp.test web.corp.test\n";

// Once per test process, before any test (and any thread): the private network, then the
// servers in it. ctest runs each test in its own process; a direct run shares one set.
class ClientServers : public ::testing::Environment {
 public:
  void SetUp() override {
    skip = enterPrivateNetwork({kAddress}, kHosts);
    if (!skip.empty()) return;
    dir = std::make_unique<TempDir>("client-servers");
    RunOptions o;
    o.stdin_pipe = true;
    o.deadline = std::chrono::minutes(10);
    proc.emplace(Process::start(
        {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/client_servers.py", dir->path(), kAddress}, o));
    auto line = proc->readLine(std::chrono::seconds(60));
    auto j = nlohmann::json::parse(line.value_or(""), nullptr, false);
    if (j.is_object()) http = j.value("http", 0), https = j.value("https", 0);
  }
  void TearDown() override {
    if (proc) {
      proc->closeStdin();
      proc->exitedWithin(std::chrono::seconds(5));
    }
    proc.reset();
    dir.reset();
  }
  std::string skip;
  std::unique_ptr<TempDir> dir;
  std::optional<Process> proc;
  int http = 0, https = 0;
};

ClientServers* const servers = static_cast<ClientServers*>(::testing::AddGlobalTestEnvironment(new ClientServers));

class ClientsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!servers->skip.empty()) GTEST_SKIP() << "no private network for the client servers: " << servers->skip;
    ASSERT_GT(servers->https, 0) << "client_servers.py did not start";
    ws_.write("ca.pem", servers->dir->read("ca.pem"));
  }
  static std::string hp() { return std::to_string(servers->http); }
  static std::string sp() { return std::to_string(servers->https); }
  static std::string web() { return "web.corp.test:" + hp(); }
  static std::string registry() { return "registry.corp.test:" + sp(); }
  // What the servers answered, one "<http|https> <path>" per request, in order.
  static std::string requests() { return servers->dir->read("requests"); }

  // `corral exec --net proxy --allow-internal 10.77.0.0/16 --allow G... -- sh -c script`.
  RunResult sandbox(const Args& grants, const std::string& script) const {
    Args opts = {"--net", "proxy", "--timeout", "90s", "--workspace", ws_.path(), "--allow-internal", kInternal};
    for (const std::string& g : grants) opts.insert(opts.end(), {"--allow", g});
    RunOptions o;
    o.deadline = std::chrono::seconds(120);
    return runCorral(opts, {"sh", "-c", script}, o);
  }
  static std::vector<nlohmann::json> events(const RunResult& r) {
    std::vector<nlohmann::json> out;
    if (r.report && (*r.report)["egress"].is_array())
      for (const auto& e : (*r.report)["egress"]) out.push_back(e);
    return out;
  }
  static void expectAllowed(const nlohmann::json& e, const char* kind, const std::string& dest) {
    EXPECT_EQ(e["kind"], kind) << e.dump();
    EXPECT_EQ(e["decision"], "allow") << e.dump();
    EXPECT_EQ(e["destination"], dest) << e.dump();
    EXPECT_EQ(e["resolved"], std::string(kAddress) + dest.substr(dest.rfind(':'))) << "resolved on the host: " << e.dump();
  }

  TempDir ws_{"clients-ws"};
};

class EgressAllowlistOnly : public ClientsFixture {};
class EgressTcpGrantsSocks5 : public ClientsFixture {};

// Node < 24 reads none of the variables in fetch (undici) or http/https, and Node 20 has no
// switch for it (NODE_USE_ENV_PROXY, --use-env-proxy are Node 24's). Every grant it would
// need is open, the literal's too; the only thing missing is Node's use of the proxy, so every
// attempt must fail inside the sandbox, before the proxy, and nothing may arrive. The control:
// the same node, speaking to the proxy explicitly (an absolute-form request), gets through.
TEST_F(EgressAllowlistOnly, NodeFetchAndHttpIgnoreTheProxyVariablesAndHaveNoWayOut) {
  if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/node (scripts/bootstrap.sh installs nodejs)";
  const std::string js =
      "const http = require('http'), https = require('https');\n"
      "const say = (name, p) => p.then(v => console.log(name, 'ok', v), e => console.log(name, 'fail', (e.cause || e).code));\n"
      "const get = (mod, url, opts) => new Promise((res, rej) => {\n"
      "  const done = r => { let b = ''; r.on('data', d => b += d); r.on('end', () => res(b)); };\n"
      "  const q = opts ? mod.get(url, opts, done) : mod.get(url, done);\n"
      "  q.on('error', rej); q.setTimeout(20000, () => q.destroy(new Error('timeout')));\n"
      "});\n"
      "(async () => {\n"
      "  console.log('HTTPS_PROXY', process.env.HTTPS_PROXY);\n"
      "  await say('fetch-name', fetch('http://" + web() + "/node-fetch').then(r => r.text()));\n"
      "  await say('fetch-literal', fetch('http://" + kAddress + ":" + hp() + "/node-fetch-literal').then(r => r.text()));\n"
      "  await say('fetch-https', fetch('https://" + registry() + "/node-fetch-https').then(r => r.text()));\n"
      "  await say('http-name', get(http, 'http://" + web() + "/node-http'));\n"
      "  await say('https-name', get(https, 'https://" + registry() + "/node-https', {ca: require('fs').readFileSync('/workspace/ca.pem')}));\n"
      "  await say('control', get(http, {host: '127.0.0.1', port: 3128, path: 'http://" + web() + "/node-control', headers: {Host: '" + web() + "'}}));\n"
      "})();\n";
  ws_.write("probe.js", js);
  const std::string before = requests();
  RunResult r = sandbox({"http://" + web(), "https://" + registry(), "http://" + std::string(kAddress) + ":" + hp()},
                    "node /workspace/probe.js");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::istringstream lines(r.out);
  std::string name, verdict, rest;
  std::set<std::string> failed;
  while (lines >> name >> verdict && std::getline(lines, rest)) {
    if (name == "HTTPS_PROXY") {
      EXPECT_EQ(verdict, "http://127.0.0.1:3128") << "the variable was set; node ignored it";
    } else if (name == "control") {
      EXPECT_EQ(verdict + rest, "ok clients ok /node-control") << r.describe();
    } else {
      EXPECT_EQ(verdict, "fail") << claim("egress.allowlist-only", "node got out without the proxy: " + name) << r.describe();
      // Names do not resolve inside (no resolver); the literal has no route (loopback only).
      const std::set<std::string> codes = name == "fetch-literal" ? std::set<std::string>{" ENETUNREACH", " EHOSTUNREACH"}
                                                                  : std::set<std::string>{" ENOTFOUND", " EAI_AGAIN"};
      EXPECT_TRUE(codes.count(rest)) << name << rest << ": " << r.describe();
      failed.insert(name);
    }
  }
  EXPECT_EQ(failed, (std::set<std::string>{"fetch-name", "fetch-literal", "fetch-https", "http-name", "https-name"})) << r.describe();
  EXPECT_EQ(requests(), before + "http /node-control\n") << claim("egress.allowlist-only", "a request node sent directly arrived");
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 1u) << "only the control reached the proxy: " << r.describe();
  expectAllowed(ev[0], "forward", web());
}

// npm reads HTTPS_PROXY itself (its https-proxy config defaults to it): install from an
// internal https registry by name works under an https grant. The refusals: the same npm
// without the grant is refused at the proxy, and with the variables removed it has no way out.
TEST_F(EgressAllowlistOnly, NpmInstallsFromAnHttpsRegistryThroughTheProxyByHttpsProxy) {
  if (::access("/usr/bin/npm", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/npm (scripts/bootstrap.sh installs nodejs)";
  const std::string npm = "npm --registry https://" + registry() +
                          "/ --cafile /workspace/ca.pem --cache /tmp/npm-cache --no-update-notifier --no-audit --no-fund";
  const std::string before = requests();
  RunResult r = sandbox({"https://" + registry()}, npm + " view corral-left-pad version && " + npm +
                                                   " install --prefix /tmp/p corral-left-pad >/dev/null && "
                                                   "node -p \"require('/tmp/p/node_modules/corral-left-pad')\"");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "1.0.0\ncorral-left-pad installed through the proxy\n") << r.describe();
  const std::string got = requests().substr(before.size());
  EXPECT_NE(got.find("https /corral-left-pad/-/corral-left-pad-1.0.0.tgz\n"), std::string::npos) << got;
  const auto ev = events(r);
  ASSERT_FALSE(ev.empty()) << r.describe();
  for (const auto& e : ev) expectAllowed(e, "connect", registry());

  const std::string mid = requests();
  // Granted something else only: refused at the proxy.
  RunResult denied = sandbox({"http://" + web()}, npm + " view corral-left-pad version --fetch-retries 0");
  EXPECT_NE(denied.exit_code, 0) << claim("egress.allowlist-only", "npm reached an ungranted registry") << denied.describe();
  const auto dev = events(denied);
  ASSERT_FALSE(dev.empty()) << denied.describe();
  for (const auto& e : dev) EXPECT_EQ(e["rule"], "no-grant") << e.dump();
  // Granted, but npm told to ignore the proxy: no resolver and no route, so no way out.
  RunResult direct = sandbox({"https://" + registry()},
                         "unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy ALL_PROXY all_proxy; " + npm +
                             " view corral-left-pad version --fetch-retries 0");
  EXPECT_NE(direct.exit_code, 0) << claim("egress.allowlist-only", "npm got out without the proxy") << direct.describe();
  EXPECT_TRUE(events(direct).empty()) << direct.describe();
  EXPECT_EQ(requests(), mid) << claim("egress.allowlist-only", "a refused npm request arrived");
}

// Go's net/http reads HTTP_PROXY and HTTPS_PROXY (ProxyFromEnvironment, the default
// transport's); net.Dial reads nothing. The dials get every grant they would need (tcp grants
// for the name and for the literal) and must still fail inside the sandbox.
TEST_F(EgressAllowlistOnly, GoNetHttpGoesThroughTheProxyAndRawDialsHaveNoWayOut) {
  if (::access("/usr/bin/go", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/go (scripts/bootstrap.sh installs golang-go)";
  ws_.write("probe.go",
            "package main\n\nimport (\n\t\"fmt\"\n\t\"io\"\n\t\"net\"\n\t\"net/http\"\n\t\"os\"\n)\n\n"
            "func main() {\n"
            "\tfor _, arg := range os.Args[1:] {\n"
            "\t\tvar body []byte\n\t\tvar err error\n"
            "\t\tif arg[:4] == \"http\" {\n"
            "\t\t\tvar r *http.Response\n"
            "\t\t\tif r, err = http.Get(arg); err == nil {\n\t\t\t\tbody, err = io.ReadAll(r.Body)\n\t\t\t\tr.Body.Close()\n\t\t\t}\n"
            "\t\t} else {\n"
            "\t\t\tvar c net.Conn\n"
            "\t\t\tif c, err = net.Dial(\"tcp\", arg); err == nil {\n"
            "\t\t\t\tfmt.Fprintf(c, \"GET /go-dial HTTP/1.0\\r\\n\\r\\n\")\n\t\t\t\tbody, err = io.ReadAll(c)\n\t\t\t\tc.Close()\n\t\t\t}\n"
            "\t\t}\n"
            "\t\tif err != nil {\n\t\t\tfmt.Println(\"fail\", err)\n\t\t} else {\n\t\t\tfmt.Println(\"ok\", string(body))\n\t\t}\n"
            "\t}\n}\n");
  // Built on the host (Debian's Go ships its standard library compiled: about a second).
  TempDir cache("go-cache");
  RunOptions o;
  o.env_extra = {"GOCACHE=" + cache / "build", "GOPATH=" + cache / "path", "HOME=" + cache.path(), "GO111MODULE=off", "GOFLAGS="};
  o.deadline = std::chrono::seconds(120);
  RunResult build = run({"/usr/bin/go", "build", "-o", ws_ / "probe", ws_ / "probe.go"}, o);
  ASSERT_EQ(build.exit_code, 0) << build.describe();
  const std::string literal = std::string(kAddress) + ":" + hp();
  const std::string before = requests();
  RunResult r = sandbox({"http://" + web(), "https://" + registry(), "tcp://" + web(), "tcp://" + literal},
                    "SSL_CERT_FILE=/workspace/ca.pem /workspace/probe http://" + web() + "/go-http https://" + registry() +
                        "/go-https " + web() + " " + literal);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Args out = [&] {
    Args v;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }();
  ASSERT_EQ(out.size(), 4u) << r.describe();
  EXPECT_EQ(out[0], "ok clients ok /go-http") << r.describe();
  EXPECT_EQ(out[1], "ok clients ok /go-https") << r.describe();
  // The name does not resolve inside; the literal has no route.
  EXPECT_EQ(out[2].rfind("fail dial tcp: ", 0), 0u) << claim("egress.allowlist-only", "a raw Go dial by name got out") << out[2];
  EXPECT_EQ(out[3], "fail dial tcp " + literal + ": connect: network is unreachable")
      << claim("egress.allowlist-only", "a raw Go dial to an address got out") << out[3];
  EXPECT_EQ(requests(), before + "http /go-http\nhttps /go-https\n") << claim("egress.allowlist-only", "a raw dial arrived");
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 2u) << "only net/http reached the proxy: " << r.describe();
  expectAllowed(ev[0], "forward", web());
  expectAllowed(ev[1], "connect", registry());
}

// java.net.Socket asks the JVM's proxy selector for socket://host:port, which only
// socksProxyHost answers; corral sets it in JAVA_TOOL_OPTIONS beside the http(s) properties, so
// a raw socket by name reaches a tcp grant through SOCKS5, the name resolved on the host. The
// refusals: without the property (cleared on the command line) the name does not resolve;
// the literal address, not granted, is refused by the proxy, and without SOCKS has no route.
// A socket to a server inside the sandbox's own loopback stays direct (socksNonProxyHosts).
TEST_F(EgressTcpGrantsSocks5, JavaSocketsReachATcpGrantBySocksProxyHostInJavaToolOptions) {
  const std::string jdk = sandboxableJava();
  if (jdk.empty()) GTEST_SKIP() << "no JDK under /usr/lib/jvm whose conf is not under /etc";
  ws_.write("Raw.java",
            "import java.io.*;\nimport java.net.*;\n"
            "public class Raw { public static void main(String[] a) throws Exception {\n"
            "  try (Socket s = new Socket()) {\n"
            "    s.connect(new InetSocketAddress(a[0], Integer.parseInt(a[1])), 20000);\n"
            "    s.getOutputStream().write((\"GET \" + a[2] + \" HTTP/1.0\\r\\n\\r\\n\").getBytes());\n"
            "    String all = new String(s.getInputStream().readAllBytes());\n"
            "    System.out.println(\"ok \" + all.substring(all.indexOf(\"\\r\\n\\r\\n\") + 4).split(\"\\n\")[0]);\n"
            "  } catch (IOException e) { System.out.println(\"fail \" + e.getClass().getSimpleName() + \": \" + e.getMessage()); }\n"
            "} }\n");
  RunResult javac = run({jdk + "/bin/javac", "-d", ws_.path(), ws_ / "Raw.java"});
  ASSERT_EQ(javac.exit_code, 0) << javac.describe();
  const std::string java = jdk + "/bin/java -cp /workspace", literal = std::string(kAddress) + " " + hp();
  const std::string before = requests();
  // The inside server: python's http.server on 127.0.0.1:8099 (0x1FA3 in /proc/net/tcp).
  RunResult r = sandbox({"tcp://" + web()},
                    "echo \"$JAVA_TOOL_OPTIONS\"; " + java + " Raw web.corp.test " + hp() + " /java-socks 2>/dev/null; " +
                        java + " -DsocksProxyHost= Raw web.corp.test " + hp() + " /java-direct 2>/dev/null; " + java +
                        " Raw " + literal + " /java-literal 2>/dev/null; " + java + " -DsocksProxyHost= Raw " + literal +
                        " /java-literal-direct 2>/dev/null; "
                        "python3 -m http.server --bind 127.0.0.1 8099 >/dev/null 2>&1 & "
                        "for i in $(seq 100); do grep -q ':1FA3 ' /proc/net/tcp && break; sleep 0.1; done; " +
                        java + " Raw 127.0.0.1 8099 / 2>/dev/null; kill $!");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string p = "3128";
  EXPECT_EQ(r.out, "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + p + " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + p +
                       " -Dhttp.nonProxyHosts= -DsocksProxyHost=127.0.0.1 -DsocksProxyPort=" + p +
                       "\n"
                       "ok clients ok /java-socks\n"
                       "fail UnknownHostException: web.corp.test\n"
                       "fail SocketException: SOCKS: Connection not allowed by ruleset\n"
                       "fail SocketException: Network is unreachable\n"
                       "ok <!DOCTYPE HTML>\n")
      << claim("egress.tcp-grants-socks5", "a java.net.Socket went another way than the tcp grant") << r.describe();
  EXPECT_EQ(requests(), before + "http /java-socks\n") << claim("egress.tcp-grants-socks5", "a refused socket arrived");
  const auto ev = events(r);
  ASSERT_EQ(ev.size(), 2u) << "the two SOCKS attempts, and only those, reached the proxy: " << r.describe();
  expectAllowed(ev[0], "socks5", web());
  EXPECT_EQ(ev[1]["kind"], "socks5") << ev[1].dump();
  EXPECT_EQ(ev[1]["decision"], "refuse") << ev[1].dump();
  EXPECT_EQ(ev[1]["rule"], "no-grant") << ev[1].dump();
  EXPECT_EQ(ev[1]["resolved"], "") << "nothing may be dialled: " << ev[1].dump();
}

}  // namespace
}  // namespace corral::testing
