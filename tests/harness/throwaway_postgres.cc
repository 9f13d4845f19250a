#include "throwaway_postgres.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "free_port.h"

namespace bulkhead::testing {
namespace fs = std::filesystem;
namespace {

constexpr const char* kDirPrefix = "bulkhead-pg-";
constexpr const char* kSuperuser = "bulkhead";
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr auto kStopTimeout = std::chrono::seconds(30);

// Where clusters live: /dev/shm when it is there (a tmpfs: initdb and CREATE DATABASE open
// thousands of files, and on this project's machines that is 5x faster in memory than on
// disk), else $TMPDIR, else /tmp. Under root the server runs as `postgres`, which must be
// able to reach the folder: /dev/shm and /tmp always let it, a $TMPDIR under root's home would
// not, so root never uses $TMPDIR.
fs::path TempRoot() {
  if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  if (geteuid() == 0 || tmp == nullptr || *tmp == '\0') return "/tmp";
  return tmp;
}

// BULKHEAD_PG_BINDIR, else the folder pg_config named when the project was configured.
fs::path ServerBindir() {
  const char* env = std::getenv("BULKHEAD_PG_BINDIR");
  fs::path dir = (env != nullptr && *env != '\0') ? fs::path(env) : fs::path(BULKHEAD_PG_BINDIR);
  if (!fs::exists(dir / "initdb") || !fs::exists(dir / "postgres")) {
    throw std::runtime_error("no initdb and postgres in " + dir.string() +
                             " (install postgresql-15: ./setup.sh, or set BULKHEAD_PG_BINDIR)");
  }
  return dir;
}

// A zombie counts as dead: a killed test process stays one until init reaps it.
bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  return !(stat >> pid_field >> comm >> state) || state != "Z";
}

// Removes clusters left by test processes that died without cleaning up. A folder without an
// owner.pid may belong to a test binary that ctest started at the same moment and that has not
// written it yet, so such a folder is only removed once it is an hour old.
void SweepAbandoned() {
  std::error_code ec;
  const auto stale_before = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(TempRoot(), ec)) {
    if (!entry.path().filename().string().starts_with(kDirPrefix)) continue;
    std::ifstream owner(entry.path() / "owner.pid");
    pid_t pid = 0;
    if (owner >> pid) {
      if (ProcessAlive(pid)) continue;
    } else if (fs::last_write_time(entry.path(), ec) > stale_before) {
      continue;
    }
    std::ifstream postmaster(entry.path() / "data" / "postmaster.pid");
    pid_t server = 0;
    if (postmaster >> server && ProcessAlive(server)) {
      // Still shutting down after its owner died, or stuck: stop it, and let it finish
      // exiting before its folder goes, or remove_all races with its last writes.
      kill(server, SIGQUIT);
      for (int i = 0; i < 250 && ProcessAlive(server); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    // A server that is still exiting writes its last files while remove_all deletes; retry.
    for (int i = 0; i < 50 && (fs::remove_all(entry.path(), ec), fs::exists(entry.path())); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

// The unprivileged user the server runs as: `postgres` when we are root, else ourselves.
struct RunAs {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

RunAs ServerUser() {
  if (geteuid() != 0) return {};
  const passwd* pw = getpwnam("postgres");
  if (pw == nullptr) {
    throw std::runtime_error(
        "running as root and there is no `postgres` user to run the throwaway cluster as "
        "(install postgresql-15: ./setup.sh)");
  }
  return {true, pw->pw_uid, pw->pw_gid};
}

// In the child after fork(): drop to `user`, arrange to die with the parent, send output to
// `log`, and exec `argv`. Only async-signal-safe calls (no allocation); exits 127 on failure.
[[noreturn]] void ExecChild(const RunAs& user, char* const* argv, const char* log, pid_t parent) {
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) _exit(127);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  if (user.switch_user) {
    if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0) _exit(127);
  }
  // After the credential change, which would clear it. For postgres, SIGINT is a fast shutdown.
  prctl(PR_SET_PDEATHSIG, SIGINT);
  if (getppid() != parent) _exit(127);
  execv(argv[0], argv);
  _exit(127);
}

// Starts `argv` as `user` with its output appended to `log`; the child dies with this process.
pid_t Spawn(const RunAs& user, const std::vector<std::string>& argv, const fs::path& log) {
  // Everything the child needs is allocated before fork(): the parent may have other threads.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::string log_path = log.string();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) ExecChild(user, args.data(), log_path.c_str(), parent);
  return pid;
}

std::string Tail(const fs::path& log, size_t max_bytes = 4000) {
  std::ifstream in(log);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

// Runs `argv` as `user` and waits for it; throws with the log's tail if it fails.
void RunToEnd(const RunAs& user, const std::vector<std::string>& argv, const fs::path& log) {
  pid_t pid = Spawn(user, argv, log);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(fs::path(argv[0]).filename().string() + " failed:\n" + Tail(log));
  }
}

void Initdb(const RunAs& user, const fs::path& bindir, const fs::path& pgdata,
            const fs::path& log) {
  RunToEnd(user,
           {(bindir / "initdb").string(), "--pgdata=" + pgdata.string(),
            std::string("--username=") + kSuperuser, "--auth=trust", "--encoding=UTF8",
            "--no-locale", "--no-sync", "--no-instructions"},
           log);
}

void ChownTo(const RunAs& user, const fs::path& dir) {
  if (user.switch_user && chown(dir.c_str(), user.uid, user.gid) != 0) {
    throw std::runtime_error("chown " + dir.string() + ": " + std::strerror(errno));
  }
}

// A data folder fresh from initdb, shared by every cluster of this machine that has the same
// server binaries and user: initdb took 0.85 s of the 1.8 s a test binary with one test took
// to start, and copying its result 0.07 s (2026-12-07); CI starts about 230 clusters. The
// folder is keyed by the binaries (path, size and time of initdb and postgres) and the user, so
// an upgraded server makes a new one. Its name does not start with kDirPrefix, so
// SweepAbandoned leaves it; it is never started, only copied. The first caller makes it under
// an exclusive lock and renames it into place once whole; the others wait on the lock.
fs::path InitdbTemplate(const RunAs& user, const fs::path& bindir) {
  std::ostringstream identity;
  identity << bindir.string() << ':' << user.uid;
  for (const char* binary : {"initdb", "postgres"}) {
    fs::path path = bindir / binary;
    identity << ':' << fs::file_size(path) << ':'
             << fs::last_write_time(path).time_since_epoch().count();
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016zx", std::hash<std::string>{}(identity.str()));
  fs::path dir = TempRoot() / (std::string("bulkhead-initdb-") + key);
  if (fs::exists(dir / "data" / "PG_VERSION")) return dir / "data";

  std::string lock_path = dir.string() + ".lock";
  int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    throw std::runtime_error("lock " + lock_path + ": " + std::strerror(errno));
  }
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }
  } unlock{lock};
  if (fs::exists(dir / "data" / "PG_VERSION")) return dir / "data";
  fs::path building = dir.string() + ".building";
  fs::remove_all(building);
  fs::create_directory(building);
  ChownTo(user, building);
  Initdb(user, bindir, building / "data", building / "initdb.log");
  fs::remove_all(dir);  // a folder left without its data, should one be there
  fs::rename(building, dir);
  return dir / "data";
}

}  // namespace

std::unique_ptr<ThrowawayPostgres> ThrowawayPostgres::Start() {
  SweepAbandoned();
  fs::path bindir = ServerBindir();
  std::string pattern = (TempRoot() / (std::string(kDirPrefix) + "XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  std::unique_ptr<ThrowawayPostgres> pg(new ThrowawayPostgres(pattern, bindir));
  pg->Launch();
  return pg;
}

ThrowawayPostgres::ThrowawayPostgres(fs::path root, fs::path bindir)
    : root_(std::move(root)), bindir_(std::move(bindir)) {
  std::ofstream(root_ / "owner.pid") << getpid() << "\n";
}

void ThrowawayPostgres::Launch() {
  RunAs user = ServerUser();
  ChownTo(user, root_);
  fs::path log = root_ / "server.log";
  // cp -a as the server's user: the copy is its own, mode 0700, as postgres requires.
  RunToEnd(user,
           {"/bin/cp", "-a", InitdbTemplate(user, bindir_).string(), (root_ / "data").string()},
           log);
  int status = 0;

  // A port free now; should another process take it before the server binds it, the server
  // fails to start and the error below carries its log.
  port_ = FreeLoopbackPort();
  server_pid_ =
      Spawn(user,
            {(bindir_ / "postgres").string(), "-D", (root_ / "data").string(), "-p",
             std::to_string(port_), "-k", root_.string(), "-c", "listen_addresses=127.0.0.1", "-c",
             "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
             "max_connections=200", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning",
             "-c", "log_min_error_statement=panic",
             // So that tests can count the statements a piece of code runs.
             "-c", "shared_preload_libraries=pg_stat_statements"},
            log);

  std::string conninfo = ConnectionString("postgres");
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (PQping(conninfo.c_str()) != PQPING_OK) {
    if (waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
      server_pid_ = -1;
      throw std::runtime_error("postgres exited at start:\n" + Tail(log));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("postgres did not accept connections within 60 s:\n" + Tail(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ThrowawayPostgres::~ThrowawayPostgres() {
  if (server_pid_ > 0) {
    kill(server_pid_, SIGINT);  // fast shutdown: ends sessions, no checkpoint wait for clients
    auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
    int status = 0;
    while (waitpid(server_pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(server_pid_, SIGKILL);
        waitpid(server_pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string ThrowawayPostgres::ConnectionString(const std::string& dbname) const {
  return "host=" + root_.string() + " port=" + std::to_string(port_) + " user=" + kSuperuser +
         " dbname=" + dbname;
}

std::string ThrowawayPostgres::Url(const std::string& dbname) const {
  return "postgresql://" + std::string(kSuperuser) + "@127.0.0.1:" + std::to_string(port_) + "/" +
         dbname;
}

}  // namespace bulkhead::testing
