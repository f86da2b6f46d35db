// SPDX-License-Identifier: Apache-2.0
// splitTarget: the router's only view of a request's path.
#include "daemon/request_target.h"

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

std::vector<std::string> split(std::string_view target, bool* ok) { return splitTarget(target, ok); }

TEST(RequestTarget, SplitsAnAbsolutePathIntoSegments) {
  bool ok = false;
  EXPECT_EQ(split("/v1/sessions/abc/commands", &ok), (std::vector<std::string>{"v1", "sessions", "abc", "commands"}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(split("/v1/sessions/abc/files/a%20b", &ok), (std::vector<std::string>{"v1", "sessions", "abc", "files", "a b"}));
  EXPECT_TRUE(ok) << "a file name may hold an escaped space";
}

TEST(RequestTarget, RefusesRawControlBytesAnywhere) {
  // Found by fuzz_daemon_request: a raw NUL in a segment came through when the HTTP parser
  // was not the one to stop it.
  for (std::string t : {std::string("/v1/ses\0x/commands", 18), std::string("/v1/sessions/a b"), std::string("/v1/sessions/a\tb"),
                        std::string("/v1/sessions/abc/files/a\x7f"), std::string("/v1/sessions/abc/files/a\nb")}) {
    bool ok = true;
    (void)split(t, &ok);
    EXPECT_FALSE(ok) << "accepted a target with a raw control byte (" << t.size() << " bytes)";
  }
}

TEST(RequestTarget, RefusesEscapesOutsideFilePathsAndEscapedSlashOrNul) {
  for (const char* t : {"/v1/sessions/ab%63", "/v1/sessions/abc/files/a%2fb", "/v1/sessions/abc/files/a%00", "/v1//sessions", "/v1/x?y=1",
                        "v1/sessions", "/v1/sessions/abc/files/a%4"}) {
    bool ok = true;
    (void)split(t, &ok);
    EXPECT_FALSE(ok) << t;
  }
}

}  // namespace
}  // namespace corral::daemon
