// SPDX-License-Identifier: Apache-2.0
// checkGitConfig: parses git's config syntax (as git 2.39's config.c does) and accepts only
// an allowlist of inert keys.
#include <array>
#include <cctype>
#include <optional>

#include "policy/git_gate.h"
#include "policy/units.h"

namespace corral::policy {
namespace {

constexpr size_t kMaxConfigBytes = size_t{1024} * 1024;

// Keys git init, git clone and a user's identity write, none of which makes git run a
// program or read another file. Everything else is refused: a denylist would have to track
// every exec-capable key git ever adds (filter.*, diff.*.textconv, core.fsmonitor,
// include.path, alias.*, ...), an allowlist fails closed on the next one.
struct AllowedKey {
  std::string_view section;
  bool subsection;  // true: section.<any>.key; false: section.key only
  std::string_view key;
};
constexpr AllowedKey kAllowedKeys[] = {
    {"core", false, "repositoryformatversion"},
    {"core", false, "filemode"},
    {"core", false, "bare"},
    {"core", false, "logallrefupdates"},
    {"core", false, "symlinks"},
    {"core", false, "ignorecase"},
    {"core", false, "precomposeunicode"},
    {"core", false, "sharedrepository"},
    {"extensions", false, "objectformat"},  // sha256 repositories (git init --object-format)
    {"user", false, "name"},
    {"user", false, "email"},
    {"init", false, "defaultbranch"},
    {"receive", false, "denynonfastforwards"},  // git init --shared; read only by receive-pack
    // Written by git clone. Used only by transports, and protocol.allow=never (pinned) plus
    // the refusal of every promisor/partial-clone key keep the listed subcommands off them.
    {"remote", true, "url"},
    {"remote", true, "fetch"},
    {"branch", true, "remote"},
    {"branch", true, "merge"},
};

bool isKeyChar(int c) { return std::isalnum(c) || c == '-'; }

// A character stream with git's get_next_char() rules: "\r\n" reads as '\n', and the end of
// input reads as '\n' (again and again) with eof set. Bytes git would take but that no
// inert config needs (NUL, other control bytes, a lone CR) stop the parse: fail closed.
class Stream {
 public:
  explicit Stream(std::string_view text) : text_(text) {
    if (text_.substr(0, 3) == "\xef\xbb\xbf") pos_ = 3;  // git skips a UTF-8 BOM
  }
  int next() {
    if (pos_ >= text_.size()) {
      eof_ = true;
      return '\n';
    }
    auto c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') c = static_cast<unsigned char>(text_[pos_++]);
    // line() is the line of the character just read, so an error found at a '\n' names
    // the line it ends.
    if (after_newline_) ++line_;
    after_newline_ = c == '\n';
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) bad_ = true;
    return c;
  }
  bool eof() const { return eof_; }
  bool bad() const { return bad_; }
  size_t line() const { return line_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  size_t line_ = 1;
  bool after_newline_ = false;
  bool eof_ = false;
  bool bad_ = false;
};

Error malformed(const Stream& s, std::string_view what) {
  return Error(Errc::kRefused, "the repository's git config is malformed at line " + std::to_string(s.line()) +
                                   " (" + std::string(what) + "); corral refuses git in this workspace");
}

struct Section {
  std::string name;                       // lowercased
  std::optional<std::string> subsection;  // as written ("[x \"Sub\"]") or lowercased ("[x.sub]")
};

// After '[': "[name]", "[name.sub]" (old form, lowercased) or "[name \"sub\"]".
Result<Section> parseSection(Stream& s) {
  std::string base;
  int c;
  for (;;) {
    c = s.next();
    if (s.eof() || s.bad()) return malformed(s, "unterminated section header");
    if (c == ']' || c == ' ' || c == '\t') break;
    if (!isKeyChar(c) && c != '.') return malformed(s, "bad character in a section name");
    base += static_cast<char>(std::tolower(c));
  }
  Section sec;
  size_t dot = base.find('.');
  sec.name = base.substr(0, dot);
  if (dot != std::string::npos) sec.subsection = base.substr(dot + 1);
  if (sec.name.empty()) return malformed(s, "empty section name");
  if (c == ']') return sec;
  // Extended form. git also skips newlines here; corral takes only blanks (stricter).
  if (sec.subsection) return malformed(s, "a section name with both '.' and a quoted subsection");
  do c = s.next();
  while (c == ' ' || c == '\t');
  if (c != '"') return malformed(s, "expected a quoted subsection");
  std::string sub;
  for (;;) {
    c = s.next();
    if (s.bad() || c == '\n') return malformed(s, "unterminated subsection");
    if (c == '"') break;
    if (c == '\\') {
      c = s.next();
      if (s.bad() || c == '\n') return malformed(s, "unterminated subsection");
    }
    sub += static_cast<char>(c);
  }
  if (s.next() != ']') return malformed(s, "expected ']' after the subsection");
  sec.subsection = std::move(sub);
  return sec;
}

// After '=': git's parse_value(). The value itself is never kept or reported.
Result<void> skipValue(Stream& s) {
  bool quote = false;
  bool comment = false;
  for (;;) {
    int c = s.next();
    if (s.bad()) return malformed(s, "control byte in a value");
    if (c == '\n') {
      if (quote) return malformed(s, "unterminated quote in a value");
      return {};
    }
    if (comment) continue;
    if (!quote && (c == ';' || c == '#')) {
      comment = true;
      continue;
    }
    if (c == '\\') {
      c = s.next();
      if (s.bad()) return malformed(s, "control byte in a value");
      if (c == '\n' || c == 't' || c == 'b' || c == 'n' || c == '\\' || c == '"') continue;
      return malformed(s, "unknown escape in a value");
    }
    if (c == '"') quote = !quote;
  }
}

bool allowed(const Section& sec, std::string_view key) {
  for (const AllowedKey& a : kAllowedKeys)
    if (a.section == sec.name && a.subsection == sec.subsection.has_value() && a.key == key) return true;
  return false;
}

std::string shownKey(const Section& sec, std::string_view key) {
  std::string sub;
  if (sec.subsection) sub = "." + printable(sec.subsection->substr(0, 32)) + (sec.subsection->size() > 32 ? "..." : "");
  return printable(sec.name.substr(0, 64)) + sub + "." + printable(key.substr(0, 64));
}

}  // namespace

Result<void> checkGitConfig(std::string_view config_text) {
  if (config_text.size() > kMaxConfigBytes)
    return Error(Errc::kLimit, "the repository's git config is larger than " + std::to_string(kMaxConfigBytes) +
                                   " bytes; corral refuses git in this workspace");
  Stream s(config_text);
  std::optional<Section> sec;
  bool comment = false;
  for (;;) {
    int c = s.next();
    if (s.bad()) return malformed(s, "control byte");
    if (c == '\n') {
      if (s.eof()) return {};
      comment = false;
      continue;
    }
    if (comment || c == ' ' || c == '\t') continue;
    if (c == '#' || c == ';') {
      comment = true;
      continue;
    }
    if (c == '[') {
      ASSIGN_OR_RETURN(sec, parseSection(s));
      continue;  // git allows a key on the same line: "[core] bare = true"
    }
    if (!std::isalpha(c)) return malformed(s, "expected a section, a key or a comment");
    if (!sec) return malformed(s, "a key before any section");
    std::string key(1, static_cast<char>(std::tolower(c)));
    for (;;) {
      c = s.next();
      if (s.eof() || !isKeyChar(c)) break;
      key += static_cast<char>(std::tolower(c));
    }
    if (s.bad()) return malformed(s, "control byte");
    while (c == ' ' || c == '\t') c = s.next();
    if (s.bad()) return malformed(s, "control byte");
    if (c != '\n') {
      if (c != '=') return malformed(s, "expected '=' after a key");
      RETURN_IF_ERROR(skipValue(s));
    }
    if (!allowed(*sec, key))
      return Error(Errc::kRefused, "the repository's git config sets '" + shownKey(*sec, key) +
                                       "', which is not on corral's list of inert keys (it may make git run a "
                                       "program or read other config); corral refuses git in this workspace");
    if (s.eof()) return {};
  }
}

}  // namespace corral::policy
