// SPDX-License-Identifier: Apache-2.0
#include "agent/output_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "base/sha256.h"

namespace corral::agent {

namespace {

struct StreamSink {
  UniqueFd read;
  uint64_t keep = 0;
  CapturedStream stream;
  audit::Sha256Stream hash;

  // false at EOF or error: the stream is done.
  bool drain() {
    char buf[65536];
    ssize_t n = ::read(read.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;
    std::string_view chunk(buf, static_cast<size_t>(n));
    stream.total += chunk.size();
    hash.update(chunk);
    if (stream.kept.size() < keep) stream.kept.append(chunk.substr(0, keep - stream.kept.size()));
    return true;
  }
};

}  // namespace

struct OutputCapture::State {
  StreamSink out;
  StreamSink err;
  std::thread reader;
  bool finished = false;

  void run() {
    bool out_open = true;
    bool err_open = true;
    while (out_open || err_open) {
      pollfd fds[2] = {{out_open ? out.read.get() : -1, POLLIN, 0}, {err_open ? err.read.get() : -1, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = out.drain();
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = err.drain();
    }
  }
};

OutputCapture::OutputCapture(UniqueFd out_write, UniqueFd err_write, std::unique_ptr<State> state)
    : out_write_(std::move(out_write)), err_write_(std::move(err_write)), state_(std::move(state)) {}

Result<std::unique_ptr<OutputCapture>> OutputCapture::start(uint64_t keep_bytes) {
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sysError("output pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return sysError("output pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);
  auto state = std::make_unique<State>();
  state->out.read = std::move(out_r);
  state->out.keep = keep_bytes;
  state->err.read = std::move(err_r);
  state->err.keep = keep_bytes;
  State* raw = state.get();
  state->reader = std::thread([raw] { raw->run(); });
  return std::unique_ptr<OutputCapture>(new OutputCapture(std::move(out_w), std::move(err_w), std::move(state)));
}

CapturedOutput OutputCapture::finish() {
  CapturedOutput result;
  if (state_->finished) return result;
  out_write_.reset();
  err_write_.reset();
  state_->reader.join();
  state_->finished = true;
  state_->out.stream.sha256 = state_->out.hash.hexDigest();
  state_->err.stream.sha256 = state_->err.hash.hexDigest();
  result.out = std::move(state_->out.stream);
  result.err = std::move(state_->err.stream);
  return result;
}

OutputCapture::~OutputCapture() {
  if (!state_->finished) {
    out_write_.reset();
    err_write_.reset();
    if (state_->reader.joinable()) state_->reader.join();
  }
}

}  // namespace corral::agent
