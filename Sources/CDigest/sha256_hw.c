// SHA-256 block compression with the x86 SHA extensions (SHA256RNDS2, SHA256MSG1, SHA256MSG2).
//
// Register layout the instructions expect (dword 3 is bits 127:96, dword 0 bits 31:0):
//   abef = [F, E, B, A]   (A in dword 3)      cdgh = [H, G, D, C]
// SHA256RNDS2(cdgh, abef, wk) runs two rounds with the W+K words in wk's dwords 0 and 1 and
// returns the new [F, E, B, A]; after those two rounds the old abef *is* the new cdgh, so four
// rounds are two calls with the operands' roles exchanged and nothing to swap.

#include "CDigest.h"

#include <stdlib.h>

// The round constants (FIPS 180-4 §4.2.2), for the SHA extensions and the Swift compression.
static const uint32_t hp_sha256_k[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

const uint32_t *hp_sha256_round_constants(void) { return hp_sha256_k; }

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

int hp_sha256_hw_available(void) {
    // -1: not yet asked. Two threads racing here compute the same answer.
    static atomic_int cached = -1;
    int known = atomic_load_explicit(&cached, memory_order_relaxed);
    if (known >= 0) return known;
    unsigned int eax, ebx, ecx, edx;
    int result = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        int ssse3 = (ecx >> 9) & 1;
        int sse41 = (ecx >> 19) & 1;
        // __get_cpuid_count returns 0 when leaf 7 is beyond the CPU's highest leaf.
        if (ssse3 && sse41 && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
            result = (ebx >> 29) & 1;
        }
    }
    atomic_store_explicit(&cached, result, memory_order_relaxed);
    return result;
}

#define HP_SHA_TARGET __attribute__((target("sha,ssse3,sse4.1")))


// Four rounds: group `g` of the schedule is `w` (W[4g] in dword 0).
static inline __attribute__((always_inline)) HP_SHA_TARGET void
hp_rounds4(__m128i *abef, __m128i *cdgh, __m128i w, int g) {
    __m128i wk = _mm_add_epi32(w, _mm_load_si128((const __m128i *)&hp_sha256_k[4 * g]));
    *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, wk);           // rounds 4g, 4g+1
    wk = _mm_shuffle_epi32(wk, 0x0E);                           // dwords 2, 3 down to 0, 1
    *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, wk);           // rounds 4g+2, 4g+3
}

// The next four schedule words from the previous sixteen (w0 oldest):
// W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16].
// MSG1 gives W[t-16] + σ0(W[t-15]); W[t-7] are dwords 1..3 of w2 and dword 0 of w3; MSG2 adds
// σ1 of W[t-2], taking the first two from w3 and the next two from its own results.
static inline __attribute__((always_inline)) HP_SHA_TARGET __m128i
hp_schedule(__m128i w0, __m128i w1, __m128i w2, __m128i w3) {
    __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8(w3, w2, 4));
    return _mm_sha256msg2_epu32(t, w3);
}

HP_SHA_TARGET
void hp_sha256_hw_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    // Big-endian message words: reverse the bytes of each dword.
    const __m128i bswap = _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);

    // [a, b, c, d] and [e, f, g, h] → [f, e, b, a] and [h, g, d, c].
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);  // [b, a, d, c]
    __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0xB1);  // [f, e, h, g]
    __m128i abef = _mm_unpacklo_epi64(efgh, abcd);
    __m128i cdgh = _mm_unpackhi_epi64(efgh, abcd);

    for (size_t block = 0; block < blocks; block++, data += 64) {
        const __m128i saved_abef = abef;
        const __m128i saved_cdgh = cdgh;

        __m128i w0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 0)), bswap);
        __m128i w1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16)), bswap);
        __m128i w2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 32)), bswap);
        __m128i w3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 48)), bswap);

        hp_rounds4(&abef, &cdgh, w0, 0);
        hp_rounds4(&abef, &cdgh, w1, 1);
        hp_rounds4(&abef, &cdgh, w2, 2);
        hp_rounds4(&abef, &cdgh, w3, 3);
        for (int g = 4; g < 16; g += 4) {
            w0 = hp_schedule(w0, w1, w2, w3);
            hp_rounds4(&abef, &cdgh, w0, g);
            w1 = hp_schedule(w1, w2, w3, w0);
            hp_rounds4(&abef, &cdgh, w1, g + 1);
            w2 = hp_schedule(w2, w3, w0, w1);
            hp_rounds4(&abef, &cdgh, w2, g + 2);
            w3 = hp_schedule(w3, w0, w1, w2);
            hp_rounds4(&abef, &cdgh, w3, g + 3);
        }

        abef = _mm_add_epi32(abef, saved_abef);
        cdgh = _mm_add_epi32(cdgh, saved_cdgh);
    }

    // Back to [a, b, c, d] and [e, f, g, h].
    abcd = _mm_shuffle_epi32(_mm_unpackhi_epi64(abef, cdgh), 0xB1);
    efgh = _mm_shuffle_epi32(_mm_unpacklo_epi64(abef, cdgh), 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], abcd);
    _mm_storeu_si128((__m128i *)&state[4], efgh);
}

#else

int hp_sha256_hw_available(void) { return 0; }

void hp_sha256_hw_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    (void)state;
    (void)data;
    (void)blocks;
    abort();  // hp_sha256_hw_available() said 0: callers must use the portable code.
}

#endif
