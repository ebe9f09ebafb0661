// The incremental content hash's row expansion (see RowSetHash.swift): ChaCha20 (RFC 8439) with
// the key stream summed into 16-bit lanes in the registers it is computed in. Written in C for the
// CPU's widest vectors, chosen at run time: Swift compiles for the baseline of its target only.
#include "CReseedRowSet.h"

#include <string.h>

#define LANES 1024
#define STREAM_BYTES 2048
#define BLOCK_BYTES 64

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QUARTER(a, b, c, d) \
    a += b; d ^= a; d = ROTL(d, 16); \
    c += d; b ^= c; b = ROTL(b, 12); \
    a += b; d ^= a; d = ROTL(d, 8);  \
    c += d; b ^= c; b = ROTL(b, 7);

static const uint32_t block_numbers[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static inline uint32_t load_le32(const uint8_t *bytes) {
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
}

// One implementation, `W` blocks at a time: word i of blocks p*W .. p*W+W-1 in one vector. The
// sums stay in that layout (acc[p][i] holds word i of each of those blocks, its two halves added
// as 16-bit lanes) until all the keys are in, then go into `lanes` in the stream's byte order.
#define DEFINE_COMBINE(NAME, W, ATTRIBUTES)                                                           \
    typedef uint32_t NAME##_words __attribute__((vector_size(4 * (W))));                              \
    typedef uint16_t NAME##_halves __attribute__((vector_size(4 * (W))));                             \
    ATTRIBUTES static void NAME(uint16_t *lanes, const uint8_t *keys, size_t count, int subtract) {   \
        enum { passes = STREAM_BYTES / (BLOCK_BYTES * (W)) };                                         \
        NAME##_words acc[passes][16];                                                                 \
        memset(acc, 0, sizeof acc);                                                                   \
        NAME##_words numbers;                                                                         \
        memcpy(&numbers, block_numbers, sizeof numbers);                                              \
        for (size_t row = 0; row < count; row++) {                                                    \
            const uint8_t *key = keys + 32 * row;                                                     \
            uint32_t k[8];                                                                            \
            for (int i = 0; i < 8; i++) k[i] = load_le32(key + 4 * i);                               \
            for (int p = 0; p < passes; p++) {                                                        \
                const NAME##_words zero = {0};                                                        \
                NAME##_words x0 = zero + 0x61707865u, x1 = zero + 0x3320646eu;                        \
                NAME##_words x2 = zero + 0x79622d32u, x3 = zero + 0x6b206574u;                        \
                NAME##_words x4 = zero + k[0], x5 = zero + k[1], x6 = zero + k[2], x7 = zero + k[3];  \
                NAME##_words x8 = zero + k[4], x9 = zero + k[5], x10 = zero + k[6], x11 = zero + k[7]; \
                const NAME##_words counter = numbers + (uint32_t)(p * (W));                           \
                NAME##_words x12 = counter, x13 = zero, x14 = zero, x15 = zero;                       \
                for (int round = 0; round < 10; round++) {                                            \
                    QUARTER(x0, x4, x8, x12) QUARTER(x1, x5, x9, x13)                                 \
                    QUARTER(x2, x6, x10, x14) QUARTER(x3, x7, x11, x15)                               \
                    QUARTER(x0, x5, x10, x15) QUARTER(x1, x6, x11, x12)                               \
                    QUARTER(x2, x7, x8, x13) QUARTER(x3, x4, x9, x14)                                 \
                }                                                                                     \
                const NAME##_words out[16] = {                                                        \
                    x0 + 0x61707865u, x1 + 0x3320646eu, x2 + 0x79622d32u, x3 + 0x6b206574u,            \
                    x4 + k[0], x5 + k[1], x6 + k[2], x7 + k[3], x8 + k[4], x9 + k[5], x10 + k[6],      \
                    x11 + k[7], x12 + counter, x13, x14, x15};                                        \
                for (int i = 0; i < 16; i++) {                                                        \
                    NAME##_halves sum = (NAME##_halves)acc[p][i];                                     \
                    sum = subtract ? sum - (NAME##_halves)out[i] : sum + (NAME##_halves)out[i];       \
                    acc[p][i] = (NAME##_words)sum;                                                    \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        /* Read as 32-bit words, each sum is (high halves << 16 | low halves) whatever the byte */    \
        /* order, as the 16-bit view above added them. */                                           \
        for (int p = 0; p < passes; p++) {                                                            \
            for (int i = 0; i < 16; i++) {                                                            \
                uint32_t words[W];                                                                    \
                memcpy(words, &acc[p][i], sizeof words);                                              \
                for (int b = 0; b < (W); b++) {                                                       \
                    size_t lane = (size_t)(32 * (p * (W) + b) + 2 * i);                               \
                    lanes[lane] = (uint16_t)(lanes[lane] + (words[b] & 0xffffu));                     \
                    lanes[lane + 1] = (uint16_t)(lanes[lane + 1] + (words[b] >> 16));                 \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }

DEFINE_COMBINE(combine4, 4, )

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
DEFINE_COMBINE(combine8, 8, __attribute__((target("avx2"))))
DEFINE_COMBINE(combine16, 16, __attribute__((target("avx512f,avx512bw"))))

#include <cpuid.h>

/// The implementations this CPU and its OS run, as bits (8: AVX2, 16: AVX-512): the CPU's flags
/// (CPUID) and the register state the OS saves (XGETBV), as Intel's manual says to check both.
static int detect_widths(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE)) return 4;
    unsigned int xcr0_low, xcr0_high;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 4;
    int widths = 4;
    // XMM and YMM state (bits 1, 2); then opmask, ZMM high halves, ZMM 16-31 (bits 5, 6, 7).
    if ((xcr0_low & 0x06) == 0x06 && (ebx & bit_AVX2)) widths |= 8;
    if ((xcr0_low & 0xe6) == 0xe6 && (ebx & bit_AVX512F) && (ebx & bit_AVX512BW)) widths |= 16;
    return widths;
}
#else
static int detect_widths(void) { return 4; }
#endif

/// The bits of the implementations this CPU runs (4 always), read once.
static int widths(void) {
    static int known = 0;
    // Racing threads compute the same value: a relaxed atomic int is enough.
    int value = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (value == 0) {
        value = detect_widths();
        __atomic_store_n(&known, value, __ATOMIC_RELAXED);
    }
    return value;
}

int reseed_row_set_width(void) {
    int available = widths();
    return available & 16 ? 16 : available & 8 ? 8 : 4;
}

int reseed_row_set_combine_width(int width, uint16_t lanes[1024], const uint8_t *keys, size_t count, int subtract) {
    if ((width != 4 && width != 8 && width != 16) || !(widths() & width)) return -1;
    switch (width) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    case 16: combine16(lanes, keys, count, subtract); return 0;
    case 8: combine8(lanes, keys, count, subtract); return 0;
#endif
    case 4: combine4(lanes, keys, count, subtract); return 0;
    default: return -1;
    }
}

void reseed_row_set_combine(uint16_t lanes[1024], const uint8_t *keys, size_t count, int subtract) {
    reseed_row_set_combine_width(reseed_row_set_width(), lanes, keys, count, subtract);
}
