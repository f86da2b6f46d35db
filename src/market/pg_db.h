// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL engine of Db: one libpq connection, ? placeholders numbered to $n.
#pragma once

#include <memory>
#include <string>

#include "market/db.h"

namespace corral::market {

Result<std::unique_ptr<Db>> openPostgres(const std::string& url);

// "a = ? AND b = ?" -> "a = $1 AND b = $2"; a ? inside a '...' literal is left alone.
std::string numberPlaceholders(std::string_view sql);

}  // namespace corral::market
