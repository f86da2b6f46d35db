// SPDX-License-Identifier: Apache-2.0
// Security/integration test harness: corral and probe invocations, temp dirs, host-side checks.
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace corral::testing {
namespace fs = std::filesystem;

std::string corralBin() {
  const char* env = std::getenv("CORRAL_BIN");
  return env && *env ? env : CORRAL_BIN;
}

static std::string tmpRoot() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

const std::string& probeHostDir() {
  // A private copy: binding the build tree would expose more than the probe, and the
  // host-binaries claim checks this copy's bytes after runs.
  static TempDir* dir = [] {
    auto* d = new TempDir("probe");
    fs::copy_file(CORRAL_PROBE, *d / "corral-probe", fs::copy_options::overwrite_existing);
    chmod((*d / "corral-probe").c_str(), 0755);
    std::atexit([] { delete dir; });
    return d;
  }();
  return dir->path();
}

std::string probeHostPath() { return probeHostDir() + "/corral-probe"; }

bool isRoot() { return geteuid() == 0; }

bool rootlessMode() {
  const char* mode = std::getenv("CORRAL_TEST_MODE");
  return (mode && std::string_view(mode) == "rootless") || !isRoot();
}

std::vector<std::string> corralArgv(const std::vector<std::string>& opts, const std::vector<std::string>& command,
                                    bool json) {
  std::vector<std::string> argv{corralBin(), "exec"};
  if (json) argv.emplace_back("--json");
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

RunResult runCorral(const std::vector<std::string>& opts, const std::vector<std::string>& command,
                    const RunOptions& run_opts) {
  return run(corralArgv(opts, command), run_opts);
}

std::vector<std::string> probeBind() { return {"--ro-bind", probeHostDir() + ":" + kProbeDir}; }

std::vector<std::string> probeArgv(std::vector<std::string> opts, const std::vector<std::string>& probe_args) {
  for (auto& a : probeBind()) opts.push_back(std::move(a));
  std::vector<std::string> command{kProbe};
  command.insert(command.end(), probe_args.begin(), probe_args.end());
  return corralArgv(opts, command);
}

RunResult runProbe(const std::vector<std::string>& opts, const std::vector<std::string>& probe_args,
                   const RunOptions& run_opts) {
  return run(probeArgv(opts, probe_args), run_opts);
}

RunResult runHostProbe(const std::vector<std::string>& probe_args, const RunOptions& run_opts) {
  std::vector<std::string> argv{probeHostPath()};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return run(argv, run_opts);
}

std::string uniqueName(std::string_view tag) {
  static std::atomic<int> counter{0};
  static std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream o;
  o << tag << "-" << getpid() << "-" << counter++ << "-" << std::hex << (rng() & 0xffffffffffULL);
  return o.str();
}

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string readHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

TempDir::TempDir(std::string_view tag) {
  std::string tmpl = tmpRoot() + "/corral-" + std::string(tag) + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) std::abort();
  path_ = tmpl;
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  // Entries may have been made read-only (or a dir 0555) by a test: open them up first.
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
  fs::remove_all(path_, ec);
}

void TempDir::write(std::string_view rel, std::string_view content, mode_t mode) const {
  std::string p = *this / rel;
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  chmod(p.c_str(), mode);
}

std::string TempDir::read(std::string_view rel) const { return readHostFile(*this / rel); }

bool TempDir::exists(std::string_view rel) const {
  struct stat st;
  return lstat((*this / rel).c_str(), &st) == 0;
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path_, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<pid_t> probeProcessesWithMarker(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  for (dirent* e; (e = readdir(d)) != nullptr;) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string cmdline = readHostFile(std::string("/proc/") + e->d_name + "/cmdline");
    std::vector<std::string> args;
    std::istringstream in(cmdline);
    for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
    // Only the probe itself: corral's own argv carries the marker too.
    if (args.empty() || !args[0].ends_with("corral-probe")) continue;
    if (std::find(args.begin(), args.end(), marker) != args.end()) found.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return found;
}

std::vector<pid_t> waitForNoMarker(const std::string& marker, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = probeProcessesWithMarker(marker);
    if (left.empty() || std::chrono::steady_clock::now() >= until) return left;
    poll(nullptr, 0, 10);
  }
}

uid_t hostUidOf(pid_t pid) {
  std::istringstream in(readHostFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Uid:", 0) == 0) return static_cast<uid_t>(std::stoul(line.substr(4)));
  return static_cast<uid_t>(-1);
}

TcpListener::TcpListener(const char* addr) {
  sockaddr_storage ss{};
  socklen_t len;
  bool v6 = std::string_view(addr).find(':') != std::string_view::npos;
  if (v6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    sa->sin6_family = AF_INET6;
    inet_pton(AF_INET6, addr, &sa->sin6_addr);
    len = sizeof *sa;
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    sa->sin_family = AF_INET;
    inet_pton(AF_INET, addr, &sa->sin_addr);
    len = sizeof *sa;
  }
  fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd_, 64) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    port_ = -1;  // e.g. no IPv6 on this host: the caller skips
  } else {
    port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  if (pipe2(stop_, O_CLOEXEC) != 0) std::abort();
}

TcpListener::~TcpListener() {
  if (write(stop_[1], "x", 1) < 0) {
  }
  for (auto& t : threads_) t.join();
  if (fd_ >= 0) close(fd_);
  close(stop_[0]);
  close(stop_[1]);
}

void TcpListener::serveHttp(std::string body) {
  threads_.emplace_back([this, body = std::move(body)] {
    for (;;) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 || fds[1].revents) return;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[4096];
      pollfd cf{c, POLLIN, 0};
      if (poll(&cf, 1, 2000) > 0 && read(c, buf, sizeof buf) < 0) {
      }
      std::string resp = "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nConnection: close\r\n\r\n" + body;
      if (::write(c, resp.data(), resp.size()) < 0) {
      }
      close(c);
    }
  });
}

AbstractListener::AbstractListener() : name_(uniqueName("corral-sec-abstract")) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::copy(name_.begin(), name_.end(), sun.sun_path + 1);
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sun), len) != 0 || listen(fd_, 64) != 0) std::abort();
}

AbstractListener::~AbstractListener() { close(fd_); }

std::string hostIPv4NonLoopback() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    if (std::string_view(buf).rfind("127.", 0) != 0) found = buf;
  }
  freeifaddrs(list);
  return found;
}

std::string claim(std::string_view id, std::string_view what) {
  return "claim " + std::string(id) + " broken: " + std::string(what);
}

::testing::AssertionResult probeRefused(const RunResult& r, const std::vector<std::string>& errnos) {
  ProbeLine p = r.probe();
  if (r.exit_code != 1 || (p.status != "errno" && p.status != "refused"))
    return ::testing::AssertionFailure() << "expected the probe to run and be refused" << r.describe();
  if (!errnos.empty() && std::find(errnos.begin(), errnos.end(), p.err) == errnos.end()) {
    auto f = ::testing::AssertionFailure();
    f << "expected errno in {";
    for (const auto& e : errnos) f << " " << e;
    return f << " }, got '" << p.raw << "'" << r.describe();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult probeDid(const RunResult& r) {
  if (r.exit_code == 0 && r.probe().ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected the probe to succeed" << r.describe();
}

::testing::AssertionResult refusedBeforeRun(const RunResult& r) {
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (r.exit_code != 125) return ::testing::AssertionFailure() << "expected exit 125" << r.describe();
  if (lines.size() != 1 || lines[0].rfind("corral: ", 0) != 0)
    return ::testing::AssertionFailure() << "expected exactly one stderr line starting 'corral: '" << r.describe();
  if (!r.out.empty()) return ::testing::AssertionFailure() << "the command ran" << r.describe();
  return ::testing::AssertionSuccess();
}

}  // namespace corral::testing
