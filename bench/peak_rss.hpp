#pragma once
// The process's peak resident set size, printed at the end of each benchmark
// (a cost per element that stays flat should not hide a memory that grows).

#include <sys/resource.h>

#include <cstdio>

namespace quern::bench {

/// Peak RSS of this process so far, in MiB.
inline double peak_rss_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0; // Linux reports KiB
}

/// Starts a new peak: what peak_rss_since_reset_mib() reports from here
/// on (Linux: writing 5 to /proc/self/clear_refs resets VmHWM). False
/// where the kernel does not allow it.
inline bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

/// The peak RSS since the last reset_peak_rss() (VmHWM), in MiB; -1 when
/// /proc cannot tell.
inline double peak_rss_since_reset_mib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1)
      break;
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024.0;
}

inline void print_peak_rss() {
  std::printf("peak RSS %.1f MiB\n", peak_rss_mib());
}

} // namespace quern::bench
