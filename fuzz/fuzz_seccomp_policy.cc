// SPDX-License-Identifier: Apache-2.0
// Fuzzes the seccomp policy: sandbox invariants under any arguments, and validate() on random policies.
#include <fuzzer/FuzzedDataProvider.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "policy/seccomp_policy.h"

namespace corral::fuzz {
namespace {

namespace sc = policy::seccomp;

constexpr uint64_t kNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                     CLONE_NEWUTS | CLONE_NEWCGROUP | 0x80 /* CLONE_NEWTIME */;
constexpr uint64_t kLow32 = 0xffffffffu;

// Denied whatever the arguments (each rule in src/policy/seccomp_policy.cc gives its reason).
constexpr std::string_view kAlwaysDenied[] = {
    "mount",   "umount2",         "pivot_root",       "setns",          "keyctl",         "bpf",
    "ptrace",  "perf_event_open", "userfaultfd",      "io_uring_setup", "io_uring_enter", "kexec_load",
    "init_module", "finit_module", "open_by_handle_at", "process_vm_writev", "clone3",   "fsopen",
    "move_mount", "open_tree"};
// Where the allow depends on arguments: the fuzzer spends most of its time here.
constexpr std::string_view kArgDependent[] = {"clone", "unshare", "socket", "socketpair", "ioctl", "personality"};

const sc::Policy& sandbox() {
  static const sc::Policy p = [] {
    sc::Policy q = sc::sandboxPolicy();
    auto v = sc::validate(q);
    PROPERTY(v.ok(), v.error().message());
    return q;
  }();
  return p;
}

bool listed(std::string_view name) {
  for (const sc::Rule& r : sandbox().rules)
    if (r.syscall == name) return true;
  return false;
}

// What must never be allowed, stated from the threat model rather than from the rule list.
void checkSandboxCall(std::string_view name, const sc::SyscallArgs& a) {
  sc::Verdict v = sc::evaluate(sandbox(), name, a);
  if (v.action == sc::Action::kAllow) {
    PROPERTY(v.err == 0, "allow with an errno");
  } else {
    PROPERTY(v.err > 0 && v.err <= 4095, "errno out of range: " + std::to_string(v.err));
  }
  bool allowed = v.action == sc::Action::kAllow;
  std::string call = std::string(name) + "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ")";
  if (!allowed) return;
  for (std::string_view d : kAlwaysDenied) PROPERTY(name != d, "denied syscall allowed: " + call);
  if (name == "clone" || name == "unshare")
    PROPERTY((a[0] & kNamespaceFlags) == 0, "namespace creation allowed: " + call);
  if (name == "socket") {
    // Netlink is NETLINK_ROUTE alone (the interface list; changes need CAP_NET_ADMIN), of any
    // type: getifaddrs() opens it SOCK_RAW. Every other family but UNIX, INET and INET6 is out,
    // and so are raw and packet sockets of those three.
    if (a[0] == AF_NETLINK) {
      PROPERTY(a[2] == NETLINK_ROUTE, "netlink protocol allowed: " + call + " protocol " + std::to_string(a[2]));
    } else {
      PROPERTY(a[0] == AF_UNIX || a[0] == AF_INET || a[0] == AF_INET6, "socket family allowed: " + call);
      uint64_t type = a[1] & 0xf;
      PROPERTY(type != SOCK_RAW && type != SOCK_PACKET, "raw/packet socket allowed: " + call);
    }
  }
  if (name == "socketpair") PROPERTY(a[0] == AF_UNIX, "socketpair family allowed: " + call);
  if (name == "ioctl") {
    uint64_t cmd = a[1] & kLow32;
    PROPERTY(cmd != TIOCSTI && cmd != TIOCLINUX, "terminal injection ioctl allowed: " + call);
  }
  if (name == "personality") {
    uint64_t p = a[0] & kLow32;
    PROPERTY(p == 0 || p == 8 /* PER_LINUX32 */ || p == kLow32, "personality allowed: " + call);
  }
  PROPERTY(listed(name), "unlisted syscall allowed: " + call);
}

// A random policy over a few names: validate() must not crash, must explain itself on one
// line, and whatever it accepts must satisfy the shape and libseccomp limits it promises.
void checkRandomPolicy(FuzzedDataProvider& in) {
  static constexpr std::string_view kNames[] = {"a", "b", "c", ""};
  sc::Policy p{{}, in.ConsumeIntegralInRange(-2, 4100)};
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 8); n > 0; --n) {
    sc::Rule r{kNames[in.ConsumeIntegralInRange(0, 3)],
               in.ConsumeBool() ? sc::Action::kAllow : sc::Action::kErrno,
               in.ConsumeIntegralInRange(-1, 4097),
               {},
               in.ConsumeBool() ? "reason" : ""};
    for (size_t c = in.ConsumeIntegralInRange<size_t>(0, 3); c > 0; --c)
      r.conds.push_back({in.ConsumeIntegralInRange(0u, 7u), static_cast<sc::ArgCond::Op>(in.ConsumeIntegralInRange(0, 6)),
                         in.ConsumeIntegral<uint64_t>(), in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>()});
    p.rules.push_back(std::move(r));
  }
  auto v = sc::validate(p);
  PROPERTY_ONE_LINE_ERROR(v);
  if (!v.ok()) return;
  PROPERTY(p.default_errno > 0 && p.default_errno <= 4095, "default errno out of range accepted");
  for (const sc::Rule& r : p.rules) {
    PROPERTY(!r.syscall.empty() && !r.reason.empty(), "rule without a name or reason accepted");
    PROPERTY(r.action == sc::Action::kAllow ? r.err == 0 : (r.err > 0 && r.err <= 4095), "bad errno accepted");
    unsigned seen = 0;
    for (const sc::ArgCond& c : r.conds) {
      PROPERTY(c.arg <= 5, "argument index above 5 accepted");
      PROPERTY((seen & (1u << c.arg)) == 0, "two conds on one argument accepted");
      seen |= 1u << c.arg;
      if (c.op == sc::ArgCond::Op::kMaskedEq)
        PROPERTY((c.value & ~c.mask) == 0, "masked value outside its mask accepted");
      else
        PROPERTY(c.mask == 0, "mask on a non-masked op accepted");
    }
  }
  // Evaluating a valid policy gives a well-formed verdict, and an unconditional denial wins
  // whatever the arguments.
  sc::SyscallArgs args{};
  for (uint64_t& x : args) x = in.ConsumeIntegral<uint64_t>();
  for (std::string_view name : {"a", "b", "c", "d"}) {
    sc::Verdict verdict = sc::evaluate(p, name, args);
    PROPERTY(verdict.action == sc::Action::kAllow ? verdict.err == 0 : verdict.err > 0, "malformed verdict");
    for (const sc::Rule& r : p.rules)
      if (r.syscall == name && r.action == sc::Action::kErrno && r.conds.empty())
        PROPERTY(verdict == (sc::Verdict{sc::Action::kErrno, r.err}), "explicit denial not applied");
  }
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::fuzz;
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: checkRandomPolicy(in); break;
    case 1: {  // any listed-or-not name, any arguments
      std::string name = in.ConsumeRandomLengthString(32);
      sc::SyscallArgs a{};
      for (uint64_t& x : a) x = in.ConsumeIntegral<uint64_t>();
      checkSandboxCall(name, a);
      if (!listed(name)) PROPERTY(sc::evaluate(sandbox(), name, a) == (sc::Verdict{sc::Action::kErrno, ENOSYS}), name);
      break;
    }
    default: {  // argument-dependent syscalls, where a wrong mask or compare would show
      std::string_view name = kArgDependent[in.ConsumeIntegralInRange<size_t>(0, std::size(kArgDependent) - 1)];
      sc::SyscallArgs a{};
      for (uint64_t& x : a) x = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 64) : in.ConsumeIntegral<uint64_t>();
      checkSandboxCall(name, a);
      for (std::string_view d : kAlwaysDenied) checkSandboxCall(d, a);
      break;
    }
  }
  return 0;
}
