// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the audit claim tests.
#include "audit_fixture.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/trace.h"

namespace corral::audit::testing {

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/corral-audit-test.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
  path_ = tmpl;
}

TempDir::~TempDir() {
  ::nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << "write " << path;
}

std::vector<std::string> readLines(const std::string& path) {
  std::vector<std::string> lines;
  std::string all = readFile(path), cur;
  for (char c : all) {
    if (c == '\n') lines.push_back(std::exchange(cur, {}));
    else cur.push_back(c);
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

void writeLines(const std::string& path, const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  writeFile(path, all);
}

void xorByte(const std::string& path, size_t offset, unsigned char mask) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "open " << path;
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= mask;
  ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  ::close(fd);
}

std::string tracePath(const std::string& workspace) { return workspace + "/.corral/trace.jsonl"; }
std::string resultPath(const std::string& workspace) { return workspace + "/.corral/result.json"; }

void writeSampleRecord(const std::string& workspace, int entries, const SigningKey* key) {
  int64_t now = 1'700'000'000'000;
  TraceOptions opts;
  opts.clock_ms = [&now] { return now += 7; };
  auto w = TraceWriter::openInWorkspace(workspace, opts);
  ASSERT_TRUE(w.ok()) << w.error().message();
  const std::string manifest_hash = sha256Hex("{\"task\":\"fix the bug\"}");
  for (int i = 0; i < entries; ++i) {
    nlohmann::json data;
    std::string type;
    if (i == 0) type = "run_start", data = {{"corral", "0.1.0"}, {"apply", false}};
    else if (i == 1) type = "manifest", data = {{"sha256", manifest_hash}, {"bytes", 412}};
    else if (i == entries - 1) type = "run_end", data = {{"status", "finished"}, {"turns", i}};
    else if (i % 5 == 3) type = "refusal", data = {{"tool", "run"}, {"reason", "executable \"curl\" is not allowed"}};
    else if (i % 5 == 4) type = "budget", data = {{"max_turns", 20}, {"used", i}};
    else
      type = "tool_call", data = {{"tool", "run"}, {"argv", {"make", "test", "-j2"}}, {"exit", i % 3},
                                  {"stdout_sha256", sha256Hex("out" + std::to_string(i))}, {"stdout_bytes", 100 + i},
                                  {"note", "tab\there \"quoted\" caf\xc3\xa9 \xe2\x9c\x93"}};
    auto a = w->append(type, data);
    ASSERT_TRUE(a.ok()) << a.error().message();
  }
  auto dir = openRecordDir(workspace, false);
  ASSERT_TRUE(dir.ok()) << dir.error().message();
  nlohmann::json body = {{"status", "finished"}, {"summary_sha256", sha256Hex("summary")}, {"outputs", nlohmann::json::array({{{"path", "src/fix.c"}, {"sha256", ""}}})}};
  auto done = finishRecord(*dir, *w, manifest_hash, body, key);
  ASSERT_TRUE(done.ok()) << done.error().message();
}

void recommit(const std::string& workspace, const SigningKey* key) {
  auto old = parseResult(readFile(resultPath(workspace)));
  ASSERT_TRUE(old.ok()) << old.error().message();
  ChainVerifier chain;
  for (const auto& line : readLines(tracePath(workspace))) ASSERT_TRUE(chain.addLine(line).ok());
  auto bytes = encodeResult(old->commitments.manifest_sha256, chain.state().head, chain.state().count, old->body, key);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  writeFile(resultPath(workspace), *bytes);
}

SigningKey newKey() {
  auto k = SigningKey::generate();
  if (!k) {
    ADD_FAILURE() << k.error().message();
    std::abort();
  }
  return std::move(*k);
}

PublicKey publicKeyOf(const SigningKey& key) {
  auto pem = key.publicKeyPem();
  auto pub = pem ? PublicKey::fromPem(*pem) : Result<PublicKey>(pem.error());
  if (!pub) {
    ADD_FAILURE() << pub.error().message();
    std::abort();
  }
  return std::move(*pub);
}

VerifyReport verifyWorkspace(const std::string& workspace, const PublicKey* key, std::optional<std::string> trusted_head) {
  VerifyOptions opt;
  opt.public_key = key;
  opt.trusted_head = std::move(trusted_head);
  auto r = verifyRecord(workspace, opt);
  if (!r) {
    ADD_FAILURE() << "verifyRecord: " << r.error().message();
    return VerifyReport{};
  }
  return *r;
}

}  // namespace corral::audit::testing
