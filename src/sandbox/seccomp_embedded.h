// SPDX-License-Identifier: Apache-2.0
// The sandbox seccomp program compiled at build time (tools/seccomp_gen.cc runs
// seccomp::compile(policy::seccomp::sandboxPolicy()) and emits it), so a launch pays nothing
// for libseccomp. The test SeccompEmbedded.MatchesAFreshCompile keeps it equal to the policy.
#pragma once

#include "sandbox/seccomp.h"

namespace corral::sandbox::seccomp {

// Defined in the generated corral_seccomp_embedded library.
const Program& embeddedProgram();

}  // namespace corral::sandbox::seccomp
