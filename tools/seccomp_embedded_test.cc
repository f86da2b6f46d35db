// SPDX-License-Identifier: Apache-2.0
// The build-time seccomp program must be exactly what the policy compiles to today.
#include <gtest/gtest.h>

#include <cstring>

#include "policy/seccomp_policy.h"
#include "sandbox/seccomp_embedded.h"

namespace corral::sandbox::seccomp {
namespace {

TEST(SeccompEmbedded, MatchesAFreshCompile) {
  auto fresh = compile(policy::seccomp::sandboxPolicy());
  ASSERT_TRUE(fresh.ok()) << fresh.error().message();
  const Program& embedded = embeddedProgram();
  ASSERT_EQ(embedded.insns.size(), fresh->insns.size()) << "embedded seccomp program is stale: rebuild";
  EXPECT_EQ(0, std::memcmp(embedded.insns.data(), fresh->insns.data(), embedded.insns.size() * sizeof(sock_filter)))
      << "embedded seccomp program differs from the policy";
}

TEST(SeccompEmbedded, ControlADifferentPolicyDiffers) {
  policy::seccomp::Policy p = policy::seccomp::sandboxPolicy();
  p.rules.erase(p.rules.begin());  // drop one rule: the program must change
  auto other = compile(p);
  ASSERT_TRUE(other.ok()) << other.error().message();
  const Program& embedded = embeddedProgram();
  bool same = other->insns.size() == embedded.insns.size() &&
              std::memcmp(other->insns.data(), embedded.insns.data(), embedded.insns.size() * sizeof(sock_filter)) == 0;
  EXPECT_FALSE(same) << "the comparison cannot tell policies apart";
}

}  // namespace
}  // namespace corral::sandbox::seccomp
