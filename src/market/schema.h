// SPDX-License-Identifier: Apache-2.0
// The market's one schema, for both engines, as numbered migrations.
#pragma once

#include "market/db.h"

namespace corral::market {

inline constexpr int kSchemaVersion = 2;

// Applies every migration above the database's version in one transaction. Safe to call
// from several server processes at once (PostgreSQL: an advisory lock; SQLite: BEGIN
// IMMEDIATE). Refuses a database newer than this binary.
Result<int> migrate(Db& db);

}  // namespace corral::market
