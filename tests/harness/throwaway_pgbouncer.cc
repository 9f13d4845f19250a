#include "throwaway_pgbouncer.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "free_port.h"
#include "subprocess.h"

namespace bulkhead::testing {
namespace fs = std::filesystem;
namespace {

constexpr const char* kBinary = "/usr/sbin/pgbouncer";

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

pid_t PidOf(const fs::path& pid_file) {
  std::ifstream in(pid_file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

}  // namespace

ThrowawayPgBouncer::ThrowawayPgBouncer(const ThrowawayPostgres& cluster,
                                       const std::string& pool_mode) {
  if (access(kBinary, X_OK) != 0) {
    throw std::runtime_error(std::string(kBinary) + " is missing (./setup.sh installs pgbouncer)");
  }
  // Under root, PgBouncer runs as `postgres`, which must reach the folder: /tmp always lets it,
  // a $TMPDIR under root's home would not (as for the cluster, throwaway_postgres.cc).
  const fs::path parent = geteuid() == 0 ? fs::path("/tmp") : fs::temp_directory_path();
  std::string pattern = (parent / "bulkhead-pgbouncer-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  dir_ = pattern;
  port_ = FreeLoopbackPort();
  // The cluster's socket folder and port, from its connection string ("host=… port=… …").
  std::string conninfo = cluster.ConnectionString("postgres");
  std::string host = conninfo.substr(5, conninfo.find(' ') - 5);
  std::ofstream(dir_ / "users.txt") << "\"bulkhead\" \"\"\n";
  std::ofstream(dir_ / "pgbouncer.ini") << "[databases]\n"
                                        << "* = host=" << host << " port=" << cluster.port() << "\n"
                                        << "[pgbouncer]\n"
                                        << "listen_addr = 127.0.0.1\n"
                                        << "listen_port = " << port_ << "\n"
                                        << "unix_socket_dir =\n"
                                        << "auth_type = trust\n"
                                        << "auth_file = " << (dir_ / "users.txt").string() << "\n"
                                        << "logfile = " << (dir_ / "pgbouncer.log").string() << "\n"
                                        << "pidfile = " << (dir_ / "pgbouncer.pid").string() << "\n"
                                        << "pool_mode = " << pool_mode << "\n";
  std::vector<std::string> argv = {kBinary, "-d", (dir_ / "pgbouncer.ini").string()};
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      throw std::runtime_error("no `postgres` user to run PgBouncer as, or chown failed");
    }
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (chown(entry.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::runtime_error("chown " + entry.path().string() + ": " + std::strerror(errno));
      }
    }
    argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  }
  CommandResult started = RunCommand(argv);
  if (started.exit_code != 0) {
    throw std::runtime_error("pgbouncer did not start: " + started.err + Log());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Log().find("process up") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("pgbouncer did not come up within 10 s:\n" + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ThrowawayPgBouncer::~ThrowawayPgBouncer() {
  pid_t pid = PidOf(dir_ / "pgbouncer.pid");
  if (pid > 0) {
    kill(pid, SIGINT);  // immediate shutdown: closes every connection
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (kill(pid, 0) == 0) kill(pid, SIGKILL);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string ThrowawayPgBouncer::ConnectionString(const std::string& dbname) const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=bulkhead dbname=" + dbname;
}

std::string ThrowawayPgBouncer::Log() const { return Read(dir_ / "pgbouncer.log"); }

}  // namespace bulkhead::testing
