// SPDX-License-Identifier: Apache-2.0
// seccomp: libseccomp compilation of the policy into one BPF program, and its installation.
#include "sandbox/seccomp.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <string>

#include "base/unique_fd.h"

namespace corral::sandbox::seccomp {
namespace {

namespace pol = policy::seccomp;
using Insns = std::vector<struct sock_filter>;

// One libseccomp filter context; released on every path.
class Ctx {
 public:
  explicit Ctx(uint32_t default_action) : ctx_(seccomp_init(default_action)) {}
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  ~Ctx() {
    if (ctx_ != nullptr) seccomp_release(ctx_);
  }
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

// libseccomp returns -errno.
Error scmpError(int rc, std::string context) { return Error(-rc, std::move(context)); }

scmp_compare toScmp(pol::ArgCond::Op op) {
  switch (op) {
    case pol::ArgCond::Op::kEq: return SCMP_CMP_EQ;
    case pol::ArgCond::Op::kNe: return SCMP_CMP_NE;
    case pol::ArgCond::Op::kMaskedEq: return SCMP_CMP_MASKED_EQ;
    case pol::ArgCond::Op::kLt: return SCMP_CMP_LT;
    case pol::ArgCond::Op::kLe: return SCMP_CMP_LE;
    case pol::ArgCond::Op::kGt: return SCMP_CMP_GT;
    case pol::ArgCond::Op::kGe: return SCMP_CMP_GE;
  }
  return _SCMP_CMP_MAX;  // unreachable for a valid enum; libseccomp rejects it with EINVAL
}

scmp_arg_cmp toScmp(const pol::ArgCond& c) {
  // For SCMP_CMP_MASKED_EQ libseccomp takes (mask, value); for the others (value, unused).
  if (c.op == pol::ArgCond::Op::kMaskedEq) return {c.arg, toScmp(c.op), c.mask, c.value};
  return {c.arg, toScmp(c.op), c.value, 0};
}

Result<int> resolve(std::string_view name) {
  std::string n(name);
  int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, n.c_str());
  // Negative numbers are libseccomp's pseudo-syscalls: names that exist on other ABIs only.
  if (nr < 0)
    return Error(Errc::kInvalidArgument, "seccomp: cannot resolve syscall '" + n + "' on x86_64");
  return nr;
}

Result<Insns> exportBpf(const Ctx& ctx) {
  // libseccomp 2.5.4 exports only to an fd (seccomp_export_bpf_mem arrived in 2.6).
  UniqueFd fd(::memfd_create("corral-seccomp", MFD_CLOEXEC));
  if (!fd.valid()) return sysError("memfd_create seccomp export");
  if (int rc = seccomp_export_bpf(ctx.get(), fd.get()); rc != 0)
    return scmpError(rc, "seccomp_export_bpf");
  off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size < 0) return sysError("lseek seccomp export");
  if (size == 0 || size % sizeof(struct sock_filter) != 0)
    return Error(Errc::kIo, "seccomp export: odd size " + std::to_string(size));
  Insns insns(size / sizeof(struct sock_filter));
  auto* out = reinterpret_cast<char*>(insns.data());
  for (off_t done = 0; done < size;) {
    ssize_t n = ::pread(fd.get(), out + done, size - done, done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError("pread seccomp export");
    if (n == 0) return Error(Errc::kIo, "seccomp export: short read");
    done += n;
  }
  return insns;
}

// The policy compiles to two libseccomp filters, chained into one program, because libseccomp
// cannot say "allow ioctl except TIOCSTI" in one default-deny filter: an unconditional allow
// swallows the conditional refusals of the same syscall (checked on 2.5.4), and the order in
// which it tests sibling rules on different arguments is undocumented.
enum class Stage {
  kRefusals,   // default allow; the conditional errno rules
  kAllowlist,  // default errno; the allow rules and the explicit denials
};

// An unconditional allow: the syscall's whole allowlist-stage verdict (validate() permits no
// other allowlist rule beside it), so the range search (RangeSearch) decides it instead.
bool plainAllow(const pol::Rule& rule) { return rule.action == pol::Action::kAllow && rule.conds.empty(); }

bool inStage(const pol::Rule& rule, Stage stage, int default_errno) {
  bool refusal = rule.action == pol::Action::kErrno && !rule.conds.empty();
  if (stage == Stage::kRefusals) return refusal;
  if (plainAllow(rule)) return false;
  // libseccomp rejects a rule whose action equals the default (EACCES); such a denial exists
  // for its reason and its test, and the default already enforces it.
  if (rule.action == pol::Action::kErrno && rule.err == default_errno) return false;
  return !refusal;
}

Result<Insns> compileStage(const pol::Policy& policy, const std::vector<int>& nrs, Stage stage) {
  uint32_t def = stage == Stage::kRefusals ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(policy.default_errno);
  Ctx ctx(def);
  if (ctx.get() == nullptr) return Error(Errc::kUnsupported, "seccomp_init failed");
  // int $0x80 (i386) and, since libseccomp's x86_64 filter tests nr >= 0x40000000, x32 too.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
    return scmpError(rc, "seccomp bad-arch action");
  // We load the program ourselves; the caller has already set no_new_privs.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc != 0)
    return scmpError(rc, "seccomp nnp attribute");
  // libseccomp's binary tree (level 2), not a linear list. The program is compiled at build
  // time (seccomp_embedded.h), so the tree's cost to generate is never paid at launch, and the
  // kernel walks the program once per syscall number when it installs it (5.11+: the verdict
  // cache for syscalls that do not depend on their arguments). Over ~300 allowed syscalls a
  // linear list made that walk, with interrupts off, about 0.3 ms of every launch.
  // Argument-checked syscalls still go first (the priorities below).
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc != 0)
    return scmpError(rc, "seccomp optimize attribute");
  std::vector<scmp_arg_cmp> cmps;
  for (size_t i = 0; i < policy.rules.size(); ++i) {
    const pol::Rule& rule = policy.rules[i];
    if (stage == Stage::kAllowlist && !rule.conds.empty()) {
      if (int rc = seccomp_syscall_priority(ctx.get(), nrs[i], 255); rc != 0)
        return scmpError(rc, "seccomp priority for " + std::string(rule.syscall));
    }
    if (!inStage(rule, stage, policy.default_errno)) continue;
    uint32_t action =
        rule.action == pol::Action::kAllow ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(rule.err);
    cmps.clear();
    for (const pol::ArgCond& c : rule.conds) cmps.push_back(toScmp(c));
    if (int rc = seccomp_rule_add_exact_array(ctx.get(), action, nrs[i], cmps.size(), cmps.data());
        rc != 0)
      return scmpError(rc, "seccomp rule for " + std::string(rule.syscall));
  }
  return exportBpf(ctx);
}

// Runs `first`, and wherever it would allow, falls through to `second`: each RET ALLOW in
// `first` becomes a forward jump to the instruction after it. Both programs test the arch
// themselves, and neither reads state left by the other (each starts with a load).
Result<Insns> chain(const Insns& first, const Insns& second) {
  Insns out;
  out.reserve(first.size() + second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    struct sock_filter insn = first[i];
    if (BPF_CLASS(insn.code) == BPF_RET) {
      // Invariant: libseccomp returns constants only; a BPF_A return would escape the rewrite.
      if (BPF_RVAL(insn.code) != BPF_K)
        return Error(Errc::kUnsupported, "seccomp: non-constant return in libseccomp output");
      if (insn.k == SECCOMP_RET_ALLOW)
        insn = {BPF_JMP | BPF_JA, 0, 0, static_cast<uint32_t>(first.size() - i - 1)};
    }
    out.push_back(insn);
  }
  out.insert(out.end(), second.begin(), second.end());
  if (out.size() > BPF_MAXINSNS)
    return Error(Errc::kLimit, "seccomp program has " + std::to_string(out.size()) + " insns");
  return out;
}

// The syscall numbers in `nrs` as sorted, disjoint, non-adjacent [first, last] ranges.
std::vector<std::pair<uint32_t, uint32_t>> toRanges(std::vector<uint32_t> nrs) {
  std::sort(nrs.begin(), nrs.end());
  nrs.erase(std::unique(nrs.begin(), nrs.end()), nrs.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint32_t nr : nrs) {
    if (!out.empty() && out.back().second + 1 == nr) out.back().second = nr;
    else out.emplace_back(nr, nr);
  }
  return out;
}

// A binary search over ranges of syscall numbers: RET ALLOW when the number lies in one, else
// on to whatever follows the program (the libseccomp allowlist stage, for the syscalls whose
// allow depends on arguments). It replaces one libseccomp comparison per allowed syscall (about
// 280, plus the tree above them) with one per range boundary (about 40 ranges): the kernel
// converts and JIT-compiles the whole program at every launch, so its length is launch time
// (0.12-0.2 ms for the 482-instruction program, 0.04 ms for this search alone). Only opcodes
// the kernel's verdict-cache emulator follows (loads of arch and nr, JEQ/JGE/JGT K, RET K),
// so every syscall allowed here is still cached as always-allowed. Runs after the refusals stage, whose
// conditional refusals take precedence (seccomp_policy.h).
class RangeSearch {
 public:
  Result<Insns> build(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
    // No ranges, no search: its loads would fall straight through to the RET ALLOW.
    if (ranges.empty()) return Insns{};
    // Its own arch test, though the refusals stage ran one: anything but x86_64 goes on to the
    // allowlist stage, which kills it. The x32 bit lies above every range, so it goes on too.
    nodes_.push_back({BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), kNext, kNext});
    nodes_.push_back({BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, kNext, kMiss});
    nodes_.push_back({BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), kNext, kNext});
    emit(ranges, 0, ranges.size(), 0);
    const int allow = static_cast<int>(nodes_.size());
    Insns out;
    out.reserve(nodes_.size() + 1);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      uint8_t jt = 0, jf = 0;
      if (BPF_CLASS(n.code) == BPF_JMP) {
        ASSIGN_OR_RETURN(jt, offset(i, n.jt, allow));
        ASSIGN_OR_RETURN(jf, offset(i, n.jf, allow));
      }
      out.push_back({n.code, jt, jf, n.k});
    }
    out.push_back({BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW});
    return out;
  }

 private:
  static constexpr int kNext = -1;   // the next instruction
  static constexpr int kAllow = -2;  // the RET ALLOW after the search
  static constexpr int kMiss = -3;   // the first instruction after the search's RET ALLOW
  struct Node {
    uint16_t code;
    uint32_t k;
    int jt, jf;  // an instruction index, or kNext / kAllow / kMiss
  };

  // Decides ranges[begin, end), knowing nr >= floor.
  void emit(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, size_t begin, size_t end, uint32_t floor) {
    if (end - begin == 1) {
      const auto [first, last] = ranges[begin];
      if (first > floor) nodes_.push_back({BPF_JMP | BPF_JGE | BPF_K, first, kNext, kMiss});
      nodes_.push_back({BPF_JMP | BPF_JGT | BPF_K, last, kMiss, kAllow});
      return;
    }
    const size_t mid = begin + (end - begin) / 2;
    const size_t split = nodes_.size();
    nodes_.push_back({BPF_JMP | BPF_JGE | BPF_K, ranges[mid].first, kNext, kNext});  // jt set below
    emit(ranges, begin, mid, floor);
    nodes_[split].jt = static_cast<int>(nodes_.size());
    emit(ranges, mid, end, ranges[mid].first);
  }

  static Result<uint8_t> offset(size_t from, int target, int allow) {
    const long to = target == kNext ? static_cast<long>(from) + 1
                    : target == kAllow ? allow
                    : target == kMiss  ? allow + 1
                                       : target;
    const long skip = to - static_cast<long>(from) - 1;
    if (skip < 0 || skip > 255)
      return Error(Errc::kLimit, "seccomp range search: a jump of " + std::to_string(skip) + " insns");
    return static_cast<uint8_t>(skip);
  }

  std::vector<Node> nodes_;
};

}  // namespace

Result<Program> compile(const pol::Policy& policy) {
  // The policy's x32 and int $0x80 reasoning holds for x86_64 only.
  if (seccomp_arch_native() != SCMP_ARCH_X86_64)
    return Error(Errc::kUnsupported, "seccomp: the policy is written for x86_64 only");
  RETURN_IF_ERROR(pol::validate(policy));
  // Every name resolves, including the denials the allowlist skips: a typo is an error.
  std::vector<int> nrs;
  nrs.reserve(policy.rules.size());
  for (const pol::Rule& rule : policy.rules) {
    ASSIGN_OR_RETURN(int nr, resolve(rule.syscall));
    nrs.push_back(nr);
  }
  ASSIGN_OR_RETURN(Insns refusals, compileStage(policy, nrs, Stage::kRefusals));
  std::vector<uint32_t> plain;
  for (size_t i = 0; i < policy.rules.size(); ++i)
    if (plainAllow(policy.rules[i])) plain.push_back(static_cast<uint32_t>(nrs[i]));
  ASSIGN_OR_RETURN(Insns search, RangeSearch().build(toRanges(std::move(plain))));
  ASSIGN_OR_RETURN(Insns allowlist, compileStage(policy, nrs, Stage::kAllowlist));
  search.insert(search.end(), allowlist.begin(), allowlist.end());
  ASSIGN_OR_RETURN(Insns insns, chain(refusals, search));
  return Program{std::move(insns)};
}

int install(const Program& program) {
  const size_t n = program.insns.size();
  if (n == 0 || n > BPF_MAXINSNS) return EINVAL;
  int nnp = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  if (nnp < 0) return errno;
  if (nnp != 1) return EPERM;
  struct sock_fprog fprog = {static_cast<unsigned short>(n),
                             const_cast<struct sock_filter*>(program.insns.data())};
  // Flags 0: no TSYNC (the child is single-threaded) and no SPEC_ALLOW, so the kernel keeps
  // its speculative-store-bypass mitigation for the sandboxed task.
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) return errno;
  return 0;
}

}  // namespace corral::sandbox::seccomp
