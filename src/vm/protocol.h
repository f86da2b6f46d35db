// SPDX-License-Identifier: Apache-2.0
// The JSON payloads of the control protocol: the host's request, the guest's hello, output
// headers and exit report. Decoding is strict: the guest is untrusted (docs/vm.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/spec.h"

namespace corral::vm::protocol {

// Host -> guest: what to run. Only the fields the VM backend honours (vm_options.h refuses
// the rest before anything starts).
// With a proxy channel (--net proxy) the request carries the port the command's proxy
// variables name ("net_proxy_port"); the guest then listens there and relays over corral.net.
// Every request carries the host's CLOCK_REALTIME when it was encoded ("time_ns"): a cold
// booted microvm has no RTC and would run at the epoch.
std::string encodeRequest(const sandbox::SandboxSpec& spec);
// Guest side. *net_proxy: whether the host relays --net proxy (spec.proxy.port is then set;
// the channel is the guest's to make). *time_ns: the host's clock, for the guest to set.
Result<sandbox::SandboxSpec> decodeRequest(std::string_view json, bool* net_proxy = nullptr, uint64_t* time_ns = nullptr);
// The host's CLOCK_REALTIME in ns (what encodeRequest and a reseed carry).
uint64_t realtimeNs();

struct Hello {
  std::string kernel;                 // uname -r in the guest
  std::vector<std::string> devices;   // virtio device ids present (/sys/bus/virtio/devices)
  std::vector<std::string> pci;       // PCI devices (none expected on microvm)
  std::vector<std::string> fs_types;  // file system types mounted in the guest
};
std::string encodeHello(const Hello& h);
Result<Hello> decodeHello(std::string_view json);

// Host -> restored guest: 32 bytes from the host's getrandom (hex), a 16-byte nonce (hex)
// for this restore alone, and the host's CLOCK_REALTIME. skip_reseed is a test-only control
// (CORRAL_VM_TEST_SKIP_RESEED): the agent then leaves the kernel RNG as the snapshot had it.
struct Reseed {
  std::string seed_hex, nonce_hex;
  uint64_t time_ns = 0;
  bool skip_reseed = false;
};
std::string encodeReseed(const Reseed& r);
Result<Reseed> decodeReseed(std::string_view json);
// Guest -> host: the nonce echoed once the kernel RNG was reseeded, with a fresh hello.
struct Reseeded {
  std::string nonce_hex;
  bool reseeded = false;  // false only with skip_reseed
  Hello hello;
};
std::string encodeReseeded(const Reseeded& r);
Result<Reseeded> decodeReseeded(std::string_view json);

enum class OutputKind { kFile, kSymlink, kDir, kOther };
struct OutputHeader {
  std::string path;  // as declared (workspace-relative)
  OutputKind kind = OutputKind::kFile;
  uint64_t links = 1;  // st_nlink in the guest
  uint64_t size = 0;   // bytes that follow in kData frames (file content or link target)
};
std::string encodeOutputHeader(const OutputHeader& h);
Result<OutputHeader> decodeOutputHeader(std::string_view json);

// Guest -> host: the guest's run report, with the guest's own copy-back verdict per output
// (the guest's sandbox copies outputs onto its disk first). The host copies back only what
// it checked itself; the guest's verdicts explain what it never sent.
std::string encodeExit(const sandbox::RunReport& r);
Result<sandbox::RunReport> decodeExit(std::string_view json);

}  // namespace corral::vm::protocol
