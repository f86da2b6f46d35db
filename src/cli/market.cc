// SPDX-License-Identifier: Apache-2.0
// `corral market`: dispatch to its subcommands, plus `serve` and `ledger show|check`.
#include "cli/market.h"

#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/market_agent.h"
#include "cli/market_flags.h"
#include "cli/option_echo.h"
#include "market/audit_chain.h"
#include "market/db.h"
#include "market/ledger.h"
#include "market/schema.h"
#include "market/server.h"

namespace corral::cli {
namespace {

constexpr char kUsage[] =
    "usage: corral market <command> [options]   (every command takes --json)\n"
    "  serve --db sqlite:PATH|postgresql://... [--listen ADDR:PORT] [--tls-cert F --tls-key F]\n"
    "        [--admin-socket PATH] [--admin-token-file F] [--fee-bps N] [--suspend-after-strikes N] [--claim-seconds N]\n"
    "        [--rate-limit N]\n"
    "  admin [--admin-socket PATH | --server URL --admin-token-file F] register --role buyer|seller|judge --name N [--spend-cap CENTS]\n"
    "        [--approve-each] (--out FILE | --public-key HEXFILE)\n"
    "  admin [--admin-socket PATH] set-cap AGENT CENTS | suspend AGENT | reinstate AGENT\n"
    "        | appeals [uphold APPEAL] | approve TASK | reject TASK | refund TASK\n"
    "  post --title T --max-price CENTS --body-file F [--model NAME] [--category C] [--deadline UNIX]\n"
    "  buyer --watch [--once]    release task keys to accepted runner and judge keys\n"
    "  tasks | result TASK       list tasks; decrypt a result locally\n"
    "  seller|judge [--once] [--timeout D] [--memory S] [--workspace DIR] [--wait-seconds N] -- CMD [ARGS...]\n"
    "                            run each claimed (or reviewed) task in its own corral exec sandbox whose\n"
    "                            runner key is born inside it; CMD reads the task on stdin (seller: its stdout\n"
    "                            is the answer; judge: $CORRAL_MARKET_BODY, $CORRAL_MARKET_RESULT, prints a code)\n"
    "  ledger show|check --db URL\n"
    "  audit verify|head --db URL [--trusted-head HEX]   the hash-chained audit trail\n"
    "  agent commands: --server URL --key-file FILE (or CORRAL_MARKET_SERVER, CORRAL_MARKET_KEY_FILE)\n"
    "  The built-in `ledger` payment provider is a test mode: no real money moves.\n";

int serveMain(const std::vector<std::string>& args) {
  auto f = parseMarketFlags(args,
                            {"--db", "--listen", "--tls-cert", "--tls-key", "--admin-socket", "--admin-token-file", "--fee-bps",
                             "--suspend-after-strikes", "--claim-seconds", "--rate-limit", "--sweep-seconds"},
                            {"--json"});
  if (!f) return marketFail("serve", f.error().message(), false);
  const bool json = f->has("--json");
  if (!f->has("--db")) return marketFail("serve", "missing --db URL", json);
  market::ServeOptions o;
  o.db_url = f->get("--db");
  o.listen = f->get("--listen", o.listen);
  o.tls_cert = f->get("--tls-cert");
  o.tls_key = f->get("--tls-key");
  o.admin_socket = f->get("--admin-socket");
  o.admin_token_file = f->get("--admin-token-file");
  struct {
    const char* flag;
    int64_t* into;
    long long lo, hi;
  } nums[] = {{"--fee-bps", &o.fee_bps, 0, 10000},
              {"--suspend-after-strikes", &o.suspend_after_strikes, 1, 1000},
              {"--claim-seconds", &o.claim_seconds, 1, 86400LL * 30},
              {"--rate-limit", &o.rate_per_minute, 1, 1'000'000},
              {"--sweep-seconds", &o.sweep_seconds, 1, 3600}};
  for (auto& n : nums) {
    auto v = intFlag(*f, n.flag, *n.into);
    if (!v) return marketFail("serve", v.error().message(), json);
    if (*v < n.lo || *v > n.hi) return marketFail("serve", std::string(n.flag) + " out of range", json);
    *n.into = *v;
  }
  auto r = market::serve(o);
  if (!r) return marketFail("serve", r.error().message(), json);
  return 0;
}

int ledgerMain(const std::vector<std::string>& args) {
  auto f = parseMarketFlags(args, {"--db"}, {"--json"}, 1);
  if (!f) return marketFail("ledger", f.error().message(), false);
  const bool json = f->has("--json");
  if (f->positional.size() != 1 || (f->positional[0] != "show" && f->positional[0] != "check"))
    return marketFail("ledger", "usage: corral market ledger show|check --db URL", json);
  if (!f->has("--db")) return marketFail("ledger", "missing --db URL", json);
  auto db = market::openDb(f->get("--db"));
  if (!db) return marketFail("ledger", db.error().message(), json);
  // The schema must exist (and be ours) before reading: a fresh file gets the empty tables.
  if (auto v = market::migrate(**db); !v) return marketFail("ledger", v.error().message(), json);
  if (f->positional[0] == "check") {
    auto rep = market::ledger::check(**db);
    if (!rep) return marketFail("ledger", rep.error().message(), json);
    const bool ok = rep->problems.empty();
    if (json) {
      std::printf("%s\n", nlohmann::json({{"ok", ok}, {"transactions", rep->transactions}, {"entries", rep->entries},
                                          {"accounts", rep->accounts}, {"problems", rep->problems}})
                              .dump()
                              .c_str());
    } else {
      for (const auto& p : rep->problems) std::printf("problem: %s\n", p.c_str());
      std::printf("ledger %s: %lld transactions, %lld entries, %lld accounts\n", ok ? "balanced" : "NOT balanced",
                  static_cast<long long>(rep->transactions), static_cast<long long>(rep->entries),
                  static_cast<long long>(rep->accounts));
    }
    return ok ? 0 : 1;
  }
  auto bal = market::ledger::balances(**db);
  if (!bal) return marketFail("ledger", bal.error().message(), json);
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& b : *bal) arr.push_back({{"account", b.account}, {"balance", b.balance}});
    std::printf("%s\n", nlohmann::json({{"accounts", arr}, {"provider", "ledger"}, {"test_mode", true}}).dump().c_str());
  } else {
    std::printf("provider ledger (test mode: no real money moves); balances in cents\n");
    for (const auto& b : *bal) std::printf("%-60s %15lld\n", b.account.c_str(), static_cast<long long>(b.balance));
  }
  return 0;
}

// `audit verify` exits 0 exactly when the chain is whole (and holds --trusted-head, a head
// saved earlier by `audit head`); 1 when it is broken; 125 on usage.
int auditMain(const std::vector<std::string>& args) {
  auto f = parseMarketFlags(args, {"--db", "--trusted-head"}, {"--json"}, 1);
  if (!f) return marketFail("audit", f.error().message(), false);
  const bool json = f->has("--json");
  if (f->positional.size() != 1 || (f->positional[0] != "verify" && f->positional[0] != "head"))
    return marketFail("audit", "usage: corral market audit verify|head --db URL [--trusted-head HEX]", json);
  if (!f->has("--db")) return marketFail("audit", "missing --db URL", json);
  std::optional<std::string> trusted;
  if (f->has("--trusted-head")) {
    trusted = f->get("--trusted-head");
    if (trusted->size() != 64 || trusted->find_first_not_of("0123456789abcdef") != std::string::npos)
      return marketFail("audit", "--trusted-head must be 64 lowercase hex digits", json);
  }
  auto db = market::openDb(f->get("--db"));
  if (!db) return marketFail("audit", db.error().message(), json);
  if (auto v = market::migrate(**db); !v) return marketFail("audit", v.error().message(), json);
  auto rep = market::audit_chain::verify(**db, trusted);
  if (!rep) return marketFail("audit", rep.error().message(), json);
  if (json) {
    std::printf("%s\n", nlohmann::json({{"ok", rep->ok}, {"entries", rep->entries}, {"head", rep->head},
                                        {"unchained", rep->unchained}, {"failure", rep->failure}})
                            .dump()
                            .c_str());
  } else if (f->positional[0] == "head" && rep->ok) {
    std::printf("%s %lld\n", rep->head.c_str(), static_cast<long long>(rep->entries));
  } else if (rep->ok) {
    std::printf("audit chain intact: %lld entries, head %s%s\n", static_cast<long long>(rep->entries),
                rep->head.c_str(), trusted ? ", holds the trusted head" : "");
  } else {
    std::printf("audit chain BROKEN: %s\n", rep->failure.c_str());
  }
  return rep->ok ? 0 : 1;
}

}  // namespace

int marketMain(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 125 : 0;
  }
  const std::string& sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "serve") return serveMain(rest);
  if (sub == "ledger") return ledgerMain(rest);
  if (sub == "audit") return auditMain(rest);
  if (sub == "admin") return marketAdminMain(rest);
  if (sub == "post" || sub == "buyer" || sub == "tasks" || sub == "result") return marketAgentMain(sub, rest);
  if (sub == "seller" || sub == "judge") return marketRunnerMain(sub, rest);
  if (sub == "sandbox-runner") return marketSandboxMain(rest);
  return marketFail("?", "unknown market command " + optionName(sub) + " (try corral market --help)", false);
}

}  // namespace corral::cli
