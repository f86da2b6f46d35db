// SPDX-License-Identifier: Apache-2.0
// Placeholder mode: substitution in the lease's own header and format, toward its own destination.
#include "net/placeholder.h"

#include <algorithm>

namespace corral::net {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

bool containsIgnoreCase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return false;
  return lowered(hay).find(lowered(needle)) != std::string::npos;
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// The format with its one "{}" replaced by value (a format without one yields itself).
std::string formatted(std::string_view format, std::string_view value) {
  size_t at = format.find("{}");
  if (at == std::string_view::npos) return std::string(format);
  std::string out(format.substr(0, at));
  out.append(value);
  out.append(format.substr(at + 2));
  return out;
}

void addSuspect(std::vector<Suspect>& out, Suspect s) {
  if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
}

}  // namespace

std::string_view suspectPlaceName(SuspectPlace place) {
  switch (place) {
    case SuspectPlace::kHeaderOtherDestination: return "header-other-destination";
    case SuspectPlace::kHeaderOtherSpelling: return "header-other-spelling";
    case SuspectPlace::kHeaderUndeclared: return "header-undeclared";
    case SuspectPlace::kHeaderName: return "header-name";
    case SuspectPlace::kTarget: return "target";
    case SuspectPlace::kBody: return "body";
  }
  return "unknown";
}

bool destinationIs(const policy::egress::Grant& grant, const RequestDestination& dest) {
  return !grant.wildcard && grant.scheme == dest.scheme && grant.host == dest.host && grant.port == dest.port;
}

PlaceholderResult substitutePlaceholders(std::span<const PlaceholderRule> rules, const RequestDestination& dest,
                                         std::string_view target, std::span<const HeaderField> headers) {
  PlaceholderResult result;
  std::vector<bool> used(rules.size(), false);
  for (size_t h = 0; h < headers.size(); ++h) {
    const HeaderField& field = headers[h];
    for (size_t r = 0; r < rules.size(); ++r) {
      const PlaceholderRule& rule = rules[r];
      if (containsIgnoreCase(field.name, rule.placeholder))
        addSuspect(result.suspects, {rule.lease, SuspectPlace::kHeaderName, field.name});
      if (!containsIgnoreCase(field.value, rule.placeholder)) continue;
      const bool own_destination = destinationIs(rule.grant, dest);
      const bool own_header = iequal(field.name, rule.header);
      const std::string expected = formatted(rule.format, rule.placeholder);
      if (own_destination && own_header && rule.secret != nullptr && field.value == expected) {
        // The only place a secret enters a request in placeholder mode. One header holds
        // one lease's value, so the first match decides it.
        if (std::none_of(result.substituted.begin(), result.substituted.end(),
                         [h](const SubstitutedHeader& s) { return s.index == h; })) {
          result.substituted.push_back({h, Secret(formatted(rule.format, rule.secret->current()->revealForInjection()))});
          used[r] = true;
        }
        continue;
      }
      // Passed through untouched and reported: another destination, another header or
      // value shape, or another spelling of the placeholder.
      SuspectPlace place = SuspectPlace::kHeaderOtherDestination;
      if (own_destination)
        place = own_header && iequal(field.value, expected) ? SuspectPlace::kHeaderOtherSpelling : SuspectPlace::kHeaderUndeclared;
      addSuspect(result.suspects, {rule.lease, place, field.name});
    }
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (used[r]) result.leases_used.push_back(rules[r].lease);
    if (containsIgnoreCase(target, rules[r].placeholder))
      addSuspect(result.suspects, {rules[r].lease, SuspectPlace::kTarget, ""});
  }
  return result;
}

PlaceholderDetector::PlaceholderDetector(const std::vector<std::string>& placeholders) : seen_(placeholders.size(), false) {
  for (const std::string& p : placeholders) {
    lowered_.push_back(lowered(p));
    keep_ = std::max(keep_, p.size());
  }
  if (keep_ > 0) --keep_;
}

void PlaceholderDetector::feed(std::string_view chunk) {
  // A placeholder split across chunks lies within the kept tail plus the new chunk.
  std::string window = tail_ + lowered(chunk);
  for (size_t i = 0; i < lowered_.size(); ++i)
    if (!seen_[i] && !lowered_[i].empty() && window.find(lowered_[i]) != std::string::npos) seen_[i] = true;
  tail_ = window.size() > keep_ ? window.substr(window.size() - keep_) : window;
}

std::vector<size_t> PlaceholderDetector::found() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < seen_.size(); ++i)
    if (seen_[i]) out.push_back(i);
  return out;
}

}  // namespace corral::net
