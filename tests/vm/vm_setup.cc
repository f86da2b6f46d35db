// SPDX-License-Identifier: Apache-2.0
// The suite's two guest boots (VmSetup.*): one runs the probe battery, one is killed while
// its command runs. Each records raw observations; the claim tests judge them.
#include "vm_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/unique_fd.h"
#include "harness.h"

namespace corral::testing::vm {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using std::chrono::seconds;

std::string recordPath(const std::string& name) {
  const char* t = std::getenv("TMPDIR");
  std::string dir = std::string(t && *t ? t : "/tmp") + "/corral-vm-test-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  return dir + "/" + name + ".json";
}

Json loadRecord(const std::string& name) {
  std::ifstream in(recordPath(name));
  if (!in) return {{"missing", "no record " + recordPath(name) + ": its VmSetup test did not run or failed"}};
  Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {{"missing", "unreadable record " + recordPath(name)}};
  return j;
}

namespace {
Json doctor() {
  RunResult r = run({corralBin(), "doctor", "--json"});
  Json j = Json::parse(r.out, nullptr, false);
  return j.is_object() && j.contains("vm") ? j["vm"] : Json::object();
}
}  // namespace

std::string whyNoVm() {
  Json v = doctor();
  const std::string state = v.value("state", "");
  if (state == "kvm" || state == "tcg only") return "";
  return "no VM on this host: " + v.value("detail", std::string("corral doctor gave no vm state")) + " (" + v.value("fix", "") + ")";
}

std::vector<std::string> vmOptions() {
  std::vector<std::string> o = {"--backend", "vm"};
  if (doctor().value("state", "") != "kvm") {
    o.push_back("--allow-weaker");
    o.push_back("kvm");
  }
  return o;
}

namespace {

void save(const std::string& name, const Json& j) {
  std::ofstream(recordPath(name)) << j.dump(2);
}

// A setup test's start: with no VM here it records why and skips (the claim tests then skip
// with the same reason); otherwise it drops the last run's record.
#define CORRAL_VM_SETUP(name)                          \
  if (const std::string why = whyNoVm(); !why.empty()) { \
    save(name, {{"skipped", why}});                    \
    GTEST_SKIP() << why;                               \
  }                                                    \
  ::unlink(recordPath(name).c_str())

// "@@ name" lines split the battery's stdout into one entry per check.
Json splitChecks(const std::string& out) {
  Json checks = Json::object();
  std::istringstream in(out);
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("@@ ", 0) == 0) {
      current = line.substr(3);
      checks[current] = "";
    } else if (!current.empty()) {
      checks[current] = checks[current].get<std::string>() + line + "\n";
    }
  }
  return checks;
}

bool accepted(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;  // a pending connection: something reached the listener
}

std::string statusField(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "";
}

pid_t parentOf(pid_t pid) {
  std::string p = statusField(pid, "PPid");
  return p.empty() ? -1 : static_cast<pid_t>(std::stol(p));
}

// QEMU processes descended from `ancestor`.
std::vector<pid_t> qemuUnder(pid_t ancestor) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    std::string comm;
    std::ifstream(std::string("/proc/") + e->d_name + "/comm") >> comm;
    if (comm.rfind("qemu-system", 0) != 0) continue;
    for (pid_t p = static_cast<pid_t>(pid); p > 1; p = parentOf(p))
      if (p == ancestor) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
  }
  if (d) ::closedir(d);
  return out;
}

std::string nsLink(const std::string& pid, const char* ns) {
  char buf[128];
  ssize_t n = ::readlink(("/proc/" + pid + "/ns/" + ns).c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// QEMU's resident memory beside the guest's: RSS of the whole process, and of the one mapping
// the size of the guest's RAM (what the guest itself touched). The rest is QEMU's overhead,
// the figure Firecracker publishes as under 5 MiB for its VMM (docs/benchmarks-vm.md).
Json qemuMemory(const std::string& pid, uint64_t ram_kib) {
  std::ifstream in("/proc/" + pid + "/smaps");
  if (!in) return {{"unreadable", std::strerror(errno)}};
  uint64_t total = 0, guest = 0, size = 0;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    unsigned long long v = 0;
    if (std::sscanf(line.c_str(), "Size: %llu kB", &v) == 1) size = v;
    if (std::sscanf(line.c_str(), "Rss: %llu kB", &v) == 1) {
      total += v;
      if (size == ram_kib && !found) guest = v, found = true;
    }
  }
  return {{"rss_kib", total}, {"guest_ram_rss_kib", guest}, {"guest_ram_mapping_found", found},
          {"overhead_kib", total - guest}};
}

}  // namespace

void saveRecord(const std::string& name, const Json& j) { save(name, j); }
Json checksOf(const std::string& out) { return splitChecks(out); }

// Boot 1: the probe battery inside the guest, plus declared outputs.
TEST(VmSetup, BatteryBoot) {
  CORRAL_VM_SETUP("battery");
  TempDir ws("vm-ws"), host("vm-host");
  fs::copy_file(probeHostPath(), ws / "corral-probe");
  ::chmod((ws / "corral-probe").c_str(), 0755);
  ws.write("in.txt", "staged-in\n");
  const std::string sentinel = uniqueName("vm-sentinel");
  host.write("sentinel.txt", sentinel);
  TcpListener lo("127.0.0.1");
  const std::string host_ip = hostIPv4NonLoopback();
  std::optional<TcpListener> wide;
  if (!host_ip.empty()) wide.emplace(host_ip.c_str());
  const std::string P = "/workspace/corral-probe";
  const std::string port = std::to_string(lo.port());
  const std::string wide_port = wide ? std::to_string(wide->port()) : "1";
  std::string script = "t() { echo \"@@ $1\"; shift; \"$@\" 2>&1; }; P=" + P + "\n" +
                       "t uid id -u\n"
                       "t uname uname -r\n"
                       "t in cat /workspace/in.txt\n"
                       "t sentinel $P stat " + host / "sentinel.txt" + "\n"
                       "t hostdir $P listdir " + host.path() + "\n"
                       "t mounts cat /proc/self/mounts\n"
                       "t usr_write $P create /usr/corral-vm-write-probe\n"
                       "t bin_write $P create /bin/corral-vm-write-probe\n"
                       "t ws_write $P create /workspace/corral-vm-write-probe\n"
                       "t dev $P listdir /dev\n"
                       "t vda $P stat /dev/vda\n"
                       "t vport $P stat /dev/vport1p1\n"
                       "t sys_virtio $P listdir /sys/bus/virtio/devices\n"
                       "t net_gateway $P connect-tcp 10.0.2.2 " + port + "\n"
                       "t net_host $P connect-tcp " + (host_ip.empty() ? "192.0.2.1" : host_ip) + " " + wide_port + "\n"
                       "t net_loopback $P connect-tcp 127.0.0.1 " + port + "\n"
                       "t ifaces $P net-ifaces\n"
                       "t caps $P caps\n"
                       "t ids $P ids\n"
                       "echo vm-output > /workspace/out.txt\n"
                       "ln -s /etc/passwd /workspace/link.txt\n";
  std::vector<std::string> opts = vmOptions();
  for (const char* o : {"--workspace", "--output", "--output", "--timeout"}) opts.push_back(o), opts.push_back("");
  opts[opts.size() - 7] = ws.path();
  opts[opts.size() - 5] = "out.txt";
  opts[opts.size() - 3] = "link.txt";
  opts[opts.size() - 1] = "600s";
  RunResult r = runCorral(opts, {"/bin/sh", "-c", script}, RunOptions{.deadline = seconds(800)});
  Json rec;
  rec["exit_code"] = r.exit_code;
  rec["stderr"] = r.err;
  rec["report"] = r.report ? *r.report : Json(nullptr);
  rec["checks"] = splitChecks(r.out);
  rec["sentinel_host_readable"] = readHostFile(host / "sentinel.txt") == sentinel;
  rec["listener_reached"] = accepted(lo.fd()) || (wide && accepted(wide->fd()));
  rec["host_ip"] = host_ip;
  rec["out_txt"] = ws.read("out.txt");
  rec["link_txt_exists"] = ws.exists("link.txt");
  save("battery", rec);
  ASSERT_TRUE(r.report.has_value()) << "the battery VM gave no report" << r.describe();
}

// Boot 3: an honest run whose declared output must come back (the copy-back control).
TEST(VmSetup, OutputsBoot) {
  CORRAL_VM_SETUP("outputs");
  TempDir ws("vm-out"), host("vm-stdin");
  // The output is what the command read on stdin: more than one frame's worth (64 KiB), so
  // the caller's stdin crosses the control channel in several frames and then its EOF.
  std::string input = "vm-output\n";
  while (input.size() < 150'000) input += uniqueName("stdin") + "\n";
  host.write("stdin.txt", input);
  UniqueFd in(::open((host / "stdin.txt").c_str(), O_RDONLY | O_CLOEXEC));
  std::vector<std::string> opts = vmOptions();
  for (const char* o : {"--workspace", ws.path().c_str(), "--output", "out.txt", "--timeout", "600s"}) opts.emplace_back(o);
  RunResult r = runCorral(opts, {"/bin/sh", "-c", "cat > /workspace/out.txt"}, RunOptions{.stdin_fd = in.get(), .deadline = seconds(800)});
  Json rec;
  rec["stdin_bytes"] = input.size();
  rec["out_matches_stdin"] = ws.read("out.txt") == input;
  rec["exit_code"] = r.exit_code;
  rec["stderr"] = r.err;
  rec["report"] = r.report ? *r.report : Json(nullptr);
  rec["out_txt"] = ws.read("out.txt").substr(0, 10);
  save("outputs", rec);
  ASSERT_TRUE(r.report.has_value()) << "the outputs VM gave no report" << r.describe();
}

// Boot 2: QEMU seen from the host while the command runs, then corral SIGKILLed.
TEST(VmSetup, KilledRunBoot) {
  CORRAL_VM_SETUP("killed");
  constexpr uint64_t vm_memory_kib = 256 * 1024;
  std::vector<std::string> opts = vmOptions();
  opts.insert(opts.end(), {"--vm-memory", "256M"});
  std::vector<std::string> argv = corralArgv(opts, {"/bin/sh", "-c", "echo ready; exec sleep 100000"}, false);
  Process p = Process::start(argv, RunOptions{.deadline = seconds(900)});
  auto line = p.readLine(std::chrono::milliseconds(800'000));
  Json rec;
  rec["ready"] = line.value_or("") == "ready";
  ASSERT_TRUE(rec["ready"].get<bool>()) << "the guest command never said ready";
  std::vector<pid_t> qemu = qemuUnder(p.pid());
  rec["qemu_count"] = qemu.size();
  ASSERT_EQ(qemu.size(), 1u) << "expected one QEMU under corral (pid " << p.pid() << ")";
  const std::string q = std::to_string(qemu.front());
  for (const char* key : {"Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp"})
    rec["status"][key] = statusField(qemu.front(), key);
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc"}) {
    rec["ns"][ns]["qemu"] = nsLink(q, ns);
    rec["ns"][ns]["host"] = nsLink("self", ns);
  }
  std::string cmdline;
  std::getline(std::ifstream("/proc/" + q + "/cmdline"), cmdline, '\x01');
  for (char& c : cmdline)
    if (c == '\0') c = ' ';
  rec["cmdline"] = cmdline;
  // QEMU's view of the file system, through its /proc root link.
  Json root = Json::array();
  if (DIR* d = ::opendir(("/proc/" + q + "/root/").c_str())) {
    while (dirent* e = ::readdir(d)) root.push_back(e->d_name);
    ::closedir(d);
  } else {
    rec["root_unreadable"] = std::strerror(errno);
  }
  rec["root"] = root;
  Json vmdir = Json::array();
  if (DIR* d = ::opendir(("/proc/" + q + "/root/vm").c_str())) {
    while (dirent* e = ::readdir(d)) vmdir.push_back(e->d_name);
    ::closedir(d);
  }
  rec["root_vm"] = vmdir;
  rec["sees_host_etc_shadow"] = ::access(("/proc/" + q + "/root/etc/shadow").c_str(), F_OK) == 0;
  rec["memory"] = qemuMemory(q, vm_memory_kib);
  std::printf("QEMU memory (guest 256 MiB, %s): %s\n", vmOptions().size() > 2 ? "TCG" : "KVM", rec["memory"].dump().c_str());
  // The run directory corral holds (locked) while it runs: SIGKILL leaves it behind.
  std::string run_dir;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(p.pid()) + "/fd").c_str())) {
    while (dirent* e = ::readdir(d)) {
      char target[4096];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)).find("/corral-vm-run-") != std::string::npos)
        run_dir.assign(target, static_cast<size_t>(n));
    }
    ::closedir(d);
  }
  rec["run_dir_found"] = !run_dir.empty();
  // The kill: corral gets SIGKILL, the one signal it cannot pass on.
  const int qemu_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, qemu.front(), 0));
  p.signal(SIGKILL);
  p.wait();
  pollfd pf{qemu_pidfd, POLLIN, 0};
  // Generous: the kill is immediate, but this machine may be loaded; a survivor stays forever.
  rec["qemu_gone"] = qemu_pidfd >= 0 && ::poll(&pf, 1, 60'000) == 1;
  if (qemu_pidfd >= 0) ::close(qemu_pidfd);
  rec["run_dir_left_by_kill"] = !run_dir.empty() && ::access(run_dir.c_str(), F_OK) == 0;
  // The next run sweeps it: one that fails right after (no such kernel) is enough.
  std::vector<std::string> next = vmOptions();
  next.insert(next.end(), {"--vm-kernel", "/nonexistent/vmlinuz"});
  RunResult swept = run(corralArgv(next, {"/bin/true"}, false));
  rec["next_run_exit"] = swept.exit_code;
  rec["run_dir_swept"] = !run_dir.empty() && ::access(run_dir.c_str(), F_OK) != 0;
  save("killed", rec);
}

}  // namespace corral::testing::vm
