/* Test program of the JS behaviour suite on Windows (__test__/platform/kill.test.mjs): a
 * member of a job's tree that ignores the graceful step of a tree kill, as `trap '' TERM`
 * does on sh. It installs a console control handler that swallows Ctrl-Break and Ctrl-C
 * (SetConsoleCtrlHandler(NULL, TRUE) would ignore Ctrl-C only: Ctrl-Break always reaches the
 * handlers), prints `ready` once the handler is in place, and sleeps for argv[1] seconds
 * (default 60). Each swallowed event prints `ignored <event>`. Only TerminateJobObject or
 * TerminateProcess end it early. scripts/platforms/windows.sh builds it with
 * x86_64-w64-mingw32-gcc; it is never part of the package. */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

static BOOL WINAPI swallow(DWORD event) {
  if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT) return FALSE;
  printf("ignored %s\n", event == CTRL_BREAK_EVENT ? "ctrl-break" : "ctrl-c");
  fflush(stdout);
  return TRUE;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 60;
  if (!SetConsoleCtrlHandler(swallow, TRUE)) {
    fprintf(stderr, "SetConsoleCtrlHandler failed: %lu\n", GetLastError());
    return 2;
  }
  printf("ready\n");
  fflush(stdout);
  Sleep((DWORD)seconds * 1000);
  return 0;
}
