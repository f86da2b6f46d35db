// SPDX-License-Identifier: Apache-2.0
// The JDK the Java client tests run inside a sandbox (claims_egress_test.cc, claims_egress_clients_test.cc).
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace corral::testing {

// A JVM whose configuration lives under its own directory: Debian's openjdk links its
// conf/security/java.security to /etc/java-N-openjdk, and the sandbox's /etc is corral's own,
// so that JVM cannot start inside at all (docs/egress-proxy.md, "Clients"). "" when none.
inline std::string sandboxableJava() {
  std::error_code ec;
  for (const auto& jdk : std::filesystem::directory_iterator("/usr/lib/jvm", ec)) {
    const auto conf = jdk.path() / "conf/security/java.security";
    if (std::filesystem::is_regular_file(jdk.path() / "bin/java") && std::filesystem::is_regular_file(jdk.path() / "bin/javac") &&
        !std::filesystem::is_symlink(conf) && std::filesystem::is_regular_file(conf))
      return jdk.path().string();
  }
  return "";
}

}  // namespace corral::testing
