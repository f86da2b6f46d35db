// SPDX-License-Identifier: Apache-2.0
// libcurl easy-handle wrapper for the model providers.
#include "agent/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "base/sha256.h"

namespace corral::agent {
namespace {

void globalInit() {
  // curl_global_init is not thread-safe and must run before the first handle.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void wipe(char* p) {
  if (p == nullptr) return;
  for (volatile char* q = p; *q != '\0'; ++q) *q = 0;
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
// The list holds the credential header: wiped before it is freed.
struct SlistDeleter {
  void operator()(curl_slist* list) const {
    for (curl_slist* p = list; p != nullptr; p = p->next) wipe(p->data);
    curl_slist_free_all(list);
  }
};
struct CurlString {
  char* p = nullptr;
  ~CurlString() { curl_free(p); }
};

struct Sink {
  std::string body;
  uint64_t max = 0;
  bool overflow = false;
};

size_t onWrite(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > sink->max) {
    sink->overflow = true;
    return 0;  // any short count aborts the transfer with CURLE_WRITE_ERROR
  }
  sink->body.append(data, n);
  return n;
}

bool hasControlByte(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

Result<std::string> urlPart(CURLU* url, CURLUPart part) {
  CurlString s;
  CURLUcode rc = curl_url_get(url, part, &s.p, 0);
  if (rc == CURLUE_OK) return std::string(s.p);
  return Error(Errc::kInvalidArgument, "");
}

bool hasUrlPart(CURLU* url, CURLUPart part) { return urlPart(url, part).ok(); }

Error statusError(const std::string& host, long status) {
  std::string msg = host + ": HTTP " + std::to_string(status);
  // 408, 429 and 5xx say "not now": the loop may retry. Anything else will not change.
  if (status == 408 || status == 429 || (status >= 500 && status <= 599)) return Error(Errc::kIo, msg);
  if (status >= 300 && status <= 399) msg += " (redirects are not followed)";
  return Error(Errc::kRefused, msg);
}

Error transferError(const std::string& host, CURLcode rc, const HttpRequest& request) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return Error(Errc::kIo, host + ": no complete response within " + std::to_string(request.timeout.count()) + " ms");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
      return Error(Errc::kRefused, host + ": TLS verification failed (" + curl_easy_strerror(rc) + ")");
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return Error(Errc::kRefused, host + ": " + curl_easy_strerror(rc));
    default:
      // curl_easy_strerror is static text: it cannot carry the key, a header or the body.
      return Error(Errc::kIo, host + ": " + curl_easy_strerror(rc));
  }
}

}  // namespace

Result<Endpoint> parseEndpoint(std::string_view text) {
  auto invalid = [](std::string_view why) { return Error(Errc::kInvalidArgument, "endpoint: " + std::string(why)); };
  if (text.empty()) return invalid("missing");
  if (text.size() > 2048) return invalid("longer than 2048 bytes");
  if (hasControlByte(text) || text.find(' ') != std::string_view::npos) return invalid("contains a space or control byte");
  globalInit();
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (!url) return Error(Errc::kIo, "endpoint: out of memory");
  const std::string owned(text);
  if (curl_url_set(url.get(), CURLUPART_URL, owned.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) return invalid("not a URL");
  auto scheme = urlPart(url.get(), CURLUPART_SCHEME);
  if (!scheme.ok() || (*scheme != "http" && *scheme != "https")) return invalid("scheme must be http or https");
  auto host = urlPart(url.get(), CURLUPART_HOST);
  if (!host.ok() || host->empty()) return invalid("no host");
  // Keys come from api_key_env; a password in the URL would end up in logs and manifests.
  if (hasUrlPart(url.get(), CURLUPART_USER) || hasUrlPart(url.get(), CURLUPART_PASSWORD))
    return invalid("must not contain user:password@ (use api_key_env)");
  if (hasUrlPart(url.get(), CURLUPART_QUERY) || hasUrlPart(url.get(), CURLUPART_FRAGMENT))
    return invalid("must not contain a query or fragment (it is a base URL)");
  Endpoint e;
  e.host = *host;
  if (auto port = urlPart(url.get(), CURLUPART_PORT); port.ok()) e.host += ":" + *port;
  e.base = owned;
  while (!e.base.empty() && e.base.back() == '/') e.base.pop_back();
  return e;
}

Result<HttpResponse> httpSend(const HttpRequest& request) {
  const std::string& host = request.host;
  if (request.secret != nullptr && hasControlByte(request.secret->revealForInjection()))
    return Error(Errc::kInvalidArgument, host + ": api key contains a control byte");
  globalInit();
  std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
  if (!curl) return Error(Errc::kIo, host + ": curl_easy_init failed");
  CURL* h = curl.get();

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto addHeader = [&](const std::string& line) -> bool {
    curl_slist* next = curl_slist_append(headers.get(), line.c_str());
    if (next == nullptr) return false;
    (void)headers.release();
    headers.reset(next);
    return true;
  };
  // "Expect:" suppresses curl's 100-continue wait on larger bodies: one round trip, and
  // servers that ignore Expect do not stall the request for a second.
  bool headers_ok = addHeader("Expect:");
  for (const std::string& line : request.headers) headers_ok = headers_ok && addHeader(line);
  if (request.secret != nullptr) {
    std::string line = request.secret_header_prefix;
    line += request.secret->revealForInjection();
    headers_ok = headers_ok && addHeader(line);
    wipe(line.data());
  }
  if (!headers_ok) return Error(Errc::kIo, host + ": out of memory building headers");

  Sink sink;
  sink.max = request.max_response_bytes;
  const auto connect_ms = std::min(request.connect_timeout, request.timeout).count();
  bool set_ok = true;
  auto set = [&](CURLoption opt, auto value) { set_ok = set_ok && curl_easy_setopt(h, opt, value) == CURLE_OK; };
  set(CURLOPT_URL, request.url.c_str());
  // Only http(s), no redirects: a model endpoint must not bounce corral's request (and its
  // key) somewhere else.
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  // Proxy variables in corral's environment must not steer its model calls: "" disables the
  // proxy and NOPROXY "*" makes curl ignore http_proxy/HTTPS_PROXY/ALL_PROXY.
  set(CURLOPT_PROXY, "");
  set(CURLOPT_NOPROXY, "*");
  set(CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  set(CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for resolver timeouts; corral is threaded
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_ms));
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  if (!request.ca_bundle.empty()) set(CURLOPT_CAINFO, request.ca_bundle.c_str());
  // Refuses early when the server announces a larger Content-Length; onWrite caps the rest.
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(request.max_response_bytes));
  set(CURLOPT_WRITEFUNCTION, &onWrite);
  set(CURLOPT_WRITEDATA, static_cast<void*>(&sink));
  set(CURLOPT_HTTPHEADER, headers.get());
  set(CURLOPT_USERAGENT, "corral");
  if (request.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else {
    set(CURLOPT_POST, 1L);
    set(CURLOPT_POSTFIELDS, request.body.data());
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  // Fail closed: a libcurl without one of these options would run the request unconfined.
  if (!set_ok) return Error(Errc::kUnsupported, host + ": libcurl refused a required option (needs libcurl >= 7.85)");

  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  // A non-2xx status decides the class even when its body was cut short.
  if (status != 0 && (status < 200 || status > 299)) return statusError(host, status);
  if (sink.overflow || rc == CURLE_FILESIZE_EXCEEDED)
    return Error(Errc::kInvalidArgument,
                 host + ": response larger than " + std::to_string(request.max_response_bytes) + " bytes");
  if (rc != CURLE_OK) return transferError(host, rc, request);
  return HttpResponse{status, std::move(sink.body)};
}

HttpRequest providerRequest(const ProviderConfig& config, const Endpoint& endpoint, std::string_view path) {
  HttpRequest r;
  r.url = endpoint.base + std::string(path);
  r.host = endpoint.host;
  r.timeout = config.timeout;
  r.connect_timeout = std::min(config.timeout, std::chrono::milliseconds(10000));
  r.max_response_bytes = config.max_response_bytes;
  return r;
}

void stampResponse(ModelReply& reply, std::string_view body) {
  reply.response_bytes = body.size();
  reply.response_sha256 = audit::sha256Hex(body);
}

}  // namespace corral::agent
