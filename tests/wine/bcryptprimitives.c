/* A stand-in for Windows' bcryptprimitives.dll, for running wirespeed.exe
 * under Debian 12's Wine 8.0 only: that Wine lacks ProcessPrng, which
 * Rust's standard library imports for its random numbers (HashMap seeds),
 * so the .exe would not load. This exports ProcessPrng on top of
 * advapi32's RtlGenRandom (SystemFunction036), which Wine has. Built by
 * the Wine tests with x86_64-w64-mingw32-gcc and placed beside the .exe;
 * never shipped: real Windows 10 and later have the real one. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
