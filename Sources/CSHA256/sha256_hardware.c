// SHA-256 block compression with the x86 SHA extensions (SHA-NI): about a tenth of the
// instructions of the portable Swift loop, which every keyed write's fingerprint runs twice.
// The Swift side (`SHA256` in ManagedStoreServer) pads, buffers and falls back to its own
// loop on CPUs without the extensions; a test compares both on the same blocks.
//
// The instructions keep the state in two registers in the order they want: `abef` holds
// (from the highest lane down) a, b, e, f and `cdgh` holds c, d, g, h. Each
// sha256rnds2 does two rounds, taking two words of message-plus-constant from the low half
// of its third operand. The message schedule is kept as four registers of four words each;
// sha256msg1 and sha256msg2 compute the next four from them.

#include "csha256.h"

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

const uint32_t *csha256_round_constants(void) { return round_constants; }

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <immintrin.h>

int csha256_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    const unsigned int ssse3 = 1u << 9, sse41 = 1u << 19;
    if ((ecx & ssse3) == 0 || (ecx & sse41) == 0) return 0;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned int sha = 1u << 29;
    return (ebx & sha) != 0;
}


#define HARDWARE __attribute__((target("sha,ssse3,sse4.1")))

/// Four rounds: the message words `schedule` plus their constants, two rounds at a time.
HARDWARE static inline void four_rounds(__m128i *abef, __m128i *cdgh, __m128i schedule, int group) {
    __m128i input = _mm_add_epi32(schedule, _mm_loadu_si128((const __m128i *)&round_constants[group * 4]));
    *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, input);   // now holds the new a, b, e, f
    input = _mm_shuffle_epi32(input, 0x0E);               // the two upper words down
    *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, input);
    // After two calls the registers hold what their names say again.
}

HARDWARE void csha256_compress_hardware(uint32_t state[8], const void *input, size_t count) {
    const uint8_t *blocks = input;
    // Big-endian words: reverse the bytes within each 32-bit lane.
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);

    // (a, b, c, d) and (e, f, g, h), lowest lane first, into the order the rounds use.
    __m128i abcd = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i efgh = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i badc = _mm_shuffle_epi32(abcd, 0xB1);
    __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1B);
    __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);        // lanes f, e, b, a
    __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);     // lanes h, g, d, c

    for (; count > 0; count--, blocks += 64) {
        const __m128i abef_before = abef, cdgh_before = cdgh;
        __m128i w[4];  // the schedule's last sixteen words, four to a register, group g in w[g % 4]
        for (int group = 0; group < 16; group++) {
            __m128i words;
            if (group < 4) {
                words = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + group * 16)), byte_swap);
            } else {
                // w[t] = s1(w[t-2]) + w[t-7] + s0(w[t-15]) + w[t-16], for four t at once:
                // msg1 adds s0 of the next word to each of the oldest four, alignr picks
                // w[t-7] .. w[t-4], and msg2 adds s1 of the words two back (its own first two
                // results included).
                __m128i oldest = w[group % 4], older = w[(group + 1) % 4];
                __m128i recent = w[(group + 2) % 4], newest = w[(group + 3) % 4];
                words = _mm_sha256msg1_epu32(oldest, older);
                words = _mm_add_epi32(words, _mm_alignr_epi8(newest, recent, 4));
                words = _mm_sha256msg2_epu32(words, newest);
            }
            w[group % 4] = words;
            four_rounds(&abef, &cdgh, words, group);
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }

    // Back to (a, b, c, d) and (e, f, g, h).
    __m128i a_b_e_f = _mm_shuffle_epi32(abef, 0x1B);          // lanes a, b, e, f
    __m128i g_h_c_d = _mm_shuffle_epi32(cdgh, 0xB1);          // lanes g, h, c, d
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(a_b_e_f, g_h_c_d, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(g_h_c_d, a_b_e_f, 8));
}

#else

int csha256_hardware_available(void) { return 0; }

void csha256_compress_hardware(uint32_t state[8], const void *blocks, size_t count) {
    (void)state; (void)blocks; (void)count;
    __builtin_trap();  // never called: the Swift side asks csha256_hardware_available first
}

#endif
