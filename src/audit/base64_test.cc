// SPDX-License-Identifier: Apache-2.0
// Base64: RFC 4648 vectors and the one-spelling rule of the strict decoder.
#include "audit/base64.h"

#include <gtest/gtest.h>

namespace corral::audit {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, enc] : cases) {
    EXPECT_EQ(base64Encode(plain), enc);
    EXPECT_EQ(base64DecodeStrict(enc), std::optional<std::string>(plain)) << enc;
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(base64DecodeStrict(base64Encode(all)), std::optional<std::string>(all));
}

TEST(Base64, StrictDecoderRefusesOtherSpellings) {
  for (const char* bad : {"Zg", "Zg=", "Zh==", "Zm9=", "Zg==Zg==", "Zm9v\n", " Zm9v", "Zm-v", "Zm_v", "====", "Z===",
                          "Zm9vYg=a"})
    EXPECT_FALSE(base64DecodeStrict(bad).has_value()) << bad;
}

}  // namespace
}  // namespace corral::audit
