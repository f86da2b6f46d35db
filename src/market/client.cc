// SPDX-License-Identifier: Apache-2.0
// libcurl calls and identity/key files for the market's clients.
#include "market/client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/unique_fd.h"

namespace corral::market::client {
namespace {

Result<void> writeExclusive(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sysError("create " + path);
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n <= 0) return sysError("write " + path);
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return sysError("fsync " + path);
  return {};
}

Result<std::string> readPrivate(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sysError("open " + path);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + path);
  if (st.st_mode & 077) return Error(Errc::kRefused, path + " is readable by others (chmod 600 it)");
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) return sysError("read " + path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > size_t{64} * 1024) return Error(Errc::kLimit, path + " is too large");
  }
  return out;
}

size_t collect(char* p, size_t size, size_t n, void* user) {
  auto* s = static_cast<std::string*>(user);
  if (s->size() + size * n > size_t{8} * 1024 * 1024) return 0;
  s->append(p, size * n);
  return size * n;
}

}  // namespace

Result<void> writeIdentity(const std::string& path, const Identity& id) {
  nlohmann::json j = {{"agent_id", id.agent_id}, {"role", id.role}, {"api_key", id.api_key},
                      {"public_key", keys::toHex(id.kp.public_key)}};
  if (!id.kp.secret_key.empty()) j["secret_key"] = keys::toHex(id.kp.secret_key);
  return writeExclusive(path, j.dump(2) + "\n");
}

Result<Identity> readIdentity(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, readPrivate(path));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error(Errc::kInvalidArgument, path + " is not an identity file");
  Identity id;
  try {
    id.agent_id = j.at("agent_id").get<std::string>();
    id.role = j.at("role").get<std::string>();
    id.api_key = j.at("api_key").get<std::string>();
    ASSIGN_OR_RETURN(id.kp.public_key, keys::fromHex(j.at("public_key").get<std::string>()));
    if (j.contains("secret_key")) {
      ASSIGN_OR_RETURN(id.kp.secret_key, keys::fromHex(j.at("secret_key").get<std::string>()));
    }
  } catch (const nlohmann::json::exception&) {
    return Error(Errc::kInvalidArgument, path + " lacks an identity field");
  }
  return id;
}

Result<Response> Http::get(const std::string& path) const { return call("GET", path, nullptr); }

Result<Response> Http::post(const std::string& path, const nlohmann::json& body) const {
  const std::string text = body.dump();
  return call("POST", path, &text);
}

Result<Response> Http::call(const char* method, const std::string& path, const std::string* body) const {
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) return Error(Errc::kIo, "curl init failed");
  const std::string url = server_ + path;
  std::string out;
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + api_key_;
  headers = curl_slist_append(headers, auth.c_str());
  headers = curl_slist_append(headers, "Content-Type: application/json");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(headers, curl_slist_free_all);
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c.get(), CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &out);
  if (const char* ca = std::getenv("CORRAL_MARKET_CA")) curl_easy_setopt(c.get(), CURLOPT_CAINFO, ca);
  if (body) {
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  const CURLcode rc = curl_easy_perform(c.get());
  if (rc != CURLE_OK) return Error(Errc::kIo, std::string("market server unreachable: ") + curl_easy_strerror(rc));
  Response r;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  r.body = nlohmann::json::parse(out, nullptr, false);
  if (r.body.is_discarded()) return Error(Errc::kIo, "market server answered with something other than JSON");
  return r;
}

Result<void> saveTaskKey(const std::string& dir, const std::string& task, const std::string& key) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  return writeExclusive(dir + "/" + task, keys::toHex(key));
}

Result<std::string> loadTaskKey(const std::string& dir, const std::string& task) {
  ASSIGN_OR_RETURN(std::string hex, readPrivate(dir + "/" + task));
  return keys::fromHex(hex);
}

}  // namespace corral::market::client
