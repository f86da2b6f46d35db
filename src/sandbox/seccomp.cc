// SPDX-License-Identifier: Apache-2.0
// seccomp: libseccomp compilation of the policy into one BPF program, and its installation.
#include "sandbox/seccomp.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
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

bool inStage(const pol::Rule& rule, Stage stage, int default_errno) {
  bool refusal = rule.action == pol::Action::kErrno && !rule.conds.empty();
  if (stage == Stage::kRefusals) return refusal;
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
// themselves, and neither reads state left by the other (libseccomp starts with a load).
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
  ASSIGN_OR_RETURN(Insns allowlist, compileStage(policy, nrs, Stage::kAllowlist));
  ASSIGN_OR_RETURN(Insns insns, chain(refusals, allowlist));
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
