// SPDX-License-Identifier: Apache-2.0
#include "net/upstream_proxy.h"

#include <gtest/gtest.h>

#include <map>

namespace corral::net {
namespace {

TEST(UpstreamProxy, UrlGivesHostPortAndABasicCredential) {
  auto p = parseUpstreamProxy("HTTP://Proxy.Corp.Example:8080/");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->text(), "proxy.corp.example:8080");
  EXPECT_FALSE(p->authorization);
  auto d = parseUpstreamProxy("http://10.0.0.1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 3128);
  // RFC 7617's example, and userinfo percent-decoded first.
  EXPECT_EQ(basicAuthorization("Aladdin:open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  auto a = parseUpstreamProxy("http://Aladdin:open%20sesame@proxy:3128");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->authorization);
  EXPECT_EQ(a->authorization->revealForInjection(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(basicAuthorization("a:"), "Basic YTo=");
}

TEST(UpstreamProxy, RefusalsNeverEchoTheUrl) {
  const std::string secret = "corral-sentinel-parent-3f";
  for (const std::string& url : {"https://u:" + secret + "@p:3128", "http://u:" + secret + "@p:3128/x",
                                 "http://u:" + secret + "%zz@p:3128", "u:" + secret + "@p:3128",
                                 "http://u:" + secret + "@p:99999", "http://u:" + secret + "@"}) {
    auto p = parseUpstreamProxy(url);
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_EQ(p.error().message().find(secret), std::string::npos) << p.error().message();
  }
}

TEST(UpstreamProxy, EnvironmentPrefersHttpsProxyAndReadsNoProxy) {
  std::map<std::string, std::string> vars = {{"HTTP_PROXY", "http://plain:1"},
                                             {"https_proxy", "proxy.corp:3129"},
                                             {"no_proxy", " Internal.Corp , 10.1.2.3,.svc"}};
  EnvLookup env = [&](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto p = upstreamFromEnvironment(env);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->text(), "proxy.corp:3129");
  auto host = [](std::string_view h) { return *policy::egress::canonicalHost(h); };
  EXPECT_TRUE(p->bypasses(host("internal.corp")));
  EXPECT_TRUE(p->bypasses(host("git.internal.corp")));
  EXPECT_FALSE(p->bypasses(host("notinternal.corp")));
  EXPECT_TRUE(p->bypasses(host("10.1.2.3")));
  EXPECT_TRUE(p->bypasses(host("a.svc")));
  EXPECT_FALSE(p->bypasses(host("example.com")));
  vars = {};
  EXPECT_FALSE(upstreamFromEnvironment(env).ok());
  vars = {{"HTTPS_PROXY", "http://p:1"}, {"NO_PROXY", "*"}};
  auto all = upstreamFromEnvironment(env);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->bypasses(host("example.com")));
}

}  // namespace
}  // namespace corral::net
