// SPDX-License-Identifier: Apache-2.0
// Fuzzes the VM --net proxy relay as a hostile guest would feed the host: the relay frame
// parser, fed in arbitrary splits, and the stream table every parsed frame is checked
// against (ids, opens, half-closes, windows). Between frames the host's own side of the
// protocol runs too (acknowledging, sending within its credit), so window checks see both.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "vm/relay_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::vm::relay;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Parser parser(Side::kHost);
  Streams streams(Side::kHost);
  const size_t split = size ? data[0] % 23 + 1 : 1;
  bool failed = false;
  for (size_t off = 0; off < in.size() && !failed; off += split) {
    parser.feed(in.substr(off, split));
    for (;;) {
      auto f = parser.next();
      if (!f.ok()) {
        failed = true;
        PROPERTY(!parser.next().ok(), "the parser accepted input after refusing a frame");
        break;
      }
      if (!*f) break;
      const Frame& fr = **f;
      PROPERTY(fr.stream != 0, "a frame for stream 0 came out");
      PROPERTY(fr.payload.size() <= kMaxData, "a frame above the cap came out");
      PROPERTY(encode(fr.type, fr.stream, fr.payload).size() == kHeaderBytes + kMinLength + fr.payload.size(), "encode size");
      auto v = streams.receive(fr);
      if (!v.ok()) {
        failed = true;
        PROPERTY(!streams.receive(fr).ok(), "the stream table accepted a frame after refusing one");
        break;
      }
      PROPERTY(streams.open() <= kMaxStreams, "more streams open than the cap");
      if (const Streams::State* s = streams.find(fr.stream)) {
        PROPERTY(s->in_unacked <= kWindow, "a stream holds more than its window");
        // The host's side: acknowledge what came, send a little within credit.
        if (fr.type == Type::kData) streams.acked(fr.stream, static_cast<uint32_t>(fr.payload.size() / 2));
        const uint32_t credit = streams.sendCredit(fr.stream);
        PROPERTY(credit <= kWindow, "credit above the window");
        if (credit > 0) streams.sent(fr.stream, credit > 100 ? 100 : credit);
      }
    }
  }
  PROPERTY(parser.buffered() <= size, "the parser holds more than it was fed");
  return 0;
}
