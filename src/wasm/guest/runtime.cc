// SPDX-License-Identifier: Apache-2.0
// corral's implementation of the wasm2c runtime interface (wasm-rt.h) for the one guest of
// this process: linear memory in one reservation, capped growth, traps as exit statuses.
#include "wasm/guest/runtime.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "wasm/trap_status.h"

namespace {

constexpr uint64_t kPage = 65536;
// Invariant: wasm2c compiled with its signal-handler bounds check emits no check at all, so
// every address base + u32 index + u32 offset (+ the access size) must land in memory we
// own: 8 GiB of PROT_NONE after the base, of which only the current pages are accessible.
constexpr uint64_t kReservation = (8ull << 30) + kPage;

bool g_initialized = false;
uint32_t g_limit_pages = 0;     // --memory in pages: what memory.grow may reach
uint8_t* g_reservation = nullptr;
uintptr_t g_stack_top = 0;
uint64_t g_stack_size = 8u << 20;

void writeLine(const char* a, const char* b = "") {
  const std::string_view parts[] = {"corral: wasm guest: ", a, b, "\n"};
  for (std::string_view p : parts) {
    if (::write(2, p.data(), p.size()) < 0) return;
  }
}

// On the alternate stack: a fault in the reservation is the guest's out-of-bounds access;
// one just below the main stack is its recursion running out of native stack (wasm2c's
// signal-handler mode counts no depth). Anything else is a fault of the host itself.
void onFault(int, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const auto base = reinterpret_cast<uintptr_t>(g_reservation);
  if (g_reservation && addr >= base && addr < base + kReservation) wasm_rt_trap(WASM_RT_TRAP_OOB);
  const uintptr_t low = g_stack_top > g_stack_size + (1u << 20) ? g_stack_top - g_stack_size - (1u << 20) : 0;
  if (addr >= low && addr <= g_stack_top) wasm_rt_trap(WASM_RT_TRAP_EXHAUSTION);
  writeLine("host fault (not the guest's memory or stack)");
  ::_exit(corral::wasm::kHostFailureStatus);
}

struct FuncType {
  uint32_t params, results;
  wasm_rt_type_t types[32];
};
FuncType g_types[4096];
uint32_t g_type_count = 0;

}  // namespace

namespace corral::wasm::guest {

bool initRuntime(uint32_t limit_pages, uintptr_t stack_top) {
  g_limit_pages = limit_pages;
  g_stack_top = stack_top;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) g_stack_size = rl.rlim_cur;
  static uint8_t alt[64 << 10];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof(alt);
  if (::sigaltstack(&ss, nullptr) != 0) return false;
  struct sigaction sa {};
  sa.sa_sigaction = onFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSEGV, &sa, nullptr) != 0 || ::sigaction(SIGBUS, &sa, nullptr) != 0) return false;
  g_initialized = true;
  return true;
}

void hostFailure(const char* what, const char* detail) {
  writeLine(what, detail);
  ::_exit(kHostFailureStatus);
}

}  // namespace corral::wasm::guest

extern "C" {

void wasm_rt_init(void) {}
bool wasm_rt_is_initialized(void) { return g_initialized; }
void wasm_rt_free(void) {}

const char* wasm_rt_strerror(wasm_rt_trap_t trap) {
  const char* kind = corral::wasm::trapKind(corral::wasm::kTrapStatusBase + static_cast<int>(trap));
  return kind ? kind : "unknown";
}

// Async-signal-safe: called from the fault handler too.
void wasm_rt_trap(wasm_rt_trap_t trap) {
  writeLine("trap: ", wasm_rt_strerror(trap));
  ::_exit(corral::wasm::kTrapStatusBase + static_cast<int>(trap));
}

uint32_t wasm_rt_register_func_type(uint32_t params, uint32_t results, ...) {
  if (params + results > 32) corral::wasm::guest::hostFailure("a function type with more than 32 values");
  FuncType t{params, results, {}};
  va_list ap;
  va_start(ap, results);
  for (uint32_t i = 0; i < params + results; ++i) t.types[i] = static_cast<wasm_rt_type_t>(va_arg(ap, int));
  va_end(ap);
  for (uint32_t i = 0; i < g_type_count; ++i) {
    const FuncType& o = g_types[i];
    if (o.params == params && o.results == results &&
        std::memcmp(o.types, t.types, sizeof(wasm_rt_type_t) * (params + results)) == 0)
      return i + 1;
  }
  if (g_type_count == sizeof(g_types) / sizeof(g_types[0])) corral::wasm::guest::hostFailure("more than 4096 function types");
  g_types[g_type_count++] = t;
  return g_type_count;
}

// One memory per process (module_scan refuses a second): its reservation is made once and
// lives until the process exits, so nothing can leak across instances.
void wasm_rt_allocate_memory(wasm_rt_memory_t* mem, uint32_t initial_pages, uint32_t max_pages) {
  if (g_reservation) corral::wasm::guest::hostFailure("a second linear memory");
  if (initial_pages > g_limit_pages) corral::wasm::guest::hostFailure("the module's initial memory exceeds --memory");
  void* p = ::mmap(nullptr, kReservation, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) corral::wasm::guest::hostFailure("cannot reserve the linear memory's address space");
  g_reservation = static_cast<uint8_t*>(p);
  if (initial_pages && ::mprotect(p, initial_pages * kPage, PROT_READ | PROT_WRITE) != 0)
    corral::wasm::guest::hostFailure("cannot map the linear memory's initial pages");
  mem->data = g_reservation;
  mem->pages = initial_pages;
  mem->max_pages = max_pages < g_limit_pages ? max_pages : g_limit_pages;
  mem->size = static_cast<uint32_t>(initial_pages * kPage);
}

// memory.grow past the module's maximum or --memory fails the wasm way (-1), not a trap.
uint32_t wasm_rt_grow_memory(wasm_rt_memory_t* mem, uint32_t delta) {
  const uint32_t old = mem->pages;
  if (delta == 0) return old;
  if (static_cast<uint64_t>(old) + delta > mem->max_pages) return UINT32_MAX;
  if (::mprotect(mem->data + old * kPage, delta * kPage, PROT_READ | PROT_WRITE) != 0) return UINT32_MAX;
  mem->pages = old + delta;
  // 65536 pages would be 4 GiB, one past uint32_t: the size saturates (wasm2c's own does too).
  mem->size = mem->pages >= 65536 ? UINT32_MAX : static_cast<uint32_t>(mem->pages * kPage);
  return old;
}

void wasm_rt_free_memory(wasm_rt_memory_t* mem) {
  if (mem->data == g_reservation && g_reservation) ::munmap(g_reservation, kReservation);
  g_reservation = nullptr;
  mem->data = nullptr;
}

}  // extern "C"

namespace {

constexpr uint32_t kTableCap = 1u << 20;

template <typename Table, typename Elem>
void allocateTable(Table* t, uint32_t elements, uint32_t max_elements) {
  if (elements > kTableCap) corral::wasm::guest::hostFailure("a table larger than 2^20 elements");
  t->size = elements;
  t->max_size = max_elements < kTableCap ? max_elements : kTableCap;
  t->data = static_cast<Elem*>(std::calloc(elements ? elements : 1, sizeof(Elem)));
  if (!t->data) corral::wasm::guest::hostFailure("out of memory for a table");
}

template <typename Table, typename Elem>
uint32_t growTable(Table* t, uint32_t delta, Elem init) {
  const uint32_t old = t->size;
  if (static_cast<uint64_t>(old) + delta > t->max_size) return UINT32_MAX;
  if (delta == 0) return old;
  auto* grown = static_cast<Elem*>(std::realloc(t->data, (static_cast<size_t>(old) + delta) * sizeof(Elem)));
  if (!grown) return UINT32_MAX;
  for (uint32_t i = old; i < old + delta; ++i) grown[i] = init;
  t->data = grown;
  t->size = old + delta;
  return old;
}

}  // namespace

extern "C" {

void wasm_rt_allocate_funcref_table(wasm_rt_funcref_table_t* t, uint32_t elements, uint32_t max_elements) {
  allocateTable<wasm_rt_funcref_table_t, wasm_rt_funcref_t>(t, elements, max_elements);
}
void wasm_rt_free_funcref_table(wasm_rt_funcref_table_t* t) { std::free(t->data); }
void wasm_rt_allocate_externref_table(wasm_rt_externref_table_t* t, uint32_t elements, uint32_t max_elements) {
  allocateTable<wasm_rt_externref_table_t, wasm_rt_externref_t>(t, elements, max_elements);
}
void wasm_rt_free_externref_table(wasm_rt_externref_table_t* t) { std::free(t->data); }
uint32_t wasm_rt_grow_funcref_table(wasm_rt_funcref_table_t* t, uint32_t delta, wasm_rt_funcref_t init) {
  return growTable(t, delta, init);
}
uint32_t wasm_rt_grow_externref_table(wasm_rt_externref_table_t* t, uint32_t delta, wasm_rt_externref_t init) {
  return growTable(t, delta, init);
}

}  // extern "C"
