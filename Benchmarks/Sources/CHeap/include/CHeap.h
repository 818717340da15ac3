#ifndef CHEAP_H
#define CHEAP_H

#include <stddef.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
/// Bytes the C heap holds for live allocations: small chunks in use plus mmap-ed large chunks.
static inline size_t cheap_live_bytes(void) {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}
#else
static inline size_t cheap_live_bytes(void) { return 0; }
#endif

#endif
