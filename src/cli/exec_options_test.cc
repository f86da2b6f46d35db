// SPDX-License-Identifier: Apache-2.0
// Tests for `corral exec` option parsing: every option, good and hostile values.
#include "cli/exec_options.h"

#include <gtest/gtest.h>

#include <functional>

#include "policy/env_policy.h"

namespace corral::cli {
namespace {

using Args = std::vector<std::string>;
using sandbox::Limit;
using std::chrono::milliseconds;

ExecInvocation parseOk(const Args& args) {
  auto r = parseExecArgs(args);
  if (!r.ok()) {
    ADD_FAILURE() << "refused: " << r.error().message();
    return {};
  }
  return std::move(r).value();
}

std::string parseErr(const Args& args) {
  auto r = parseExecArgs(args);
  if (r.ok()) return "<accepted>";
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
  return r.error().message();
}

Args with(Args opts, Args cmd = {"--", "true"}) {
  opts.insert(opts.end(), cmd.begin(), cmd.end());
  return opts;
}

const char* const kValueOptions[] = {"--workspace", "--output",   "--net",        "--allow",    "--credential", "--lease-ca", "--env",
                                     "--memory",    "--pids",     "--timeout",    "--cpu-time", "--file-size",
                                     "--tmp-size",  "--workspace-size", "--open-files", "--ro-bind",
                                     "--allow-weaker", "--report"};

TEST(ParseExecArgs, DefaultsWhenOnlyACommandIsGiven) {
  ExecInvocation inv = parseOk({"--", "echo", "hi"});
  const sandbox::Limits d;
  EXPECT_EQ(inv.spec.argv, (Args{"echo", "hi"}));
  EXPECT_EQ(inv.spec.env, policy::env::buildEnvironment({}));
  EXPECT_FALSE(inv.spec.workspace);
  EXPECT_TRUE(inv.spec.outputs.empty());
  EXPECT_TRUE(inv.spec.ro_binds.empty());
  EXPECT_FALSE(inv.spec.limits.memory_bytes);
  EXPECT_EQ(inv.spec.limits.pids, d.pids);
  EXPECT_FALSE(inv.spec.limits.timeout);
  EXPECT_FALSE(inv.spec.limits.cpu_time);
  EXPECT_EQ(inv.spec.limits.file_size_bytes, d.file_size_bytes);
  EXPECT_EQ(inv.spec.limits.open_files, d.open_files);
  EXPECT_EQ(inv.spec.limits.tmp_bytes, d.tmp_bytes);
  EXPECT_EQ(inv.spec.limits.workspace_bytes, d.workspace_bytes);
  EXPECT_TRUE(inv.spec.limits.allow_weaker.empty());
  EXPECT_FALSE(inv.json);
  EXPECT_FALSE(inv.report_file);
  EXPECT_FALSE(inv.timing);
  EXPECT_FALSE(inv.help);
}

struct Good {
  Args options;
  std::function<void(const ExecInvocation&)> check;
};

TEST(ParseExecArgs, EveryOptionAcceptsAGoodValueInBothForms) {
  const Good cases[] = {
      {{"--workspace", "/w"}, [](auto& i) { EXPECT_EQ(i.spec.workspace, "/w"); }},
      {{"--workspace=rel/dir"}, [](auto& i) { EXPECT_EQ(i.spec.workspace, "rel/dir"); }},
      {{"--output", "a/b", "--output=c", "--output", "-dash"},
       [](auto& i) { EXPECT_EQ(i.spec.outputs, (Args{"a/b", "c", "-dash"})); }},
      {{"--net", "none"}, [](auto& i) { EXPECT_FALSE(i.net_proxy); }},
      {{"--net=none"}, [](auto& i) { EXPECT_FALSE(i.net_proxy); }},
      {{"--net", "proxy"}, [](auto& i) { EXPECT_TRUE(i.net_proxy); EXPECT_TRUE(i.allow.empty()); }},
      {{"--net=proxy", "--allow", "https://API.example.com", "--allow=http://*.example.org:8080", "--allow", "http://127.0.0.1:9"},
       [](auto& i) {
         ASSERT_EQ(i.allow.size(), 3u);
         EXPECT_EQ(i.allow[0].text(), "https://api.example.com:443");
         EXPECT_EQ(i.allow[1].text(), "http://*.example.org:8080");
         EXPECT_EQ(i.allow[2].text(), "http://127.0.0.1:9");
       }},
      {{"--env", "HTTP_PROXY=http://x:1"}, [](auto& i) { EXPECT_FALSE(i.net_proxy); }},  // harmless without a network
      {{"--net", "proxy", "--credential", "gh=GH_TOKEN@https://api.github.com", "--credential=local=SVC@http://127.0.0.1:8080;format=Token {}",
        "--lease-ca", "/etc/ca.pem"},
       [](auto& i) {
         ASSERT_EQ(i.credentials.size(), 2u);
         EXPECT_EQ(i.credentials[0].name, "gh");
         EXPECT_EQ(i.credentials[0].env, "GH_TOKEN");
         EXPECT_EQ(i.credentials[0].grant.text(), "https://api.github.com:443");
         EXPECT_EQ(i.credentials[1].format, "Token {}");
         EXPECT_EQ(i.lease_ca, "/etc/ca.pem");
       }},
      {{"--env", "FOO=bar", "--env=BAZ=x=y", "--env", "FOO=2", "--env", "HOME=/h"},
       [](auto& i) {
         EXPECT_EQ(i.spec.env, policy::env::buildEnvironment({{"FOO", "bar"}, {"BAZ", "x=y"}, {"FOO", "2"}, {"HOME", "/h"}}));
       }},
      {{"--memory", "64M"}, [](auto& i) { EXPECT_EQ(i.spec.limits.memory_bytes, 64ull << 20); }},
      {{"--memory=1G"}, [](auto& i) { EXPECT_EQ(i.spec.limits.memory_bytes, 1ull << 30); }},
      {{"--pids", "100"}, [](auto& i) { EXPECT_EQ(i.spec.limits.pids, 100u); }},
      {{"--pids=1048576"}, [](auto& i) { EXPECT_EQ(i.spec.limits.pids, 1048576u); }},
      {{"--timeout", "1.5s"}, [](auto& i) { EXPECT_EQ(i.spec.limits.timeout, milliseconds(1500)); }},
      {{"--timeout=250ms"}, [](auto& i) { EXPECT_EQ(i.spec.limits.timeout, milliseconds(250)); }},
      {{"--cpu-time", "2m"}, [](auto& i) { EXPECT_EQ(i.spec.limits.cpu_time, milliseconds(120'000)); }},
      {{"--cpu-time=10"}, [](auto& i) { EXPECT_EQ(i.spec.limits.cpu_time, milliseconds(10'000)); }},
      {{"--file-size", "1K"}, [](auto& i) { EXPECT_EQ(i.spec.limits.file_size_bytes, 1024u); }},
      {{"--tmp-size=2G"}, [](auto& i) { EXPECT_EQ(i.spec.limits.tmp_bytes, 2ull << 30); }},
      {{"--workspace-size", "3G"}, [](auto& i) { EXPECT_EQ(i.spec.limits.workspace_bytes, 3ull << 30); }},
      {{"--open-files", "1"}, [](auto& i) { EXPECT_EQ(i.spec.limits.open_files, 1u); }},
      {{"--open-files=1048576"}, [](auto& i) { EXPECT_EQ(i.spec.limits.open_files, 1048576u); }},
      {{"--ro-bind", "/opt/tool", "--ro-bind=/host/data:/data", "--ro-bind", "/usr/share/dict:/dict"},
       [](auto& i) {
         ASSERT_EQ(i.spec.ro_binds.size(), 3u);
         EXPECT_EQ(i.spec.ro_binds[0].host, "/opt/tool");
         EXPECT_EQ(i.spec.ro_binds[0].sandbox, "/opt/tool");
         EXPECT_EQ(i.spec.ro_binds[1].host, "/host/data");
         EXPECT_EQ(i.spec.ro_binds[1].sandbox, "/data");
         EXPECT_EQ(i.spec.ro_binds[2].host, "/usr/share/dict");  // the host side may be anywhere
         EXPECT_EQ(i.spec.ro_binds[2].sandbox, "/dict");
       }},
      {{"--allow-weaker", "memory", "--allow-weaker=pids", "--allow-weaker", "memory"},
       [](auto& i) { EXPECT_EQ(i.spec.limits.allow_weaker, (std::vector<Limit>{Limit::kMemory, Limit::kPids})); }},
      {{"--allow-weaker", "cpu-time", "--allow-weaker", "timeout", "--allow-weaker", "file-size", "--allow-weaker",
        "open-files", "--allow-weaker", "tmp-size", "--allow-weaker", "workspace-size"},
       [](auto& i) { EXPECT_EQ(i.spec.limits.allow_weaker.size(), 6u); }},
      {{"--json"}, [](auto& i) { EXPECT_TRUE(i.json); }},
      {{"--report", "/tmp/r.json"}, [](auto& i) { EXPECT_EQ(i.report_file, "/tmp/r.json"); }},
      {{"--report=out.json"}, [](auto& i) { EXPECT_EQ(i.report_file, "out.json"); }},
      {{"--timing"}, [](auto& i) { EXPECT_TRUE(i.timing); }},
  };
  for (const Good& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.options));
    ExecInvocation inv = parseOk(with(c.options));
    EXPECT_EQ(inv.spec.argv, Args{"true"});
    c.check(inv);
  }
}

TEST(ParseExecArgs, HelpNeedsNoCommandAndStopsParsing) {
  for (const Args& args : {Args{"--help"}, Args{"-h"}, Args{"--json", "--help", "--bogus"}}) {
    auto r = parseExecArgs(args);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(r->help);
  }
  EXPECT_EQ(parseErr({"--bogus", "--help"}), "unknown option --bogus");
}

TEST(ParseExecArgs, OptionsEndAtDoubleDashOrFirstNonOption) {
  EXPECT_EQ(parseOk({"--memory", "1M", "echo", "--memory", "x", "--"}).spec.argv, (Args{"echo", "--memory", "x", "--"}));
  EXPECT_EQ(parseOk({"--", "--help"}).spec.argv, Args{"--help"});
  EXPECT_EQ(parseOk({"--", "-weird", "--json"}).spec.argv, (Args{"-weird", "--json"}));
  EXPECT_EQ(parseOk({"--", "--"}).spec.argv, Args{"--"});
  EXPECT_EQ(parseOk({"-"}).spec.argv, Args{"-"});
  ExecInvocation inv = parseOk({"--json", "--", "-x"});
  EXPECT_TRUE(inv.json);
  EXPECT_EQ(inv.spec.argv, Args{"-x"});
}

TEST(ParseExecArgs, CommandIsRequiredAndWellFormed) {
  const std::string missing = "missing command: corral exec [options] -- CMD [ARGS...]";
  EXPECT_EQ(parseErr({}), missing);
  EXPECT_EQ(parseErr({"--"}), missing);
  EXPECT_EQ(parseErr({"--json"}), missing);
  EXPECT_EQ(parseErr({"--memory", "1M", "--"}), missing);
  EXPECT_EQ(parseErr({"--", ""}), "command: the program name is empty");
  EXPECT_EQ(parseErr({"--", "sh", "-c", std::string("a\0b", 3)}), "command argument 2 contains a NUL byte");
}

TEST(ParseExecArgs, EveryValueOptionReportsAMissingValue) {
  for (const char* opt : kValueOptions) {
    const std::string want = std::string(opt) + ": missing value";
    EXPECT_EQ(parseErr({opt}), want);
    EXPECT_EQ(parseErr({std::string(opt) + "="}), want);
    EXPECT_EQ(parseErr({opt, "--", "true"}), want);
    EXPECT_EQ(parseErr({opt, "--json", "--", "true"}), want);
  }
}

TEST(ParseExecArgs, EverySingleValuedOptionRefusesADuplicate) {
  const std::pair<const char*, const char*> once[] = {
      {"--workspace", "/w"}, {"--net", "none"},    {"--memory", "1M"},    {"--pids", "5"},
      {"--timeout", "1s"},   {"--cpu-time", "1s"}, {"--file-size", "1M"}, {"--tmp-size", "1M"},
      {"--workspace-size", "1M"}, {"--open-files", "5"}, {"--report", "r.json"}};
  for (const auto& [opt, value] : once) {
    // Mixed spellings still count as the same option.
    EXPECT_EQ(parseErr(with({opt, value, std::string(opt) + "=" + value})), std::string(opt) + ": given twice");
  }
  EXPECT_EQ(parseErr(with({"--json", "--json"})), "--json: given twice");
  EXPECT_EQ(parseErr(with({"--timing", "--timing"})), "--timing: given twice");
}

// A tmpfs size within a page of 2^64 wraps to 0 in the kernel, and 0 is "no limit": every
// sandbox size stops at 1T, as in a manifest.
TEST(ParseExecArgs, SandboxSizesStopAtOneTebibyte) {
  for (const char* opt : {"--memory", "--file-size", "--tmp-size", "--workspace-size"}) {
    EXPECT_EQ(parseErr(with({opt, "18446744073709551615"})),
              std::string(opt) + " 18446744073709551615: larger than 1T, the most a sandbox limit takes");
    EXPECT_EQ(parseErr(with({opt, "1025G"})), std::string(opt) + " 1025G: larger than 1T, the most a sandbox limit takes");
    EXPECT_TRUE(parseExecArgs(with({opt, "1T"})).ok()) << opt;
  }
}

struct Bad {
  Args options;
  std::string message;
};

// One table for every class of bad value; each message is checked exactly.
TEST(ParseExecArgs, RefusesBadValuesWithOneLineMessages) {
  const std::string not_limit =
      "not a limit (memory, pids, cpu-time, timeout, file-size, open-files, tmp-size, workspace-size)";
  const Bad cases[] = {
      // unknown options and misuse of flags
      {{"--foo"}, "unknown option --foo"},
      {{"--foo=secret"}, "unknown option --foo"},
      {{"--Memory", "1M"}, "unknown option --Memory"},
      {{"-x"}, "unknown option -x"},
      {{"--json=1"}, "--json: takes no value"},
      {{"--timing=yes"}, "--timing: takes no value"},
      {{"--help=me"}, "--help: takes no value"},
      // network
      {{"--net", "host"}, "--net host: not a network mode (none or proxy)"},
      {{"--allow", "https://example.com"}, "--allow needs --net proxy"},
      {{"--net", "none", "--allow=https://example.com:443"}, "--allow needs --net proxy"},
      {{"--net", "proxy", "--allow", "https://user:token@example.com"},
       "--allow: userinfo (user@) is not allowed in a grant (URL not shown)"},
      {{"--net", "proxy", "--allow", "ftp://example.com"}, "--allow: the scheme must be http, https or tcp (URL not shown)"},
      {{"--net", "proxy", "--allow", "tcp://git.example.com"}, "--allow: a tcp grant needs a port (tcp://host:port) (URL not shown)"},
      {{"--upstream-proxy", "http://p:3128"}, "--upstream-proxy needs --net proxy"},
      {{"--net", "proxy", "--upstream-proxy", "https://u:pw@p:3128"},
       "--upstream-proxy: upstream proxy: the parent is spoken to in plain HTTP: the scheme must be http (URL not shown)"},
      {{"--net", "proxy", "--upstream-proxy-auth", "VAR"}, "--upstream-proxy-auth needs --upstream-proxy"},
      {{"--net", "proxy", "--upstream-proxy", "env", "--upstream-proxy-auth", "user:pw"},
       "--upstream-proxy-auth: expected an environment variable name [A-Z_][A-Z0-9_]* holding user:password"},
      {{"--net", "proxy", "--allow", "https://example.com/path?key=x"}, "--allow: a grant has no query or fragment (URL not shown)"},
      {{"--net", "proxy", "--allow", "https://a.com", "--allow", "HTTPS://A.com:443"},
       "--allow https://a.com:443: given twice"},
      {{"--net", "proxy", "--env", "HTTPS_PROXY=http://evil:1"},
       "--env HTTPS_PROXY: set by --net proxy (it points at corral's egress proxy)"},
      {{"--credential", "gh=GH_TOKEN@https://api.github.com"}, "--credential needs --net proxy"},
      {{"--net", "proxy", "--lease-ca", "/ca.pem"}, "--lease-ca needs --credential"},
      {{"--net", "proxy", "--credential", "gh=A@https://a.com", "--credential", "gh=B@https://b.com"}, "--credential gh: given twice"},
      {{"--net", "proxy", "--credential", "a=TOK@https://a.com", "--credential", "b=TOK@https://b.com"},
       "--credential b: variable TOK already names credential a"},
      {{"--net", "proxy", "--credential", "a=PATH@https://a.com"}, "--credential a: variable PATH is set by corral inside the sandbox"},
      {{"--net", "proxy", "--credential", "a=HTTPS_PROXY@https://a.com"},
       "--credential a: variable HTTPS_PROXY is set by corral inside the sandbox"},
      {{"--net", "proxy", "--env", "TOK=x", "--credential", "a=TOK@https://a.com"},
       "--credential a: variable TOK is also given with --env"},
      {{"--net", "proxy", "--env", "no_proxy=*"}, "--env no_proxy: set by --net proxy (it points at corral's egress proxy)"},
      // sizes: malformed, zero, overflow
      {{"--memory", "12Q"}, "--memory 12Q: '12Q' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--memory", "0"}, "--memory 0: '0' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--memory", "-1M"}, "--memory -1M: '-1M' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--memory", "99999999999999999999"},
       "--memory 99999999999999999999: '99999999999999999999' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--file-size", "17179869184G"},
       "--file-size 17179869184G: '17179869184G' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--tmp-size=0K"}, "--tmp-size 0K: '0K' is not a size (e.g. 512K, 64M, 2G)"},
      {{"--workspace-size", "1.5G"}, "--workspace-size 1.5G: '1.5G' is not a size (e.g. 512K, 64M, 2G)"},
      // durations
      {{"--timeout", "0"}, "--timeout 0: '0' is not a duration (e.g. 250ms, 10s, 5m)"},
      {{"--timeout", "-5"}, "--timeout -5: '-5' is not a duration (e.g. 250ms, 10s, 5m)"},
      {{"--timeout", "8785h"}, "--timeout 8785h: '8785h' is not a duration of at most 366 days (8784h)"},
      {{"--cpu-time", "soon"}, "--cpu-time soon: 'soon' is not a duration (e.g. 250ms, 10s, 5m)"},
      // counts
      {{"--pids", "0"}, "--pids 0: '0' is not a count from 1 to 1048576"},
      {{"--pids", "1048577"}, "--pids 1048577: '1048577' is not a count from 1 to 1048576"},
      {{"--pids", "4294967297"}, "--pids 4294967297: '4294967297' is not a count from 1 to 1048576"},
      {{"--pids", "1K"}, "--pids 1K: '1K' is not a count from 1 to 1048576"},
      {{"--open-files", "0"}, "--open-files 0: '0' is not a count from 1 to 1048576"},
      {{"--open-files", "99999999999999999999999"},
       "--open-files 99999999999999999999999: '99999999999999999999999' is not a count from 1 to 1048576"},
      // hostile outputs
      {{"--output", "../x"}, "--output ../x: has a '..' component"},
      {{"--output", "/etc/passwd"}, "--output /etc/passwd: is absolute; outputs are relative to the workspace"},
      {{"--output", "a/../../b"}, "--output a/../../b: has a '..' component"},
      {{"--output", std::string("a\0b", 3)}, "--output a\\x00b: contains a NUL byte"},
      {{"--output", "a\nb"}, "--output a\\nb: contains a control character"},
      {{"--output", "a//b"}, "--output a//b: has an empty component ('//')"},
      {{"--output", "a/"}, "--output a/: has a trailing slash"},
      {{"--output", ".corral/result.json"}, "--output .corral/result.json: is under .corral/, which corral reserves"},
      {{"--output", "a", "--output", "a"}, "--output a: given twice"},
      // hostile ro-binds
      {{"--ro-bind", "/proc/x"}, "--ro-bind target /proc/x: beneath /proc, which corral mounts itself"},
      {{"--ro-bind", "/"}, "--ro-bind target /: is the sandbox root, which corral builds itself"},
      {{"--ro-bind", "/usr"}, "--ro-bind target /usr: is /usr, which corral mounts itself"},
      {{"--ro-bind", "/data:/usr/x"}, "--ro-bind target /usr/x: beneath /usr, which corral mounts itself"},
      {{"--ro-bind", "/data:/workspace"}, "--ro-bind target /workspace: is /workspace, which corral mounts itself"},
      {{"--ro-bind", "/opt/../usr"}, "--ro-bind target /opt/../usr: has a '..' component"},
      {{"--ro-bind", "/data:rel"}, "--ro-bind target rel: is not absolute"},
      {{"--ro-bind", "/data:/x/"}, "--ro-bind target /x/: has a trailing slash"},
      {{"--ro-bind", "rel/dir"}, "--ro-bind rel/dir: the host path is not absolute"},
      {{"--ro-bind", "rel:/x"}, "--ro-bind rel:/x: the host path is not absolute"},
      {{"--ro-bind", ":/x"}, "--ro-bind :/x: the host path is empty"},
      {{"--ro-bind", "/x:"}, "--ro-bind /x:: the sandbox path after ':' is empty"},
      {{"--ro-bind", "/a:/b:/c"}, "--ro-bind /a:/b:/c: more than one ':'; paths containing ':' are not supported"},
      {{"--ro-bind", std::string("/a\0:/b", 6)}, "--ro-bind /a\\x00:/b: contains a control character"},
      {{"--ro-bind", "/a:/x", "--ro-bind", "/b:/x"}, "--ro-bind target /x: given twice"},
      // environment
      {{"--env", "FOO"}, "--env: expected KEY=VALUE (argument not shown)"},
      {{"--env", "ghp_sentinelTOKEN123"}, "--env: expected KEY=VALUE (argument not shown)"},
      {{"--env", "=v"}, "--env : expected KEY=VALUE, the key is empty"},
      {{"--env", "1A=v"}, "--env 1A: '1A' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {{"--env", std::string("K=a\0b", 5)}, "--env K: the value contains a NUL byte"},
      // limits named for --allow-weaker
      {{"--allow-weaker", "speed"}, "--allow-weaker speed: " + not_limit},
      {{"--allow-weaker", "Memory"}, "--allow-weaker Memory: " + not_limit},
      // host paths handed to the caller
      {{"--workspace", "/w\n/x"}, "--workspace /w\\n/x: contains a control character"},
      {{"--report", std::string("r\0.json", 7)}, "--report r\\x00.json: contains a control character"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.options));
    std::string message = parseErr(with(c.options));
    EXPECT_EQ(message, c.message);
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_NE(message.back(), '.');
  }
}

TEST(ParseExecArgs, ErrorsNeverEchoEnvValuesOrAllowUrls) {
  const std::string secret = "corral-sentinel-7f3a";
  for (const Args& opts : {Args{"--env", "9X=" + secret}, Args{"--env=BAD-NAME=" + secret},
                           Args{"--env", "K=" + secret + std::string(1, '\0')},
                           Args{"--allow", "https://u:" + secret + "@h"}, Args{"--allow=https://" + secret},
                           Args{"--net", "proxy", "--allow", "https://u:" + secret + "@h"},
                           Args{"--net", "proxy", "--allow", "https://h/?k=" + secret},
                           Args{"--net", "proxy", "--allow", "https://h:" + secret},
                           Args{"--bogus=" + secret}}) {
    std::string message = parseErr(with(opts));
    EXPECT_EQ(message.find(secret), std::string::npos) << "secret echoed: " << message;
  }
}

TEST(ParseExecArgs, HostileValuesStayOnOneLine) {
  std::string message = parseErr(with({"--memory", "1\nforged: line"}));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  message = parseErr(with({"--bogus\nforged"}));
  EXPECT_EQ(message, "unknown option --bogus\\nforged");
}

TEST(ExecUsage, ListsEveryDocumentedOptionOnItsOwnLine) {
  const std::string usage = execUsage();
  for (const char* opt : kValueOptions) {
    EXPECT_NE(usage.find(std::string("\n  ") + opt + " "), std::string::npos) << opt;
  }
  for (const char* flag : {"--json", "--help"}) EXPECT_NE(usage.find(std::string("\n  ") + flag + " "), std::string::npos);
  EXPECT_EQ(usage.find("--timing"), std::string::npos) << "--timing is undocumented";
  EXPECT_NE(usage.find("default: 4096"), std::string::npos);
  EXPECT_NE(usage.find("default: 256M"), std::string::npos);
}

}  // namespace
}  // namespace corral::cli
