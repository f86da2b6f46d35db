// SPDX-License-Identifier: Apache-2.0
#include "agent/sandbox_command.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace corral::agent {
namespace {

bool hasName(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& kv) { return kv.starts_with(name + "="); });
}

// git runs with the gate's pins and only an allowlist of the manifest's env: the review of
// session 5 loaded a workspace .so into git through GCONV_PATH, and GIT_CONFIG_* added config.
TEST(CommandSpecEnv, GatedGitGetsOnlyTheAllowlistOfTheManifestsEnv) {
  auto ws = PrivateWorkspace::create();
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  policy::Manifest m;
  m.env = {"GCONV_PATH=/workspace/g", "XDG_CONFIG_HOME=/workspace/x", "GIT_CONFIG_COUNT=1", "GIT_AUTHOR_NAME=op",
           "LC_ALL=C.UTF-8", "TZ=UTC", "MY_TOOL_FLAG=1"};
  const std::vector<std::string> pins = {"GIT_CONFIG_NOSYSTEM=1"};
  auto git = commandSpec(m, *ws, {"git", "status"}, pins, std::chrono::seconds(5));
  ASSERT_TRUE(git.ok()) << git.error().message();
  for (const char* dropped : {"GCONV_PATH", "XDG_CONFIG_HOME", "GIT_CONFIG_COUNT", "MY_TOOL_FLAG"})
    EXPECT_FALSE(hasName(git->env, dropped)) << dropped << " reached git";
  for (const char* kept : {"GIT_AUTHOR_NAME", "LC_ALL", "TZ", "GIT_CONFIG_NOSYSTEM"})
    EXPECT_TRUE(hasName(git->env, kept)) << kept << " missing";

  // Control: an ungated command gets the operator's env as written.
  auto py = commandSpec(m, *ws, {"python3", "x.py"}, {}, std::chrono::seconds(5));
  ASSERT_TRUE(py.ok());
  for (const char* kept : {"GCONV_PATH", "XDG_CONFIG_HOME", "MY_TOOL_FLAG"}) EXPECT_TRUE(hasName(py->env, kept)) << kept;
}

}  // namespace
}  // namespace corral::agent
