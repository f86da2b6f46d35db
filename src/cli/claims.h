// SPDX-License-Identifier: Apache-2.0
// `corral claims`: the claim ledger's status, by running scripts/claims.py from the source tree.
#pragma once

namespace corral::cli {

// `corral claims [--build DIR] [--render FILE] [--junit [MODE=]FILE]... [--no-run] [--check]`.
// argv[0] is the subcommand name. Runs the security tests in DIR (default: the directory
// holding this corral binary) unless --no-run, --junit or --check is given, and prints each
// claim's status; --render also writes SECURITY.md-style output to FILE. Returns the
// script's exit status (128+N if it died of signal N), or 125 when corral refused: bad
// usage, python3 or the script missing.
int claimsMain(int argc, char** argv);

}  // namespace corral::cli
