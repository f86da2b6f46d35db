// SPDX-License-Identifier: Apache-2.0
// The system prompt: what the model is told about its workspace, tools, limits and mode.
#pragma once
#include <string>

#include "policy/manifest.h"

namespace corral::agent {

std::string systemPrompt(const policy::Manifest& m, bool apply, const std::string& task_id);

}  // namespace corral::agent
