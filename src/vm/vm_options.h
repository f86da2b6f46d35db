// SPDX-License-Identifier: Apache-2.0
// What `--backend vm` adds to a SandboxSpec (the VM's size, kernel, accepted accelerator),
// and which SandboxSpec fields the VM backend refuses, with the reason. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "sandbox/spec.h"

namespace corral::vm {

inline constexpr uint64_t kDefaultMemoryBytes = 512ull << 20;
inline constexpr uint64_t kMinMemoryBytes = 128ull << 20;  // Debian's kernel and the agent need about 100 MiB
inline constexpr uint64_t kMaxMemoryBytes = 64ull << 30;
inline constexpr uint32_t kMaxCpus = 64;

struct VmOptions {
  uint64_t memory_bytes = kDefaultMemoryBytes;  // --vm-memory: the guest's RAM
  uint32_t cpus = 1;                            // --vm-cpus
  std::optional<std::string> kernel;            // --vm-kernel: a bzImage; default: newest /boot/vmlinuz-*
  bool allow_tcg = false;                       // --allow-weaker kvm: run under emulation if KVM is unusable
  bool cold = false;                            // --vm-cold: boot cold, neither make nor restore a snapshot
};

// Every field of spec the VM backend cannot honour is refused, naming the option and why;
// net_proxy is exec's --net proxy. Nothing is silently dropped.
Result<void> checkSpec(const sandbox::SandboxSpec& spec, const VmOptions& vm, bool net_proxy);

}  // namespace corral::vm
