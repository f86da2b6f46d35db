// SPDX-License-Identifier: Apache-2.0
#include "net/lease_table.h"

#include <gtest/gtest.h>

#include <map>

namespace corral::net {
namespace {

constexpr std::string_view kSentinel = "corral-sentinel-7f3a-secret-value";

LeaseSpec spec(const std::string& text) {
  auto s = parseCredentialFlag(text);
  EXPECT_TRUE(s.ok()) << text << ": " << (s.ok() ? "" : s.error().message());
  return s.ok() ? *s : LeaseSpec{};
}

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

struct FakeClock {
  int64_t now = 1'000'000'000'000;
  MonotonicClock fn() {
    return [this] { return now; };
  }
};

TEST(LeaseTable, LoadsSecretAndRandomPlaceholder) {
  std::vector<LeaseSpec> specs = {spec("gh=GH_TOKEN@https://api.github.com")};
  auto t = LeaseTable::load(specs, envOf({{"GH_TOKEN", std::string(kSentinel)}}));
  ASSERT_TRUE(t.ok()) << t.error().message();
  const Lease* l = t->find("gh");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->secret().current()->revealForInjection(), kSentinel);
  EXPECT_EQ(l->injectedHeaderValue().revealForInjection(), "Bearer " + std::string(kSentinel));
  ASSERT_EQ(l->placeholder().size(), std::string("corral-lease-gh-").size() + 32);
  EXPECT_EQ(l->placeholder().rfind("corral-lease-gh-", 0), 0u);
  EXPECT_EQ(l->placeholder().find(kSentinel), std::string::npos);
  auto env = t->sandboxEnvironment();
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0], "GH_TOKEN=" + l->placeholder());

  // Two loads of the same secret get unrelated placeholders: nothing is derived from it.
  auto t2 = LeaseTable::load(specs, envOf({{"GH_TOKEN", std::string(kSentinel)}}));
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(t2->find("gh")->placeholder(), l->placeholder());
  EXPECT_EQ(t->find("nope"), nullptr);
}

TEST(LeaseTable, RefusalsNameLeaseAndVariableNeverTheValue) {
  const std::string bad_values[] = {"", "short", std::string(kSentinel) + "\r\nX-Evil: 1",
                                    std::string(kSentinel) + std::string(1, '\0'), std::string(5000, 'k')};
  for (const std::string& v : bad_values) {
    std::vector<LeaseSpec> specs = {spec("gh=GH_TOKEN@https://api.github.com")};
    auto t = LeaseTable::load(specs, envOf({{"GH_TOKEN", v}}));
    ASSERT_FALSE(t.ok()) << "accepted a value of " << v.size() << " bytes";
    const std::string m = t.error().message();
    EXPECT_NE(m.find("credential 'gh': environment variable GH_TOKEN"), std::string::npos) << m;
    EXPECT_EQ(m.find(kSentinel), std::string::npos) << "secret leaked into: " << m;
    EXPECT_EQ(m.find("Evil"), std::string::npos) << m;
  }
  std::vector<LeaseSpec> unset = {spec("gh=GH_TOKEN@https://api.github.com")};
  auto t = LeaseTable::load(unset, envOf({}));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("is not set"), std::string::npos);
}

TEST(LeaseTable, RefusesDuplicateNamesAndVariables) {
  auto env = envOf({{"A", std::string(kSentinel)}, {"B", std::string(kSentinel)}});
  std::vector<LeaseSpec> dup_name = {spec("x=A@https://a.example"), spec("x=B@https://b.example")};
  auto t1 = LeaseTable::load(dup_name, env);
  ASSERT_FALSE(t1.ok());
  EXPECT_NE(t1.error().message().find("named twice"), std::string::npos);
  std::vector<LeaseSpec> dup_env = {spec("x=A@https://a.example"), spec("y=A@https://b.example")};
  auto t2 = LeaseTable::load(dup_env, env);
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.error().message().find("already used"), std::string::npos);
}

TEST(LeaseTable, RandomFailureIsAnError) {
  std::vector<LeaseSpec> specs = {spec("gh=GH_TOKEN@https://api.github.com")};
  auto t = LeaseTable::load(specs, envOf({{"GH_TOKEN", std::string(kSentinel)}}),
                            [](std::span<uint8_t>) -> Result<void> { return Error(EAGAIN, "getrandom"); });
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("placeholder"), std::string::npos);
}

TEST(LeaseTable, RequestBudget) {
  FakeClock clock;
  std::vector<LeaseSpec> specs = {spec("gh=T@https://a.example;max_requests=3;rate=1000;burst=1000")};
  auto t = LeaseTable::load(specs, envOf({{"T", std::string(kSentinel)}}), systemRandom, clock.fn());
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t->chargeRequest("gh"), std::nullopt) << i;
  auto r = t->chargeRequest("gh");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, "lease 'gh': request budget of 3 requests used up");
  EXPECT_EQ(t->usage("gh").requests, 3u);
  EXPECT_EQ(t->usage("gh").refused, 1u);
}

TEST(LeaseTable, ByteBudgetCountsStreamingBytes) {
  FakeClock clock;
  std::vector<LeaseSpec> specs = {spec("gh=T@https://a.example;max_bytes=1000")};
  auto t = LeaseTable::load(specs, envOf({{"T", std::string(kSentinel)}}), systemRandom, clock.fn());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->chargeRequest("gh"), std::nullopt);
  EXPECT_EQ(t->chargeBytes("gh", 600), std::nullopt);
  EXPECT_EQ(t->chargeBytes("gh", 400), std::nullopt);  // exactly the budget
  auto over = t->chargeBytes("gh", 1);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(*over, "lease 'gh': byte budget of 1000 bytes exceeded");
  auto next = t->chargeRequest("gh");
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->find("byte budget of 1000 bytes used up"), std::string::npos);
  EXPECT_EQ(t->chargeBytes("gh", UINT64_MAX).has_value(), true);  // saturates, no wrap
  EXPECT_EQ(t->usage("gh").bytes, UINT64_MAX);
}

TEST(LeaseTable, TokenBucketRateLimit) {
  FakeClock clock;
  std::vector<LeaseSpec> specs = {spec("gh=T@https://a.example;rate=2;burst=3")};
  auto t = LeaseTable::load(specs, envOf({{"T", std::string(kSentinel)}}), systemRandom, clock.fn());
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t->chargeRequest("gh"), std::nullopt) << "burst request " << i;
  auto r = t->chargeRequest("gh");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, "lease 'gh': rate limit of 2 requests/s (burst 3) exceeded; retry in 500 ms");
  clock.now += 499'000'000;
  EXPECT_TRUE(t->chargeRequest("gh").has_value()) << "refilled too early";
  clock.now += 1'000'000;
  EXPECT_EQ(t->chargeRequest("gh"), std::nullopt) << "one token after 0.5 s at 2/s";
  EXPECT_TRUE(t->chargeRequest("gh").has_value());
  clock.now += int64_t{1} << 62;  // a long idle period refills to the burst, no more
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t->chargeRequest("gh"), std::nullopt) << i;
  EXPECT_TRUE(t->chargeRequest("gh").has_value());
  clock.now -= 10'000'000'000;  // a clock going backwards refills nothing
  EXPECT_TRUE(t->chargeRequest("gh").has_value());
}

TEST(LeaseTable, UnknownLeaseIsRefusedPrintably) {
  std::vector<LeaseSpec> specs;
  auto t = LeaseTable::load(specs, envOf({}));
  ASSERT_TRUE(t.ok());
  auto r = t->chargeRequest("x\r\ny");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->find('\n'), std::string::npos) << *r;
}

TEST(LeaseTable, RulesAndTargetsCarryEachLease) {
  std::vector<LeaseSpec> specs = {spec("a=A@https://a.example"), spec("b=B@http://b.example:8080")};
  auto t = LeaseTable::load(specs, envOf({{"A", "secret-aaaaaaaa"}, {"B", "secret-bbbbbbbb"}}));
  ASSERT_TRUE(t.ok());
  auto rules = t->placeholderRules();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[1].lease, "b");
  EXPECT_EQ(rules[1].grant.text(), "http://b.example:8080");
  EXPECT_EQ(rules[1].secret->current()->revealForInjection(), "secret-bbbbbbbb");
  std::vector<std::shared_ptr<const Secret>> hold;
  auto targets = t->redactTargets(&hold);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].label, "a");
  EXPECT_EQ(targets[0].value, "secret-aaaaaaaa");
}

// A rotation: the next injection, placeholder swap and redaction target carry the new value;
// a bad value is refused and the old one kept.
TEST(LeaseTable, RotateReplacesTheValueForEveryLaterUse) {
  std::vector<LeaseSpec> specs;
  auto spec = parseCredentialFlag("gh=GH_TOKEN@https://api.github.com");
  ASSERT_TRUE(spec.ok());
  specs.push_back(*spec);
  auto t = LeaseTable::load(specs, envOf({{"GH_TOKEN", "old-value-0001"}}));
  ASSERT_TRUE(t.ok());
  const auto rules = t->placeholderRules();
  const Lease* l = t->find("gh");
  EXPECT_EQ(l->injectedHeaderValue().revealForInjection(), "Bearer old-value-0001");  // control
  const std::shared_ptr<const Secret> in_flight = l->secret().current();
  ASSERT_TRUE(t->rotate("gh", Secret("new-value-0002")).ok());
  EXPECT_EQ(l->injectedHeaderValue().revealForInjection(), "Bearer new-value-0002");
  EXPECT_EQ(rules[0].secret->current()->revealForInjection(), "new-value-0002");
  std::vector<std::shared_ptr<const Secret>> hold;
  EXPECT_EQ(t->redactTargets(&hold)[0].value, "new-value-0002");
  EXPECT_EQ(in_flight->revealForInjection(), "old-value-0001") << "a request already holding the old value keeps it whole";
  EXPECT_FALSE(t->rotate("gh", Secret("short")).ok());
  EXPECT_FALSE(t->rotate("nope", Secret("new-value-0003")).ok());
  EXPECT_EQ(l->injectedHeaderValue().revealForInjection(), "Bearer new-value-0002");
}

}  // namespace
}  // namespace corral::net
