// SPDX-License-Identifier: Apache-2.0
// Forwarding header, kept because code on other branches still includes it: SHA-256 is a base facility now (base/sha256.h).
#pragma once
#include "base/sha256.h"  // IWYU pragma: export
