// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "agent/provider.h"

namespace corral::agent {
namespace {

constexpr int kInvalid = static_cast<int>(Errc::kInvalidArgument);

ProviderConfig config(const std::string& provider, const std::string& endpoint) {
  ProviderConfig c;
  c.provider = provider;
  c.endpoint = endpoint;
  c.model = "m";
  return c;
}

TEST(MakeProvider, BuildsEachKnownProvider) {
  for (auto [provider, endpoint] : {std::pair{"openai", "https://api.openai.com/v1"},
                                    {"ollama", "http://127.0.0.1:11434"},
                                    {"anthropic", "https://api.anthropic.com"}}) {
    auto p = makeProvider(config(provider, endpoint));
    ASSERT_TRUE(p.ok()) << provider << ": " << p.error().message();
    EXPECT_EQ((*p)->name(), provider);
  }
  ProviderConfig replay = config("replay", "");
  replay.transcript_path = "/nonexistent/t.json";  // read at preflight, not here
  auto r = makeProvider(std::move(replay));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)->name(), "replay");
}

TEST(MakeProvider, RefusesConfigsItCannotUse) {
  struct Case {
    ProviderConfig c;
    const char* reason;
  };
  std::vector<Case> cases;
  cases.push_back({config("gemini", "https://x"), "\"gemini\" is unknown"});
  cases.push_back({config("", "https://x"), "is unknown"});
  cases.push_back({config("openai", ""), "endpoint: missing"});
  cases.push_back({config("openai", "ftp://h/v1"), "scheme must be http or https"});
  cases.push_back({config("ollama", "unix:///run/ollama.sock"), "scheme must be http or https"});
  cases.push_back({config("anthropic", "https://"), "endpoint"});
  cases.push_back({config("openai", "https://user:secret@h/v1"), "user:password@"});
  ProviderConfig nomodel = config("openai", "https://h/v1");
  nomodel.model.clear();
  cases.push_back({std::move(nomodel), "needs a model name"});
  cases.push_back({config("replay", ""), "needs a transcript"});
  ProviderConfig relative = config("replay", "");
  relative.transcript_path = "t.json";
  cases.push_back({std::move(relative), "must be absolute"});
  ProviderConfig zero = config("openai", "https://h/v1");
  zero.timeout = std::chrono::milliseconds(0);
  cases.push_back({std::move(zero), "timeout must be positive"});
  ProviderConfig notokens = config("anthropic", "https://h");
  notokens.max_tokens = 0;
  cases.push_back({std::move(notokens), "max_tokens must be positive"});
  for (Case& c : cases) {
    std::string name = c.c.provider;
    auto p = makeProvider(std::move(c.c));
    ASSERT_FALSE(p.ok()) << "accepted a config that should fail with: " << c.reason;
    EXPECT_EQ(p.error().code(), kInvalid);
    EXPECT_NE(p.error().message().find(c.reason), std::string::npos) << name << ": " << p.error().message();
    EXPECT_EQ(p.error().message().find("secret"), std::string::npos) << p.error().message();
  }
}

}  // namespace
}  // namespace corral::agent
