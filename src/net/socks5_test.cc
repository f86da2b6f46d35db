// SPDX-License-Identifier: Apache-2.0
#include "net/socks5.h"

#include <gtest/gtest.h>

namespace corral::net::socks5 {
namespace {

using namespace std::string_literals;

TEST(Socks5Greeting, AcceptsNoAuthAmongTheMethodsAndWaitsForTheWholeMessage) {
  EXPECT_EQ(parseGreeting("").status, Status::kNeedMore);
  EXPECT_EQ(parseGreeting("\x05\x02\x00"s).status, Status::kNeedMore);
  Greeting g = parseGreeting("\x05\x02\x02\x00\x05\x01"s);  // a request pipelined behind it
  ASSERT_EQ(g.status, Status::kDone);
  EXPECT_EQ(g.size, 4u);
  EXPECT_TRUE(g.no_auth_offered);
  Greeting only_password = parseGreeting("\x05\x01\x02"s);
  ASSERT_EQ(only_password.status, Status::kDone);
  EXPECT_FALSE(only_password.no_auth_offered);
  EXPECT_EQ(greetingReply(true), "\x05\x00"s);
  EXPECT_EQ(greetingReply(false), "\x05\xff"s);
}

TEST(Socks5Greeting, RefusesOtherVersionsAndAnEmptyMethodList) {
  EXPECT_EQ(parseGreeting("\x04\x01\x00"s).status, Status::kError);
  EXPECT_EQ(parseGreeting("\x05\x00"s).status, Status::kError);
}

TEST(Socks5Request, ConnectGivesTheAuthorityDecideConnectTakes) {
  Request v4 = parseRequest("\x05\x01\x00\x01\x7f\x00\x00\x01\x08\xae"s);
  ASSERT_EQ(v4.status, Status::kDone);
  EXPECT_EQ(v4.authority, "127.0.0.1:2222");
  EXPECT_EQ(v4.size, 10u);
  Request name = parseRequest("\x05\x01\x00\x03\x0bgit.example\x00\x16tail"s);
  ASSERT_EQ(name.status, Status::kDone);
  EXPECT_EQ(name.authority, "git.example:22");
  EXPECT_EQ(name.size, 7u + 11u);
  std::string v6 = "\x05\x01\x00\x04"s + std::string(15, '\0') + "\x01"s + "\x15\x38"s;
  Request six = parseRequest(v6);
  ASSERT_EQ(six.status, Status::kDone);
  EXPECT_EQ(six.authority, "[0:0:0:0:0:0:0:1]:5432");
  // Incomplete at every length short of the whole request.
  const std::string whole = "\x05\x01\x00\x03\x0bgit.example\x00\x16"s;
  for (size_t n = 0; n < whole.size(); ++n) EXPECT_EQ(parseRequest(whole.substr(0, n)).status, Status::kNeedMore) << n;
}

TEST(Socks5Request, BindAndUdpAssociateAreRefusedWithCommandNotSupported) {
  for (char cmd : {'\x02', '\x03', '\x09'}) {
    Request r = parseRequest("\x05"s + cmd + "\x00\x01\x00\x00\x00\x00\x00\x00"s);
    ASSERT_EQ(r.status, Status::kError);
    EXPECT_EQ(r.rule, "socks-command-unsupported");
    EXPECT_EQ(r.error_reply, Reply::kCommandNotSupported);
    EXPECT_EQ(r.command, static_cast<uint8_t>(cmd));
  }
}

TEST(Socks5Request, DomainsThatWouldSplitDifferentlyAreRefused) {
  for (const std::string& domain : {"evil.com:22"s, "[::1]"s, ""s}) {
    Request r = parseRequest("\x05\x01\x00\x03"s + char(domain.size()) + domain + "\x01\xbb"s);
    ASSERT_EQ(r.status, Status::kError) << domain;
    EXPECT_EQ(r.rule, "bad-host") << domain;
  }
}

TEST(Socks5Request, MalformedRequestsAreRefused) {
  EXPECT_EQ(parseRequest("\x04\x01\x00\x01\x00\x00\x00\x00\x00\x50"s).rule, "socks-malformed");
  EXPECT_EQ(parseRequest("\x05\x01\x01\x01\x00\x00\x00\x00\x00\x50"s).rule, "socks-malformed");
  Request atyp = parseRequest("\x05\x01\x00\x02\x00\x00\x00\x00\x00\x50"s);
  EXPECT_EQ(atyp.rule, "socks-address-type");
  EXPECT_EQ(atyp.error_reply, Reply::kAddressTypeNotSupported);
}

TEST(Socks5Reply, HidesTheHostSideAddress) {
  EXPECT_EQ(reply(Reply::kSucceeded), "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"s);
  EXPECT_EQ(reply(Reply::kNotAllowed)[1], '\x02');
}

}  // namespace
}  // namespace corral::net::socks5
