// SPDX-License-Identifier: Apache-2.0
// Streaming redaction of secrets and their common encodings from bytes headed into the sandbox.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral::net {

struct RedactTarget {
  std::string label;        // lease name: the marker is "[REDACTED:<label>]"
  std::string_view value;   // the secret; only read while the patterns are built
};

// The patterns derived from each secret (docs/credential-leases.md lists them): raw; standard
// and URL-safe base64 at the three alignments, trimmed to the characters the secret alone
// determines; percent-encoding (reserved bytes only, or every byte; upper and lower hex; '+'
// for space); hex upper and lower; JSON string escapes. Immutable, shared by the streams.
class RedactionPatterns {
 public:
  // Empty values are skipped: they match nothing.
  explicit RedactionPatterns(std::span<const RedactTarget> targets);
  ~RedactionPatterns();  // wipes the pattern bytes
  RedactionPatterns(const RedactionPatterns&) = delete;
  RedactionPatterns& operator=(const RedactionPatterns&) = delete;

  size_t size() const { return patterns_.size(); }
  size_t longest() const { return longest_; }
  // One-shot redaction; a Redactor's output over any chunking equals this. `labels` (when
  // given) gains the label of each marker written that it does not hold yet.
  std::string redactAll(std::string_view text, uint64_t* count = nullptr, std::vector<std::string>* labels = nullptr) const;

 private:
  friend class Redactor;
  struct Pattern {
    std::string bytes;
    size_t label = 0;
  };
  struct ScanState {
    size_t cover_left = 0;       // bytes from the scan position on that a found occurrence covers
    uint64_t count = 0;          // markers written
    std::vector<size_t> labels;  // the labels of those markers, each once
  };
  void addLabels(const ScanState& state, std::vector<std::string>& labels) const;
  // The longest pattern starting at text[pos] that fits entirely in text, or nullptr.
  const Pattern* matchAt(std::string_view text, size_t pos) const;
  // Decides bytes of text from the front, appending to out, while every pattern starting at
  // the byte fits (or at_end). Returns how many bytes were decided.
  size_t scan(std::string_view text, bool at_end, ScanState& state, std::string& out) const;

  std::vector<std::string> markers_;             // per label
  std::vector<std::string> names_;               // per label: RedactTarget::label
  std::vector<Pattern> patterns_;                // longest first, deduplicated
  std::vector<std::vector<uint32_t>> by_first_;  // 256 lists of pattern indexes, by first byte
  size_t longest_ = 0;
};

// Every byte inside any occurrence of any pattern is removed, overlapping occurrences
// included, so no part of a secret survives because another pattern matched first. Removed
// bytes whose occurrences overlap share one marker, labelled by the longest pattern that
// starts the run.
class Redactor {
 public:
  explicit Redactor(std::shared_ptr<const RedactionPatterns> patterns);
  ~Redactor();  // wipes the held-back bytes
  Redactor(Redactor&&) = default;

  // The bytes safe to emit now; holds back at most longest() - 1 bytes.
  std::string feed(std::string_view chunk);
  // The held-back rest, redacted. The Redactor is empty afterwards and may be reused.
  std::string finish();
  uint64_t redactions() const { return state_.count; }  // markers written
  // Adds the label (lease) of each marker written so far that `labels` does not hold yet.
  void addLabels(std::vector<std::string>& labels) const { patterns_->addLabels(state_, labels); }

 private:
  std::string process(bool at_end);
  std::shared_ptr<const RedactionPatterns> patterns_;
  std::string held_;
  RedactionPatterns::ScanState state_;
};

}  // namespace corral::net
