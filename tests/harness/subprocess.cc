#include "subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace bulkhead::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::optional<std::string>& input) {
  // Output goes to temporary files rather than pipes: no reader thread, no pipe-full deadlock.
  // So does the input, for the same reason.
  char out_path[] = "/tmp/bulkhead-cmd-out-XXXXXX";
  char err_path[] = "/tmp/bulkhead-cmd-err-XXXXXX";
  char in_path[] = "/tmp/bulkhead-cmd-in-XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error(std::strerror(errno));
  if (input) {
    int in_fd = mkstemp(in_path);
    if (in_fd < 0) throw std::runtime_error(std::strerror(errno));
    close(in_fd);
    std::ofstream(in_path, std::ios::binary) << *input;
  }

  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : env) {
    if (value.empty()) {
      merged.erase(key);
    } else {
      merged[key] = value;
    }
  }
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : merged) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_copy = argv;
  std::vector<char*> args;
  for (auto& a : args_copy) args.push_back(a.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, input ? in_path : "/dev/null", O_RDONLY,
                                   0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_fd);
  close(err_fd);
  if (input) unlink(in_path);  // the child has it open already, or never will
  if (rc != 0) {
    unlink(out_path);
    unlink(err_path);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = Slurp(out_path);
  result.err = Slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return result;
}

}  // namespace bulkhead::testing
