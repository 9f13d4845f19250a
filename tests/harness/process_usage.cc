#include "process_usage.h"

#include <unistd.h>

#include <fstream>

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

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace bulkhead::testing
