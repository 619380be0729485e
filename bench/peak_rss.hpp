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

inline void print_peak_rss() {
  std::printf("peak RSS %.1f MiB\n", peak_rss_mib());
}

} // namespace quern::bench
