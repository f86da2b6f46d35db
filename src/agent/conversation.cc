// SPDX-License-Identifier: Apache-2.0
#include "agent/conversation.h"

namespace corral::agent {

const char* roleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

}  // namespace corral::agent
