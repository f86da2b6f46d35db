// SPDX-License-Identifier: Apache-2.0
// Fuzzes gateCommand/gateGit against independent reference checks, and checkGitConfig.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "policy/command_gate.h"
#include "policy/git_gate.h"

namespace corral::fuzz {
namespace {

using Args = std::vector<std::string>;
const Args kAllowlist = {"git", "python3", "ls", "sh"};

// Written out again here, not taken from git_gate.cc, so a deletion there shows up.
constexpr std::string_view kRefSubcommands[] = {"init", "add",  "commit", "status", "diff", "cat-file", "rev-parse",
                                                "rev-list", "log", "grep", "show", "notes", "gc"};
constexpr std::string_view kRefDeniedLong[] = {
    "upload-pack", "receive-pack", "exec",   "output",   "ext-diff", "textconv",         "filters",
    "open-files-in-pager", "template", "separate-git-dir", "gpg-sign", "edit", "interactive", "help",
    "show-signature", "recurse-submodules", "submodule", "reedit-message"};
struct RefShort {
  std::string_view sub, denied, stops;
};
constexpr RefShort kRefShort[] = {
    {"add", "pie", ""}, {"commit", "Setcp", "mFC"}, {"notes", "ce", "mFC"}, {"grep", "O", "efABCm"}};
constexpr std::string_view kRefNotes[] = {"list", "add", "append", "copy", "show", "remove", "prune", "get-ref"};

bool plainArg(std::string_view a) {
  if (!noControlBytes(a)) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (std::string_view(";&|$`<>(){}[]*?!\\'\"#").find(c) != std::string_view::npos) return false;
    if (c == '~' && (i == 0 || a[i - 1] == '=' || a[i - 1] == ':')) return false;
  }
  return true;
}

// A denied long option or an abbreviation of one (--text and --filter are real options).
bool refDeniedLong(std::string_view arg) {
  std::string_view name = arg.substr(2, arg.find('=') == std::string_view::npos ? std::string_view::npos : arg.find('=') - 2);
  if (name.empty() || name == "text" || name == "filter") return false;
  for (std::string_view d : kRefDeniedLong)
    if (d.substr(0, name.size()) == name) return true;
  return false;
}

bool refDeniedShort(std::string_view sub, std::string_view arg) {
  for (const RefShort& r : kRefShort) {
    if (r.sub != sub) continue;
    for (char c : arg.substr(1)) {
      if (r.denied.find(c) != std::string_view::npos) return true;
      if (r.stops.find(c) != std::string_view::npos) break;
    }
  }
  return false;
}

void checkGitArgs(const Args& args) {
  PROPERTY(!args.empty() && !args[0].empty() && args[0][0] != '-', "git allowed with an option before the subcommand");
  PROPERTY(std::find(std::begin(kRefSubcommands), std::end(kRefSubcommands), args[0]) != std::end(kRefSubcommands),
           "git allowed with subcommand " + args[0]);
  size_t from = 1;
  if (args[0] == "notes") {
    while (from < args.size() && (args[from] == "--ref" || args[from].rfind("--ref=", 0) == 0))
      from += args[from] == "--ref" ? 2 : 1;
    if (from < args.size()) {
      PROPERTY(std::find(std::begin(kRefNotes), std::end(kRefNotes), args[from]) != std::end(kRefNotes),
               "git notes allowed with " + args[from]);
      ++from;
    }
  }
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a == "--end-of-options") break;
    if (a.size() < 2 || a[0] != '-') continue;
    if (a[1] == '-') {
      PROPERTY(!refDeniedLong(a), "git " + args[0] + " allowed with denied option " + a);
      std::string_view name = std::string_view(a).substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      bool ignore_sub = !name.empty() && std::string_view("ignore-submodules").substr(0, name.size()) == name;
      PROPERTY(!ignore_sub || a == "--ignore-submodules" || a == "--ignore-submodules=all", "git allowed with " + a);
    } else {
      PROPERTY(!refDeniedShort(args[0], a), "git " + args[0] + " allowed with denied short option " + a);
    }
  }
}

void checkDecision(std::string_view command, const Args& args) {
  policy::CommandDecision d = policy::gateCommand(kAllowlist, command, args);
  policy::CommandDecision again = policy::gateCommand(kAllowlist, command, args);
  PROPERTY(d.allowed == again.allowed && d.rule == again.rule && d.reason == again.reason && d.argv == again.argv &&
               d.env == again.env,
           "decision is not deterministic: " + d.reason);
  PROPERTY(!d.rule.empty() && !d.reason.empty(), "empty rule or reason");
  PROPERTY(noControlBytes(d.reason), d.reason);
  PROPERTY(d.reason.size() <= 260, "reason too long (echoes input?): " + d.reason);
  if (!d.allowed) {
    PROPERTY(d.argv.empty() && d.env.empty(), "refused decision carries an argv: " + d.reason);
    return;
  }
  PROPERTY(!d.argv.empty(), "allowed with an empty argv");
  const std::string& exe = d.argv[0];
  PROPERTY(std::find(kAllowlist.begin(), kAllowlist.end(), exe) != kAllowlist.end(), "argv[0] not allowlisted: " + exe);
  std::string_view base = command.substr(command.rfind('/') == std::string_view::npos ? 0 : command.rfind('/') + 1);
  PROPERTY(base == exe, "argv[0] is not the command's basename: " + exe);
  PROPERTY(d.argv.size() >= args.size() + 1, "argv lost arguments");
  Args tail(d.argv.end() - static_cast<long>(args.size()), d.argv.end());
  PROPERTY(tail == args, "the model's arguments were changed");
  for (const std::string& a : args) PROPERTY(plainArg(a), "allowed argument with a metacharacter or control byte: " + a);
  if (exe == "git") {
    PROPERTY(!d.env.empty(), "git allowed without its pinned environment");
    checkGitArgs(args);
  } else {
    PROPERTY(d.argv.size() == args.size() + 1 && d.env.empty(), "non-git command got extra argv or env");
  }
}

void checkConfig(std::string_view text) {
  auto r = policy::checkGitConfig(text);
  PROPERTY_ONE_LINE_ERROR(r);
  PROPERTY(r.ok() == policy::checkGitConfig(text).ok(), std::string("checkGitConfig is not deterministic"));
  if (r.ok()) {
    for (char c : text) {
      auto u = static_cast<unsigned char>(c);
      PROPERTY(u >= 0x20 || c == '\n' || c == '\t' || c == '\r', std::string("config with a control byte accepted"));
    }
  }
}

}  // namespace
}  // namespace corral::fuzz

// Input: NUL-separated fields. The first byte picks the shape: odd runs "git" with every
// field as an argument (most of the interesting surface), even takes the first field as the
// command. The raw bytes are also a git config file.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> fields;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nul = text.find('\0', start);
    if (nul == std::string_view::npos) nul = text.size();
    fields.emplace_back(text.substr(start, nul - start));
    start = nul + 1;
  }
  if (data[0] & 1) {
    corral::fuzz::checkDecision("git", fields);
  } else {
    std::string command = fields.front();
    fields.erase(fields.begin());
    corral::fuzz::checkDecision(command, fields);
  }
  corral::fuzz::checkConfig(text);
  return 0;
}
