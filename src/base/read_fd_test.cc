// SPDX-License-Identifier: Apache-2.0
// readUpTo: bounded reads whose cost follows the data, not the cap.
#include "base/read_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace corral {
namespace {

UniqueFd fileWith(const std::string& content) {
  char path[] = "/tmp/corral-read-fd-XXXXXX";
  int raw = ::mkstemp(path);
  EXPECT_GE(raw, 0);
  ::unlink(path);
  EXPECT_EQ(::write(raw, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::lseek(raw, 0, SEEK_SET);
  return UniqueFd(raw);
}

TEST(ReadUpTo, ReadsWholeFilesUnderTheLimit) {
  const std::string big(300 * 1024 + 7, 'x');  // crosses the growth steps
  for (const std::string& content : {std::string(), std::string("abc"), big}) {
    UniqueFd fd = fileWith(content);
    auto r = readUpTo(fd.get(), content.size() + 10, "test");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, content);
  }
}

TEST(ReadUpTo, ReturnsOneByteMoreThanTheLimitWhenTheFileIsLonger) {
  UniqueFd fd = fileWith(std::string(200 * 1024, 'y'));
  auto r = readUpTo(fd.get(), 100 * 1024, "test");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 100u * 1024 + 1);
  UniqueFd exact = fileWith("12345");
  auto e = readUpTo(exact.get(), 5, "test");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, "12345");
}

// The cap is a bound, not an allocation: a 1 TiB cap on a small file must not try to
// allocate (it threw std::length_error / bad_alloc, or zero-filled gigabytes for 4 GiB caps).
TEST(ReadUpTo, AHugeLimitCostsOnlyWhatIsRead) {
  UniqueFd fd = fileWith("small");
  auto r = readUpTo(fd.get(), size_t{1} << 40, "test");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "small");
  UniqueFd fd2 = fileWith("max");
  auto m = readUpTo(fd2.get(), SIZE_MAX, "test");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, "max");
}

TEST(ReadUpTo, AReadErrorNamesWhat) {
  auto r = readUpTo(-1, 10, "the thing");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("the thing"), std::string::npos);
}

}  // namespace
}  // namespace corral
