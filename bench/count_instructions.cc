// Counts the instructions a program executes between two signals it raises (SIGUSR1 starts the
// count, SIGUSR2 ends it) by single-stepping it with ptrace: a dynamic count where neither
// hardware counters (perf, absent in many virtual machines) nor valgrind (no AVX-512) can serve.
// Only the main thread is traced. Linux only.
//   count_instructions PROGRAM [ARGS...]    prints the count on stdout
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0 || !WIFSTOPPED(status)) return 1;  // stopped at exec
  uint64_t count = 0;
  bool counting = false, counted = false;
  long deliver = 0;
  for (;;) {
    if (ptrace(counting ? PTRACE_SINGLESTEP : PTRACE_CONT, child, nullptr, deliver) < 0) return 1;
    deliver = 0;
    if (waitpid(child, &status, 0) < 0) return 1;
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    const int sig = WSTOPSIG(status);
    if (sig == SIGTRAP && counting) {
      ++count;
    } else if (sig == SIGUSR1) {  // the markers are swallowed, not delivered
      counting = true;
      count = 0;
    } else if (sig == SIGUSR2) {
      counting = false;
      counted = true;
    } else if (sig != SIGTRAP) {
      deliver = sig;
    }
  }
  if (!counted || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "count_instructions: no complete count (exit status %d)\n", status);
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(count));
  return 0;
}
