// SPDX-License-Identifier: Apache-2.0
// Placeholder mode: header-only substitution toward the lease's own destination.
#include "net/placeholder.h"

#include <algorithm>

namespace corral::net {
namespace {

void wipe(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

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

// Every exact occurrence of from replaced by to.
std::string replaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
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
    std::string value = field.value;
    bool changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      const PlaceholderRule& rule = rules[r];
      if (containsIgnoreCase(field.name, rule.placeholder))
        addSuspect(result.suspects, {rule.lease, SuspectPlace::kHeaderName, field.name});
      if (!containsIgnoreCase(value, rule.placeholder)) continue;
      bool ours = rule.secret != nullptr && destinationIs(rule.grant, dest);
      if (ours && value.find(rule.placeholder) != std::string::npos) {
        // The only place a secret enters a request in placeholder mode.
        std::string next = replaceAll(value, rule.placeholder, rule.secret->revealForInjection());
        wipe(value);  // the previous value may hold another lease's secret already
        value = std::move(next);
        changed = true;
        used[r] = true;
      }
      // What is left (another spelling, or any spelling toward another destination) is
      // passed through untouched and reported.
      if (containsIgnoreCase(value, rule.placeholder))
        addSuspect(result.suspects, {rule.lease, ours ? SuspectPlace::kHeaderOtherSpelling : SuspectPlace::kHeaderOtherDestination, field.name});
    }
    if (changed) result.substituted.push_back({h, Secret(std::move(value))});
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
