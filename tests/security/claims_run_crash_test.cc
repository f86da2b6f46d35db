// SPDX-License-Identifier: Apache-2.0
// Claim audit.run-steps-recorded under crashes: `corral run --apply` killed with SIGKILL at
// random points, many times over one workspace. After every kill the host workspace holds
// the old output or the complete new one, the trace is a verifiable, append-only prefix, no
// sandbox process is left, and the next run that writes anything says the last one was cut off.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kKills = 20;
const std::string kOld = "old output\n";  // NOLINT(cert-err58-cpp): test data

// The exact bytes write.py produces: 96 KiB in 4 KiB pieces, slowly, so kills land inside it.
std::string newOutput() {
  std::string out;
  for (int i = 0; i < 24; ++i) out += std::string(4095, static_cast<char>('a' + i)) + "\n";
  return out;
}

std::vector<std::string> lines(const std::string& bytes) {
  std::vector<std::string> out;
  std::istringstream in(bytes);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The independent verifier (tests/audit/verify_audit.py, written from docs/audit-format.md)
// on the trace alone: an interrupted run has no result.json that commits to it, so the
// claim is that what is there is a well-formed hash chain ending in a complete line.
RunResult verifyTraceIndependently(const std::string& trace_path) {
  return corral::testing::run({"/usr/bin/python3", "-c",
                               "import sys; sys.path.insert(0, sys.argv[1]); import verify_audit as v\n"
                               "try:\n  v.verify_trace(open(sys.argv[2], 'rb').read())\n"
                               "except v.Failed as e:\n  print(e); sys.exit(1)\n",
                               std::string(CORRAL_SOURCE_DIR) + "/tests/audit", trace_path});
}

bool markerGone(const std::string& marker) {
  for (int i = 0; i < 100; ++i) {
    if (corral::testing::run({"/usr/bin/pgrep", "-f", marker}).exit_code != 0) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

TEST(AuditRunStepsRecordedCrash, RepeatedKill9LeavesAVerifiablePrefixAndWholeOutputsAndIsDetected) {
  RunFixture f;
  const std::string script = uniqueName("crashwrite") + ".py";  // the sandbox's process, by name
  f.manifest["outputs"] = {"out.txt"};
  f.ws.write(script,
             "import time\n"
             "with open('out.txt', 'w') as f:\n"
             "    for i in range(24):\n"
             "        f.write(chr(97 + i) * 4095 + '\\n'); f.flush(); time.sleep(0.01)\n"
             "print('written', flush=True)\n");
  f.reply({call("run", {{"command", "python3"}, {"args", {script}}})});
  f.reply({call("finish", {{"summary", "wrote out.txt"}})});
  const std::string want = newOutput();

  // Whole runs: they must work, and the quickest of three scales the kill delays (one slow
  // run on a loaded host would stretch the delays past most of the runs that follow).
  // The runs' private workspaces (staged copies of the inputs) go here, to be counted.
  TempDir tmp("crash-tmpdir");
  ASSERT_EQ(::chmod(tmp.path().c_str(), 01777), 0);
  RunOptions in_tmp;
  in_tmp.env_extra = {"TMPDIR=" + tmp.path()};
  milliseconds full = milliseconds::max();
  for (int i = 0; i < 3; ++i) {
    f.ws.write("out.txt", kOld);
    const auto t0 = std::chrono::steady_clock::now();
    RunResult whole = f.run({"--apply"}, in_tmp);
    full = std::min(full, std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0));
    ASSERT_EQ(whole.exit_code, 0) << whole.describe();
    ASSERT_EQ(f.ws.read("out.txt"), want);
  }

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  int killed_mid_run = 0;
  size_t left_by_kills = 0;  // private workspaces a kill left, each removed by the next run
  int detected = 0;
  for (int i = 0; i < kKills; ++i) {
    SCOPED_TRACE("kill " + std::to_string(i));
    f.ws.write("out.txt", kOld);
    const std::string before = f.ws.read(".corral/trace.jsonl");
    const std::vector<std::string> before_lines = lines(before);
    const std::string last_type =
        before_lines.empty() ? "" : json::parse(before_lines.back(), nullptr, false).value("type", "");

    // Delays spread over the whole run (and a little past it), one per stratum, so every
    // phase is hit: startup, staging, the command, the copy-back, sealing the record.
    const auto delay = milliseconds(static_cast<int64_t>(full.count() * 1.1 * (i + jitter(rng)) / kKills));
    Process p = Process::start({corralBin(), "run", f.ws / "manifest.json", "--apply"}, in_tmp);
    std::this_thread::sleep_for(delay);
    p.signal(SIGKILL);
    RunResult r = p.wait();
    if (r.term_signal == SIGKILL) ++killed_mid_run;
    for (const std::string& name : tmp.entries()) left_by_kills += tmp.exists(name + "/ws") ? 1 : 0;

    // 1. No sandbox process outlives corral.
    EXPECT_TRUE(markerGone(script)) << claim("audit.run-steps-recorded", "a sandbox process survived SIGKILL of corral");

    // 2. The host output is the old file or the complete new one, never a part.
    const std::string out = f.ws.read("out.txt");
    EXPECT_TRUE(out == kOld || out == want)
        << claim("outputs", "out.txt is half-written after SIGKILL: " + std::to_string(out.size()) + " bytes");
    for (const std::string& name : f.ws.entries()) {
      const bool known = name == "manifest.json" || name == "transcript.json" || name == script ||
                         name == "out.txt" || name == ".corral";
      // A copy-back temp file (".corral-out-*") cut off before its rename: not an output,
      // but litter; reported rather than failed, see docs/testing.md.
      if (!known && name.rfind(".corral-out-", 0) == 0) {
        std::printf("note: kill %d left copy-back temp file %s\n", i, name.c_str());
        continue;
      }
      EXPECT_TRUE(known) << "unexpected file in the workspace after SIGKILL: " << name;
    }

    // 3. The trace only grew, by whole lines, and is still a verifiable chain.
    const std::string after = f.ws.read(".corral/trace.jsonl");
    ASSERT_EQ(after.compare(0, before.size(), before), 0)
        << claim("audit.run-steps-recorded", "the trace was rewritten, not appended to");
    RunResult v = verifyTraceIndependently(f.ws / ".corral/trace.jsonl");
    ASSERT_EQ(v.exit_code, 0) << claim("audit.run-steps-recorded", "the trace is not a verifiable prefix: " + v.out);

    // 4. A run that wrote anything first says whether the one before it was cut off.
    const std::vector<std::string> after_lines = lines(after);
    if (after_lines.size() > before_lines.size()) {
      const json first_new = json::parse(after_lines[before_lines.size()], nullptr, false);
      if (!last_type.empty() && last_type != "run_end") {
        ASSERT_EQ(first_new.value("type", ""), "previous_run_interrupted")
            << claim("audit.run-steps-recorded", "an interrupted run (last entry " + last_type + ") went unnoticed");
        EXPECT_EQ(first_new["data"].value("last_type", ""), last_type);
        ++detected;
      } else {
        EXPECT_EQ(first_new.value("type", ""), "run_start") << first_new.dump();
      }
    }
  }
  // Not a vacuous run: at least a third of the kills landed while corral was working, and
  // some interruptions were seen by a later run inside the loop.
  EXPECT_GE(killed_mid_run, kKills / 3) << "the kill delays missed the run (full run took " << full.count() << " ms)";
  EXPECT_GE(detected, 1);
  std::printf("full run %lld ms; %d of %d kills landed mid-run; %d interruptions detected in the loop\n",
              static_cast<long long>(full.count()), killed_mid_run, kKills, detected);

  // Finally a whole run: it notices a cut-off predecessor, and the record verifies end to end.
  const std::vector<std::string> before_lines = lines(f.ws.read(".corral/trace.jsonl"));
  const std::string last_type =
      before_lines.empty() ? "" : json::parse(before_lines.back(), nullptr, false).value("type", "");
  f.ws.write("out.txt", kOld);
  RunResult last = f.run({"--apply"}, in_tmp);
  ASSERT_EQ(last.exit_code, 0) << last.describe();
  // SIGKILL leaves a run's staged inputs behind; the next run of the same user removes them.
  for (const std::string& name : tmp.entries())
    EXPECT_FALSE(tmp.exists(name + "/ws")) << claim("audit.run-steps-recorded", "a killed run's staged inputs outlived the next run: " + name);
  EXPECT_GT(left_by_kills, 0u) << "no kill left a private workspace: the check above proves nothing";
  std::printf("%zu private workspaces left by kills, each removed by the next run\n", left_by_kills);
  EXPECT_EQ(f.ws.read("out.txt"), want);
  const std::vector<std::string> after_lines = lines(f.ws.read(".corral/trace.jsonl"));
  ASSERT_GT(after_lines.size(), before_lines.size());
  const json first_new = json::parse(after_lines[before_lines.size()], nullptr, false);
  EXPECT_EQ(first_new.value("type", ""), last_type == "run_end" ? "run_start" : "previous_run_interrupted");
  RunResult verified = corral::testing::run({corralBin(), "verify", f.ws.path()});
  EXPECT_EQ(verified.exit_code, 0) << verified.describe();
}

}  // namespace
}  // namespace corral::testing
