// SPDX-License-Identifier: Apache-2.0
// Tests for checkGitConfig: git's config syntax, the inert-key allowlist, fail-closed parsing.
#include <gtest/gtest.h>

#include "policy/git_gate.h"

namespace corral::policy {
namespace {

void expectAccepted(std::string_view text) {
  auto r = checkGitConfig(text);
  EXPECT_TRUE(r.ok()) << text << "\n-> " << r.error().message();
}

void expectRefused(std::string_view text, std::string_view key_in_message) {
  auto r = checkGitConfig(text);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << text;
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_NE(r.error().message().find(key_in_message), std::string::npos) << r.error().message();
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
}

TEST(GitConfigCheck, AcceptsWhatGitInitAndCloneWrite) {
  expectAccepted("");
  expectAccepted(
      "[core]\n"
      "\trepositoryformatversion = 0\n"
      "\tfilemode = true\n"
      "\tbare = false\n"
      "\tlogallrefupdates = true\n"
      "[remote \"origin\"]\n"
      "\turl = https://example.com/r.git\n"
      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
      "[branch \"main\"]\n"
      "\tremote = origin\n"
      "\tmerge = refs/heads/main\n"
      "[user]\n"
      "\tname = \"A. Person\" ; comment\n"
      "\temail = a@example.com # comment\n"
      "[extensions]\n\tobjectformat = sha256\n"
      "[init]\n\tdefaultBranch = main\n");
}

TEST(GitConfigCheck, AcceptsGitSyntaxVariants) {
  expectAccepted("\xef\xbb\xbf[core]\nbare\n");                     // BOM, bare boolean
  expectAccepted("[CORE] BARE = TRUE\r\n");                         // case-insensitive, CRLF, key on header line
  expectAccepted("[core]bare=true");                                // no newline at the end
  expectAccepted("# comment\n; comment\n\n[core]\n  bare = true  \n");
  expectAccepted("[remote.origin]\nurl = x\n");                     // old subsection form
  expectAccepted("[user]\nname = a \\\n b\n");                      // continuation line
  expectAccepted("[user]\nname = \"quoted ; # \\\" \\\\ \\t\"\n");  // comment chars and escapes in quotes
  expectAccepted("[remote \"a\\\"b\"]\nurl = x\n");                 // escaped quote in a subsection
}

// One test per kind of exec-capable key; each would make git run a program or read more config.
TEST(GitConfigCheck, RefusesFilterDrivers) {
  for (std::string_view k : {"clean", "smudge", "process"})
    expectRefused("[filter \"x\"]\n\t" + std::string(k) + " = touch /tmp/m\n", "filter.x." + std::string(k));
}
TEST(GitConfigCheck, RefusesDiffDrivers) {
  expectRefused("[diff \"x\"]\ntextconv = sh\n", "diff.x.textconv");
  expectRefused("[diff \"x\"]\ncommand = sh\n", "diff.x.command");
  expectRefused("[diff]\nexternal = sh\n", "diff.external");
}
TEST(GitConfigCheck, RefusesMergeDriver) { expectRefused("[merge \"x\"]\ndriver = sh\n", "merge.x.driver"); }
TEST(GitConfigCheck, RefusesCoreProgramKeys) {
  for (std::string_view k : {"fsmonitor", "hooksPath", "sshCommand", "pager", "editor", "askPass", "gitProxy",
                             "alternateRefsCommand", "worktree", "attributesFile", "excludesFile"}) {
    std::string lower(k);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    expectRefused("[core]\n" + std::string(k) + " = /tmp/x\n", "core." + lower);
  }
}
TEST(GitConfigCheck, RefusesAlias) { expectRefused("[alias]\nst = !touch /tmp/m\n", "alias.st"); }
TEST(GitConfigCheck, RefusesIncludes) {
  expectRefused("[include]\npath = /tmp/other\n", "include.path");
  expectRefused("[includeIf \"gitdir:/\"]\npath = /tmp/other\n", "includeif.gitdir:/.path");
}
TEST(GitConfigCheck, RefusesCredentialHelpers) {
  expectRefused("[credential]\nhelper = !sh\n", "credential.helper");
  expectRefused("[credential \"https://x\"]\nhelper = sh\n", "credential.https://x.helper");
}
TEST(GitConfigCheck, RefusesGpgPrograms) {
  expectRefused("[gpg]\nprogram = sh\n", "gpg.program");
  expectRefused("[gpg \"ssh\"]\nprogram = sh\n", "gpg.ssh.program");
  expectRefused("[commit]\ngpgSign = true\n", "commit.gpgsign");
  expectRefused("[log]\nshowSignature = true\n", "log.showsignature");
}
TEST(GitConfigCheck, RefusesEditorsPagersAndTools) {
  expectRefused("[sequence]\neditor = sh\n", "sequence.editor");
  expectRefused("[pager]\nlog = sh\n", "pager.log");
  expectRefused("[interactive]\ndiffFilter = sh\n", "interactive.difffilter");
  expectRefused("[web]\nbrowser = sh\n", "web.browser");
  expectRefused("[browser \"x\"]\ncmd = sh\n", "browser.x.cmd");
  expectRefused("[man \"x\"]\ncmd = sh\n", "man.x.cmd");
  expectRefused("[mergetool \"x\"]\ncmd = sh\n", "mergetool.x.cmd");
  expectRefused("[difftool \"x\"]\ncmd = sh\n", "difftool.x.cmd");
  expectRefused("[sendemail]\nsmtpServer = /bin/sh\n", "sendemail.smtpserver");
  expectRefused("[trailer \"x\"]\ncmd = sh\n", "trailer.x.cmd");
}
TEST(GitConfigCheck, RefusesTransportKeys) {
  expectRefused("[uploadpack]\npackObjectsHook = sh\n", "uploadpack.packobjectshook");
  expectRefused("[remote \"o\"]\nuploadpack = sh\n", "remote.o.uploadpack");
  expectRefused("[remote \"o\"]\nreceivepack = sh\n", "remote.o.receivepack");
  expectRefused("[remote \"o\"]\nproxy = x\n", "remote.o.proxy");
  expectRefused("[remote \"o\"]\npromisor = true\n", "remote.o.promisor");  // lazy fetch
  expectRefused("[url \"ext::sh -c x \"]\ninsteadOf = https://\n", "url.ext::sh -c x .insteadof");
  expectRefused("[extensions]\npartialClone = o\n", "extensions.partialclone");
  expectRefused("[extensions]\nworktreeConfig = true\n", "extensions.worktreeconfig");  // reads config.worktree
}
TEST(GitConfigCheck, RefusesSubmoduleKeys) { expectRefused("[diff]\nsubmodule = diff\n", "diff.submodule"); }
TEST(GitConfigCheck, RefusesAllowedKeyInTheWrongShape) {
  expectRefused("[core \"x\"]\nbare = true\n", "core.x.bare");
  expectRefused("[remote]\nurl = x\n", "remote.url");
}

// The parse must match git's, or a key git reads could hide inside what corral took for a value.
TEST(GitConfigCheck, ContinuationCannotHideAKey) {
  // git reads "[filter..." as the rest of user.name's value, so this is fine...
  expectAccepted("[user]\nname = a \\\n[filter \"x\"] clean = sh\n");
  // ...and here the continuation ends first: the header is real.
  expectRefused("[user]\nname = a \\\n\n[filter \"x\"] clean = sh\n", "filter.x.clean");
  expectRefused("[user]\nname = \"a\" ; \\\n[alias] x = !sh\n", "alias.x");  // no continuation inside a comment
}
TEST(GitConfigCheck, KeyOnTheHeaderLineCounts) { expectRefused("[core] fsmonitor = /tmp/x\n", "core.fsmonitor"); }
TEST(GitConfigCheck, QuotedValueCannotHideAKey) {
  expectAccepted("[user]\nname = \"a ; [alias] x = !sh\"\n");  // all of it is the value
  // A quote does not span lines in git: unterminated, so malformed, so refused.
  EXPECT_FALSE(checkGitConfig("[user]\nname = \"x\n[alias]\nx = !sh\n\"\n").ok());
}

TEST(GitConfigCheck, RefusesMalformedConfig) {
  const std::string_view bad[] = {
      "[core\nbare = true\n",       // unterminated header
      "[core]\nbare = \"x\n",       // unterminated quote
      "[core]\nbare = \\q\n",       // unknown escape
      "bare = true\n",              // key before any section
      "[core]\n1bare = true\n",     // key must start with a letter
      "[core]\nbare # x\n",         // junk after a key
      "[co re]\nbare = true\n",     // space then no quote
      "[]\nbare = true\n",          // empty section
      "[core \"x\" ]\nbare\n",      // junk after the subsection
      "[a.b \"c\"]\nx\n",           // both forms at once
      "[core]\nbare = tr\rue\n",    // lone CR
      std::string_view("[core]\nbare = t\0rue\n", 18),  // NUL
      "[core]\nbare = \x1b[31m\n",  // escape byte
  };
  for (std::string_view b : bad) {
    auto r = checkGitConfig(b);
    EXPECT_FALSE(r.ok()) << "accepted malformed:\n" << b;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
    }
  }
}

TEST(GitConfigCheck, RefusesOversizedConfig) {
  std::string big = "[user]\nname = " + std::string(1024 * 1024, 'a') + "\n";
  auto r = checkGitConfig(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), static_cast<int>(Errc::kLimit));
}

TEST(GitConfigCheck, MessageNamesTheKeyNotTheValue) {
  auto r = checkGitConfig("[filter \"x\"]\nclean = corral-sentinel-7f3a\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("filter.x.clean"), std::string::npos);
  EXPECT_EQ(r.error().message().find("sentinel"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace corral::policy
