// SPDX-License-Identifier: Apache-2.0
// libcurl, loaded on first use. Linking it would make every corral start load libcurl and
// its ~30 dependencies (gnutls, krb5, ldap, ...): ~9 ms before `corral exec` does anything,
// for a library only model calls need. These definitions stand in for the few libcurl entry
// points corral uses and forward to the real ones, resolved with dlopen("libcurl.so.4") once.
// curl_easy_setopt/getinfo take exactly one argument after the option, always of INTEGER
// class on LP64 SysV ABIs (long, pointer, curl_off_t), so it is forwarded as a pointer-sized word.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>

#include <cstdarg>
#include <mutex>

static_assert(sizeof(long) == sizeof(void*) && sizeof(curl_off_t) == sizeof(void*), "LP64 only");

namespace {

struct Curl {
  void* handle = nullptr;
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  CURLU* (*url)() = nullptr;
  CURLUcode (*url_set)(CURLU*, CURLUPart, const char*, unsigned int) = nullptr;
  CURLUcode (*url_get)(CURLU*, CURLUPart, char**, unsigned int) = nullptr;
  void (*url_cleanup)(CURLU*) = nullptr;
  void (*free)(void*) = nullptr;
  bool ok = false;
};

template <typename F>
bool bind(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(h, name));
  return out != nullptr;
}

const Curl& curl() {
  static Curl c;
  static std::once_flag once;
  std::call_once(once, [] {
    c.handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (c.handle == nullptr) return;
    void* h = c.handle;
    c.ok = bind(h, "curl_global_init", c.global_init) && bind(h, "curl_easy_init", c.easy_init) &&
           bind(h, "curl_easy_setopt", c.easy_setopt) && bind(h, "curl_easy_perform", c.easy_perform) &&
           bind(h, "curl_easy_getinfo", c.easy_getinfo) && bind(h, "curl_easy_cleanup", c.easy_cleanup) &&
           bind(h, "curl_easy_strerror", c.easy_strerror) && bind(h, "curl_slist_append", c.slist_append) &&
           bind(h, "curl_slist_free_all", c.slist_free_all) && bind(h, "curl_url", c.url) &&
           bind(h, "curl_url_set", c.url_set) && bind(h, "curl_url_get", c.url_get) &&
           bind(h, "curl_url_cleanup", c.url_cleanup) && bind(h, "curl_free", c.free);
  });
  return c;
}

}  // namespace

extern "C" {

CURLcode curl_global_init(long flags) { return curl().ok ? curl().global_init(flags) : CURLE_FAILED_INIT; }
CURL* curl_easy_init() { return curl().ok ? curl().easy_init() : nullptr; }
CURLcode curl_easy_setopt(CURL* e, CURLoption option, ...) {
  va_list ap;
  va_start(ap, option);  // NOLINT(clang-diagnostic-varargs): curl.h fixes this signature; libcurl does the same
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return curl().ok ? curl().easy_setopt(e, option, arg) : CURLE_FAILED_INIT;
}
CURLcode curl_easy_perform(CURL* e) { return curl().ok ? curl().easy_perform(e) : CURLE_FAILED_INIT; }
CURLcode curl_easy_getinfo(CURL* e, CURLINFO info, ...) {
  va_list ap;
  va_start(ap, info);  // NOLINT(clang-diagnostic-varargs): curl.h fixes this signature; libcurl does the same
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return curl().ok ? curl().easy_getinfo(e, info, arg) : CURLE_FAILED_INIT;
}
void curl_easy_cleanup(CURL* e) {
  if (curl().ok) curl().easy_cleanup(e);
}
const char* curl_easy_strerror(CURLcode code) {
  return curl().ok ? curl().easy_strerror(code) : "libcurl.so.4 could not be loaded";
}
curl_slist* curl_slist_append(curl_slist* list, const char* s) { return curl().ok ? curl().slist_append(list, s) : nullptr; }
void curl_slist_free_all(curl_slist* list) {
  if (curl().ok) curl().slist_free_all(list);
}
CURLU* curl_url() { return curl().ok ? curl().url() : nullptr; }
CURLUcode curl_url_set(CURLU* u, CURLUPart part, const char* content, unsigned int flags) {
  return curl().ok ? curl().url_set(u, part, content, flags) : CURLUE_OUT_OF_MEMORY;
}
CURLUcode curl_url_get(CURLU* u, CURLUPart part, char** out, unsigned int flags) {
  return curl().ok ? curl().url_get(u, part, out, flags) : CURLUE_OUT_OF_MEMORY;
}
void curl_url_cleanup(CURLU* u) {
  if (curl().ok) curl().url_cleanup(u);
}
void curl_free(void* p) {
  if (curl().ok) curl().free(p);
}

}  // extern "C"
