// Runs a shell command for the end-to-end tests and captures its exit status
// and standard output; run_cli runs the pipescope binary with stderr merged in.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pipescope::testing {

struct CommandResult {
  int status = -1;     // the exit status; -1 if it could not start or was killed
  std::string output;  // everything the command wrote to stdout
};

inline CommandResult run_command(const std::string& shell_command) {
  CommandResult result;
  FILE* pipe = ::popen(shell_command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int raw = ::pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

/// Runs `pipescope <args>`; `output` holds stdout and stderr together.
inline CommandResult run_cli(const std::string& args) {
  return run_command(std::string(PIPESCOPE_CLI) + " " + args + " 2>&1");
}

/// `s` as one shell word: in single quotes, each embedded ' written as '\''.
inline std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (const char c : s) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

}  // namespace pipescope::testing
