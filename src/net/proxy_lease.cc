// SPDX-License-Identifier: Apache-2.0
// Credential leases in the proxy. Broker mode: `/lease/NAME/<path>` is decided here, the
// upstream is resolved, vetted and dialled on the proxy thread like any destination, and the
// blocking TLS exchange runs on a lease worker. Placeholder mode: forward requests get their
// placeholders swapped toward the lease's own destination, suspects reported, and the
// response redacted. docs/credential-leases.md.
#include <fcntl.h>

#include <algorithm>
#include <iterator>

#include "base/sha256.h"
#include "base/log.h"
#include "net/lease_spec.h"
#include "net/proxy_connection.h"

namespace corral::net {
namespace {

namespace eg = policy::egress;

// "/lease/NAME[/rest][?q]" -> NAME and the origin-form toward the upstream.
bool splitLeasePath(std::string_view path, std::string* name, std::string* rest) {
  constexpr std::string_view kPrefix = "/lease/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return false;
  path.remove_prefix(kPrefix.size());
  size_t end = path.find_first_of("/?");
  *name = std::string(path.substr(0, end));
  if (end == std::string_view::npos) {
    *rest = "/";
  } else if (path[end] == '?') {
    *rest = "/" + std::string(path.substr(end));
  } else {
    *rest = std::string(path.substr(end));
  }
  return true;
}

bool isSelf(std::string_view authority, const std::string& self) {
  if (self.empty()) return false;
  if (iequals(authority, self)) return true;
  size_t colon = self.rfind(':');
  return colon != std::string::npos && iequals(authority, "localhost" + self.substr(colon));
}

void appendName(std::string& list, const std::string& name) {
  std::string_view rest = list;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    if (rest.substr(0, comma) == name) return;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (!list.empty()) list += ",";
  list += name;
}

std::string hostPort(const eg::Host& host, uint16_t port) { return eg::authorityText(host) + ":" + std::to_string(port); }

}  // namespace

bool Connection::leaseTarget(std::string* name, std::string* rest) const {
  if (!policy_->leases) return false;
  std::string_view t = parser_.head().target;
  if (!t.empty() && t.front() == '/') return splitLeasePath(t, name, rest);
  // Clients with HTTP_PROXY set send absolute-form even toward the proxy's own address.
  constexpr std::string_view kScheme = "http://";
  if (t.size() < kScheme.size() || !iequals(t.substr(0, kScheme.size()), kScheme)) return false;
  t.remove_prefix(kScheme.size());
  size_t slash = t.find('/');
  if (slash == std::string_view::npos || !isSelf(t.substr(0, slash), policy_->self_authority)) return false;
  return splitLeasePath(t.substr(slash), name, rest);
}

void Connection::handleLease(const std::string& name, const std::string& rest) {
  LeaseBroker& broker = *policy_->leases;
  ev_.kind = "lease";
  ev_.lease = printable(name, kMaxLeaseName);
  ev_.requested = "lease/" + ev_.lease;
  LeaseEvent le;
  le.tag = policy_->tag;
  le.lease = ev_.lease;
  le.mode = "broker";
  le.method = methodText(parser_.head().method);
  le.path_sha256 = corral::sha256Hex(rest);  // the path may carry data: only its hash is kept
  lease_ev_ = std::move(le);
  const Lease* lease = broker.find(name);
  if (!lease) {
    refuse({404, "lease-unknown", "lease '" + ev_.lease + "' does not exist"});
    return;
  }
  const eg::Grant& g = lease->grant();
  lease_ev_->host = g.host.text;
  lease_ev_->port = g.port;
  if (auto path_ok = checkLeasePath(rest); !path_ok.ok()) {
    lease_ev_->refused = path_ok.error().message();
    refuse({400, "lease-path-refused", "lease '" + ev_.lease + "': " + path_ok.error().message()});
    return;
  }
  if (auto why = broker.chargeRequest(name)) {
    lease_ev_->refused = *why;
    refuse({429, "lease-limit", *why});
    return;
  }
  // The lease's own grant authorises its destination; the address rules are those of any
  // grant (a name must resolve to public addresses only, a literal is dialled as granted).
  dest_ = eg::Destination{g.scheme, g.host, g.port, 0, rest};
  ev_.destination = hostPort(g.host, g.port);
  lease_ = lease;
  lease_target_ = rest;
  resolveAndDial([this] { startLeaseExchange(); });
}

void Connection::startLeaseExchange() {
  // The worker gets its own fds, held by the job until both sides are done with it, so a
  // cancel() from this thread never hits a reused fd number.
  UniqueFd client(::fcntl(client_.native_handle(), F_DUPFD_CLOEXEC, 0));
  UniqueFd upstream(::fcntl(upstream_.native_handle(), F_DUPFD_CLOEXEC, 0));
  boost::system::error_code ignored;
  upstream_.close(ignored);
  if (!client.valid() || !upstream.valid()) {
    refuse({502, "upstream-unreachable", "lease '" + lease_->name() + "': out of file descriptors"});
    return;
  }
  lease_job_ = std::make_shared<LeaseJob>(std::move(client), std::move(upstream));
  ev_.decision = "allow";
  ev_.rule = "allowed";
  const RequestHead& h = parser_.head();
  LeaseCall call{policy_->leases, lease_, h, lease_target_, inbuf_.substr(h.head_size), server_.options.idle_timeout};
  asio::io_context* io = &server_.io;
  server_.workers.submit(
      [call = std::move(call), job = lease_job_, self = shared_from_this(), io]() mutable {
        LeaseOutcome o = runLeaseExchange(call, *job);
        // The connection is touched only on the proxy thread.
        asio::post(*io, [self = std::move(self), o = std::move(o)] { self->onLeaseDone(o); });
      },
      server_.options.max_lease_workers);
}

void Connection::onLeaseDone(const LeaseOutcome& o) {
  if (finished_) return;
  ev_.bytes_up += o.bytes_up;
  ev_.bytes_down += o.bytes_down;
  ev_.status = o.status;
  if (lease_ev_) lease_ev_->redactions = o.redactions;
  if (o.rule == "lease-limit" && lease_ev_) lease_ev_->refused = o.reason;
  if (o.refuse_status) {
    refuse({*o.refuse_status, o.rule, o.reason});
    return;
  }
  if (o.complete) {
    drainAndClose();
    return;
  }
  // Cut short after part of the response went out: the rule says why.
  ev_.rule = o.rule;
  if (o.rule == "lease-limit" || o.rule == "incomplete-request") ev_.decision = "refuse";
  if (o.rule != "proxy-shutdown" && o.rule != "client-closed")
    log::warn("lease_stream_cut", "tag=" + ev_.tag + " lease=" + log::value(ev_.lease) + " rule=" + o.rule);
  finish();
}

bool Connection::applyPlaceholders() {
  LeaseBroker& broker = *policy_->leases;
  const RequestHead& h = parser_.head();
  std::vector<HeaderField> fields;
  fields.reserve(h.headers.size());
  for (const Header& hd : h.headers) fields.push_back({hd.name, hd.value});
  RequestDestination rd{dest_->scheme, dest_->host, dest_->port};
  PlaceholderResult r = substitutePlaceholders(broker.placeholderRules(), rd, h.target, fields);
  for (const Suspect& s : r.suspects) noteSuspect(s);
  ph_used_ = r.leases_used;
  for (const std::string& l : ph_used_) appendName(ev_.lease, l);
  for (const std::string& l : ph_used_) {
    if (auto why = broker.chargeRequest(l)) {
      lease_refused_ = *why;
      refuse({429, "lease-limit", *why});
      return false;
    }
  }
  substituted_ = std::move(r.substituted);
  // Every forwarded response is redacted while the run has leases, from whichever
  // destination: the sandbox could have a lease's upstream store the secret and show it back
  // later, under the same name or under any other granted name, port or scheme that reaches
  // the same server (a wildcard grant over the lease's domain, its IP literal).
  RewriterOptions ro;
  ro.head_request = h.method == "HEAD";
  ro.client_minor_version = h.minor_version;
  rewriter_ = std::make_unique<ResponseRewriter>(broker.patterns(), ro);
  if (h.framing != Framing::kNone) detector_ = std::make_unique<PlaceholderDetector>(broker.placeholders());
  if (h.framing == Framing::kChunked) payload_detector_ = std::make_unique<PlaceholderDetector>(broker.placeholders());
  return true;
}

void Connection::feedBodyDetector(std::string_view raw, std::string_view payload) {
  if (!detector_) return;
  if (!raw.empty()) detector_->feed(raw);
  if (payload_detector_ && !payload.empty()) payload_detector_->feed(payload);
  std::vector<size_t> found = detector_->found();
  if (payload_detector_) {
    std::vector<size_t> more = payload_detector_->found(), both;
    std::set_union(found.begin(), found.end(), more.begin(), more.end(), std::back_inserter(both));
    found = std::move(both);
  }
  if (found.size() == detector_reported_) return;
  auto rules = policy_->leases->placeholderRules();
  std::vector<bool> known(rules.size(), false);
  for (const Suspect& s : suspects_)
    if (s.place == SuspectPlace::kBody)
      for (size_t i = 0; i < rules.size(); ++i)
        if (rules[i].lease == s.lease) known[i] = true;
  for (size_t i : found)
    if (!known[i]) noteSuspect({rules[i].lease, SuspectPlace::kBody, ""});
  detector_reported_ = found.size();
}

void Connection::noteSuspect(const Suspect& s) {
  suspects_.push_back(s);
  ++ev_.suspects;
  appendName(ev_.lease, s.lease);
  // A probable exfiltration attempt: the placeholder was passed on untouched. The line names
  // where it was, never a value.
  log::warn("lease_placeholder_suspect", "tag=" + ev_.tag + " lease=" + log::value(s.lease) + " place=" +
                                             std::string(suspectPlaceName(s.place)) +
                                             (s.header.empty() ? "" : " header=" + printable(s.header, 64)) +
                                             " dest=" + log::value(ev_.destination));
}

void Connection::onRewrittenRead(boost::system::error_code ec, size_t n) {
  touch();
  out_buf_.clear();
  ResponseRewriter::Status st;
  if (ec) {
    if (ec != asio::error::eof) {
      if (ev_.bytes_down == 0) {
        refuse({502, "upstream-unreachable", ev_.destination + ": " + ec.message()});
      } else {
        finish();
      }
      return;
    }
    st = rewriter_->finishAtEof(out_buf_);
  } else {
    LeaseBroker& broker = *policy_->leases;
    for (const std::string& l : ph_used_) {
      if (auto over = broker.chargeBytes(l, n)) {
        lease_refused_ = *over;
        if (ev_.bytes_down == 0) {
          refuse({429, "lease-limit", *over});
        } else {
          ev_.decision = "refuse";
          ev_.rule = "lease-limit";
          finish();
        }
        return;
      }
    }
    st = rewriter_->feed(std::string_view(down_buf_.get(), n), out_buf_);
  }
  ev_.status = rewriter_->status();
  if (st == ResponseRewriter::Status::kError) {
    if (ev_.bytes_down == 0) {
      refuse({502, rewriter_->error().rule, ev_.destination + ": " + rewriter_->error().reason});
    } else {
      ev_.rule = rewriter_->error().rule;
      finish();
    }
    return;
  }
  const bool done = st == ResponseRewriter::Status::kDone;
  if (out_buf_.empty()) {
    if (done) {
      drainAndClose();
    } else {
      relayDown();
    }
    return;
  }
  down_busy_ = true;
  asio::async_write(client_, asio::buffer(out_buf_), [self = shared_from_this(), done](boost::system::error_code ec2, size_t m) {
    self->down_busy_ = false;
    self->ev_.bytes_down += m;
    if (self->finished_) return;
    if (ec2) {
      self->finish();
    } else if (done) {
      self->drainAndClose();
    } else {
      self->relayDown();
    }
  });
}

void Connection::reportLeaseEvents() {
  auto emit = [this](LeaseEvent& le) {
    le.status = ev_.status;
    le.bytes_up = ev_.bytes_up;
    le.bytes_down = ev_.bytes_down;
    if (le.decision.empty()) le.decision = ev_.decision;
    if (le.rule.empty()) le.rule = ev_.rule;
    if (log::enabled(log::Level::kInfo))
      log::write(le.decision == "allow" ? log::Level::kInfo : log::Level::kWarn, "lease_use",
                 "tag=" + le.tag + " lease=" + log::value(le.lease) + " mode=" + le.mode + " method=" + printable(le.method, 32) +
                     " host=" + (le.host.empty() ? "-" : log::value(le.host)) + " path_sha256=" + le.path_sha256 +
                     " status=" + std::to_string(le.status) + " decision=" + le.decision + " rule=" + le.rule +
                     " up=" + std::to_string(le.bytes_up) + " down=" + std::to_string(le.bytes_down) +
                     " redactions=" + std::to_string(le.redactions) + " suspects=" + std::to_string(le.suspects.size()));
    if (server_.options.on_lease_event) server_.options.on_lease_event(le);
  };
  if (lease_ev_) {
    emit(*lease_ev_);
    return;
  }
  const bool redacted = rewriter_ && rewriter_->redactions() > 0;
  if (ph_used_.empty() && suspects_.empty() && !redacted) return;
  // Placeholder mode: one event per lease swapped or seen, and per lease whose destination
  // sent back a secret that this request did not carry.
  std::vector<std::string> involved = ph_used_;
  for (const Suspect& s : suspects_)
    if (std::find(involved.begin(), involved.end(), s.lease) == involved.end()) involved.push_back(s.lease);
  // Every lease whose secret was redacted from the response, whatever its destination: a
  // secret stored through one lease's origin can be shown back by another granted host.
  if (redacted)
    for (const std::string& l : rewriter_->redactedLabels())
      if (std::find(involved.begin(), involved.end(), l) == involved.end()) involved.push_back(l);
  for (const std::string& l : involved) {
    const bool used = std::find(ph_used_.begin(), ph_used_.end(), l) != ph_used_.end();
    LeaseEvent le;
    le.tag = ev_.tag;
    le.lease = l;
    le.mode = "placeholder";
    le.method = ev_.method;
    if (dest_) {
      le.host = dest_->host.text;
      le.port = dest_->port;
      le.path_sha256 = corral::sha256Hex(dest_->origin_form);
    }
    const bool suspect = std::any_of(suspects_.begin(), suspects_.end(), [&](const Suspect& s) { return s.lease == l; });
    if (!used) le.rule = suspect ? "lease-suspect" : "lease-echo-redacted";
    if (used) le.refused = lease_refused_;
    if (rewriter_) le.redactions = rewriter_->redactions();
    for (const Suspect& s : suspects_)
      if (s.lease == l) le.suspects.push_back({std::string(suspectPlaceName(s.place)), s.header});
    emit(le);
  }
}

}  // namespace corral::net
