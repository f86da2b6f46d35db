// SPDX-License-Identifier: Apache-2.0
#include "net/ssh_agent_wire.h"

#include <gtest/gtest.h>

namespace corral::net::ssh_agent {
namespace {

using namespace std::string_literals;

// A throwaway key made for this test (ssh-keygen -t ed25519 -N "" -C corral-unit-test); its
// fingerprint is SHA256:4KzXXJodDqehhcYcWr+5LNajQVhn+gEno/Q1APYMngE.
constexpr char kKeyFile[] = R"(-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACC6/2DRdqJUwlum1nLvu7cPYCEnUR8RY3qrxvXfjPgGgwAAAJgveNtTL3jb
UwAAAAtzc2gtZWQyNTUxOQAAACC6/2DRdqJUwlum1nLvu7cPYCEnUR8RY3qrxvXfjPgGgw
AAAEAsdegYDlTcHLz58ak0mMKgZ383IeT2h+XOZmzfcN4zQrr/YNF2olTCW6bWcu+7tw9g
ISdRHxFjeqvG9d+M+AaDAAAAEGNvcnJhbC11bml0LXRlc3QBAgMEBQ==
-----END OPENSSH PRIVATE KEY-----
)";
// The same with a passphrase ("pass"): refused, corral holds no passphrases.
constexpr char kEncryptedKeyFile[] = R"(-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABDaIa1aGQ
mGZxL/oYQSyEMEAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIPnj44AQwuAV+HQ+
vtAWuRYTfZbv1zqK+RFnh4WdHBboAAAAkIcv5t8iZ17Qj2OP41ieHgAcbN0/NbN1peLrYY
P6hNvM0t++JKhCbqU9rA+2DLg4mXRuy/TCDc0yxqUxD/A0seNm1KThpZi/LftAdeESj4CD
Q+xBx9/NmTRXPbqSJ0DyBage9A3t4aHOtOhSmNxQW0OGFyhTYeyyMbL2jE+MGJKG/R53ud
r6WKTue18/gC4uVw==
-----END OPENSSH PRIVATE KEY-----
)";

TEST(SshAgentWire, FramesNeedTheirWholeLengthAndRefuseEmptyOrHugeOnes) {
  EXPECT_EQ(takeFrame("").status, FrameStatus::kNeedMore);
  EXPECT_EQ(takeFrame("\0\0\0\x05\x0b"s).status, FrameStatus::kNeedMore);
  const std::string two = frame(kRequestIdentities, "") + frame(kSignRequest, "abc");
  Frame f = takeFrame(two);
  ASSERT_EQ(f.status, FrameStatus::kFrame);
  EXPECT_EQ(f.type, kRequestIdentities);
  EXPECT_EQ(f.body, "");
  EXPECT_EQ(f.size, 5u);
  f = takeFrame(std::string_view(two).substr(5));
  ASSERT_EQ(f.status, FrameStatus::kFrame);
  EXPECT_EQ(f.type, kSignRequest);
  EXPECT_EQ(f.body, "abc");
  EXPECT_EQ(takeFrame("\0\0\0\0"s).status, FrameStatus::kError);
  EXPECT_EQ(takeFrame(u32(kMaxFrame + 1) + "x").status, FrameStatus::kError);
  EXPECT_EQ(takeFrame("\xff\xff\xff\xff"s).status, FrameStatus::kError);
}

TEST(SshAgentWire, SignRequestAndSessionBindAreExactlyTheirFields) {
  const std::string sign = string("key") + string("data") + u32(4);
  auto s = parseSignRequest(sign);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->key_blob, "key");
  EXPECT_EQ(s->data, "data");
  EXPECT_EQ(s->flags, 4u);
  EXPECT_FALSE(parseSignRequest(sign + "x"));
  EXPECT_FALSE(parseSignRequest(string("key") + "\0\0\0\x09"s + "data"));  // a length past the end
  const std::string bind = string("hk") + string("sid") + string("sig") + "\x01"s;
  auto b = parseSessionBind(bind);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host_key, "hk");
  EXPECT_EQ(b->session_id, "sid");
  EXPECT_TRUE(b->forwarding);
  EXPECT_FALSE(parseSessionBind(string("hk") + string("sid") + string("sig") + "\x02"s));
  EXPECT_FALSE(parseSessionBind(bind + "x"));
  // Each parsed input is a named string: the results are views into it.
  const std::string ext = string(kSessionBind) + bind;
  auto e = parseExtension(ext);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, kSessionBind);
  EXPECT_EQ(e->contents, bind);
}

TEST(SshAgentWire, OnlyAPublickeyUserauthRequestParses) {
  const std::string key = ed25519KeyBlob(std::string(32, 'k'));
  const std::string head = string("session") + "\x32"s + string("git") + string("ssh-connection");
  const std::string tail = "\x01"s + string("ssh-ed25519") + string(key);
  // Each parsed input is a named string: the results are views into it.
  const std::string plain = head + string("publickey") + tail;
  auto u = parseUserauthRequest(plain);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->session_id, "session");
  EXPECT_EQ(u->user, "git");
  EXPECT_EQ(u->key_blob, key);
  EXPECT_FALSE(u->host_key);
  const std::string hostbound = head + string("publickey-hostbound-v00@openssh.com") + tail + string("hostkey");
  auto hb = parseUserauthRequest(hostbound);
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->host_key, "hostkey");
  EXPECT_FALSE(parseUserauthRequest(head + string("publickey-hostbound-v00@openssh.com") + tail));
  EXPECT_FALSE(parseUserauthRequest(head + string("password") + tail));
  EXPECT_FALSE(parseUserauthRequest(head + string("publickey") + tail + "x"));
  std::string not_userauth = plain;
  not_userauth[4 + 7] = '\x33';  // message 51, not 50
  EXPECT_FALSE(parseUserauthRequest(not_userauth));
  EXPECT_FALSE(parseUserauthRequest("arbitrary bytes to be signed"));
}

TEST(SshAgentWire, Ed25519BlobsHaveTheirTypeAndExactSizes) {
  const std::string key = ed25519KeyBlob(std::string(32, 'k'));
  EXPECT_EQ(blobType(key), "ssh-ed25519");
  EXPECT_EQ(ed25519Key(key), std::string(32, 'k'));
  EXPECT_FALSE(ed25519Key(ed25519KeyBlob(std::string(31, 'k'))));
  EXPECT_FALSE(ed25519Key(string("ssh-rsa") + string(std::string(32, 'k'))));
  EXPECT_EQ(ed25519Signature(ed25519SignatureBlob(std::string(64, 's'))), std::string(64, 's'));
  EXPECT_FALSE(ed25519Signature(ed25519SignatureBlob(std::string(63, 's'))));
}

TEST(SshAgentWire, ReadsAnUnencryptedEd25519KeyFile) {
  KeyFileResult r = parseOpenSshPrivateKey(kKeyFile);
  ASSERT_TRUE(r.key) << r.error;
  EXPECT_EQ(r.key->public_key.size(), 32u);
  EXPECT_EQ(r.key->seed.size(), 32u);
  // The public half is the one ssh-keygen printed (AAAAC3NzaC1lZDI1NTE5AAAAILr/YNF2...).
  EXPECT_EQ(static_cast<uint8_t>(r.key->public_key[0]), 0xbau);
}

TEST(SshAgentWire, RefusesEncryptedDamagedAndForeignKeyFilesWithoutEchoingThem) {
  KeyFileResult enc = parseOpenSshPrivateKey(kEncryptedKeyFile);
  EXPECT_FALSE(enc.key);
  EXPECT_NE(enc.error.find("passphrase"), std::string::npos) << enc.error;
  std::string damaged = kKeyFile;
  damaged[100] = damaged[100] == 'A' ? 'B' : 'A';
  KeyFileResult bad = parseOpenSshPrivateKey(damaged);
  EXPECT_FALSE(bad.key);
  EXPECT_EQ(bad.error.find("b3BlbnNz"), std::string::npos) << "the error echoes the key file: " << bad.error;
  EXPECT_FALSE(parseOpenSshPrivateKey("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n").key);
  EXPECT_FALSE(parseOpenSshPrivateKey("").key);
}

}  // namespace
}  // namespace corral::net::ssh_agent
