// SPDX-License-Identifier: Apache-2.0
// End-to-end: every `corral exec` option refuses bad input with 125, one line, and no side effects.
#include <unistd.h>

#include "harness.h"

namespace corral::testing {
namespace {

struct BadCase {
  const char* name;
  std::vector<std::string> args;  // exec options; "@MISSING" is replaced by a path that does not exist
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ExecBadInput : public ::testing::TestWithParam<BadCase> {};

// The command would print "ran"; corral runs with a fresh cwd and TMPDIR that must stay empty.
TEST_P(ExecBadInput, RefusedWith125OneLineAndNoSideEffects) {
  TempDir cwd("badin-cwd"), tmp("badin-tmp"), ws("badin-ws");
  ws.write("keep.txt", "keep");
  std::vector<std::string> args;
  for (std::string a : GetParam().args) {
    if (auto at = a.find("@MISSING"); at != std::string::npos) a.replace(at, 8, cwd / "missing");
    if (auto at = a.find("@WS"); at != std::string::npos) a.replace(at, 3, ws.path());
    args.push_back(a);
  }
  RunOptions o;
  o.cwd = cwd.path();
  o.env_extra = {"TMPDIR=" + tmp.path()};
  RunResult r = run(corralArgv(args, {"/bin/sh", "-c", "echo ran"}, false), o);
  EXPECT_TRUE(refusedBeforeRun(r)) << GetParam().name;
  EXPECT_TRUE(cwd.entries().empty()) << "files created in the cwd";
  EXPECT_TRUE(tmp.entries().empty()) << "files left in TMPDIR";
  EXPECT_EQ(ws.entries(), std::vector<std::string>{"keep.txt"}) << "the workspace changed";
}

INSTANTIATE_TEST_SUITE_P(
    , ExecBadInput,
    ::testing::Values(
        BadCase{"unknown_option", {"--bogus"}}, BadCase{"workspace_missing_dir", {"--workspace", "@MISSING"}},
        BadCase{"workspace_no_value", {"--workspace"}}, BadCase{"workspace_twice", {"--workspace", "@WS", "--workspace", "@WS"}},
        BadCase{"output_dotdot", {"--workspace", "@WS", "--output", "../x"}},
        BadCase{"output_absolute", {"--workspace", "@WS", "--output", "/etc/passwd"}},
        BadCase{"output_control_char", {"--workspace", "@WS", "--output", "a\nb"}},
        BadCase{"net_bogus", {"--net", "bogus"}}, BadCase{"env_no_equals", {"--env", "NOEQUALS"}},
        BadCase{"env_empty_name", {"--env", "=value"}}, BadCase{"memory_junk", {"--memory", "12Q"}},
        BadCase{"memory_zero", {"--memory", "0"}}, BadCase{"memory_negative", {"--memory", "-1M"}},
        BadCase{"memory_twice", {"--memory", "64M", "--memory", "32M"}}, BadCase{"pids_zero", {"--pids", "0"}},
        BadCase{"pids_junk", {"--pids", "many"}}, BadCase{"pids_huge", {"--pids", "99999999999999"}},
        BadCase{"timeout_junk", {"--timeout", "soon"}}, BadCase{"timeout_zero", {"--timeout", "0"}},
        BadCase{"timeout_negative", {"--timeout", "-5s"}}, BadCase{"cpu_time_junk", {"--cpu-time", "1y"}},
        BadCase{"file_size_junk", {"--file-size", "lots"}}, BadCase{"tmp_size_junk", {"--tmp-size", "1Q"}},
        BadCase{"workspace_size_zero", {"--workspace-size", "0"}}, BadCase{"open_files_zero", {"--open-files", "0"}},
        BadCase{"open_files_junk", {"--open-files", "x"}}, BadCase{"ro_bind_relative", {"--ro-bind", "relative/path"}},
        BadCase{"ro_bind_missing", {"--ro-bind", "@MISSING:/opt/x"}}, BadCase{"ro_bind_proc", {"--ro-bind", "/usr/share:/proc/x"}},
        BadCase{"ro_bind_dev", {"--ro-bind", "/usr/share:/dev/x"}}, BadCase{"ro_bind_etc", {"--ro-bind", "/usr/share:/etc/x"}},
        BadCase{"ro_bind_usr", {"--ro-bind", "/usr/share:/usr/x"}}, BadCase{"ro_bind_lib", {"--ro-bind", "/usr/share:/lib/x"}},
        BadCase{"ro_bind_bin", {"--ro-bind", "/usr/share:/bin/x"}}, BadCase{"ro_bind_sbin", {"--ro-bind", "/usr/share:/sbin/x"}},
        BadCase{"ro_bind_workspace", {"--ro-bind", "/usr/share:/workspace/x"}},
        BadCase{"ro_bind_tmp", {"--ro-bind", "/usr/share:/tmp/x"}},
        BadCase{"ro_bind_dotdot", {"--ro-bind", "/usr/share:/opt/../etc"}},
        BadCase{"ro_bind_root", {"--ro-bind", "/usr/share:/"}},
        BadCase{"ro_bind_relative_target", {"--ro-bind", "/usr/share:opt/x"}},
        BadCase{"ro_bind_namespace_handle", {"--ro-bind", "/proc/self/ns/net:/opt/x"}},
        BadCase{"allow_weaker_bogus", {"--allow-weaker", "everything"}}, BadCase{"report_no_value", {"--report"}},
        BadCase{"report_missing_dir", {"--report", "@MISSING/report.json"}}, BadCase{"json_with_value", {"--json=yes"}},
        BadCase{"output_twice", {"--workspace", "@WS", "--output", "a", "--output", "a"}},
        BadCase{"env_bad_name", {"--env", "A B=c"}}, BadCase{"allow_without_proxy", {"--allow", "https://example.com"}},
        BadCase{"allow_bad_scheme", {"--net", "proxy", "--allow", "ftp://example.com"}},
        BadCase{"credential_malformed", {"--net", "proxy", "--credential", "gh"}},
        BadCase{"credential_secret_unset", {"--net", "proxy", "--credential", "gh=CORRAL_TEST_UNSET_VAR@https://api.github.com"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ExecBadInputCommand, MissingCommandIsRefused) {
  TempDir cwd("badin-cwd");
  RunOptions o;
  o.cwd = cwd.path();
  RunResult r = run({corralBin(), "exec", "--"}, o);
  EXPECT_TRUE(refusedBeforeRun(r));
  EXPECT_TRUE(cwd.entries().empty());
}

// --help is an answer, not an error: usage on stdout, exit 0, for every subcommand (doctor
// called it an unknown option).
TEST(ExecBadInputCommand, EverySubcommandAnswersHelpWithItsUsage) {
  for (const char* sub : {"exec", "run", "verify", "keygen", "doctor", "claims"}) {
    RunResult r = run({corralBin(), sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out.rfind(std::string("usage: corral ") + sub, 0), 0u) << r.describe();
    EXPECT_TRUE(r.err.empty()) << r.describe();
  }
}

// Every subcommand echoes an unknown option: with a newline, an escape and a 4 KiB tail in it,
// the echo must still be one short line without control bytes (a terminal or a log parser
// reads it), never show an option's value, and the exit status must be non-zero.
TEST(ExecBadInputCommand, EverySubcommandEchoesAHostileOptionOnOneShortLine) {
  const std::string hostile = "--bo\ngus\x1b[2J" + std::string(4096, 'x');
  std::vector<std::vector<std::string>> cases = {
      {"exec", hostile, "--", "/bin/true"}, {"run", hostile}, {"verify", hostile}, {"keygen", hostile},
      {"doctor", hostile}, {"claims", hostile}, {hostile}};
  // Positional arguments and paths echoed in other errors.
  const std::string path = "/nonexistent/a\nb\x1b[2J\xc2\x9b" "31m\xe2\x80\xae";  // C0, C1 CSI, RLO
  for (std::vector<std::string> more : std::vector<std::vector<std::string>>{
           {"run", path}, {"run", "m.json", path}, {"verify", path}, {"verify", "/tmp", path},
           {"verify", "/tmp", "--public-key", path}, {"exec", "--", path}, {"exec", "--workspace", path, "--", "/bin/true"}})
    cases.push_back(more);
  // A mistyped option with a secret value: the echo names the option, never the value.
  for (const char* sub : {"exec", "run", "verify", "keygen", "doctor", "claims"})
    cases.push_back({sub, "--api-key=corral-sentinel-value", "--", "/bin/true"});
  cases.push_back({"--api-key=corral-sentinel-value"});
  for (size_t n = 0; n < cases.size(); ++n) {
    const std::vector<std::string>& args = cases[n];
    TempDir cwd("badopt-cwd");
    RunOptions o;
    o.cwd = cwd.path();
    std::vector<std::string> argv{corralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv, o);
    const std::string what = "case " + std::to_string(n) + " (" + (args.size() > 1 ? args[0] : "no subcommand") + ")";
    EXPECT_NE(r.exit_code, 0) << what;
    ASSERT_FALSE(r.err.empty()) << what;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": " << r.err.substr(0, 300);
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << what;
    EXPECT_EQ(r.err.find("\xc2\x9b"), std::string::npos) << what << ": a C1 control reached stderr";
    EXPECT_LT(r.err.size(), 400u) << what;
    EXPECT_EQ(r.err.find("corral-sentinel-value"), std::string::npos) << what << ": " << r.err;
    EXPECT_TRUE(cwd.entries().empty()) << what;
  }
}

// Control: the same options with good values run, so the refusals above are about the values.
TEST(ExecBadInputCommand, ControlEveryOptionWithGoodValuesRuns) {
  TempDir ws("goodin-ws"), dir("goodin-report");
  std::vector<std::string> opts{"--workspace", ws.path(), "--output", "o.txt", "--net", "none", "--env", "A=b",
                                "--pids", "64", "--timeout", "10s", "--cpu-time", "5s", "--file-size", "1M",
                                "--tmp-size", "8M", "--workspace-size", "8M", "--open-files", "64",
                                "--ro-bind", "/usr/share:/opt/share", "--report", dir / "r.json", "--memory", "256M"};
  if (rootlessMode()) opts.insert(opts.end(), {"--allow-weaker", "memory"});
  RunResult r = run(corralArgv(opts, {"/bin/sh", "-c", "echo $A > o.txt; test -d /opt/share && echo ran"}, false));
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "ran\n") << r.describe();
  EXPECT_EQ(ws.read("o.txt"), "b\n");
  EXPECT_TRUE(dir.exists("r.json"));
}

// uid 0 of a user namespace that denies setgroups (`unshare -r`) can neither drop its groups
// nor map the sandbox to an unprivileged uid: one line that says so and what to do, 125, and
// the command never runs. The control above runs the same nesting as uid 1000.
TEST(ExecBadInputHost, AsUid0OfANamespaceDenyingSetgroupsTheRefusalSaysWhatToDo) {
  RunResult r = run({"/usr/bin/unshare", "--user", "--map-root-user", corralBin(), "exec", "--", "/bin/echo", "RAN"});
  if (r.err.find("unshare failed") != std::string::npos) GTEST_SKIP() << "cannot create a user namespace here";
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.out.find("RAN"), std::string::npos);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("denies it (as under `unshare --map-root-user`); run corral as another uid there"),
            std::string::npos) << r.err;
}

// A caller's soft RLIMIT_FSIZE of 0 holds corral's own writes too (the sandbox's generated
// /etc, the staged workspace): the run is refused, 125, on one line that names the limit, in
// every launch shape. With --net proxy the launcher had already sent init its go when init
// failed; init went with that message unread, the socket reported a reset before init's own
// failure message, and corral lost it: exit 137 as if the command were killed, and no line.
TEST(ExecBadInputHost, ACallersFileSizeLimitOfZeroIsRefusedOnOneLineInEveryLaunchShape) {
  TempDir ws("fsize-ws");
  ws.write("a.txt", "staged");
  const std::vector<std::vector<std::string>> shapes = {
      {}, {"--net", "proxy"}, {"--workspace", ws.path()}, {"--net", "proxy", "--workspace", ws.path()}};
  for (const auto& opts : shapes) {
    std::string script = "ulimit -S -f 0; exec";
    for (const std::string& a : corralArgv(opts, {"/bin/echo", "RAN"}, false)) script += " '" + a + "'";
    RunResult r = run({"/bin/sh", "-c", script});
    SCOPED_TRACE(script);
    EXPECT_TRUE(refusedBeforeRun(r));
    EXPECT_NE(r.err.find("file too large (corral's own file-size limit, ulimit -f?)"), std::string::npos) << r.describe();
  }
  EXPECT_EQ(ws.entries(), std::vector<std::string>{"a.txt"}) << "the workspace changed";
}

// The sandbox cannot raise a limit above the hard limit corral runs under; asking for more
// failed inside as "sandbox setup: setrlimit: Operation not permitted", naming nothing.
TEST(ExecBadInputHost, ALimitAboveTheCallersHardLimitIsRefusedNamingTheOption) {
  struct Case {
    const char* ulimit;
    std::vector<std::string> opts;
    const char* want;
  };
  const Case cases[] = {{"ulimit -n 64", {"--open-files", "100"}, "--open-files (given, or its default): needs 100, above the hard limit of 64"},
                        {"ulimit -p 50", {"--pids", "100"}, "--pids (given, or its default): needs 101 processes"},
                        {"ulimit -t 5", {"--cpu-time", "10s"}, "--cpu-time (given, or its default): needs 11 s"},
                        {"ulimit -f 8", {"--file-size", "1M"}, "--file-size (given, or its default): needs 1048576 bytes"}};
  for (const Case& c : cases) {
    std::string script = std::string(c.ulimit) + "; exec";
    for (const std::string& a : corralArgv(c.opts, {"/bin/echo", "RAN"}, false)) script += " '" + a + "'";
    RunResult r = run({"/bin/sh", "-c", script});
    SCOPED_TRACE(script);
    EXPECT_TRUE(refusedBeforeRun(r));
    EXPECT_NE(r.err.find(c.want), std::string::npos) << r.describe();
  }
  // Control: within the hard limit it runs.
  std::string ok = "ulimit -n 64; exec";
  for (const std::string& a : corralArgv({"--open-files", "64"}, {"/bin/echo", "RAN"}, false)) ok += " '" + a + "'";
  RunResult r = run({"/bin/sh", "-c", ok});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "RAN\n");
}

// `corral` is a launcher that runs plain `corral exec` itself and hands every other command to
// corral-core beside it (src/cli/launcher.cc). Without corral-core it still runs a sandbox, and
// every command it would hand over is refused on one line naming what is missing: never a
// crash, never a binary looked up anywhere else (PATH holds a decoy that would succeed).
TEST(LauncherHandsOff, WithoutCorralCoreEveryOtherCommandIsRefusedOnOneLine) {
  TempDir bin("launcher-bin"), decoys("launcher-decoys"), cwd("launcher-cwd");
  bin.write("corral", readHostFile(corralBin()), 0755);
  decoys.write("corral-core", "#!/bin/sh\nexit 0\n", 0755);
  const std::string launcher = bin / "corral";
  RunOptions o;
  o.cwd = cwd.path();
  o.env = {"PATH=" + decoys.path() + ":/usr/bin:/bin"};
  RunResult plain = run({launcher, "exec", "--", "/bin/sh", "-c", "echo launched"}, o);
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "launched\n");
  const std::vector<std::vector<std::string>> handed = {
      {"run", "m.json"}, {"verify", cwd.path()}, {"doctor"}, {"claims"}, {"keygen", "--out", "k"},
      {"exec", "--net", "proxy", "--", "/bin/true"}};
  for (const std::vector<std::string>& args : handed) {
    std::vector<std::string> argv{launcher};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv, o);
    EXPECT_EQ(r.exit_code, 125) << args[0] << ": " << r.err;
    // A --net proxy run stays in the launcher, which starts corral-core for its proxy only.
    const std::string what = args[0] == "exec" ? "--net proxy: cannot start " : "cannot start ";
    EXPECT_EQ(r.err, "corral: " + what + bin.path() + "/corral-core: No such file or directory\n") << args[0];
    EXPECT_TRUE(cwd.entries().empty()) << args[0];
  }
  // A --net proxy run whose proxy cannot start is refused like any other: its report says why.
  TempDir reports("launcher-report");
  RunResult r = run({launcher, "exec", "--net", "proxy", "--report", reports / "r.json", "--", "/bin/true"}, o);
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  const std::string report = reports.read("r.json");
  EXPECT_NE(report.find("\"exit_code\":125"), std::string::npos) << report;
  EXPECT_NE(report.find("corral-core: No such file or directory"), std::string::npos) << report;
}

// The proxy process of a launcher's --net proxy run is corral-core's internal command: the
// launcher never hands it over, and corral-core started by hand (wrong parent, no control
// socket on fd 3) refuses on one line and serves nothing.
TEST(LauncherHandsOff, TheProxyProcessCommandIsNotForHands) {
  RunResult viaLauncher = run({corralBin(), "__egress-serve", "1", "--net", "proxy", "--", "/bin/true"});
  EXPECT_EQ(viaLauncher.exit_code, 125) << viaLauncher.describe();
  EXPECT_EQ(viaLauncher.err, "corral: unknown command __egress-serve (try corral --help)\n");
  const std::string core = corralBin().substr(0, corralBin().rfind('/') + 1) + "corral-core";
  for (const std::string& parent : {std::string("1"), std::to_string(::getpid()), std::string("x")}) {
    RunResult r = run({core, "__egress-serve", parent, "--net", "proxy", "--", "/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(r.err, "corral: __egress-serve is started by corral exec --net proxy, not by hand\n") << parent;
    EXPECT_EQ(r.out, "");
  }
}

// Started from a memfd (fexecve), /proc/self/exe names no directory: the launcher must not
// go looking for "/corral-core" at the root of the file system.
TEST(LauncherHandsOff, StartedFromAnAnonymousFileItLooksNowhereElse) {
  const std::string py =
      "import os,sys\n"
      "fd=os.memfd_create('corral',0)\n"
      "os.write(fd,open(sys.argv[1],'rb').read())\n"
      "os.execve(fd,['corral','doctor'],{})\n";
  RunResult r = run({"/usr/bin/python3", "-c", py, corralBin()});
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_EQ(r.err.rfind("corral: cannot find corral-core: this corral was not started from a file (/memfd:", 0), 0u)
      << r.err;
}

// Control: with corral-core beside it, the same launcher hands over and the command runs.
TEST(LauncherHandsOff, ControlWithCorralCoreBesideItTheCommandRuns) {
  TempDir bin("launcher-bin"), cwd("launcher-cwd");
  const std::string build = corralBin().substr(0, corralBin().rfind('/') + 1);
  bin.write("corral", readHostFile(corralBin()), 0755);
  bin.write("corral-core", readHostFile(build + "corral-core"), 0755);
  RunOptions o;
  o.cwd = cwd.path();
  RunResult r = run({bin / "corral", "keygen", "--out", cwd / "k"}, o);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(cwd.exists("k/audit-ed25519-public.pem")) << "keygen wrote nothing";
  RunResult proxied = run({bin / "corral", "exec", "--net", "proxy", "--", "/bin/sh", "-c", "echo $HTTPS_PROXY"}, o);
  EXPECT_EQ(proxied.exit_code, 0) << proxied.err;
  EXPECT_EQ(proxied.out.rfind("http://127.0.0.1:", 0), 0u) << proxied.out;
}

// corral under a seccomp filter that refuses clone3 (a container runtime's default profile
// does; here, corral's own sandbox, whose filter answers ENOSYS) must blame the filter and
// name the fix, not tell the user to upgrade a kernel that has the call.
TEST(ExecBadInputHost, UnderASeccompFilterTheRefusalBlamesTheFilterNotTheKernel) {
  const std::string build = corralBin().substr(0, corralBin().rfind('/'));
  // Under ASan the nested binaries' LeakSanitizer cannot work inside the filter: without this
  // it ends them with its own error before they print.
  const std::vector<std::string> opts{"--ro-bind", build + ":/opt/c", "--env", "ASAN_OPTIONS=detect_leaks=0"};
  RunResult exec = runCorral(opts, {"/opt/c/corral", "exec", "--", "/bin/true"});
  EXPECT_EQ(exec.exit_code, 125) << exec.describe();
  EXPECT_NE(exec.err.find("corral: clone3 refused (ENOSYS): corral itself runs under a seccomp filter"), std::string::npos)
      << exec.describe();
  EXPECT_NE(exec.err.find("--security-opt seccomp=unconfined"), std::string::npos) << exec.describe();
  RunResult doctor = runCorral(opts, {"/opt/c/corral-core", "doctor"});
  EXPECT_NE(doctor.exit_code, 0) << doctor.describe();
  EXPECT_NE(doctor.out.find("clone3 refused (ENOSYS) although this kernel has it"), std::string::npos) << doctor.describe();
  EXPECT_EQ(doctor.out.find("or newer is needed"), std::string::npos) << "blamed the kernel" << doctor.describe();
}

}  // namespace
}  // namespace corral::testing
