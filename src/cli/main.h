// SPDX-License-Identifier: Apache-2.0
// Subcommand dispatch; the one place an Error becomes an exit code.
#pragma once

namespace corral::cli {
int main(int argc, char** argv);
}
