// SPDX-License-Identifier: Apache-2.0
// /v1/sessions/{id}/files/PATH (download, upload, remove) and /v1/sessions/{id}/stat[/PATH] (a
// directory's with its entries).
#include <unistd.h>

#include <memory>

#include "audit/base64.h"
#include "base/log.h"
#include "daemon/api.h"
#include "daemon/files.h"
#include "daemon/sessions.h"
#include "vm/frame.h"

namespace corral::daemon {
namespace {

constexpr size_t kDownloadChunk = size_t{64} * 1024;

std::string joined(const std::vector<std::string>& seg, size_t from) {
  std::string out;
  for (size_t i = from; i < seg.size(); ++i) out += (out.empty() ? "" : "/") + seg[i];
  return out;
}

// The file's bytes as a chunked application/octet-stream body, 64 KiB at a time: a slow
// reader holds one chunk, never the file.
ApiResponse download(files::Download d) {
  auto fd = std::make_shared<UniqueFd>(std::move(d.fd));
  ApiResponse r{200, nullptr, [fd](const ChunkWriter& write) {
                  std::string buf(kDownloadChunk, '\0');
                  for (;;) {
                    const ssize_t n = ::read(fd->get(), buf.data(), buf.size());
                    if (n < 0 && errno == EINTR) continue;
                    if (n <= 0 || !write(std::string_view(buf.data(), static_cast<size_t>(n)))) return;
                  }
                }};
  r.content_type = "application/octet-stream";
  return r;
}

ApiResponse upload(const ApiRequest& req, Sessions::Workspace& ws, const std::string& path) {
  if (!req.body_stream) return errorResponse(400, "invalid_request", "an upload needs a body");
  auto up = files::Upload::begin(ws.dir.get(), path, ws.uid, ws.gid, ws.cap);
  if (!up) return errorResponse(up.error());
  Result<void> wrote;
  auto got = req.body_stream([&](std::string_view piece) {
    wrote = up->write(piece);
    return wrote;
  });
  if (!wrote) return errorResponse(413, "too_large", wrote.error().message());
  if (!got) return errorResponse(got.error().code() == static_cast<int>(Errc::kLimit) ? 413 : 400,
                                 got.error().code() == static_cast<int>(Errc::kLimit) ? "too_large" : "malformed_request",
                                 got.error().message());
  auto done = up->commit();
  if (done) log::info("file_uploaded", "session=" + req.segments[2] + " bytes=" + std::to_string(*got) +
                                           " peer_uid=" + std::to_string(req.peer.uid) + " peer_pid=" + std::to_string(req.peer.pid));
  return answer(std::move(done), 201);
}

// Files events carry the session and a byte count: never the path or the contents.
void auditFile(ApiContext& ctx, const ApiRequest& req, const char* event, const ApiResponse& res, uint64_t bytes) {
  ctx.sessions.audit(event, req.peer, {{"session", req.segments[2]}, {"status", res.status}, {"bytes", bytes}});
}

// A VM session's file: its agent reads or writes it in the guest, with the same path checks
// (files.h, compiled into the agent), one message each way (frame::kMaxSessionFileBytes).
ApiResponse vmFile(const ApiRequest& req, ApiContext& ctx, const std::string& path) {
  Json call = {{"op", req.method == "PUT" ? "file_put" : "file_get"}, {"path", path}};
  if (req.method == "PUT") {
    if (!req.body_stream) return errorResponse(400, "invalid_request", "an upload needs a body");
    std::string data;
    bool over = false;
    auto got = req.body_stream([&](std::string_view piece) -> Result<void> {
      if (data.size() + piece.size() > vm::frame::kMaxSessionFileBytes) {
        over = true;
        return Error(Errc::kLimit, "a VM session's upload is at most " + std::to_string(vm::frame::kMaxSessionFileBytes) + " bytes");
      }
      data.append(piece);
      return {};
    });
    if (over) return errorResponse(413, "too_large", "a VM session's upload is at most " + std::to_string(vm::frame::kMaxSessionFileBytes) + " bytes");
    if (!got) return errorResponse(400, "malformed_request", got.error().message());
    call["data"] = audit::base64Encode(data);
  }
  auto r = ctx.sessions.vmFileCall(req.peer, req.segments[2], call);
  if (!r) return errorResponse(r.error());
  const int status = (*r)["status"].is_number_integer() ? (*r)["status"].get<int>() : 500;
  if ((*r).contains("error")) {
    const std::string msg = (*r)["error"].is_string() ? (*r)["error"].get<std::string>() : "refused";
    return errorResponse(status, status == 404 ? "not_found" : status == 413 ? "too_large" : status == 400 ? "invalid_request" : "sandbox_refused", msg);
  }
  if (req.method == "PUT") {
    log::info("file_uploaded", "session=" + req.segments[2] + " bytes=" + std::to_string((*r)["bytes"].get<uint64_t>()) +
                                   " backend=vm peer_uid=" + std::to_string(req.peer.uid) + " peer_pid=" + std::to_string(req.peer.pid));
    return {201, Json{{"path", path}, {"bytes", (*r)["bytes"]}}, nullptr};
  }
  auto bytes = (*r)["data"].is_string() ? audit::base64DecodeStrict((*r)["data"].get<std::string>()) : std::nullopt;
  if (!bytes) return errorResponse(500, "internal", "the VM's file answer is malformed");
  auto held = std::make_shared<std::string>(std::move(*bytes));
  ApiResponse res{200, nullptr, [held](const ChunkWriter& write) {
                    for (size_t off = 0; off < held->size(); off += kDownloadChunk)
                      if (!write(std::string_view(*held).substr(off, kDownloadChunk))) return;
                  }};
  res.content_type = "application/octet-stream";
  return res;
}

}  // namespace

std::optional<ApiResponse> routeFiles(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() < 4 || seg[1] != "sessions" || (seg[3] != "files" && seg[3] != "stat")) return std::nullopt;
  if (req.method != "PUT" && !req.body.empty()) return errorResponse(400, "invalid_request", req.method + " takes no body");
  auto path = files::checkedPath(joined(seg, 4));
  if (!path) return errorResponse(path.error());
  if (seg[3] == "files" && (req.method == "GET" || req.method == "PUT")) {
    auto vm = ctx.sessions.isVmSession(req.peer, seg[2]);
    if (!vm) return errorResponse(vm.error());
    if (*vm) {
      ApiResponse res = vmFile(req, ctx, *path);
      const bool put = req.method == "PUT";
      const uint64_t bytes = res.status == 201 ? res.body["bytes"].get<uint64_t>() : 0;
      auditFile(ctx, req, put ? "file_uploaded" : "file_downloaded", res, bytes);
      return res;
    }
  }
  auto ws = ctx.sessions.workspace(req.peer, seg[2]);
  if (!ws) return errorResponse(ws.error());
  const int dir = ws->dir.get();
  if (seg[3] == "stat") {
    if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
    auto st = files::stat(dir, *path);
    if (!st || (*st)["type"] != "directory") return answer(std::move(st));
    auto listed = files::list(dir, *path);
    if (!listed) return errorResponse(listed.error());
    (*st)["entries"] = (*listed)["entries"];
    return answer(std::move(st));
  }
  if (req.method == "PUT") {
    ApiResponse res = upload(req, *ws, *path);
    auditFile(ctx, req, "file_uploaded", res, res.status == 201 ? res.body["bytes"].get<uint64_t>() : 0);
    return res;
  }
  if (req.method == "DELETE") {
    auto gone = files::remove(dir, *path);
    ApiResponse res = gone ? ApiResponse{200, Json{{"path", *path}, {"removed", true}}, nullptr} : errorResponse(gone.error());
    auditFile(ctx, req, "file_removed", res, 0);
    return res;
  }
  if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET, PUT or DELETE");
  auto d = files::openDownload(dir, *path);
  if (!d) {
    ApiResponse res = errorResponse(d.error());
    auditFile(ctx, req, "file_downloaded", res, 0);
    return res;
  }
  const uint64_t size = d->size;
  ApiResponse res = download(std::move(*d));
  auditFile(ctx, req, "file_downloaded", res, size);
  return res;
}

}  // namespace corral::daemon
