// SPDX-License-Identifier: Apache-2.0
// `corral session exec` is served by the static launcher itself (cli/launcher.cc), not handed
// to corral-core. The two must answer exactly alike; and a client whose socket can only be
// found through the password database is handed over, since the launcher carries no NSS.
#include <pwd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

class DaemonLauncher : public SharedSessionSuite {
 protected:
  // The same command line through corral-core (never the launcher).
  RunResult core(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {corralCoreBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions opts;
    opts.env_extra.push_back("CORRAL_SOCKET=" + d_->socket());
    return run(argv, opts);
  }
};

TEST_F(DaemonLauncher, SessionExecAnswersExactlyAsCorralCoreDoes) {
  const std::vector<std::string> args = {"session", "exec", id_, "--", "sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 3"};
  const RunResult a = d_->cli(args);
  const RunResult b = core(args);
  EXPECT_EQ(a.exit_code, 3) << a.err;
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.out, "out\n");
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.err, "err\n");
  EXPECT_EQ(a.err, b.err);

  // Refusals too: an unknown session, and a command line the client refuses itself.
  for (const auto& bad : std::vector<std::vector<std::string>>{{"session", "exec", "nosuchsession", "--", "true"},
                                                               {"session", "exec", id_, "--bogus", "--", "true"},
                                                               {"session", "exec", id_}}) {
    const RunResult x = d_->cli(bad);
    const RunResult y = core(bad);
    EXPECT_EQ(x.exit_code, 125) << bad[2] << ": " << x.err;
    EXPECT_EQ(x.exit_code, y.exit_code) << bad[2];
    EXPECT_EQ(x.err, y.err) << bad[2];
    EXPECT_EQ(x.out, y.out) << bad[2];
  }
}

TEST_F(DaemonLauncher, SessionExecWithoutHomeOrRuntimeDirLooksUpThePasswordDatabase) {
  // As root the default socket needs no lookup; the case exists for other uids: run as one.
  std::optional<uid_t> as;
  uid_t uid = ::getuid();
  if (::geteuid() == 0) {
    as = 65534;
    uid = 65534;
  }
  const passwd* pw = ::getpwuid(uid);
  ASSERT_NE(pw, nullptr);
  ASSERT_NE(pw->pw_dir, nullptr);
  const std::string want = std::string(pw->pw_dir) + "/.local/state/corral/api.sock";
  RunOptions opts;
  opts.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};  // no HOME, no XDG_*, no CORRAL_SOCKET
  opts.as_user = as;
  const RunResult r = run({corralBin(), "session", "exec", id_, "--", "true"}, opts);
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_NE(r.err.find("no corral daemon at " + want), std::string::npos) << r.err;

  // Control: with HOME set the launcher answers itself, from HOME.
  opts.env->push_back("HOME=/nonexistent-home-for-the-test");
  const RunResult c = run({corralBin(), "session", "exec", id_, "--", "true"}, opts);
  EXPECT_EQ(c.exit_code, 125) << c.err;
  EXPECT_NE(c.err.find("no corral daemon at /nonexistent-home-for-the-test/.local/state/corral/api.sock"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace corral::testing
