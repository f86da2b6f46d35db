// SPDX-License-Identifier: Apache-2.0
// Tests of host cgroup detection: the real host, and fake cgroupfs trees for the v2 choices.
#include "sandbox/host_cgroups.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace corral::sandbox::cgroup {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// A cgroupfs look-alike in a temp dir, so the v2 choices can be tested on any host.
class FakeTree {
 public:
  FakeTree() {
    char tmpl[] = "/tmp/corral-cgtest-XXXXXX";
    root_ = ::mkdtemp(tmpl) ? tmpl : "";
  }
  ~FakeTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }
  void file(const std::string& rel, const std::string& content) {
    std::error_code ec;
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path(), ec);
    std::ofstream(root_ + "/" + rel) << content;
  }
  std::string mount(const std::string& rel, const std::string& type, const std::string& opts) const {
    return "30 20 0:40 / " + root_ + "/" + rel + " rw - " + type + " " + type + " " + opts + "\n";
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(root_, ec)) out.push_back(e.path().string());
    return out;
  }

 private:
  std::string root_;
};

// A v2 cgroup dir: non-root ones have cgroup.type, as on the kernel.
void v2Dir(FakeTree& t, const std::string& rel, const std::string& controllers, const std::string& subtree,
           const std::string& procs, bool is_root = false) {
  t.file(rel + "/cgroup.controllers", controllers);
  t.file(rel + "/cgroup.subtree_control", subtree);
  t.file(rel + "/cgroup.procs", procs);
  if (!is_root) t.file(rel + "/cgroup.type", "domain\n");
}

TEST(CgroupDetect, ReportsEachControllerConsistently) {
  HostCgroups host = detect();
  for (auto [name, site] : {std::pair{"memory", &host.memory}, {"pids", &host.pids}, {"cpu", &host.cpu}}) {
    SCOPED_TRACE(name);
    if (site->version == Version::kNone) {
      EXPECT_TRUE(site->parent.empty());
      EXPECT_NE(site->why_not.find(name), std::string::npos) << "why_not must name the controller: " << site->why_not;
      EXPECT_EQ(site->why_not.find('\n'), std::string::npos) << "why_not must be one line";
    } else {
      EXPECT_TRUE(site->why_not.empty()) << site->why_not;
      ASSERT_EQ(site->parent.front(), '/');
      const std::string must_exist = site->make_parent ? fs::path(site->parent).parent_path().string() : site->parent;
      EXPECT_TRUE(exists(must_exist)) << must_exist;
    }
  }
  if (host.v1_memsw) {
    EXPECT_EQ(host.memory.version, Version::kV1);
  }
  if (host.v2_memory_peak) {
    EXPECT_EQ(host.memory.version, Version::kV2);
  }
  if (::geteuid() != 0 && host.memory.version == Version::kNone) {
    EXPECT_NE(host.memory.why_not.find("Delegate=yes"), std::string::npos) << host.memory.why_not;
  }
  RecordProperty("memory", std::string(versionName(host.memory.version)) + " " + host.memory.parent + host.memory.why_not);
  RecordProperty("pids", std::string(versionName(host.pids.version)) + " " + host.pids.parent + host.pids.why_not);
}

TEST(CgroupDetect, V1SiteIsOwnCgroupInEachHierarchy) {
  FakeTree t;
  t.file("memory/a/b/cgroup.procs", "1\n");
  t.file("memory/a/b/memory.memsw.limit_in_bytes", "9223372036854771712\n");
  t.file("pids/cgroup.procs", "1\n");
  std::string mi = t.mount("memory", "cgroup", "rw,memory") + t.mount("pids", "cgroup", "rw,pids");
  HostCgroups h = detectFrom("4:memory:/a/b\n8:pids:/\n", mi);
  EXPECT_EQ(h.memory.version, Version::kV1);
  EXPECT_EQ(h.memory.parent, t.root() + "/memory/a/b");
  EXPECT_TRUE(h.v1_memsw);
  EXPECT_EQ(h.pids.version, Version::kV1);
  EXPECT_EQ(h.pids.parent, t.root() + "/pids");
  EXPECT_EQ(h.cpu.version, Version::kNone);
  EXPECT_NE(h.cpu.why_not.find("cpu"), std::string::npos) << h.cpu.why_not;
}

TEST(CgroupDetect, V2RootLayoutWhenRealRootIsWritableAndNothingWritten) {
  FakeTree t;
  v2Dir(t, "v2", "cpu memory pids", "memory pids", "1\n", /*is_root=*/true);
  v2Dir(t, "v2/user.slice", "memory pids", "", "");
  v2Dir(t, "v2/user.slice/s.scope", "", "", "42\n");
  std::vector<std::string> before = t.listing();
  HostCgroups h = detectFrom("0::/user.slice/s.scope\n", t.mount("v2", "cgroup2", "rw"));
  EXPECT_EQ(t.listing(), before) << "detect() must not create anything";
  EXPECT_EQ(h.memory.version, Version::kV2);
  EXPECT_EQ(h.memory.parent, t.root() + "/v2/corral");
  EXPECT_TRUE(h.memory.make_parent);
  EXPECT_EQ(h.cpu.parent, t.root() + "/v2/corral") << "cpu is offered by the root, so it can be enabled";
  EXPECT_EQ(h.v2_self, t.root() + "/v2/user.slice/s.scope");
}

TEST(CgroupDetect, V2DelegatedParentWhenOwnCgroupHoldsProcesses) {
  FakeTree t;  // a cgroup namespace root (it has cgroup.type): no root layout
  v2Dir(t, "v2", "cpu memory pids", "memory pids", "");
  v2Dir(t, "v2/app.slice", "memory pids", "memory pids", "");
  v2Dir(t, "v2/app.slice/run-1.scope", "memory pids", "", "42\n");
  HostCgroups h = detectFrom("0::/app.slice/run-1.scope\n", t.mount("v2", "cgroup2", "rw,nsdelegate"));
  EXPECT_EQ(h.memory.version, Version::kV2);
  EXPECT_EQ(h.memory.parent, t.root() + "/v2/app.slice");
  EXPECT_FALSE(h.memory.make_parent);
  EXPECT_EQ(h.cpu.version, Version::kNone) << "nobody enabled cpu, and we do not enable it in slices";
  EXPECT_NE(h.cpu.why_not.find("holds processes"), std::string::npos) << h.cpu.why_not;
}

TEST(CgroupDetect, V2WithoutTheControllerFallsBackToV1) {
  FakeTree t;  // this machine's hybrid shape: memory bound to v1, cgroup2 has only hugetlb
  v2Dir(t, "unified", "hugetlb", "", "1\n", /*is_root=*/true);
  t.file("memory/cgroup.procs", "1\n");
  std::string mi = t.mount("memory", "cgroup", "rw,memory") + t.mount("unified", "cgroup2", "rw");
  HostCgroups h = detectFrom("4:memory:/\n0::/\n", mi);
  EXPECT_EQ(h.memory.version, Version::kV1);
  EXPECT_EQ(h.pids.version, Version::kNone);
  EXPECT_NE(h.pids.why_not.find("does not offer the pids controller"), std::string::npos) << h.pids.why_not;
}

}  // namespace
}  // namespace corral::sandbox::cgroup
