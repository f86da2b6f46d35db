// SPDX-License-Identifier: Apache-2.0
// Tests for output and mount-target path validation, including hostile paths.
#include "policy/path_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace corral::policy::path {
namespace {

struct Case {
  std::string path;
  std::string why;  // expected message, or a fragment of it
};

TEST(OutputPath, AcceptsNormalRelativePathsUnchanged) {
  const std::string good[] = {"a",       "out.txt",  "dir/file",      "a/b/c/d.e",      ".hidden",
                              "..a",     "a..",      "a/.b",          "a/...",          "caf\xc3\xa9",
                              ".corrals", "x/.corral", ".corral.x", "a./b", ".c\xc3\xb6rral", "corral~", "corral~1a", "corral", std::string(255, 'n'),
                              std::string(255, 'a') + "/" + std::string(255, 'b')};
  for (const std::string& p : good) {
    auto r = outputPath(p);
    ASSERT_TRUE(r.ok()) << p << ": " << r.error().message();
    EXPECT_EQ(*r, p);
  }
}

TEST(OutputPath, RefusesHostilePathsWithOneLineReason) {
  const Case bad[] = {
      {"", "is empty"},
      {"/etc/passwd", "is absolute; outputs are relative to the workspace"},
      {"/", "is absolute; outputs are relative to the workspace"},
      {"..", "has a '..' component"},
      {"../x", "has a '..' component"},
      {"a/../../b", "has a '..' component"},
      {"a/..", "has a '..' component"},
      {".", "has a '.' component"},
      {"./a", "has a '.' component"},
      {"a/./b", "has a '.' component"},
      {"a//b", "has an empty component ('//')"},
      {"a/", "has a trailing slash"},
      {"a/b/", "has a trailing slash"},
      {std::string("a\0b", 3), "contains a NUL byte"},
      {"a\nb", "contains a control character"},
      {"a\x7f", "contains a control character"},
      {"\x1b[2Jx", "contains a control character"},
      {std::string(256, 'n'), "has a component longer than 255 bytes"},
      {"a/" + std::string(256, 'n'), "has a component longer than 255 bytes"},
      {".corral", "is under .corral/, which corral reserves"},
      {".corral/result.json", "is under .corral/, which corral reserves"},
      // The same directory on a case-insensitive or casefolded filesystem.
      {".CORRAL/mailbox/inbox/x", "is under .corral/, which corral reserves"},
      {".Corral", "is under .corral/, which corral reserves"},
      {".corral./x", "is under .corral/, which corral reserves"},   // vfat drops trailing dots
      {".CORRAL . /x", "is under .corral/, which corral reserves"},  // and spaces
      {".c\xe2\x80\x8dorral/x", "is under .corral/, which corral reserves"},  // U+200D, ignorable
      {"\xef\xbb\xbf.corral", "is under .corral/, which corral reserves"},   // U+FEFF
      {"CORRAL~1/x", "is under .corral/, which corral reserves"},  // vfat's 8.3 alias
      {".corral~12", "is under .corral/, which corral reserves"},
      {"\xff\xfe", "is not valid UTF-8"},
      {"a/\xc3", "is not valid UTF-8"},
  };
  for (const Case& c : bad) {
    auto r = outputPath(c.path);
    ASSERT_FALSE(r.ok()) << "accepted hostile output '" << c.path << "'";
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kInvalidArgument));
    EXPECT_EQ(r.error().message(), c.why) << c.path;
  }
}

TEST(OutputPath, LengthLimitIsInclusive) {
  std::string p;
  while (p.size() + 201 < 4096) p += std::string(200, 'x') + "/";
  p += std::string(4096 - p.size(), 'y');
  ASSERT_EQ(p.size(), 4096u);
  EXPECT_TRUE(outputPath(p).ok());
  auto r = outputPath(p + "z");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "longer than 4096 bytes");
}

TEST(SandboxMountPath, AcceptsNormalAbsolutePathsOutsideCorralMounts) {
  const std::string good[] = {"/opt",        "/opt/tool", "/data/set.v2", "/usr2",       "/usrlocal/x",
                              "/procx",      "/devices",  "/tmpfs",       "/etcetera",   "/library",
                              "/lib6",       "/home/u",   "/mnt/ro",      "/workspaces", "/srv/..a"};
  for (const std::string& p : good) {
    auto r = sandboxMountPath(p);
    ASSERT_TRUE(r.ok()) << p << ": " << r.error().message();
    EXPECT_EQ(*r, p);
  }
}

TEST(SandboxMountPath, RefusesRootAndCorralMountsNamingWhich) {
  const Case bad[] = {
      {"/", "is the sandbox root, which corral builds itself"},
      {"/usr", "is /usr, which corral mounts itself"},
      {"/usr/x", "beneath /usr, which corral mounts itself"},
      {"/proc/x", "beneath /proc, which corral mounts itself"},
      {"/proc", "is /proc, which corral mounts itself"},
      {"/proc/self/root", "beneath /proc, which corral mounts itself"},
      {"/dev/shm", "beneath /dev, which corral mounts itself"},
      {"/workspace", "is /workspace, which corral mounts itself"},
      {"/workspace/.corral", "beneath /workspace, which corral mounts itself"},
      {"/tmp/a", "beneath /tmp, which corral mounts itself"},
      {"/etc/passwd", "beneath /etc, which corral mounts itself"},
      {"/bin/sh", "beneath /bin, which corral mounts itself"},
      {"/sbin", "is /sbin, which corral mounts itself"},
      {"/lib/x", "beneath /lib, which corral mounts itself"},
      {"/lib32", "is /lib32, which corral mounts itself"},
      {"/lib64/ld.so", "beneath /lib64, which corral mounts itself"},
      {"/libx32", "is /libx32, which corral mounts itself"},
  };
  for (const Case& c : bad) {
    auto r = sandboxMountPath(c.path);
    ASSERT_FALSE(r.ok()) << "accepted mount target '" << c.path << "'";
    EXPECT_EQ(r.error().message(), c.why) << c.path;
  }
}

TEST(SandboxMountPath, RefusesRelativeAndNonNormalPaths) {
  const Case bad[] = {
      {"", "is empty"},
      {"opt/x", "is not absolute"},
      {"./opt", "is not absolute"},
      {"//opt", "has an empty component ('//')"},
      {"/opt//x", "has an empty component ('//')"},
      {"/opt/", "has a trailing slash"},
      {"/opt/../usr", "has a '..' component"},
      {"/opt/..", "has a '..' component"},
      {"/..", "has a '..' component"},
      {"/./usr", "has a '.' component"},
      {"/opt/.", "has a '.' component"},
      {std::string("/opt\0/usr", 9), "contains a NUL byte"},
      {"/opt\n/x", "contains a control character"},
      {"/" + std::string(256, 'n'), "has a component longer than 255 bytes"},
  };
  for (const Case& c : bad) {
    auto r = sandboxMountPath(c.path);
    ASSERT_FALSE(r.ok()) << "accepted mount target '" << c.path << "'";
    EXPECT_EQ(r.error().message(), c.why) << c.path;
  }
}

TEST(SandboxMountPath, LengthLimitCountsTheLeadingSlash) {
  std::string p;
  while (p.size() + 201 < 4096) p += "/" + std::string(200, 'x');
  p += "/" + std::string(4096 - p.size() - 1, 'y');
  ASSERT_EQ(p.size(), 4096u);
  EXPECT_TRUE(sandboxMountPath(p).ok());
  EXPECT_EQ(sandboxMountPath(p + "z").error().message(), "longer than 4096 bytes");
}

}  // namespace
}  // namespace corral::policy::path
