// SPDX-License-Identifier: Apache-2.0
// Claims outputs.no-link-follow and outputs.path-contained: copy-back of declared outputs.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "harness.h"

namespace corral::testing {
namespace {

RunResult runShell(const TempDir& ws, std::vector<std::string> opts, const std::string& script) {
  opts.insert(opts.begin(), {"--workspace", ws.path()});
  return runCorral(opts, {"/bin/sh", "-c", script});
}

// The report's entry for one declared output, or null.
nlohmann::json outputEntry(const RunResult& r, const std::string& path) {
  if (!r.report || !r.report->contains("outputs")) return nullptr;
  for (const auto& o : (*r.report)["outputs"])
    if (o.value("path", "") == path) return o;
  return nullptr;
}

struct LinkCase {
  const char* name;
  const char* output;  // the declared output
  const char* script;  // run in /workspace; leaves something other than a plain file there
};

const LinkCase kRefusedCases[] = {
    {"symlink to /etc/passwd", "out", "ln -s /etc/passwd out"},
    {"symlink to a workspace file", "out", "echo data > a && ln -s a out"},
    {"symlink to a host path", "out", "ln -s OUTSIDE/victim out"},
    {"hard link", "out", "echo data > a && ln a out"},
    {"fifo", "out", "mkfifo out"},
    {"directory", "out", "mkdir out && echo data > out/f"},
    {"file under a symlinked directory", "d/out", "ln -s /tmp d && echo data > /tmp/out"},
};
// Devices: mknod is refused inside (fs.dev-minimal), so no device can be planted to test.

TEST(OutputsNoLinkFollow, NonRegularOutputsAreRefusedAndHostUntouched) {
  const std::string passwd_before = readHostFile("/etc/passwd");
  for (const auto& c : kRefusedCases) {
    SCOPED_TRACE(c.name);
    TempDir ws("ws"), outside("outside");
    outside.write("victim", "host-secret");
    std::string script = c.script;
    if (auto at = script.find("OUTSIDE"); at != std::string::npos) script.replace(at, 7, outside.path());
    RunResult r = runShell(ws, {"--output", c.output}, script);
    auto entry = outputEntry(r, c.output);
    EXPECT_EQ(r.exit_code, 125) << claim("outputs.no-link-follow", std::string(c.name) + ": run not failed") << r.describe();
    EXPECT_EQ(entry.value("status", ""), "refused") << claim("outputs.no-link-follow", std::string(c.name) + " not refused") << r.describe();
    EXPECT_FALSE(entry.value("reason", "").empty()) << "a refusal must say why" << r.describe();
    EXPECT_FALSE(ws.exists(c.output)) << claim("outputs.no-link-follow", std::string(c.name) + " copied to the host");
    EXPECT_EQ(outside.read("victim"), "host-secret");
  }
  EXPECT_EQ(readHostFile("/etc/passwd"), passwd_before) << claim("outputs.no-link-follow", "host /etc/passwd changed");
}

// A run that leaves one hostile output gets none copied back: the good ones beside it, in
// any order, and new directories they would need are not made on the host either.
TEST(OutputsNoLinkFollow, OneRefusedOutputWithholdsEveryOther) {
  for (const auto& order : {std::vector<std::string>{"good", "sub/new", "bad"}, std::vector<std::string>{"bad", "good", "sub/new"}}) {
    TempDir ws("ws");
    ws.write("good", "before\n");
    std::vector<std::string> opts;
    for (const std::string& o : order) opts.insert(opts.end(), {"--output", o});
    RunResult r = runShell(ws, opts, "echo CHANGED > good && mkdir sub && echo new > sub/new && ln -s /etc/passwd bad");
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(ws.read("good"), "before\n") << claim("outputs.no-link-follow", "an output beside a refused one was copied (" + order[0] + " first)")
                                          << r.describe();
    EXPECT_FALSE(ws.exists("sub")) << claim("outputs.no-link-follow", "a directory for a withheld output was made");
    EXPECT_EQ(outputEntry(r, "bad").value("status", ""), "refused") << r.describe();
    EXPECT_EQ(outputEntry(r, "good").value("status", ""), "withheld") << r.describe();
    EXPECT_EQ(outputEntry(r, "sub/new").value("status", ""), "withheld") << r.describe();
    EXPECT_NE(r.err.find("--output bad: refused: symlink"), std::string::npos) << r.describe();
    for (const auto& e : std::filesystem::directory_iterator(ws.path()))
      EXPECT_EQ(e.path().filename().string().rfind(".corral-out-", 0), std::string::npos) << "a temp file was left";
  }
}

// A failure after some outputs were already copied (a rename the host refuses, its disk or
// file-size limit) still leaves the host as it was: what was replaced is put back, the
// directories made for the copy are removed, and no temp file is left.
TEST(OutputsNoLinkFollow, AFailureWhileCopyingPutsBackWhatWasReplaced) {
  TempDir ws("ws");
  ws.write("a", "old a\n");
  ws.write("b", "old b\n");
  // Immutable b: its rename fails after a's succeeded (root; skipped where chattr cannot).
  if (::geteuid() == 0 && run({"/usr/bin/chattr", "+i", ws / "b"}).exit_code == 0) {
    RunResult r = runShell(ws, {"--output", "a", "--output", "d/new", "--output", "b"},
                           "echo A > a; mkdir d; echo N > d/new; echo B > b");
    (void)run({"/usr/bin/chattr", "-i", ws / "b"});
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_EQ(ws.read("a"), "old a\n") << claim("outputs.no-link-follow", "an output replaced before a failed rename stayed") << r.describe();
    EXPECT_EQ(ws.read("b"), "old b\n");
    EXPECT_FALSE(ws.exists("d")) << "the directory made for d/new was left";
    EXPECT_EQ(outputEntry(r, "a").value("status", ""), "withheld") << r.describe();
    EXPECT_EQ(outputEntry(r, "b").value("status", ""), "refused") << r.describe();
  }
  // An append-only directory would keep a temp file phase 3 named there: refused up front.
  if (::geteuid() == 0) {
    ws.write("ap/p", "old p\n");
    if (run({"/usr/bin/chattr", "+a", ws / "ap"}).exit_code == 0) {
      RunResult r = runShell(ws, {"--output", "a", "--output", "ap/p"}, "echo A > a; mkdir -p ap; echo P > ap/p");
      (void)run({"/usr/bin/chattr", "-a", ws / "ap"});
      EXPECT_EQ(r.exit_code, 125) << r.describe();
      EXPECT_EQ(ws.read("a"), "old a\n") << r.describe();
      EXPECT_EQ(ws.read("ap/p"), "old p\n");
      EXPECT_NE(outputEntry(r, "ap/p").value("reason", "").find("append-only or immutable"), std::string::npos) << r.describe();
      for (const auto& e : std::filesystem::directory_iterator(ws / "ap"))
        EXPECT_EQ(e.path().filename().string().rfind(".corral-out-", 0), std::string::npos) << "a temp file was left";
    }
  }
  // corral's own file-size limit stops the copy of a big output after others were copied.
  std::string script = "ulimit -S -f 100; exec";
  for (const std::string& a : corralArgv({"--workspace", ws.path(), "--output", "a", "--output", "d/x", "--output", "e/big"},
                                         {"/bin/sh", "-c", "echo A > a; mkdir d e; echo X > d/x; head -c 200000 /dev/zero > e/big"},
                                         false))
    script += " '" + a + "'";
  RunResult big = run({"/bin/sh", "-c", script});
  EXPECT_EQ(big.exit_code, 125) << big.describe();
  EXPECT_EQ(ws.read("a"), "old a\n") << claim("outputs.no-link-follow", "an output was copied beside one that failed") << big.describe();
  EXPECT_FALSE(ws.exists("d")) << "the directory made for d/x was left";
  EXPECT_FALSE(ws.exists("e")) << "the directory made for e/big was left";
  for (const auto& e : std::filesystem::directory_iterator(ws.path()))
    EXPECT_EQ(e.path().filename().string().rfind(".corral-out-", 0), std::string::npos) << "a temp file was left";
}

TEST(OutputsNoLinkFollow, MissingOutputIsReportedMissing) {
  TempDir ws("ws");
  RunResult r = runShell(ws, {"--output", "out"}, "true");
  EXPECT_EQ(outputEntry(r, "out").value("status", ""), "missing") << r.describe();
  EXPECT_EQ(r.exit_code, 0) << "a missing output is not a refusal" << r.describe();
  EXPECT_FALSE(ws.exists("out"));
}

TEST(OutputsNoLinkFollow, ControlRegularFileIsCopied) {
  TempDir ws("ws");
  RunResult r = runShell(ws, {"--output", "out"}, "echo data > out");
  auto entry = outputEntry(r, "out");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(entry.value("status", ""), "copied") << r.describe();
  EXPECT_EQ(entry.value("bytes", -1), 5) << r.describe();
  EXPECT_EQ(ws.read("out"), "data\n");
}

// An output the command made setuid (or world-writable) must not land on the host that way:
// as root, corral writes it as a root-owned file.
TEST(OutputsNoLinkFollow, CopiedOutputCarriesNoSetuidOrWorldWritableBits) {
  TempDir ws("ws");
  RunResult r = runShell(ws, {"--output", "out"}, "cp /bin/true out && chmod 6777 out");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  struct stat st;
  ASSERT_EQ(lstat((ws / "out").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 06002, 0u) << claim("outputs.no-link-follow", "copied output kept setuid/setgid/o+w bits: mode ")
                                    << std::oct << (st.st_mode & 07777);
}

// The host side of copy-back: a pre-existing symlink (or symlinked parent directory) in the
// host workspace must not redirect the write to a file outside it.
TEST(OutputsNoLinkFollow, HostSymlinkAtTheDestinationIsNotFollowed) {
  TempDir ws("ws"), outside("outside");
  outside.write("victim", "host-secret");
  std::filesystem::create_symlink(outside / "victim", ws / "out");
  RunResult r = runShell(ws, {"--output", "out"}, "rm -f out && echo pwned > out");
  EXPECT_EQ(outside.read("victim"), "host-secret") << claim("outputs.no-link-follow", "copy-back wrote through a host symlink") << r.describe();
}

// The operator's symlink at a declared output's host path is refused with its reason, like a
// symlinked parent directory: never followed, and never replaced by a regular file (before
// issue #19 it was silently replaced and reported copied).
TEST(OutputsNoLinkFollow, HostSymlinkAtTheDestinationIsRefusedAndKept) {
  for (const char* output : {"out", "d/out"}) {
    SCOPED_TRACE(output);
    TempDir ws("ws"), outside("outside");
    outside.write("victim", "host-secret");
    const bool parent = std::string(output) == "d/out";
    if (parent) std::filesystem::create_directory_symlink(outside.path(), ws / "d");
    else std::filesystem::create_symlink(outside / "victim", ws / "out");
    RunResult r = runShell(ws, {"--output", output}, parent ? "rm -f d && mkdir d && echo pwned > d/out" : "rm -f out && echo pwned > out");
    auto entry = outputEntry(r, output);
    EXPECT_EQ(r.exit_code, 125) << claim("outputs.no-link-follow", "a refused output must fail the run") << r.describe();
    EXPECT_EQ(entry.value("status", ""), "refused") << claim("outputs.no-link-follow", "host symlink not refused") << r.describe();
    EXPECT_NE(entry.value("reason", "").find("symlink"), std::string::npos) << "the refusal must say why" << r.describe();
    const std::filesystem::path link = parent ? ws / "d" : ws / "out";
    EXPECT_TRUE(std::filesystem::is_symlink(link)) << claim("outputs.no-link-follow", "the operator's symlink was destroyed");
    EXPECT_EQ(outside.read("victim"), "host-secret") << claim("outputs.no-link-follow", "copy-back wrote through a host symlink");
    EXPECT_FALSE(outside.exists("out"));
  }
}

// Control: with a regular file at the host path, the same command's output replaces it.
TEST(OutputsNoLinkFollow, ControlHostRegularFileAtTheDestinationIsReplaced) {
  TempDir ws("ws");
  ws.write("out", "old");
  RunResult r = runShell(ws, {"--output", "out"}, "echo new > out");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(outputEntry(r, "out").value("status", ""), "copied") << r.describe();
  EXPECT_EQ(ws.read("out"), "new\n");
}

TEST(OutputsNoLinkFollow, HostSymlinkedParentDirectoryIsNotFollowed) {
  TempDir ws("ws"), outside("outside");
  std::filesystem::create_directory_symlink(outside.path(), ws / "d");
  RunResult r = runShell(ws, {"--output", "d/x"}, "rm -f d && mkdir d && echo pwned > d/x");
  EXPECT_FALSE(outside.exists("x")) << claim("outputs.no-link-follow", "copy-back wrote through a host directory symlink") << r.describe();
}

// A process that keeps swapping the output for a symlink while the command exits: copy-back
// runs only after every sandbox process is dead, so the swap can never win.
TEST(OutputsNoLinkFollow, RacingSwapperCannotRedirectCopyBack) {
  const std::string passwd = readHostFile("/etc/passwd");
  TempDir ws("ws");
  RunResult r = runShell(ws, {"--output", "out"},
                         "echo data > out; (while :; do ln -sf /etc/passwd l; mv -f l out; echo data > n; mv -f n out; "
                         "done) >/dev/null 2>&1 & i=0; while [ $i -lt 300 ]; do i=$((i+1)); done");
  struct stat st;
  if (lstat((ws / "out").c_str(), &st) == 0) {
    EXPECT_TRUE(S_ISREG(st.st_mode)) << claim("outputs.no-link-follow", "a non-regular file was copied back") << r.describe();
    EXPECT_NE(ws.read("out"), passwd) << claim("outputs.no-link-follow", "host /etc/passwd copied out") << r.describe();
  }
  EXPECT_EQ(readHostFile("/etc/passwd"), passwd);
}

// The workspace renamed away and a symlink put in its place while the command runs (what
// another user who can write its parent directory could do, to a root caller): copy-back
// still goes to the directory corral opened at the start, never where the name now points.
TEST(OutputsNoLinkFollow, AWorkspaceSwappedForASymlinkMidRunKeepsItsOutputs) {
  TempDir parent("parent"), victim("victim");
  const std::filesystem::path ws = parent / "ws";
  std::filesystem::create_directory(ws);
  Process corral = Process::start(corralArgv({"--workspace", ws.string(), "--output", "out"},
                                             {"/bin/sh", "-c", "echo data > out; echo started; sleep 1"}));
  auto started = corral.readLine(std::chrono::seconds(30));
  ASSERT_TRUE(started && *started == "started") << corral.wait().describe();
  std::filesystem::rename(ws, parent / "ws.old");
  std::filesystem::create_directory_symlink(victim.path(), ws);
  RunResult r = corral.wait();
  EXPECT_FALSE(victim.exists("out")) << claim("outputs.no-link-follow", "copy-back followed a swapped workspace") << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(parent.read("ws.old/out"), "data\n") << "control: the output reached the workspace corral opened";
}

// --- outputs.path-contained ---

TEST(OutputsPathContained, EscapingOutputPathsAreRefusedAtParse) {
  // NUL cannot be passed in argv at all; a manifest path with NUL is the manifest parser's test.
  for (const char* bad : {"../x", "a/../../x", "a/../b", "..", "./../x", "/etc/passwd", "/tmp/x", "a//../../x"}) {
    SCOPED_TRACE(bad);
    TempDir ws("ws");
    RunResult r = run(corralArgv({"--workspace", ws.path(), "--output", bad}, {"/bin/sh", "-c", "echo ran; echo x > x"}, false));
    EXPECT_TRUE(refusedBeforeRun(r)) << claim("outputs.path-contained", std::string("--output ") + bad + " accepted");
    EXPECT_TRUE(ws.entries().empty()) << "the refused run created files";
  }
}

TEST(OutputsPathContained, ControlPlainRelativePathIsAccepted) {
  TempDir ws("ws");
  RunResult r = runShell(ws, {"--output", "sub/ok.txt"}, "mkdir sub && echo ok > sub/ok.txt");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.read("sub/ok.txt"), "ok\n");
}

}  // namespace
}  // namespace corral::testing
