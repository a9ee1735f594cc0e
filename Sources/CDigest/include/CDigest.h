#ifndef HP_CDIGEST_H
#define HP_CDIGEST_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has the x86 SHA extensions and the SSSE3/SSE4.1 instructions the block
/// function also uses (CPUID leaf 7 EBX bit 29, leaf 1 ECX bits 9 and 19); 0 otherwise and on
/// every other architecture. Computed once.
int hp_sha256_hw_available(void);

/// Compresses `blocks` whole 64-byte blocks at `data` into `state` (the eight SHA-256 working
/// words in FIPS 180-4 order, a first) with the SHA extensions. Only call it when
/// `hp_sha256_hw_available()` returned 1; on other architectures it aborts.
void hp_sha256_hw_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

/// The 64 SHA-256 round constants K (FIPS 180-4 §4.2.2), on every architecture.
const uint32_t *hp_sha256_round_constants(void);

#endif
