// SPDX-License-Identifier: Apache-2.0
#include "agent/mailbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path;
  Dir() {
    char t[] = "/tmp/corral-mailbox-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Dir() { fs::remove_all(path); }
  UniqueFd open() const { return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }
};

TEST(Mailbox, SendWritesOneJsonFilePerMessage) {
  Dir d;
  auto mb = Mailbox::open(d.open(), "r-1");
  ASSERT_TRUE(mb.ok()) << mb.error().message();
  auto id = mb->send("root", "operator", "hello", 42);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "r-1-1");
  std::ifstream f(d.path / "mailbox/outbox/r-1-1.json");
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["body"], "hello");
  EXPECT_EQ(j["from"], "root");
}

TEST(Mailbox, SendRefusesOversizedBodiesAndTooManyMessages) {
  Dir d;
  auto mb = Mailbox::open(d.open(), "r");
  ASSERT_TRUE(mb.ok());
  EXPECT_FALSE(mb->send("root", "operator", std::string(kMaxMailBodyBytes + 1, 'a'), 0).ok());
  for (uint32_t i = 0; i < kMaxMailSentPerRun; ++i) ASSERT_TRUE(mb->send("root", "operator", "x", 0).ok());
  EXPECT_FALSE(mb->send("root", "operator", "x", 0).ok());
}

TEST(Mailbox, ReceiveDeliversOnceInNameOrderAndNeverFollowsLinks) {
  Dir d;
  auto mb = Mailbox::open(d.open(), "r");
  ASSERT_TRUE(mb.ok());
  std::ofstream(d.path / "mailbox/inbox/002") << "second";
  std::ofstream(d.path / "mailbox/inbox/001") << "first";
  fs::create_symlink("/etc/hostname", d.path / "mailbox/inbox/003");
  std::ofstream(d.path / "mailbox/inbox/004") << std::string(kMaxMailBodyBytes + 1, 'b');
  auto got = mb->receive();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 4u);
  EXPECT_EQ((*got)[0].body, "first");
  EXPECT_EQ((*got)[1].body, "second");
  EXPECT_NE((*got)[2].body.find("not a regular file"), std::string::npos);
  EXPECT_NE((*got)[3].body.find("not delivered"), std::string::npos);
  auto again = mb->receive();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  EXPECT_TRUE(fs::exists(d.path / "mailbox/inbox/delivered/001"));
}

TEST(Mailbox, RefusesASymlinkedMailboxDirectory) {
  Dir d;
  fs::create_symlink("/tmp", d.path / "mailbox");
  EXPECT_FALSE(Mailbox::open(d.open(), "r").ok());
}

}  // namespace
}  // namespace corral::agent
