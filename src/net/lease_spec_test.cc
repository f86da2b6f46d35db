// SPDX-License-Identifier: Apache-2.0
#include "net/lease_spec.h"

#include <gtest/gtest.h>

namespace corral::net {
namespace {

using policy::egress::Scheme;

TEST(LeaseSpec, MinimalFlagTakesDefaults) {
  auto s = parseCredentialFlag("gh=GH_TOKEN@https://API.GitHub.com");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->name, "gh");
  EXPECT_EQ(s->env, "GH_TOKEN");
  EXPECT_EQ(s->grant.text(), "https://api.github.com:443");
  EXPECT_EQ(s->header, "Authorization");
  EXPECT_EQ(s->format, "Bearer {}");
  EXPECT_EQ(s->limits, LeaseLimits{});
}

TEST(LeaseSpec, OptionsAndCanonicalUrl) {
  auto s = parseCredentialFlag(
      "svc_1=SVC_KEY@http://127.1:8080/;header=X-Api-Key;format={};max_requests=50;max_bytes=2M;rate=3;burst=4");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->grant.scheme, Scheme::kHttp);
  EXPECT_EQ(s->grant.host.text, "127.0.0.1");
  EXPECT_EQ(s->grant.port, 8080);
  EXPECT_EQ(s->header, "X-Api-Key");
  EXPECT_EQ(s->format, "{}");
  EXPECT_EQ(s->limits.max_requests, 50u);
  EXPECT_EQ(s->limits.max_bytes, 2u << 20);
  EXPECT_EQ(s->limits.rate_per_second, 3u);
  EXPECT_EQ(s->limits.burst, 4u);
}

TEST(LeaseSpec, FormatMayHoldEqualsSign) {
  auto s = parseCredentialFlag("a=A@https://x.example;format=token={}");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->format, "token={}");
}

TEST(LeaseSpec, CanonicalTextRoundTrips) {
  for (const char* text : {"gh=GH_TOKEN@https://api.github.com", "x-y=_X@http://[::1]:81;format=Basic {};rate=7",
                           "a=A@https://b\xc3\xbc" "cher.example;header=X-K"}) {
    auto s = parseCredentialFlag(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.error().message();
    auto again = parseCredentialFlag(credentialText(*s));
    ASSERT_TRUE(again.ok()) << credentialText(*s) << ": " << again.error().message();
    EXPECT_EQ(*again, *s) << credentialText(*s);
  }
}

struct Bad {
  const char* text;
  const char* why;  // a fragment the message must contain
};

TEST(LeaseSpec, ARefusedHeaderNameIsNeverEchoed) {
  auto s = parseCredentialFlag("gh=T@https://api.example;header=Authorization: Bearer SENTINEL_TOKEN");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message().find("SENTINEL_TOKEN"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("HTTP token characters"), std::string::npos) << s.error().message();
}

// Red team, session 13: the refused URL was echoed whole, token and all.
TEST(LeaseSpec, ARefusedUrlIsNeverEchoed) {
  for (const char* text : {"gh=T@https://user:SENTINEL_TOKEN@api.example", "gh=T@https://api.example/?token=SENTINEL_TOKEN",
                           "gh=T@https://api.example/SENTINEL_TOKEN", "gh=T@https://api.example#SENTINEL_TOKEN"}) {
    auto s = parseCredentialFlag(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.error().message().find("SENTINEL_TOKEN"), std::string::npos) << s.error().message();
    EXPECT_NE(s.error().message().find("(URL not shown)"), std::string::npos) << s.error().message();
  }
}

TEST(LeaseSpec, RefusesWithTheRule) {
  const Bad cases[] = {
      {"gh", "expected NAME=ENVVAR@"},
      {"gh=GH_TOKEN", "expected NAME=ENVVAR@"},
      {"GH=GH_TOKEN@https://a.example", "name 'GH' must be"},
      {"=GH_TOKEN@https://a.example", "name '' must be"},
      {"gh=gh_token@https://a.example", "must match [A-Z_][A-Z0-9_]*"},
      {"gh=1TOKEN@https://a.example", "must match"},
      {"gh=@https://a.example", "must match"},
      {"gh=T@https://*.example.com", "'*.' is refused"},
      {"gh=T@ftp://a.example", "url"},
      {"gh=T@https://a.example/path", "url"},
      {"gh=T@https://user@a.example", "url"},
      {"gh=T@https://a.example;header=Host", "owned by the proxy"},
      {"gh=T@https://a.example;header=content-LENGTH", "owned by the proxy"},
      {"gh=T@https://a.example;header=Transfer-Encoding", "owned by the proxy"},
      {"gh=T@https://a.example;header=Connection", "owned by the proxy"},
      {"gh=T@https://a.example;header=Accept-Encoding", "owned by the proxy"},  // red team, session 12
      {"gh=T@https://a.example;header=expect", "owned by the proxy"},
      {"gh=T@https://a.example;header=X Key", "HTTP token characters"},
      {"gh=T@https://a.example;header=", "HTTP token characters"},
      {"gh=T@https://a.example;format=Bearer", "exactly one {}"},
      {"gh=T@https://a.example;format={}{}", "exactly one {}"},
      {"gh=T@https://a.example;format={}\r\nX-Evil: 1", "control byte"},
      {"gh=T@https://a.example;format={}\n", "control byte"},
      {"gh=T@https://a.example;colour=red", "unknown option 'colour'"},
      {"gh=T@https://a.example;header=A;header=B", "given twice"},
      {"gh=T@https://a.example;", "must be key=value"},
      {"gh=T@https://a.example;rate=0", "rate"},
      {"gh=T@https://a.example;rate=100001", "rate"},
      {"gh=T@https://a.example;max_bytes=lots", "max_bytes"},
  };
  for (const Bad& c : cases) {
    auto s = parseCredentialFlag(c.text);
    ASSERT_FALSE(s.ok()) << "accepted: " << c.text;
    EXPECT_EQ(s.error().code(), static_cast<int>(Errc::kInvalidArgument));
    EXPECT_NE(s.error().message().find(c.why), std::string::npos) << c.text << " -> " << s.error().message();
    EXPECT_EQ(s.error().message().find('\n'), std::string::npos) << c.text;
    EXPECT_EQ(s.error().message().rfind("--credential", 0), 0u) << s.error().message();
  }
}

TEST(LeaseSpec, ManifestFieldsUseTheSameRules) {
  auto ok = leaseFromFields("openai", "OPENAI_API_KEY", "https://api.openai.com", "Authorization", "Bearer {}");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->grant.text(), "https://api.openai.com:443");
  EXPECT_EQ(ok->limits, LeaseLimits{});

  // A format with ';' is fine here: there is no option syntax to collide with.
  auto semi = leaseFromFields("k", "K", "https://a.example", "X-Key", "k={}; v=1");
  ASSERT_TRUE(semi.ok()) << semi.error().message();

  auto bad = leaseFromFields("openai", "OPENAI_API_KEY", "https://*.openai.com", "Authorization", "Bearer {}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message().rfind("credentials 'openai': url", 0), 0u) << bad.error().message();

  auto bad_name = leaseFromFields("Open AI", "K", "https://a.example", "Authorization", "{}");
  ASSERT_FALSE(bad_name.ok());
  EXPECT_EQ(bad_name.error().message().rfind("credentials: name 'Open AI'", 0), 0u) << bad_name.error().message();
}

TEST(LeaseSpec, NameLengthBoundary) {
  std::string name64(64, 'a'), name65(65, 'a');
  EXPECT_TRUE(parseCredentialFlag(name64 + "=T@https://a.example").ok());
  EXPECT_FALSE(parseCredentialFlag(name65 + "=T@https://a.example").ok());
}

}  // namespace
}  // namespace corral::net

namespace corral::net {
namespace {

// The credential is attached to whatever the lease path reaches on the upstream, so the path
// may not climb out of the origin's tree or be read as another authority.
TEST(LeasePath, EscapesOfTheOriginAreRefused) {
  for (const char* p : {"//evil.example/x", "//", "/../x", "/a/../../x", "/a/..", "/.", "/a/./b", "/%2e%2e/x",
                        "/%2E%2e/x", "/a/%2e/b", "/.%2e/x", "/a\\b", "/%5c%5cevil.example/x", "/%5Cx", "//x?a=1",
                        // red team, session 5: encoded slashes, path parameters, a fragment
                        "/%2f%2fevil.example/x", "/%2F/evil.example", "/a%2f..%2f..%2fadmin", "/a/..;/admin",
                        "/..;x/admin", "/a/.;/b", "/a/..%3b/b", "/x#frag", "/x?a=1#frag",
                        // review, session 5: double encoding, overlong UTF-8, %u, NUL, trailing blanks
                        "/%252f%252fevil.example/x", "/%252e%252e/x", "/%25%32%65", "/%c0%ae%c0%ae/x",
                        "/%e0%80%ae/x", "/%u002e%u002e/x", "/..%00/x", "/..%20/x", "/..%09/x",
                        // red team, session 12: IIS double decoding, 4- to 6-byte overlong forms,
                        // a '%' that starts no escape
                        "/a/%%32%65%%32%65/x", "/a/%f0%80%80%ae%f0%80%80%ae/x", "/%F0%80%80%AE/x",
                        "/%f8%80%80%80%ae/x", "/%fc%80%80%80%80%ae/x", "/a%", "/a%2", "/a%zz"}) {
    auto r = checkLeasePath(p);
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused)) << p;
    EXPECT_EQ(r.error().message().find("evil"), std::string::npos) << "the reason never echoes the path";
  }
}

TEST(LeasePath, ControlOrdinaryPathsPass) {
  for (const char* p : {"/", "/v1/repos", "/a/b.c/d", "/..a/b", "/a../b", "/a/...", "/x?q=../..", "/x?next=//evil",
                        "/a%2fb", "/%2e%2ex", "/repos/o/r/contents/.github", "/my%20file", "/caf%c3%a9",
                        "/a%2Bb", "/%e0%a4%85", "/%f0%9f%98%80", "/%F4%8F%BF%BF"})
    EXPECT_TRUE(checkLeasePath(p).ok()) << p;
}

}  // namespace
}  // namespace corral::net
