// SPDX-License-Identifier: Apache-2.0
// Fuzzes the VM control channel as a hostile guest would feed it: the frame parser, fed in
// arbitrary splits, and every guest payload decoder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "vm/frame.h"
#include "vm/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::vm;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  frame::Parser parser(frame::Direction::kToHost);
  size_t split = size ? data[0] % 17 + 1 : 1;
  bool failed = false;
  size_t frames = 0;
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
      ++frames;
      const frame::Frame& fr = **f;
      PROPERTY(frame::validType(static_cast<uint8_t>(fr.type), frame::Direction::kToHost), "a frame of an invalid type came out");
      PROPERTY(fr.payload.size() <= frame::kMaxPayload, "a frame above the cap came out");
      // Re-encoding what came out gives back the bytes that went in for it.
      PROPERTY(frame::encode(fr.type, fr.payload).size() == fr.payload.size() + frame::kHeaderBytes + 1, "encode size");
      // Session-mode payloads: the 4-byte fields are read only when all are there, and read
      // back what putU32 wrote.
      uint32_t fields[3] = {};
      for (size_t k = 1; k <= 3; ++k) {
        const bool got = frame::getU32s(fr.payload, k, fields);
        PROPERTY(got == (fr.payload.size() >= 4 * k), "getU32s disagrees with the payload's length");
        if (!got) continue;
        std::string again;
        for (size_t i = 0; i < k; ++i) frame::putU32(again, fields[i]);
        PROPERTY(again == fr.payload.substr(0, 4 * k), "putU32 does not give back what getU32s read");
      }
      (void)protocol::decodeHello(fr.payload);
      (void)protocol::decodeOutputHeader(fr.payload);
      (void)protocol::decodeReseeded(fr.payload);
      auto exit = protocol::decodeExit(fr.payload);
      if (exit.ok()) {
        PROPERTY(exit->exit_code >= 0 && exit->exit_code <= 255, "exit code out of range");
        // What the host decoded, encoded again, decodes to the same verdicts (limits aside:
        // decoding prefixes their mechanism with "guest ", which may pass the length cap).
        corral::sandbox::RunReport copy = *exit;
        copy.limits.clear();
        auto again = protocol::decodeExit(protocol::encodeExit(copy));
        PROPERTY(again.ok() && again->outputs.size() == exit->outputs.size(), "an exit report did not survive a round trip");
        for (size_t i = 0; again.ok() && i < exit->outputs.size(); ++i)
          PROPERTY(again->outputs[i].path == exit->outputs[i].path && again->outputs[i].status == exit->outputs[i].status,
                   "an output verdict changed in a round trip");
      }
    }
  }
  PROPERTY(parser.buffered() <= size, "the parser holds more than it was fed");
  (void)frames;
  return 0;
}
