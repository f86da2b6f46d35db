// SPDX-License-Identifier: Apache-2.0
// End-to-end: python3, git, curl and sh pipelines running inside `corral exec`.
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"

namespace corral::testing {
namespace {

RunResult inWorkspace(const TempDir& ws, std::vector<std::string> opts, const std::vector<std::string>& command,
                      const RunOptions& run_opts = {}) {
  opts.insert(opts.begin(), {"--workspace", ws.path()});
  return runCorral(opts, command, run_opts);
}

TEST(ExecClients, PythonReadsAStagedFileAndWritesADeclaredOutput) {
  TempDir ws("py");
  ws.write("input.txt", "hello corral\n");
  RunResult r = inWorkspace(ws, {"--output", "out.txt"},
                            {"python3", "-c",
                             "import pathlib; p = pathlib.Path('input.txt');"
                             "pathlib.Path('out.txt').write_text(p.read_text().upper())"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.read("out.txt"), "HELLO CORRAL\n");
  ASSERT_TRUE(r.report) << r.describe();
  EXPECT_EQ((*r.report)["outputs"][0].value("status", ""), "copied") << r.describe();
  EXPECT_EQ((*r.report)["outputs"][0].value("bytes", 0), 13) << r.describe();
  EXPECT_EQ(ws.read("input.txt"), "hello corral\n");
}

TEST(ExecClients, GitInitAddCommitInTheWorkspace) {
  TempDir ws("git");
  ws.write("a.txt", "first\n");
  RunResult r = inWorkspace(ws, {},
                            {"sh", "-c",
                             "git init -q . && git add a.txt && "
                             "git -c user.name=corral -c user.email=corral@example.invalid commit -qm first && "
                             "git rev-list --count HEAD && git log --format=%s && git status --porcelain"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "1\nfirst\n") << r.describe();
  EXPECT_FALSE(ws.exists(".git")) << "a .git made inside reached the host workspace without --output";
}

TEST(ExecClients, CurlCannotReachAHostListener) {
  TcpListener host;
  host.serveHttp("hello from the host");
  std::string url = "http://127.0.0.1:" + std::to_string(host.port()) + "/";
  RunResult control = run({"/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "5", url});
  ASSERT_EQ(control.out, "hello from the host") << "control: the host server must answer" << control.describe();
  RunResult r = runCorral({}, {"curl", "-sS", "--max-time", "5", url});
  EXPECT_NE(r.exit_code, 0) << "curl inside reached the host's 127.0.0.1 listener" << r.describe();
  EXPECT_EQ(r.out.find("hello from the host"), std::string::npos) << r.describe();
}

TEST(ExecClients, ControlCurlReachesAServerInsideTheSameSandbox) {
  TempDir ws("curl");
  ws.write("hello.txt", "served inside\n");
  // The server and curl share the sandbox's loopback; the port is the kernel's choice.
  const char* script =
      "import http.server, subprocess, threading\n"
      "class Quiet(http.server.SimpleHTTPRequestHandler):\n"
      "    def log_message(self, *args): pass\n"
      "s = http.server.HTTPServer(('127.0.0.1', 0), Quiet)\n"
      "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
      "url = 'http://127.0.0.1:%d/hello.txt' % s.server_port\n"
      "raise SystemExit(subprocess.call(['curl', '-sS', '--max-time', '10', '-o', 'got.txt', url]))\n";
  RunResult r = inWorkspace(ws, {"--output", "got.txt"}, {"python3", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.read("got.txt"), "served inside\n");
}

TEST(ExecClients, ShellPipelineRuns) {
  RunResult r = runCorral({}, {"sh", "-c", "printf 'b\\na\\nc\\n' | sort | tr a-z A-Z | head -n 2"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "A\nB\n") << r.describe();
}

TEST(ExecClients, CallersStdinReachesThePipeline) {
  TempDir dir("stdin");
  dir.write("input", "one\ntwo\nthree\n");
  int fd = open((dir / "input").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  RunOptions o;
  o.stdin_fd = fd;
  RunResult r = runCorral({}, {"sh", "-c", "grep -c o"}, o);
  close(fd);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "2\n") << r.describe();
}

TEST(ExecClients, StderrOfTheCommandPassesThrough) {
  RunResult r = runCorral({}, {"sh", "-c", "echo to-stdout; echo to-stderr >&2"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "to-stdout\n");
  ASSERT_FALSE(r.stderrLines().empty()) << r.describe();
  EXPECT_EQ(r.stderrLines().front(), "to-stderr") << r.describe();
}

}  // namespace
}  // namespace corral::testing
