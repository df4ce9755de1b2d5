/*
 * Preloaded into DynamoDB Local with bind-loopback.c (scripts/local/jvm-shim.ts): the JVM is killed when the local
 * stack that started it ends, however it ends (SIGKILL included, when the stack's own exit hook cannot run). The stack
 * names itself in VISION_LOCAL_STACK_PID; a JVM whose parent is already another process was orphaned before this ran.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

__attribute__((constructor)) static void end_with_parent(void) {
  const char *stack = getenv("VISION_LOCAL_STACK_PID");
  if (stack == NULL) return;
  /* Only this process: anything it starts has its own parent. */
  unsetenv("VISION_LOCAL_STACK_PID");
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != (pid_t)atol(stack)) _exit(1);
}
