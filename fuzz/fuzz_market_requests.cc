// SPDX-License-Identifier: Apache-2.0
// fuzz_market_requests: the market's request parsers (src/market/request.cc). The first
// byte picks the parser, the rest is the body or target.
// Properties: an error is a 400 (404 for targets) with a fixed one-line message that never
// contains the input; an accepted value is within its documented bounds; an accepted post
// re-serialised parses back to the same command.
#include <nlohmann/json.hpp>

#include "check.h"
#include "market/request.h"

namespace {

using corral::market::httpStatus;
namespace rq = corral::market::request;

#define CHECK_PROP(cond, detail) \
  do {                           \
    if (!(cond)) corral::fuzz::fail(__FILE__, __LINE__, #cond, detail); \
  } while (0)

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

void checkError(const corral::Error& e, std::string_view input, int want) {
  CHECK_PROP(httpStatus(e) == want, input);
  const std::string& m = e.context();
  CHECK_PROP(!m.empty() && m.size() < 120 && printable(m), m);
  // Fixed texts only: a message never quotes the request (at most a field name we chose).
  CHECK_PROP(m.rfind("field ", 0) == 0 || m == "body must be one JSON object" || m == "duplicate field" ||
                 m == "unknown field" || m == "no such route",
             m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0: {
      auto r = rq::parsePost(in);
      if (!r) {
        checkError(r.error(), in, 400);
        break;
      }
      CHECK_PROP(r->max_price >= 1 && r->max_price <= 100'000'000, in);
      CHECK_PROP(!r->title.empty() && r->title.size() <= 200 && printable(r->title), in);
      CHECK_PROP(r->body_ct.size() >= 4 && printable(r->body_ct), in);
      nlohmann::json j = {{"title", r->title},         {"category", r->category}, {"model", r->model},
                          {"max_price", r->max_price}, {"deadline", r->deadline}, {"body_ct", r->body_ct}};
      auto again = rq::parsePost(j.dump());
      CHECK_PROP(again.ok() && again->title == r->title && again->max_price == r->max_price &&
                     again->deadline == r->deadline && again->body_ct == r->body_ct,
                 in);
      break;
    }
    case 1: {
      auto r = rq::parseRunnerKey(in);
      if (!r) checkError(r.error(), in, 400);
      else CHECK_PROP(!r->empty() && r->size() <= 128 && printable(*r), in);
      break;
    }
    case 2: {
      auto r = rq::parseWrap(in);
      if (!r) checkError(r.error(), in, 400);
      else CHECK_PROP(!r->empty() && r->size() <= 512, in);
      break;
    }
    case 3: {
      auto r = rq::parseSubmit(in);
      if (!r) checkError(r.error(), in, 400);
      break;
    }
    case 4: {
      auto r = rq::parseVerdict(in);
      if (!r) checkError(r.error(), in, 400);
      else CHECK_PROP(r->size() <= 64 && printable(*r), in);
      break;
    }
    default: {
      auto r = rq::parseTarget(in);
      if (!r) {
        checkError(r.error(), in, 404);
        break;
      }
      CHECK_PROP(r->id.empty() || rq::validId(r->id, 't'), in);
      CHECK_PROP(r->collection == "tasks" || r->id.empty(), in);
      CHECK_PROP(in.substr(0, 4) == "/v1/", in);
    }
  }
  return 0;
}
