// SPDX-License-Identifier: Apache-2.0
// The files API and `corral session cp`: round trips, and the attacks on it (traversal,
// absolute paths, symlinks planted or swapped in while copying, uploads past the cap).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

class DaemonFilesApiConfined : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d.start()) << d.stderrText();
    id = d.createSession({"--workspace-size", "64M"});
    ASSERT_FALSE(id.empty());
    // The attacker's target on the host: readable and writable by anyone, the sandbox's uid included.
    ASSERT_EQ(::chmod(host.path().c_str(), 0777), 0);
    std::ofstream(host.path() + "/secret") << "host-sentinel-" << ::getpid() << "\n";
    ASSERT_EQ(::chmod((host.path() + "/secret").c_str(), 0666), 0);
  }
  std::string wsPath() const { return d.stateDir() + "/sessions/" + id + "/workspace"; }
  int files(const std::string& method, const std::string& rel, const std::string& body = "") const {
    return d.curl(method, "/v1/sessions/" + id + "/files/" + rel, body, {"--path-as-is"}).status;
  }
  Daemon d;
  std::string id;
  TempDir host{"host"};
  TempDir local{"local"};
};

TEST_F(DaemonFilesApiConfined, CpRoundTripsAFileAndNamesWithSpaces) {
  std::string data(3 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  const std::string src = local.path() + "/in put.bin";
  { std::ofstream(src, std::ios::binary) << data; }
  RunResult up = d.cli({"session", "cp", src, id + ":sub dir/"});
  EXPECT_EQ(up.exit_code, 125) << "no such directory yet: " << up.describe();
  ASSERT_EQ(sessionExec(d, id, {"mkdir", "sub dir"}).exit_code, 0);
  up = d.cli({"session", "cp", src, id + ":sub dir/"});
  ASSERT_EQ(up.exit_code, 0) << up.describe();
  RunResult inside = sessionExec(d, id, {"sh", "-c", "stat -c '%s %U' 'sub dir/in put.bin'"});
  EXPECT_EQ(inside.out, std::to_string(data.size()) + " corral\n") << "owned by the sandbox's uid: " << inside.describe();
  RunResult down = d.cli({"session", "cp", id + ":/workspace/sub dir/in put.bin", local.path() + "/back"});
  ASSERT_EQ(down.exit_code, 0) << down.describe();
  EXPECT_TRUE(fileText(local.path() + "/back") == data) << "the round trip changed the bytes";
  auto st = d.curl("GET", "/v1/sessions/" + id + "/stat/sub%20dir");
  EXPECT_EQ(st.status, 200) << st.body;
  EXPECT_EQ(st.json()["entries"][0]["name"], "in put.bin") << st.body;
  EXPECT_EQ(files("DELETE", "sub%20dir/in%20put.bin"), 200);
  EXPECT_NE(sessionExec(d, id, {"test", "-e", "sub dir/in put.bin"}).exit_code, 0);
}

TEST_F(DaemonFilesApiConfined, TraversalAndAbsolutePathsAreRefused) {
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo inside > f"}).exit_code, 0);
  EXPECT_EQ(files("GET", "f"), 200) << "control: a plain path is served";
  for (const std::string rel : {"../../../../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
                                 "./f", "f%00x"}) {
    const int status = files("GET", rel);
    EXPECT_EQ(status, 400) << claim("daemon.files-api-confined", "GET files/" + rel + " answered " + std::to_string(status));
    EXPECT_EQ(files("PUT", rel + "-up", "x"), 400) << rel;
  }
  for (const std::string& remote : {id + ":../x", id + ":/etc/passwd"}) {
    RunResult r = d.cli({"session", "cp", remote, local.path() + "/x"});
    EXPECT_EQ(r.exit_code, 125) << claim("daemon.files-api-confined", "cp " + remote + " worked: " + r.describe());
  }
  EXPECT_FALSE(fileExists(local.path() + "/x"));
}

TEST_F(DaemonFilesApiConfined, APlantedSymlinkIsNeverFollowed) {
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "ln -s " + host.path() + " d; ln -s " + host.path() + "/secret s; mkfifo p; "
                                             "mkdir real; echo inside > real/secret"}).exit_code, 0);
  for (const std::string rel : {"d/secret", "s", "p"}) {
    auto r = d.curl("GET", "/v1/sessions/" + id + "/files/" + rel);
    EXPECT_EQ(r.status, 422) << rel << ": " << r.body;
    EXPECT_EQ(r.body.find("host-sentinel"), std::string::npos) << claim("daemon.files-api-confined", "read through " + rel);
  }
  EXPECT_EQ(files("PUT", "d/planted", "x"), 422);
  EXPECT_EQ(files("DELETE", "d/secret"), 422);
  EXPECT_FALSE(fileExists(host.path() + "/planted")) << claim("daemon.files-api-confined", "an upload followed a symlink");
  EXPECT_TRUE(fileExists(host.path() + "/secret")) << claim("daemon.files-api-confined", "a remove followed a symlink");
  // Nor is an upload onto the symlink's own name: refused, the link kept (copy-back's rule).
  EXPECT_EQ(files("PUT", "s", "replaced"), 422);
  EXPECT_NE(fileText(host.path() + "/secret"), "replaced") << claim("daemon.files-api-confined", "wrote through a symlink");
  EXPECT_EQ(sessionExec(d, id, {"test", "-L", "s"}).exit_code, 0) << "the link itself must be kept";
  // Control: the same names as real files are served.
  auto ok = d.curl("GET", "/v1/sessions/" + id + "/files/real/secret");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "inside\n");
}

TEST_F(DaemonFilesApiConfined, ASymlinkSwappedInWhileCopyingIsRefusedNeverFollowed) {
  // The session swaps race/ between its own directory and a symlink to the host's directory
  // as fast as it can while the host downloads race/secret and uploads race/up in a loop.
  const std::string swap = "mkdir race; echo inside > race/secret; n=0; while :; do mv race race.d; ln -s " + host.path() +
                           " race; rm race; mv race.d race; n=$((n+1)); [ $((n % 10)) = 0 ] && echo $n > /tmp/swaps.t && mv /tmp/swaps.t /tmp/swaps; done "
                           ">/dev/null 2>&1 &";
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", swap}).exit_code, 0);
  // The copies start only once the loop is swapping (a condition, polled, not a sleep), so the
  // control below compares counts from during the copies, not from after them.
  auto swapCount = [&] { return std::atoi(sessionExec(d, id, {"cat", "/tmp/swaps"}).out.c_str()); };
  int before = 0;
  for (int tries = 0; tries < 600 && (before = swapCount()) == 0; ++tries) ::usleep(50'000);
  ASSERT_GT(before, 0) << "the swap loop never started";
  const std::string client =
      "import http.client, socket, sys\n"
      "class C(http.client.HTTPConnection):\n"
      "    def connect(self):\n"
      "        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); self.sock.connect(sys.argv[1])\n"
      "ok = refused = 0\n"
      "for i in range(300):\n"
      "    for method, body in (('GET', None), ('PUT', b'planted')):\n"
      "        c = C('corral'); path = '/v1/sessions/' + sys.argv[2] + ('/files/race/secret' if method == 'GET' else '/files/race/up')\n"
      "        c.request(method, path, body=body); r = c.getresponse(); data = r.read(); c.close()\n"
      "        if b'host-sentinel' in data: print('LEAK', i); sys.exit(1)\n"
      "        if r.status in (200, 201): ok += 1\n"
      "        else: refused += 1\n"
      "print('ok', ok, 'refused', refused)\n";
  RunResult r = run({"/usr/bin/python3", "-c", client, d.socket(), id});
  EXPECT_EQ(r.exit_code, 0) << claim("daemon.files-api-confined", "a swapped symlink was followed: " + r.describe());
  EXPECT_FALSE(fileExists(host.path() + "/up")) << claim("daemon.files-api-confined", "an upload landed on the host");
  DIR* dir = ::opendir(host.path().c_str());
  ASSERT_NE(dir, nullptr);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) names.emplace_back(e->d_name);
  ::closedir(dir);
  EXPECT_EQ(names.size(), 3u) << "only ., .. and secret may be in the host directory";
  // Control: the race really ran while the copies did (the loop counts its swaps).
  EXPECT_GT(swapCount(), before) << "the swap loop stopped before the copies ended";
}

TEST_F(DaemonFilesApiConfined, AnUploadPastTheCapIsRefusedAndLeavesNothing) {
  const std::string big = local.path() + "/big";
  { std::ofstream(big, std::ios::binary) << std::string(80 << 20, 'z'); }
  RunResult r = d.cli({"session", "cp", big, id + ":big"});
  EXPECT_EQ(r.exit_code, 125) << claim("daemon.files-api-confined", "80 MB uploaded into a 64M workspace: " + r.describe());
  RunResult ls = sessionExec(d, id, {"ls", "-A"});
  EXPECT_EQ(ls.out, "") << "a partial or temporary file was left: " << ls.out;
  // Control: within the cap it goes through.
  { std::ofstream(big, std::ios::binary) << std::string(1 << 20, 'z'); }
  EXPECT_EQ(d.cli({"session", "cp", big, id + ":big"}).exit_code, 0);
}

}  // namespace
}  // namespace corral::testing
