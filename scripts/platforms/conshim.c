/* Test program of the JS behaviour suite under Wine (__test__/platform/pty.test.mjs): Wine 8
 * gives the first process of a pseudoconsole (CreatePseudoConsole + PROC_THREAD_ATTRIBUTE_
 * PSEUDOCONSOLE) no standard handles, so a cmd.exe started there reads and writes nothing;
 * on Windows the process gets the console's handles. This shim, started as the PTY job's
 * "shell", opens the console it was given (CONIN$, CONOUT$), makes them its standard
 * handles and runs the rest of its own command line verbatim (`conshim.exe cmd /d /s /c
 * "<command>"` runs `cmd /d /s /c "<command>"`) with them inherited, then exits with that
 * process's exit code. It stays in the job's Job Object and process tree, so a kill still
 * reaches both. scripts/platforms/windows.sh builds it with x86_64-w64-mingw32-gcc; it is
 * never part of the package. */
#include <stdio.h>
#include <wchar.h>
#include <windows.h>

/* The command line after the program name, as CommandLineToArgvW splits the first word. */
static wchar_t *rest_of_command_line(void) {
  wchar_t *p = GetCommandLineW();
  if (*p == L'"') {
    p++;
    while (*p && *p != L'"') p++;
    if (*p) p++;
  } else {
    while (*p && *p != L' ' && *p != L'\t') p++;
  }
  while (*p == L' ' || *p == L'\t') p++;
  return p;
}

int main(void) {
  SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
  HANDLE in = CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit, OPEN_EXISTING, 0, NULL);
  HANDLE out = CreateFileW(L"CONOUT$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit, OPEN_EXISTING, 0, NULL);
  if (in == INVALID_HANDLE_VALUE || out == INVALID_HANDLE_VALUE) return 120;
  STARTUPINFOW si = {sizeof si};
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = in;
  si.hStdOutput = out;
  si.hStdError = out;
  PROCESS_INFORMATION pi;
  if (!CreateProcessW(NULL, rest_of_command_line(), NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) return 121;
  WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 1;
  GetExitCodeProcess(pi.hProcess, &code);
  return (int)code;
}
