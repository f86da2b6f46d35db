// SPDX-License-Identifier: Apache-2.0
// The daemon's API surface with real clients: health, version, the error format, the caps on
// headers and bodies, strict parsing, the lock on the state directory, the socket's modes.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

class DaemonApi : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(d.start()) << "the daemon did not start: " << d.stderrText(); }
  Daemon d;
};

void expectError(const Daemon::Http& h, int status, const std::string& code) {
  EXPECT_EQ(h.status, status) << h.body;
  auto j = h.json();
  ASSERT_TRUE(j.is_object()) << h.body;
  ASSERT_TRUE(j.contains("error") && j["error"].is_object()) << h.body;
  EXPECT_EQ(j["error"]["code"], code) << h.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << h.body;
}

TEST_F(DaemonApi, HealthAndVersionAnswer) {
  auto h = d.curl("GET", "/v1/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  auto v = d.curl("GET", "/v1/version");
  EXPECT_EQ(v.status, 200);
  EXPECT_EQ(v.json()["api"], "v1");
  EXPECT_TRUE(v.json()["schema_version"].is_number_integer());
}

TEST_F(DaemonApi, UnknownRoutesAndMethodsAreJsonErrors) {
  expectError(d.curl("GET", "/v2/health"), 404, "not_found");
  expectError(d.curl("GET", "/v1/nothing"), 404, "not_found");
  expectError(d.curl("DELETE", "/v1/health"), 405, "method_not_allowed");
  expectError(d.curl("GET", "/v1/health?x=1"), 400, "invalid_path");
  expectError(d.curl("GET", "/v1//health"), 400, "invalid_path");
  expectError(d.curl("GET", "/v1/sessions/%2e%2e"), 400, "invalid_path");
  expectError(d.curl("GET", "/v1/sessions/0123456789abcdef"), 404, "not_found");
}

TEST_F(DaemonApi, BodiesAreParsedStrictly) {
  expectError(d.curl("POST", "/v1/sessions", "{\"name\":\"x\",\"nmae\":1}"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{\"limits\":{\"memroy\":\"1G\"}}"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{\"limits\":{\"pids\":\"ten\"}}"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{\"limits\":{\"memory\":\"12Q\"}}"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{\"env\":[\"NOEQUALS\"]}"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{not json"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "[1,2]"), 400, "invalid_request");
  expectError(d.curl("POST", "/v1/sessions", "{} trailing"), 400, "invalid_request");
  expectError(d.curl("GET", "/v1/sessions", "{}"), 400, "invalid_request");
  // Nothing was created by any of them.
  EXPECT_EQ(d.curl("GET", "/v1/sessions").json()["sessions"].size(), 0u);
}

TEST_F(DaemonApi, OversizedHeadersAndBodiesAreRefused) {
  const std::string big_header = "X-Big: " + std::string(20000, 'a');
  expectError(d.curl("GET", "/v1/health", "", {"-H", big_header}), 431, "header_too_large");
  const std::string big_body = "{\"name\":\"" + std::string((1 << 20) + 10, 'a') + "\"}";
  TempDir t("body");
  t.write("body.json", big_body);
  auto h = d.curl("POST", "/v1/sessions", "@" + (t / "body.json"));
  expectError(h, 413, "body_too_large");
}

TEST_F(DaemonApi, SecondDaemonOnTheSameStateDirIsRefused) {
  RunResult r = d.startSecond();
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("another corral daemon is running on"), std::string::npos) << r.err;
  EXPECT_EQ(d.curl("GET", "/v1/health").status, 200) << "the first daemon must go on serving";
}

TEST_F(DaemonApi, SocketIsOwnerOnlyInAnOwnerOnlyDirectory) {
  struct stat st;
  ASSERT_EQ(::stat(d.socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  const std::string dir = d.socket().substr(0, d.socket().rfind('/'));
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((d.stateDir() + "/state.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(DaemonApi, PythonStdlibClientTalksToIt) {
  const std::string script =
      "import http.client, json, socket, sys\n"
      "class C(http.client.HTTPConnection):\n"
      "    def connect(self):\n"
      "        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "        self.sock.connect(sys.argv[1])\n"
      "c = C('corral')\n"
      "c.request('GET', '/v1/version')\n"
      "r = c.getresponse()\n"
      "print(r.status, json.loads(r.read())['api'])\n";
  RunResult r = run({"/usr/bin/python3", "-c", script, d.socket()});
  EXPECT_EQ(r.out, "200 v1\n") << r.describe();
}

TEST_F(DaemonApi, PythonExampleAgentLoopRunsInASession) {
  // examples/python/agent_loop.py over examples/python/corral_client.py, as a user would run it.
  RunOptions o;
  o.env_extra = {"CORRAL_SOCKET=" + d.socket(), "PYTHONPATH=" CORRAL_EXAMPLES_DIR, "PYTHONDONTWRITEBYTECODE=1"};
  RunResult r = run({"/usr/bin/python3", CORRAL_EXAMPLES_DIR "/agent_loop.py"}, o);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "42\n") << r.describe();
  EXPECT_EQ(d.curl("GET", "/v1/sessions").json()["sessions"].size(), 0u) << "the example removes its session";
}

TEST_F(DaemonApi, PythonExampleClientCopiesFilesInAndOut) {
  const std::string script =
      "import corral_client\n"
      "c = corral_client.Corral()\n"
      "s = c.create_session(limits={'allow_weaker': ['workspace-size']}, ttl='10m')\n"
      "c.run(s['id'], ['mkdir', 'my dir'])\n"
      "print(c.upload(s['id'], 'my dir/a b.txt', b'hello\\n')['bytes'])\n"
      "print(c.run(s['id'], ['cat', 'my dir/a b.txt'])['stdout'].decode(), end='')\n"
      "print(c.download(s['id'], '/my dir/a b.txt').decode(), end='')\n"
      "print([e['name'] for e in c.stat(s['id'], 'my dir')['entries']])\n"
      "c.remove_file(s['id'], 'my dir/a b.txt')\n"
      "try:\n"
      "    c.download(s['id'], '../etc/passwd')\n"
      "except corral_client.CorralError as e:\n"
      "    print(e.status)\n"
      "c.remove_session(s['id'])\n";
  RunOptions o;
  o.env_extra = {"CORRAL_SOCKET=" + d.socket(), "PYTHONPATH=" CORRAL_EXAMPLES_DIR, "PYTHONDONTWRITEBYTECODE=1"};
  RunResult r = run({"/usr/bin/python3", "-c", script}, o);
  EXPECT_EQ(r.out, "6\nhello\nhello\n['a b.txt']\n400\n") << r.describe();
}

TEST_F(DaemonApi, ResponsesMatchTheOpenApiDocument) {
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).exit_code != 0)
    GTEST_SKIP() << "python3-jsonschema is not installed (scripts/bootstrap.sh installs it): docs/openapi.json NOT validated";
  std::vector<std::string> argv = {"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/openapi_check.py", d.socket(),
                                   CORRAL_DOCS_DIR "/openapi.json"};
  if (::geteuid() != 0) argv.push_back("--weaker");
  RunResult r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find(", 0 failures"), std::string::npos) << r.out;
}

TEST(DaemonClient, WithoutADaemonTheClientSaysWhereItLooked) {
  TempDir t("nodaemon");
  RunResult r = run({corralBin(), "session", "ls"}, {.env_extra = {"CORRAL_SOCKET=" + (t / "none.sock")}});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find(t / "none.sock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("corral daemon"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(DaemonClient, UnknownOptionsAreRefused) {
  TempDir t("daemonopts");
  RunResult r = run({corralBin(), "daemon", "--state-dir", t.path(), "--bogus"});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("unknown option --bogus"), std::string::npos) << r.err;
  RunResult s = run({corralBin(), "session", "create", "--memroy", "1G"}, {.env_extra = {"CORRAL_SOCKET=" + (t / "x.sock")}});
  EXPECT_EQ(s.exit_code, 125) << s.describe();
  EXPECT_NE(s.err.find("unknown option --memroy"), std::string::npos) << s.err;
}

}  // namespace
}  // namespace corral::testing
