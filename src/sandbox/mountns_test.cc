// SPDX-License-Identifier: Apache-2.0
// mountns::execute on the init side, in a child with its own user and mount namespaces: what
// a clone step does with a source that turned into a namespace handle after the parent looked.
#include "sandbox/mountns.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace corral::sandbox::mountns {
namespace {

// Runs a one-step plan (clone `source`) in a forked child that made its own user and mount
// namespaces, as init has them. Returns the step's errno, or -1 when the child could not set up.
int cloneInChild(const char* source) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(255);
    Plan plan;
    plan.steps.push_back({Op::kCloneTree, source, nullptr, 0, 0, false, "clone --ro-bind source"});
    plan.slots = 1;
    int slot = -1;
    size_t failed = 0;
    const int err = execute(plan, 0, plan.steps.size(), -1, &slot, &failed, nullptr, {});
    ::_exit(err > 254 ? 254 : err);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 255 ? -1 : WEXITSTATUS(status);
}

// The parent refuses namespace handles by name before the clone; a path swapped since (a
// symlink in it) would reach init, which is still in the caller's network and IPC namespaces.
TEST(MountnsCloneStep, ANamespaceHandleIsRefusedOnWhatWasCloned) {
  for (const char* ns : {"/proc/self/ns/ipc", "/proc/self/ns/net"}) {
    const int err = cloneInChild(ns);
    if (err == -1) GTEST_SKIP() << "no unprivileged user namespaces here";
    EXPECT_EQ(err, EINVAL) << ns << " was cloned: " << std::strerror(err);
  }
}

TEST(MountnsCloneStep, ControlAnOrdinaryDirectoryClones) {
  const int err = cloneInChild("/usr");
  if (err == -1) GTEST_SKIP() << "no unprivileged user namespaces here";
  EXPECT_EQ(err, 0) << std::strerror(err);
}

}  // namespace
}  // namespace corral::sandbox::mountns

namespace corral::sandbox::mountns {
namespace {

// The plan's shape: --ro-bind sources are cloned before the id maps (as the caller) and never
// walked again as the sandbox uid; the fixed sources are (for a root caller); /dev/pts is a
// devpts instance and /dev/ptmx points into it.
TEST(MountnsPlan, RoBindSourcesAreClonedAsTheCallerAndDevptsIsPrivate) {
  SandboxSpec spec;
  spec.argv = {"/bin/true"};
  spec.ro_binds.push_back({"/usr/share", "/opt/share"});
  auto plan = buildPlan(spec, "root:x:0:0::/:/bin/sh\n", "root:x:0:\n");
  ASSERT_TRUE(plan) << plan.error().message();
  size_t bind_clone = plan->steps.size();
  bool devpts = false, ptmx = false;
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const Step& s = plan->steps[i];
    if (s.op == Op::kCloneTree && std::string(s.a) == "/usr/share") bind_clone = i;
    if (s.op == Op::kCheckReach) {
      EXPECT_NE(std::string(s.a), "/usr/share") << "an --ro-bind walked again as the sandbox uid";
    }
    if (s.op == Op::kDevpts) devpts = std::string(s.a) == plan->root + "/dev/pts";
    if (s.op == Op::kSymlink && std::string(s.a) == plan->root + "/dev/ptmx") ptmx = std::string(s.b) == "pts/ptmx";
  }
  ASSERT_LT(bind_clone, plan->steps.size());
  EXPECT_LT(bind_clone, plan->before_maps) << "the --ro-bind is cloned after the maps, as the sandbox uid";
  EXPECT_TRUE(devpts);
  EXPECT_TRUE(ptmx);
  if (::getuid() == 0) {
    bool usr_checked = false;
    for (const Step& s : plan->steps) usr_checked = usr_checked || (s.op == Op::kCheckReach && std::string(s.a) == "/usr");
    EXPECT_TRUE(usr_checked) << "a root caller's fixed sources must be walked again as the sandbox uid";
  }
}

}  // namespace
}  // namespace corral::sandbox::mountns
