// Test helper: run a shell command and collect its standard output (tests that drive the real binaries).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace mksim::test {

/** @brief Runs `cmd` with /bin/sh; returns its exit status (-1 when it did not exit normally) and its stdout. */
inline std::pair<int, std::string> shell(const std::string& cmd) {
  std::string output;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace mksim::test
