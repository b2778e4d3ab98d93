/* The pod sandbox's init process, made locally so no pause image comes from a registry: it holds
 * the pod's namespaces, exits on SIGINT/SIGTERM, and reaps the orphans re-parented to it. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction term = {0}, child = {0};
  term.sa_handler = quit;
  child.sa_handler = reap;
  child.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGINT, &term, 0);
  sigaction(SIGTERM, &term, 0);
  sigaction(SIGCHLD, &child, 0);
  for (;;) pause();
}
