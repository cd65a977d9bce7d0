#ifndef CSHA256_H
#define CSHA256_H

#include <stddef.h>
#include <stdint.h>

/// SHA-256's 64 round constants (K in FIPS 180-4), for the portable Swift loop too.
const uint32_t *csha256_round_constants(void);

/// Nonzero when this CPU has the x86 SHA extensions (and the SSSE3 and SSE4.1 they are used
/// with), so that `csha256_compress_hardware` may be called. Always zero elsewhere.
int csha256_hardware_available(void);

/// Compresses `count` 64-byte blocks at `blocks` into `state` (the eight words a to h, in
/// order) with the SHA extensions. Call it only when `csha256_hardware_available()`.
void csha256_compress_hardware(uint32_t state[8], const void *blocks, size_t count);

#endif
