// SPDX-License-Identifier: Apache-2.0
// wasm.preopen-read-write-beneath: a read-write preopen (--dir HOST:GUEST) takes the guest's
// changes, and none of them lands outside it: no "..", absolute path or symlink leads a
// write, a new directory, a rename or an unlink out, and the guest plants no link.
#include <sys/stat.h>
#include <unistd.h>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

// As root the guest writes as the sandbox's unprivileged uid: the directory must let it.
void openToTheSandbox(const std::string& dir) { ::chmod(dir.c_str(), 0777); }

std::vector<std::string> failures(const RunResult& r) {
  std::vector<std::string> out;
  for (const std::string& l : linesStartingWith(r.out, ""))
    if (l.find(" errno ") != std::string::npos) out.push_back(l);
  return out;
}

TEST(WasmPreopenReadWriteBeneath, ControlAReadWritePreopenTakesChanges) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-rw");
  openToTheSandbox(d.path());
  RunResult r = runWasm({"--dir", d.path() + ":/rw"}, guest,
                        {"fs", "write", "/rw/a.txt", "hello", "mkdir", "/rw/d", "rename", "/rw/a.txt", "/rw/d/b.txt",
                         "append", "/rw/d/b.txt", "!", "write", "/rw/gone", "x", "unlink", "/rw/gone", "mkdir", "/rw/e",
                         "rmdir", "/rw/e", "write", "/rw/t", "long", "truncate", "/rw/t"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(failures(r).empty()) << r.describe();
  EXPECT_EQ(d.entries(), (std::vector<std::string>{"d", "t"})) << r.describe();
  EXPECT_EQ(d.read("d/b.txt"), "hello!");
  EXPECT_EQ(d.read("t"), "");
}

TEST(WasmPreopenReadWriteBeneath, NoChangeLeavesThePreopen) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-rw-escape");
  TempDir outside("wasm-rw-outside");
  openToTheSandbox(d.path());
  openToTheSandbox(outside.path());
  d.write("a.txt", "mine");
  outside.write("target.txt", "untouched");
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0777), 0);
  // Links planted by someone else: to a host directory outside, to a file outside, and up.
  ASSERT_EQ(::symlink(outside.path().c_str(), (d / "out-link").c_str()), 0);
  ASSERT_EQ(::symlink((outside / "target.txt").c_str(), (d / "file-link").c_str()), 0);
  ASSERT_EQ(::symlink("..", (d / "up-link").c_str()), 0);
  const std::vector<std::string> ops = {
      "write", "/rw/../escape.txt", "x", "write", "/rw/sub/../../escape2.txt", "x", "mkdir", "/rw/../escdir",
      "rename", "/rw/a.txt", "/rw/../moved.txt", "unlink", "/rw/../module.so", "write", "/rw/out-link/pwned", "x",
      "write", "/rw/file-link", "overwritten", "mkdir", "/rw/up-link/escdir", "rename", "/rw/a.txt", "/rw/out-link/moved",
      "symlink", "/etc/passwd", "/rw/planted", "link", "/rw/a.txt", "/rw/hard", "rmdir", "/rw/.."};
  std::vector<std::string> args{"fs"};
  args.insert(args.end(), ops.begin(), ops.end());
  RunResult r = runWasm({"--dir", d.path() + ":/rw"}, guest, args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(failures(r).size(), 12u) << claim("wasm.preopen-read-write-beneath", "a change outside succeeded") << r.describe();
  EXPECT_EQ(outside.entries(), std::vector<std::string>{"target.txt"}) << claim("wasm.preopen-read-write-beneath", "wrote outside");
  EXPECT_EQ(outside.read("target.txt"), "untouched") << claim("wasm.preopen-read-write-beneath", "wrote through a symlink");
  EXPECT_EQ(d.entries(), (std::vector<std::string>{"a.txt", "file-link", "out-link", "sub", "up-link"})) << r.describe();
  EXPECT_EQ(d.read("a.txt"), "mine");
}

}  // namespace
}  // namespace corral::testing::wasm
