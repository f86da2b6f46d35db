// SPDX-License-Identifier: Apache-2.0
// Profiles: strict parsing, and overrides that may only narrow (each widening refused, each
// narrowing kept), field by field.
#include "daemon/profile.h"

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

const char kProfile[] = R"({
  "name": "dev",
  "session": {
    "limits": {"memory": "512M", "pids": 256, "cpu_time": "10m", "tmp_size": "128M", "allow_weaker": ["workspace-size"]},
    "env": ["A=1"], "ttl": "2h", "ro_binds": ["/usr/share:/share"],
    "net": "proxy", "allow": ["https://*.example.com", "https://pypi.org"], "credentials": ["gh", "pypi"]
  },
  "startup": {"argv": ["sh", "-c", "true"], "ready": {"argv": ["true"], "interval": "50ms", "timeout": "5s"}}
})";

Profile profile() {
  auto p = parseProfile(kProfile);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return std::move(*p);
}

Result<SessionSpec> narrow(const char* overrides) { return narrowProfile(profile(), Json::parse(overrides)); }

TEST(ProfileParse, ReadsEveryPart) {
  Profile p = profile();
  EXPECT_EQ(p.name, "dev");
  EXPECT_EQ(p.spec.limits.memory_bytes, 512u << 20);
  EXPECT_TRUE(p.spec.net_proxy);
  ASSERT_TRUE(p.startup && p.startup->ready);
  EXPECT_EQ(p.startup->ready->interval.count(), 50);
  EXPECT_EQ(p.startup->ready->timeout.count(), 5000);
}

TEST(ProfileParse, RefusesWhatAProfileCannotHold) {
  for (const char* bad : {R"({"session": {}})", R"({"name": "Dev"})", R"({"name": "x", "extra": 1})",
                          R"({"name": "x", "session": {"name": "n"}})", R"({"name": "x", "session": {"workspace": "/w"}})",
                          R"({"name": "x", "session": {"limits": {"memory": "lots"}}})", R"({"name": "x", "warm": 65})", R"({"name": "x", "warm": -1})", R"({"name": "x", "warm": "2"})",
                          R"({"name": "x", "warm": 1, "session": {"net": "proxy", "allow": ["https://a.example"], "credentials": ["gh"]}})",
                          R"({"name": "x", "startup": {"argv": []}})",
                          R"({"name": "x", "startup": {"argv": ["a"], "ready": {"argv": ["b"], "retries": 2}}})",
                          R"({"name": "x", "startup": {"argv": ["a"], "ready": {"argv": ["b"], "interval": "9s", "timeout": "1s"}}})",
                          R"({"name": "x", "session": {"credentials": ["gh"]}})", "[]", "{", ""}) {
    auto p = parseProfile(bad);
    EXPECT_FALSE(p.ok()) << "accepted: " << bad;
    if (!p.ok()) {
      EXPECT_EQ(p.error().message().rfind("profile", 0), 0u) << p.error().message();
    }
  }
}

TEST(ProfileNarrow, NoOverridesIsTheProfile) {
  auto s = narrow("{}");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->limits.pids, 256u);
  EXPECT_EQ(s->credentials, (std::vector<std::string>{"gh", "pypi"}));
  EXPECT_EQ(s->ttl->count(), 2 * 3600 * 1000);
}

TEST(ProfileNarrow, EachNarrowingIsKept) {
  auto s = narrow(R"({"name": "n", "limits": {"memory": "256M", "pids": 16, "cpu_time": "1m", "allow_weaker": []},
                      "ttl": "1h", "ro_binds": [], "allow": ["https://api.example.com"], "credentials": ["gh"], "env": ["B=2"]})");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->limits.memory_bytes, 256u << 20);
  EXPECT_EQ(s->limits.pids, 16u);
  EXPECT_TRUE(s->limits.allow_weaker.empty());
  EXPECT_EQ(s->ttl->count(), 3600 * 1000);
  EXPECT_TRUE(s->ro_binds.empty());
  EXPECT_EQ(s->allow, (std::vector<std::string>{"https://api.example.com:443"})) << "covered by the profile's wildcard";
  EXPECT_EQ(s->credentials, (std::vector<std::string>{"gh"}));
  EXPECT_EQ(s->env.size(), 2u);
  EXPECT_EQ(*s->name, "n");
  auto none = narrow(R"({"net": "none"})");
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->net_proxy);
  EXPECT_TRUE(none->credentials.empty() && none->allow.empty());
}

TEST(ProfileNarrow, EachWideningIsRefusedNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"limits": {"memory": "1G"}})", "limits.memory"},
      {R"({"limits": {"pids": 257}})", "limits.pids"},
      {R"({"limits": {"cpu_time": "11m"}})", "limits.cpu_time"},
      {R"({"limits": {"tmp_size": "1G"}})", "limits.tmp_size"},
      {R"({"limits": {"open_files": 4096}})", "limits.open_files"},  // above the default the profile keeps
      {R"({"limits": {"allow_weaker": ["memory"]}})", "limits.allow_weaker"},
      {R"({"ttl": "3h"})", "ttl"},
      {R"({"ro_binds": ["/opt:/opt"]})", "ro_binds"},
      {R"({"allow": ["https://evil.test"]})", "allow"},
      {R"({"allow": ["https://example.com"]})", "allow"},  // the wildcard's domain itself is not below it
      {R"({"allow": ["http://api.example.com"]})", "allow"},
      {R"({"credentials": ["other"]})", "credentials"},
  };
  for (const auto& [overrides, field] : cases) {
    auto s = narrow(overrides);
    ASSERT_FALSE(s.ok()) << "widening accepted: " << overrides;
    EXPECT_EQ(s.error().code(), static_cast<int>(Errc::kRefused)) << overrides;
    EXPECT_NE(s.error().message().find(std::string("override ") + field + " "), std::string::npos) << s.error().message();
  }
  // A profile without a proxy cannot be given one; one without a memory limit takes any.
  auto plain = parseProfile(R"({"name": "p"})");
  ASSERT_TRUE(plain.ok());
  auto widened = narrowProfile(*plain, Json::parse(R"({"net": "proxy", "allow": ["https://a.test"]})"));
  ASSERT_FALSE(widened.ok());
  EXPECT_NE(widened.error().message().find("override net proxy"), std::string::npos) << widened.error().message();
  auto capped = narrowProfile(*plain, Json::parse(R"({"limits": {"memory": "64M"}})"));
  ASSERT_TRUE(capped.ok()) << capped.error().message();
  auto uncapped = parseProfile(R"({"name": "p", "session": {"limits": {"memory": "64M"}}})");
  ASSERT_TRUE(uncapped.ok());
}

// An ssh-key record in a profile: the checks of session create --ssh-key at add, and as an
// override only the profile's own (a different one, or one a profile without any, widens it).
TEST(ProfileSshKey, ParsedWithCreatesChecksAndNarrowedOnlyToItself) {
  const char kGit[] = R"({"name": "git", "session": {"net": "proxy", "allow": ["tcp://git.example.test:22", "https://api.example.test"],
                                                       "ssh_key": "gitkey"}})";
  auto p = parseProfile(kGit);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->spec.ssh_key, std::optional<std::string>("gitkey"));
  for (const char* bad : {R"({"name": "x", "session": {"ssh_key": "k"}})",
                          R"({"name": "x", "session": {"net": "proxy", "allow": ["https://a.example"], "ssh_key": "k"}})",
                          R"({"name": "x", "session": {"net": "proxy", "allow": ["tcp://a.example:22"], "ssh_key": "Bad"}})",
                          R"({"name": "x", "session": {"net": "proxy", "allow": ["tcp://a.example:22"], "credentials": ["k"], "ssh_key": "k"}})",
                          R"({"name": "x", "warm": 1, "session": {"net": "proxy", "allow": ["tcp://a.example:22"], "ssh_key": "k"}})"}) {
    auto b = parseProfile(bad);
    ASSERT_FALSE(b.ok()) << "accepted: " << bad;
    EXPECT_EQ(b.error().message().rfind("profile.", 0), 0u) << b.error().message();
  }
  auto same = narrowProfile(*p, Json::parse(R"({"ssh_key": "gitkey", "allow": ["tcp://git.example.test:22"]})"));
  ASSERT_TRUE(same.ok()) << same.error().message();
  EXPECT_EQ(same->ssh_key, std::optional<std::string>("gitkey"));
  auto kept = narrowProfile(*p, Json::parse("{}"));
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_EQ(kept->ssh_key, std::optional<std::string>("gitkey"));
  auto other = narrowProfile(*p, Json::parse(R"({"ssh_key": "other"})"));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_NE(other.error().message().find("override ssh_key 'other'"), std::string::npos) << other.error().message();
  auto added = narrowProfile(profile(), Json::parse(R"({"ssh_key": "gitkey"})"));
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.error().code(), static_cast<int>(Errc::kRefused)) << added.error().message();
  auto no_tcp = narrowProfile(*p, Json::parse(R"({"allow": ["https://api.example.test"]})"));
  ASSERT_FALSE(no_tcp.ok()) << "an ssh key left without a tcp grant";
  EXPECT_NE(no_tcp.error().message().find("tcp://"), std::string::npos) << no_tcp.error().message();
  auto none = narrowProfile(*p, Json::parse(R"({"net": "none"})"));
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->ssh_key) << "net none drops the key with the grants";
}


// A profile's backend (docs/daemon.md, "Sessions on the VM backend"): an override may not
// change it either way, may make the VM smaller and drop TCG's acceptance, never the reverse.
TEST(ProfileNarrow, TheBackendAndTheVmOnlyNarrow) {
  auto vm = parseProfile(R"({"name": "v", "session": {"backend": "vm", "vm": {"memory": "1G", "cpus": 2, "allow_weaker": ["kvm"]}}})");
  ASSERT_TRUE(vm.ok()) << vm.error().message();
  EXPECT_TRUE(vm->spec.vm);
  auto same = narrowProfile(*vm, Json::parse("{}"));
  ASSERT_TRUE(same.ok()) << same.error().message();
  EXPECT_TRUE(same->vm);
  EXPECT_EQ(same->vm_memory_bytes, 1ull << 30);
  EXPECT_TRUE(same->vm_allow_tcg);
  auto smaller = narrowProfile(*vm, Json::parse(R"({"vm": {"memory": "512M", "cpus": 1}})"));
  ASSERT_TRUE(smaller.ok()) << smaller.error().message();
  EXPECT_EQ(smaller->vm_memory_bytes, 512ull << 20);
  EXPECT_EQ(smaller->vm_cpus, 1u);
  EXPECT_TRUE(smaller->vm_allow_tcg);  // kept unless the override gives allow_weaker itself
  auto strict_kvm = narrowProfile(*vm, Json::parse(R"({"vm": {"allow_weaker": []}})"));
  ASSERT_TRUE(strict_kvm.ok()) << strict_kvm.error().message();
  EXPECT_FALSE(strict_kvm->vm_allow_tcg);
  const std::pair<const char*, const char*> widening[] = {
      {R"({"backend": "namespace"})", "backend"},
      {R"({"vm": {"memory": "2G"}})", "vm.memory"},
      {R"({"vm": {"cpus": 3}})", "vm.cpus"},
  };
  for (const auto& [overrides, field] : widening) {
    auto s = narrowProfile(*vm, Json::parse(overrides));
    ASSERT_FALSE(s.ok()) << "widening accepted: " << overrides;
    EXPECT_EQ(s.error().code(), static_cast<int>(Errc::kRefused)) << overrides;
    EXPECT_NE(s.error().message().find(std::string("override ") + field + " "), std::string::npos) << s.error().message();
  }
  auto strict = parseProfile(R"({"name": "k", "session": {"backend": "vm"}})");
  ASSERT_TRUE(strict.ok());
  auto tcg = narrowProfile(*strict, Json::parse(R"({"vm": {"allow_weaker": ["kvm"]}})"));
  ASSERT_FALSE(tcg.ok());
  EXPECT_NE(tcg.error().message().find("override vm.allow_weaker kvm"), std::string::npos) << tcg.error().message();
  auto plain = parseProfile(R"({"name": "p"})");
  ASSERT_TRUE(plain.ok());
  auto to_vm = narrowProfile(*plain, Json::parse(R"({"backend": "vm"})"));
  ASSERT_FALSE(to_vm.ok());
  EXPECT_NE(to_vm.error().message().find("override backend vm"), std::string::npos) << to_vm.error().message();
  // What a VM session cannot do yet is refused in a profile as in a create.
  EXPECT_FALSE(parseProfile(R"({"name": "w", "warm": 1, "session": {"backend": "vm"}})").ok());
  EXPECT_FALSE(parseProfile(R"({"name": "b", "session": {"backend": "vm", "ro_binds": ["/usr/share:/x"]}})").ok());
}

}  // namespace
}  // namespace corral::daemon
