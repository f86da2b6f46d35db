// SPDX-License-Identifier: Apache-2.0
#include "base/sha256.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, StreamEqualsOneShotWhateverTheChunking) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7));
  for (size_t chunk : {size_t{1}, size_t{63}, size_t{64}, size_t{4096}, data.size()}) {
    Sha256Stream s;
    for (size_t off = 0; off < data.size(); off += chunk) s.update(std::string_view(data).substr(off, chunk));
    EXPECT_EQ(s.hexDigest(), sha256Hex(data)) << chunk;
  }
}

TEST(Sha256, PeekDoesNotDisturbTheStream) {
  Sha256Stream s;
  s.update("ab");
  EXPECT_EQ(s.peekHex(), sha256Hex("ab"));
  s.update("c");
  EXPECT_EQ(s.peekHex(), sha256Hex("abc"));
  EXPECT_EQ(s.hexDigest(), sha256Hex("abc"));
}

}  // namespace
}  // namespace corral
