// SPDX-License-Identifier: Apache-2.0
// The SQLite engine of Db: one connection, WAL, a busy timeout, BEGIN IMMEDIATE.
#pragma once

#include <memory>
#include <string>

#include "market/db.h"

namespace corral::market {

// Creates the file (mode 0600) when missing.
Result<std::unique_ptr<Db>> openSqlite(const std::string& path);

}  // namespace corral::market
