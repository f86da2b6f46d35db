// SPDX-License-Identifier: Apache-2.0
// Tests of per-run cgroups: limits, kill, cleanup, attach paths and refusals (detection: host_cgroups_test.cc).
#include "sandbox/cgroup.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace corral::sandbox::cgroup {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::string runId(const char* tag) { return "test-" + std::to_string(::getpid()) + "-" + tag; }
bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

std::vector<pid_t> procsOf(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return fd.valid() ? detail::readPids(fd.get()) : std::vector<pid_t>{};
}

// A process that left its cgroup may not be a zombie yet (cgroup_exit runs before
// exit_notify), so wait on a pidfd for a bounded time rather than WNOHANG once.
bool exitsSoon(pid_t pid) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  struct pollfd p = {fd.get(), POLLIN, 0};
  return fd.valid() && ::poll(&p, 1, 10'000) == 1;
}

// A forked child that runs body() only after the parent said go (so it can be attached
// first), and may report one int back. Killed and reaped by the destructor if still there.
class Kid {
 public:
  explicit Kid(std::function<int(int report_fd)> body) {
    int go[2], rep[2];
    if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(go[1]);
      ::close(rep[0]);
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(120);
      ::_exit(body(rep[1]));
    }
    ::close(go[0]);
    ::close(rep[1]);
    go_ = UniqueFd(go[1]);
    report_ = UniqueFd(rep[0]);
  }
  ~Kid() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void go() { ASSERT_EQ(::write(go_.get(), "g", 1), 1); }
  int report() {  // -1 when the child exited or died without reporting
    int v = -1;
    return ::read(report_.get(), &v, sizeof v) == sizeof v ? v : -1;
  }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }
  // After a kill that should already have happened: a broken kill fails the test instead of
  // hanging it. -1 when the child is still running.
  int waitIfGone() {
    if (!exitsSoon(pid_)) return -1;
    return wait();
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  UniqueFd go_, report_;
};

void sendInt(int fd, int v) { [[maybe_unused]] ssize_t n = ::write(fd, &v, sizeof v); }
[[noreturn]] void blockForever() {
  for (;;) ::pause();
}
// A grandchild that blocks until killed, or until its parent dies: if the code under test
// fails to kill it, it must not outlive the test (it holds ctest's output pipe).
pid_t forkBlocked() {
  pid_t parent = ::getpid();
  pid_t p = ::fork();
  if (p == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);
    blockForever();
  }
  return p;
}

TEST(CgroupDetect, ImpossiblePlanIsRefusedNamingTheController) {
  HostCgroups h;
  h.memory.why_not = "cgroup v1 memory controller at /x is not writable by uid 65534; run as root";
  h.pids.version = Version::kV1;
  h.pids.parent = "/nonexistent";
  auto r = create(CgroupPlan{32 * kMiB, 8}, h, runId("impossible"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kUnsupported));
  EXPECT_NE(r.error().message().find("memory"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("not writable by uid 65534"), std::string::npos) << r.error().message();
  h.memory = h.pids;
  h.pids = ControllerSite{};
  auto p = create(CgroupPlan{std::nullopt, 8}, h, runId("impossible"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("pids"), std::string::npos) << p.error().message();
}

// ---------------------------------------------------------------------------------------
// Limits and lifecycle on the real host

// The detected site for a plan, or a skip reason.
std::string skipReason(const HostCgroups& host, const CgroupPlan& plan) {
  if (plan.memory_max && host.memory.version == Version::kNone) return "no memory cgroup site: " + host.memory.why_not;
  if (plan.pids_max && host.pids.version == Version::kNone) return "no pids cgroup site: " + host.pids.why_not;
  return "";
}

#define CREATE_OR_SKIP(var, plan, tag)                                  \
  HostCgroups host = detect();                                          \
  if (std::string why = skipReason(host, plan); !why.empty()) GTEST_SKIP() << why; \
  auto var##_r = create(plan, host, runId(tag));                        \
  ASSERT_TRUE(var##_r.ok()) << var##_r.error().message();               \
  Cgroup var = std::move(var##_r).value()

// Touches `bytes` of fresh anonymous memory one page at a time; 0 when it all fit.
int allocate(uint64_t bytes) {
  for (uint64_t done = 0; done < bytes; done += kMiB) {
    void* p = ::mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 2;
    for (uint64_t off = 0; off < kMiB; off += 4096) static_cast<volatile char*>(p)[off] = 1;
  }
  return 0;
}

struct MemoryRun {
  int status = 0;
  Stats stats;
  bool swap_capped = false;
};

MemoryRun runAllocation(Cgroup& cg, uint64_t bytes) {
  Kid kid([bytes](int) { return allocate(bytes); });
  EXPECT_TRUE(cg.attach(kid.pid()).ok());
  kid.go();
  MemoryRun r;
  r.status = kid.wait();
  r.stats = cg.stats();
  r.swap_capped = cg.swapCapped();
  return r;
}

TEST(CgroupLimitsMemory, ChildAllocatingPastLimitIsOomKilled) {
  CREATE_OR_SKIP(cg, (CgroupPlan{32 * kMiB, std::nullopt}), "oom");
  MemoryRun r = runAllocation(cg, 256 * kMiB);
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL)
      << "memory limit 32 MiB not enforced: child allocating 256 MiB ended with status " << r.status;
  EXPECT_TRUE(r.stats.oom_killed) << "stats() did not report the OOM kill";
  ASSERT_TRUE(r.stats.peak_memory_bytes.has_value());
  EXPECT_LE(*r.stats.peak_memory_bytes, 32 * kMiB);
  if (cg.version() == Version::kV1) {
    EXPECT_EQ(r.swap_capped, host.v1_memsw);
  }
}

TEST(CgroupLimitsMemory, ControlChildWithinLimitIsNotKilled) {
  CREATE_OR_SKIP(cg, (CgroupPlan{128 * kMiB, std::nullopt}), "oom-control");
  MemoryRun r = runAllocation(cg, 16 * kMiB);
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << "status " << r.status;
  EXPECT_FALSE(r.stats.oom_killed);
  ASSERT_TRUE(r.stats.peak_memory_bytes.has_value());
  EXPECT_GE(*r.stats.peak_memory_bytes, 16 * kMiB) << "peak should count what the child touched";
}

struct ForkRun {
  int forked = -1;  // successful forks before the first failure
  int err = 0;      // errno of that failure, 0 when all attempts succeeded
  Stats stats;
};

// In the cgroup, a child forks up to `attempts` grandchildren that block forever.
ForkRun runForks(Cgroup& cg, int attempts) {
  Kid kid([attempts](int rep) -> int {
    int forked = 0, err = 0;
    for (; forked < attempts; ++forked) {
      if (forkBlocked() < 0) {
        err = errno;
        break;
      }
    }
    sendInt(rep, forked);
    sendInt(rep, err);
    blockForever();
  });
  EXPECT_TRUE(cg.attach(kid.pid()).ok());
  kid.go();
  ForkRun r;
  r.forked = kid.report();
  r.err = kid.report();
  r.stats = cg.stats();
  cg.killAll();
  return r;
}

TEST(CgroupLimitsPids, ForkPastLimitFailsWithEagain) {
  CREATE_OR_SKIP(cg, (CgroupPlan{std::nullopt, 4}), "pids");
  ForkRun r = runForks(cg, 10);
  EXPECT_EQ(r.forked, 3) << "pids.max 4 counts the child itself";
  EXPECT_EQ(r.err, EAGAIN) << "fork past pids.max should fail with EAGAIN";
  EXPECT_TRUE(r.stats.pids_max_hit);
}

TEST(CgroupLimitsPids, ControlForkWithinLimitSucceeds) {
  CREATE_OR_SKIP(cg, (CgroupPlan{std::nullopt, 16}), "pids-control");
  ForkRun r = runForks(cg, 5);
  EXPECT_EQ(r.forked, 5);
  EXPECT_EQ(r.err, 0);
  EXPECT_FALSE(r.stats.pids_max_hit);
}

TEST(CgroupLifecycle, KillAllLeavesCgroupProcsEmpty) {
  CREATE_OR_SKIP(cg, (CgroupPlan{64 * kMiB, 64}), "killall");
  Kid kid([](int rep) -> int {
    for (int i = 0; i < 5; ++i) forkBlocked();
    sendInt(rep, 1);
    blockForever();
  });
  ASSERT_TRUE(cg.attach(kid.pid()).ok());
  kid.go();
  ASSERT_EQ(kid.report(), 1);
  for (const std::string& p : cg.paths()) EXPECT_EQ(procsOf(p).size(), 6u) << p;
  cg.killAll();
  for (const std::string& p : cg.paths()) EXPECT_TRUE(procsOf(p).empty()) << p << " still has processes";
  int status = kid.waitIfGone();
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
}

TEST(CgroupLifecycle, DestructorKillsAndRemovesDirectories) {
  std::vector<std::string> paths;
  std::optional<Kid> kid;
  {
    CREATE_OR_SKIP(cg, (CgroupPlan{64 * kMiB, 64}), "dtor");
    kid.emplace([](int) -> int { blockForever(); });
    ASSERT_TRUE(cg.attach(kid->pid()).ok());
    paths = cg.paths();
    for (const std::string& p : paths) ASSERT_TRUE(exists(p));
  }
  for (const std::string& p : paths) EXPECT_FALSE(exists(p)) << p << " left behind";
  int status = kid->waitIfGone();
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "process left alive by the destructor, status " << status;
}

TEST(CgroupLifecycle, AttachSelfMovesTheChildIntoEveryDirectory) {
  CREATE_OR_SKIP(cg, (CgroupPlan{64 * kMiB, 64}), "self");
  Kid kid([&cg](int rep) -> int {
    sendInt(rep, cg.attachSelf());
    blockForever();
  });
  kid.go();
  ASSERT_EQ(kid.report(), 0) << "attachSelf errno";
  for (const std::string& p : cg.paths()) EXPECT_EQ(procsOf(p), std::vector<pid_t>{kid.pid()}) << p;
  EXPECT_EQ(cg.attachSelf(), EPERM) << "the creating process must not close the guard's fds";
}

TEST(CgroupLifecycle, ReapStaleRemovesEmptyLeftoverButNotALiveGuard) {
  CREATE_OR_SKIP(live, (CgroupPlan{std::nullopt, 64}), "live");
  const ControllerSite& site = host.pids;
  std::string stale = site.parent + "/corral-" + runId("stale");
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << stale;  // what a SIGKILLed corral leaves
  EXPECT_GE(reapStale(host), 1);
  EXPECT_FALSE(exists(stale)) << "stale cgroup not reaped";
  if (exists(stale)) ::rmdir(stale.c_str());
  for (const std::string& p : live.paths()) EXPECT_TRUE(exists(p)) << "reapStale removed a live cgroup " << p;
}

TEST(CgroupLifecycle, RejectsRunIdThatIsNotAName) {
  HostCgroups h;
  h.pids.version = Version::kV1;
  h.pids.parent = "/nonexistent";
  for (const char* id : {"", "../x", "a/b", ".hidden"}) {
    auto r = create(CgroupPlan{std::nullopt, 8}, h, id);
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument)) << id;
  }
}

// v2 lifecycle without controllers: clone3 CLONE_INTO_CGROUP, cgroup.kill, removal. Runs
// wherever our own cgroup2 cgroup is writable (root on this hybrid host, too).
TEST(CgroupLifecycle, V2CloneIntoCgroupThenCgroupKill) {
  HostCgroups host = detect();
  if (host.v2_self.empty() || ::access(host.v2_self.c_str(), W_OK) != 0)
    GTEST_SKIP() << "no writable cgroup2 cgroup of our own (" << host.v2_self << ")";
  auto r = detail::createBare(Version::kV2, host.v2_self, runId("v2"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::string path = r->paths().at(0);
  {
    Cgroup cg = std::move(r).value();
    ASSERT_GE(cg.cloneIntoFd(), 0);
    struct clone_args args = {};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<uint64_t>(cg.cloneIntoFd());
    pid_t parent = ::getpid();
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);
      blockForever();
    }
    ASSERT_GT(pid, 0) << "clone3: " << std::strerror(errno);
    EXPECT_EQ(procsOf(path), std::vector<pid_t>{static_cast<pid_t>(pid)});
    cg.killAll();
    EXPECT_TRUE(procsOf(path).empty());
    int status = 0;
    if (!exitsSoon(static_cast<pid_t>(pid))) {
      ADD_FAILURE() << "cgroup.kill left pid " << pid << " running";
      ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
    ::waitpid(static_cast<pid_t>(pid), &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  EXPECT_FALSE(exists(path)) << path << " left behind";
}

}  // namespace
}  // namespace corral::sandbox::cgroup
