// SPDX-License-Identifier: Apache-2.0
#include "daemon/terminal_hold.h"

#include <string>

#include <gtest/gtest.h>

namespace corral::daemon {
namespace {

constexpr size_t kRing = Scrollback::kBytes;

// Bytes whose position shows: byte i is 'a' + i % 26.
std::string numbered(size_t from, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (from + i) % 26);
  return s;
}

TEST(Scrollback, KeepsEverythingUpToItsSize) {
  Scrollback s;
  s.append("hello ");
  s.append("world");
  EXPECT_EQ(s.size(), 11u);
  EXPECT_EQ(s.dropped(), 0u);
  EXPECT_EQ(s.take(), "hello world");
  EXPECT_EQ(s.size(), 0u);
}

TEST(Scrollback, DropsTheOldestBytesAndCountsThemInSmallPieces) {
  Scrollback s;
  size_t written = 0;
  while (written < 3 * kRing + 123) {  // pieces of a pty's size, across the wrap many times
    s.append(numbered(written, 4095));
    written += 4095;
  }
  EXPECT_EQ(s.size(), kRing);
  EXPECT_EQ(s.dropped(), written - kRing);
  EXPECT_EQ(s.take(), numbered(written - kRing, kRing)) << "the ring does not hold the newest bytes in order";
}

TEST(Scrollback, APieceLargerThanTheRingKeepsItsTail) {
  Scrollback s;
  s.append("old");
  s.append(numbered(0, kRing + 10));
  EXPECT_EQ(s.dropped(), 13u);
  EXPECT_EQ(s.take(), numbered(10, kRing));
}

TEST(Scrollback, TakeKeepsTheDroppedCountAndStartsAfresh) {
  Scrollback s;
  s.append(numbered(0, kRing + 5));
  (void)s.take();
  s.append("new");
  EXPECT_EQ(s.take(), "new");
  EXPECT_EQ(s.dropped(), 5u);
}

}  // namespace
}  // namespace corral::daemon
