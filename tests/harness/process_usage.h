// What a process on this machine has cost, and how busy the machine is, for the benches and the
// load scenarios that report a node's CPU and memory beside their figures.
//
// Reads /proc (Linux only) on the calling thread; never throws: a value that cannot be read is
// zero (or empty), so a report still prints when a node has already exited.
#pragma once

#include <sys/types.h>

#include <string>

namespace bulkhead::testing {

struct ProcessUsage {
  double cpu_s = 0;         // user + system CPU seconds so far (utime + stime of /proc/<pid>/stat)
  double rss_mib = 0;       // resident memory now (VmRSS)
  double peak_rss_mib = 0;  // resident memory at its peak (VmHWM)
};
ProcessUsage ReadProcessUsage(pid_t pid);

// CPU seconds a PostgreSQL server has used so far: its postmaster's, every child's alive now
// (backends, autovacuum, the WAL writer, the checkpointer), and every exited child's that the
// postmaster has reaped (cutime, cstime). The difference of two readings is what the server
// spent between them, short-lived backends included.
double ReadServerCpu(pid_t postmaster);

// The 1-, 5- and 15-minute load averages, "0.48 0.61 0.70": how busy the two cores were
// besides the run that prints it (the project's machines are shared).
std::string LoadAverage();

}  // namespace bulkhead::testing
