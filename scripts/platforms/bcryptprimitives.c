/* Test-setup shim for Wine 8, which has no bcryptprimitives.dll. Rust's std asks that DLL for
 * random bytes (ProcessPrng, Windows 10+), so a Rust DLL built for Windows does not load in
 * Wine 8 without it. This one forwards to RtlGenRandom (advapi32's SystemFunction036), which
 * Wine implements. scripts/platforms/windows.sh builds it into the test WINEPREFIX's
 * system32 only; it is never part of the package. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
