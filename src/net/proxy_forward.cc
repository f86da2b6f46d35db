// SPDX-License-Identifier: Apache-2.0
// Plain-HTTP forward requests: decide on the absolute-form target, dial the vetted address,
// send the request in origin-form with hop-by-hop headers removed and `Connection: close`,
// stream exactly the framed body, then relay the response until the upstream closes.
#include <algorithm>
#include <set>

#include "net/proxy_connection.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;

// The authority part of an absolute-form target as the client wrote it (no path: a path
// or query may carry a token and is never recorded).
std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Hop-by-hop (RFC 9110 section 7.6.1) and proxy credentials: never sent upstream. Upgrade
// goes too: after an upgrade the connection is opaque, and opaque traffic is what CONNECT
// and its https-only grants are for.
bool alwaysDropped(std::string_view lname) {
  return lname == "host" || lname == "connection" || lname == "proxy-connection" || lname == "keep-alive" ||
         lname == "proxy-authorization" || lname == "te" || lname == "upgrade";
}

}  // namespace

std::string_view targetAuthority(std::string_view target) {
  size_t scheme_end = target.find("://");
  // Origin-form ("/path"), a scheme with one slash ("http:/host/path"): not an authority.
  if (scheme_end == std::string_view::npos) return target.substr(0, target.find_first_of("/?#"));
  std::string_view rest = target.substr(scheme_end + 3);
  return rest.substr(0, rest.find_first_of("/?#"));
}

void Connection::handleForward() {
  const RequestHead& h = parser_.head();
  ev_.kind = "forward";
  ev_.requested = requestedText(targetAuthority(h.target));
  std::vector<std::string_view> hosts;
  for (const Header& hd : h.headers)
    if (iequals(hd.name, "host")) hosts.push_back(hd.value);
  eg::RequestDecision rd = eg::decideForward(policy_->grants, h.target, hosts,
                                             h.minor_version == 0 ? eg::HttpVersion::k10 : eg::HttpVersion::k11);
  if (!rd.decision.allowed()) {
    refuse({statusForRule(rd.decision.rule), std::string(eg::ruleId(rd.decision.rule)), rd.decision.reason});
    return;
  }
  dest_ = std::move(*rd.destination);
  ev_.destination = eg::authorityText(dest_->host) + ":" + std::to_string(dest_->port);
  if (policy_->leases && !applyPlaceholders()) return;
  resolveAndDial([this] { sendForwardHead(); });
}

std::string Connection::forwardHead() const {
  const RequestHead& h = parser_.head();
  const std::set<std::string> listed = connectionListed(h.headers);  // hop-by-hop for this request
  // Through a parent: absolute-form toward the vetted address (the name corral resolved and
  // checked is not resolved again by the parent), and the parent's credential, host-side.
  const std::string target = via_parent_ ? "http://" + ev_.resolved + dest_->origin_form : dest_->origin_form;
  std::string out = h.method + " " + target + " HTTP/1." + std::to_string(h.minor_version) + "\r\n";
  if (via_parent_) out += parentAuthorizationLine();
  // The Host sent is the canonical destination, never the client's spelling of it.
  out += "Host: " + eg::authorityText(dest_->host);
  if (dest_->port != 80) out += ":" + std::to_string(dest_->port);
  out += "\r\n";
  // A response that will be redacted (placeholder mode) must come as bytes it can read.
  const bool redacting = rewriter_ != nullptr;
  for (size_t i = 0; i < h.headers.size(); ++i) {
    const Header& hd = h.headers[i];
    std::string lname = lowered(hd.name);
    if (alwaysDropped(lname)) continue;
    if (redacting && lname == "accept-encoding") continue;
    // Invariant: framing headers always reach the upstream as parsed. `Connection:
    // content-length` must not make the upstream see a body as the next request.
    const bool framing = lname == "content-length" || lname == "transfer-encoding";
    if (!framing && listed.count(lname)) continue;
    auto sub = std::find_if(substituted_.begin(), substituted_.end(), [i](const SubstitutedHeader& s) { return s.index == i; });
    // Placeholder mode: the one place a forward request carries a secret (the caller wipes it).
    std::string_view value = sub == substituted_.end() ? std::string_view(hd.value) : sub->value.revealForInjection();
    out += hd.name + ": ";
    out += value;
    out += "\r\n";
  }
  if (redacting) out += "Accept-Encoding: identity\r\n";
  out += "Connection: close\r\n\r\n";
  return out;
}

void Connection::sendForwardHead() {
  const RequestHead& h = parser_.head();
  auto out = std::make_shared<std::string>(forwardHead());
  // Body bytes that arrived with the head; anything past the body (a pipelined request) is
  // never forwarded: this connection serves one request.
  std::string_view extra = std::string_view(inbuf_).substr(h.head_size);
  switch (h.framing) {
    case Framing::kNone:
      body_done_ = true;
      break;
    case Framing::kContentLength: {
      uint64_t take = std::min<uint64_t>(extra.size(), h.content_length);
      out->append(extra.substr(0, take));
      feedBodyDetector(extra.substr(0, take), {});  // no framing: the raw bytes are the payload
      body_left_ = h.content_length - take;
      body_done_ = body_left_ == 0;
      break;
    }
    case Framing::kChunked: {
      size_t consumed = 0;
      std::string payload;
      auto st = chunked_.feed(extra, &consumed, detector_ ? &payload : nullptr);
      if (st == ChunkedDecoder::Status::kError) {
        refuse({400, chunked_.error().rule, chunked_.error().reason});
        return;
      }
      out->append(extra.substr(0, consumed));
      feedBodyDetector(extra.substr(0, consumed), payload);
      body_done_ = st == ChunkedDecoder::Status::kDone;
      break;
    }
  }
  ev_.decision = "allow";
  ev_.rule = "allowed";
  touch();
  armIdle();
  asio::async_write(upstream_, asio::buffer(*out), [self = shared_from_this(), out](boost::system::error_code ec, size_t n) {
    self->ev_.bytes_up += n;
    if (!self->substituted_.empty() || self->via_parent_) {  // the head held a secret
      volatile char* p = out->data();
      for (size_t i = 0; i < out->size(); ++i) p[i] = 0;
      for (const std::string& l : self->ph_used_) (void)self->policy_->leases->chargeBytes(l, n);
    }
    if (self->finished_) return;
    if (ec) {
      self->refuse({502, "upstream-unreachable", self->ev_.destination + ": sending the request failed: " + ec.message()});
      return;
    }
    self->relayDown();
    if (!self->body_done_) self->pumpRequestBody();
  });
}

void Connection::pumpRequestBody() {
  if (!up_buf_) up_buf_ = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
  client_.async_read_some(asio::buffer(up_buf_.get(), kRelayBuffer), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
    if (self->finished_ || self->responded_) return;
    if (ec) {
      self->abort("incomplete-request");  // the client went away mid-body
      return;
    }
    self->touch();
    std::string_view data(self->up_buf_.get(), n);
    size_t take = 0;
    std::string payload;
    if (self->parser_.head().framing == Framing::kContentLength) {
      take = static_cast<size_t>(std::min<uint64_t>(n, self->body_left_));
      self->body_left_ -= take;
      self->body_done_ = self->body_left_ == 0;
    } else {
      auto st = self->chunked_.feed(data, &take, self->detector_ ? &payload : nullptr);
      if (st == ChunkedDecoder::Status::kError) {
        // The upstream already has part of this request: it is closed, never completed.
        boost::system::error_code ignored;
        self->upstream_.close(ignored);
        if (self->ev_.bytes_down == 0 && !self->down_busy_) {
          self->refuse({400, self->chunked_.error().rule, self->chunked_.error().reason});
        } else {
          self->ev_.decision = "refuse";
          self->ev_.rule = self->chunked_.error().rule;
          self->finish();
        }
        return;
      }
      self->body_done_ = st == ChunkedDecoder::Status::kDone;
    }
    self->feedBodyDetector(data.substr(0, take), payload);
    asio::async_write(self->upstream_, asio::buffer(self->up_buf_.get(), take), [self](boost::system::error_code ec2, size_t m) {
      self->ev_.bytes_up += m;
      if (self->finished_ || ec2) return;  // the response side notices a dead upstream
      if (!self->body_done_) self->pumpRequestBody();
    });
  });
}

}  // namespace corral::net
