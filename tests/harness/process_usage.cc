#include "process_usage.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace bulkhead::testing {

ProcessUsage ReadProcessUsage(pid_t pid) {
  ProcessUsage usage;
  if (pid <= 0) return usage;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string field;
  double ticks = 0;
  // Fields 14 and 15 are utime and stime; the command name (field 2) has no spaces here.
  for (int i = 1; i <= 15 && stat >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  usage.cpu_s = ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmHWM:")) usage.peak_rss_mib = std::stod(line.substr(6)) / 1024.0;
    if (line.starts_with("VmRSS:")) usage.rss_mib = std::stod(line.substr(6)) / 1024.0;
  }
  return usage;
}

namespace {

// The fields of /proc/<pid>/stat after the command name (field 3 first), or none.
std::vector<std::string> StatFields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> fields;
  const size_t close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return fields;
  std::string rest = line.substr(close + 2);
  for (size_t start = 0; start < rest.size();) {
    size_t space = rest.find(' ', start);
    if (space == std::string::npos) space = rest.size();
    fields.push_back(rest.substr(start, space - start));
    start = space + 1;
  }
  return fields;
}

}  // namespace

double ReadServerCpu(pid_t postmaster) {
  // Field n of stat is fields[n - 3]: ppid 4, utime 14, stime 15, cutime 16, cstime 17.
  double ticks = 0;
  const std::string own = std::to_string(postmaster);
  std::vector<std::string> fields = StatFields(own);
  if (fields.size() < 15) return 0;
  for (int n : {14, 15, 16, 17}) ticks += std::stod(fields[n - 3]);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    fields = StatFields(name);
    if (fields.size() < 13 || fields[4 - 3] != own) continue;
    ticks += std::stod(fields[14 - 3]) + std::stod(fields[15 - 3]);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace bulkhead::testing
