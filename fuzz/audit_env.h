// SPDX-License-Identifier: Apache-2.0
// What the audit fuzz targets set up once: a private temp workspace and an Ed25519 key pair.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "audit/signing.h"
#include "check.h"

namespace corral::fuzz {

// mkdtemp under /dev/shm (or /tmp): "<base>/corral-fuzz-<name>-XXXXXX".
inline std::string makeFuzzDir(const char* name) {
  const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = std::string(base) + "/corral-fuzz-" + name + "-XXXXXX";
  PROPERTY(::mkdtemp(tmpl.data()) != nullptr, tmpl);
  return tmpl;
}

// A fresh key and its public half, read back through PEM as a verifier would.
template <typename Env>
void makeFuzzKeys(Env& e) {
  auto k = audit::SigningKey::generate();
  PROPERTY(k.ok(), std::string("key generation"));
  auto pem = k->publicKeyPem();
  PROPERTY(pem.ok(), std::string("public key pem"));
  auto p = audit::PublicKey::fromPem(*pem);
  PROPERTY(p.ok(), std::string("public key parse"));
  e.key.emplace(std::move(*k));
  e.pub.emplace(std::move(*p));
}

}  // namespace corral::fuzz
