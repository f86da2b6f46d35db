// SPDX-License-Identifier: Apache-2.0
// Claims limits.file-size, limits.open-files, limits.tmpfs-size, limits.fail-closed.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "harness.h"

namespace corral::testing {
namespace {

// --- limits.file-size ---

TEST(LimitsFileSize, WritingPastTheCapRaisesSigxfsz) {
  for (const char* path : {"/workspace/big", "/tmp/big"}) {
    RunResult r = runProbe({"--file-size", "64K"}, {"write-big", path, "1M"});
    EXPECT_EQ(r.exit_code, 128 + SIGXFSZ) << claim("limits.file-size", std::string(path) + " grew past 64K") << r.describe();
    EXPECT_EQ(r.reportInt("signal"), SIGXFSZ) << r.describe();
  }
}

TEST(LimitsFileSize, WritingPastTheCapFailsWithEfbigWhenSigxfszIsIgnored) {
  RunResult r = runProbe({"--file-size", "64K"}, {"write-big", "/workspace/big", "1M", "ignore-xfsz"});
  EXPECT_TRUE(probeRefused(r, {"EFBIG"})) << claim("limits.file-size", "write past 64K did not fail with EFBIG");
  EXPECT_EQ(r.probe().num("bytes"), 64 << 10) << r.describe();
}

// A regular file given as the command's stdout is relayed by corral (the command must not get
// the host inode), so the command's RLIMIT_FSIZE never met it: 5 MB went into a file under
// --file-size 1M. corral's relay holds to the limit itself; past it the command's writes fail
// (EPIPE: head dies of SIGPIPE), as its own would have past RLIMIT_FSIZE.
TEST(LimitsFileSize, AFileGivenAsStdoutIsHeldToTheCapToo) {
  TempDir dir("fsize-stdout");
  for (const char* redirect : {">", ">>"}) {
    const std::string out = dir / "out.bin";
    std::string script = "exec";
    for (const std::string& a :
         corralArgv({"--file-size", "1M"}, {"/bin/sh", "-c", "head -c 5M /dev/zero; echo head=$? >&2"}, false))
      script += " '" + a + "'";
    script += std::string(" ") + redirect + "'" + out + "'";
    RunResult r = run({"/bin/sh", "-c", script});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    struct stat st{};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20) << claim("limits.file-size", std::string("stdout ") + redirect + " a file grew past 1M");
    EXPECT_EQ(r.err, "head=" + std::to_string(128 + SIGPIPE) + "\n") << r.describe();
    ::unlink(out.c_str());
  }
}

TEST(LimitsFileSize, ControlWriteUnderTheCapSucceeds) {
  EXPECT_TRUE(probeDid(runProbe({"--file-size", "4M"}, {"write-big", "/workspace/big", "1M"})));
}

// --- limits.open-files ---

TEST(LimitsOpenFiles, DefaultCapIs1024AndCannotBeRaised) {
  RunResult r = runProbe({}, {"open-many", "5000"});
  EXPECT_TRUE(probeRefused(r, {"EMFILE"})) << claim("limits.open-files", "5000 opens succeeded by default");
  EXPECT_EQ(r.probe().num("count"), 1024 - 3) << r.describe();
  RunResult lim = runProbe({}, {"rlimits"});
  EXPECT_EQ(lim.probe().get("nofile"), "1024/1024") << claim("limits.open-files", "hard limit lets the command raise it") << lim.describe();
}

TEST(LimitsOpenFiles, ExplicitCapIsApplied) {
  RunResult r = runProbe({"--open-files", "64"}, {"open-many", "5000"});
  EXPECT_TRUE(probeRefused(r, {"EMFILE"}));
  EXPECT_EQ(r.probe().num("count"), 64 - 3) << claim("limits.open-files", "--open-files 64 not applied") << r.describe();
}

// Applied last before exec: a cap below what corral's own setup opens (Landlock's ruleset and
// rule descriptors) made every run with --open-files 1..7 fail with 125 before the command ran.
TEST(LimitsOpenFiles, ASmallCapIsTheCommandsNotCorralsSetups) {
  RunResult r = runProbe({"--open-files", "4"}, {"open-many", "100"});
  EXPECT_TRUE(probeRefused(r, {"EMFILE"})) << r.describe();
  EXPECT_EQ(r.probe().num("count"), 4 - 3) << claim("limits.open-files", "--open-files 4 not applied") << r.describe();
}

TEST(LimitsOpenFiles, ControlGenerousCapAllowsMore) {
  RunResult r = runProbe({"--open-files", "4096"}, {"open-many", "2000"});
  EXPECT_TRUE(probeDid(r));
}

// --- limits.tmpfs-size ---

struct FillCase {
  const char* flag;
  const char* path;
};
const FillCase kFills[] = {{"--tmp-size", "/tmp/fill"}, {"--tmp-size", "/dev/shm/fill"}, {"--workspace-size", "/workspace/fill"}};

TEST(LimitsTmpfsSize, FillingPastTheCapGivesEnospc) {
  for (const auto& f : kFills) {
    RunResult r = runProbe({f.flag, "1M"}, {"write-big", f.path, "8M"});
    EXPECT_TRUE(probeRefused(r, {"ENOSPC"})) << claim("limits.tmpfs-size", std::string(f.path) + " took 8M under " + f.flag + " 1M");
    EXPECT_LE(r.probe().num("bytes"), 1 << 20) << r.describe();
  }
}

// The kernel rounds size= up to whole pages; a size within a page of 2^64 wrapped to 0, which
// tmpfs reads as no limit at all, while the report still named the size asked for.
TEST(LimitsTmpfsSize, ASizeNearTwoToTheSixtyFourIsRefusedNotWrappedToNoLimit) {
  for (const char* flag : {"--tmp-size", "--workspace-size"}) {
    RunResult r = runProbe({flag, "18446744073709551615"}, {"exit", "0"});
    EXPECT_EQ(r.exit_code, 125) << claim("limits.tmpfs-size", std::string(flag) + " 2^64-1 ran with tmpfs size=0 (unlimited)")
                                << r.describe();
    EXPECT_EQ(r.stderrLines().size(), 1u) << r.describe();
    EXPECT_TRUE(r.out.empty()) << "the command ran" << r.describe();
  }
}

TEST(LimitsTmpfsSize, WorkspaceLargerThanTheCapIsRefusedAtStaging) {
  TempDir ws("ws");
  ws.write("big", std::string(2 << 20, 'x'));
  RunResult r = runProbe({"--workspace", ws.path(), "--workspace-size", "1M"}, {"exit", "0"});
  EXPECT_EQ(r.exit_code, 125) << claim("limits.tmpfs-size", "a 2M workspace was staged into 1M") << r.describe();
  EXPECT_TRUE(r.out.empty()) << "the command ran" << r.describe();
}

// A sparse output is as large as its data: `truncate -s 1G` in a 1M workspace costs the
// tmpfs nothing, and must not cost the host's disk 1 GiB at copy-back either. Data around a
// hole is copied exactly.
TEST(LimitsTmpfsSize, ASparseOutputStaysSparseOnTheHost) {
  TempDir ws("ws");
  RunResult r = runCorral({"--workspace", ws.path(), "--workspace-size", "1M", "--output", "big", "--output", "holey"},
                          {"sh", "-c",
                           "truncate -s 1G big && printf head > holey && truncate -s 20M holey && "
                           "printf tail >> holey"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  struct stat big {}, holey {};
  ASSERT_EQ(::stat((ws / "big").c_str(), &big), 0);
  ASSERT_EQ(::stat((ws / "holey").c_str(), &holey), 0);
  EXPECT_EQ(big.st_size, off_t{1} << 30);
  EXPECT_LT(big.st_blocks * 512, off_t{1} << 20)
      << claim("limits.tmpfs-size", "a 1G sparse output took " + std::to_string(big.st_blocks * 512) + " bytes of host disk");
  EXPECT_LT(holey.st_blocks * 512, off_t{4} << 20) << claim("limits.tmpfs-size", "the hole was filled on the host");
  EXPECT_EQ(holey.st_size, (off_t{20} << 20) + 4);
  std::string content = ws.read("holey");
  ASSERT_EQ(content.size(), (size_t{20} << 20) + 4);
  EXPECT_EQ(content.substr(0, 4), "head");
  EXPECT_EQ(content.substr(content.size() - 4), "tail");
  EXPECT_EQ(content.find_first_not_of('\0', 4), content.size() - 4) << "the hole did not read as zeros";
}

// Staging keeps holes too: a 1G sparse file in the host workspace fits a 1M workspace, with
// its data where it was.
TEST(LimitsTmpfsSize, ASparseWorkspaceFileIsStagedSparse) {
  TempDir ws("ws");
  ws.write("holey", "head");
  ASSERT_EQ(::truncate((ws / "holey").c_str(), off_t{1} << 30), 0);
  {
    std::ofstream f(ws / "holey", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((off_t{1} << 30) - 4);
    f << "tail";
  }
  RunResult r = runCorral({"--workspace", ws.path(), "--workspace-size", "1M"},
                          {"sh", "-c", "stat -c %s holey && head -c 4 holey && tail -c 4 holey"});
  EXPECT_EQ(r.exit_code, 0) << claim("limits.tmpfs-size", "a sparse workspace file did not fit as sparse") << r.describe();
  EXPECT_EQ(r.out, "1073741824\nheadtail") << r.describe();
}

TEST(LimitsTmpfsSize, ControlFillUnderTheCapSucceeds) {
  for (const auto& f : kFills) EXPECT_TRUE(probeDid(runProbe({f.flag, "8M"}, {"write-big", f.path, "1M"}))) << f.path;
}

// --- limits.fail-closed ---

// A memory cap needs a cgroup, which only root can write on this host: run corral as nobody
// (dropping to it when the test runs as root). The pids cap has a full rootless mechanism
// (RLIMIT_NPROC per user namespace), so it is not a case here.
RunOptions asNobody() {
  RunOptions o;
  if (isRoot()) o.as_user = kNobody;
  return o;
}

struct WeakCase {
  std::vector<std::string> opts;
  const char* limit;
};
const WeakCase kWeak[] = {{{"--memory", "64M"}, "memory"}};

TEST(LimitsFailClosed, UnenforceableLimitRefusesTheRun) {
  if (!isRoot() && getuid() != kNobody) GTEST_SKIP() << "runs as root or nobody only";
  for (const auto& w : kWeak) {
    RunResult r = run(probeArgv(w.opts, {"exit", "0"}), asNobody());
    // probeArgv adds --json; a refusal may still end with its report line.
    EXPECT_EQ(r.exit_code, 125) << claim("limits.fail-closed", std::string(w.limit) + " cap silently weakened") << r.describe();
    auto lines = r.stderrLines();
    ASSERT_EQ(lines.size(), 1u) << r.describe();
    EXPECT_EQ(lines[0].rfind("corral: ", 0), 0u) << r.describe();
    EXPECT_TRUE(r.out.empty()) << "the command ran" << r.describe();
  }
}

TEST(LimitsFailClosed, ControlAllowWeakerRunsAndReportsTheMechanism) {
  if (!isRoot() && getuid() != kNobody) GTEST_SKIP() << "runs as root or nobody only";
  for (const auto& w : kWeak) {
    std::vector<std::string> opts = w.opts;
    opts.insert(opts.end(), {"--allow-weaker", w.limit});
    RunResult r = run(probeArgv(opts, {"exit", "0"}), asNobody());
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(r.report) << r.describe();
    std::string mech = (*r.report)["limits"][w.limit].value("mechanism", "");
    EXPECT_EQ(mech.rfind("cgroup", 0), std::string::npos) << "rootless cannot use cgroups here" << r.describe();
  }
}

}  // namespace
}  // namespace corral::testing
