#ifndef CRESEED_ROW_SET_H
#define CRESEED_ROW_SET_H

#include <stddef.h>
#include <stdint.h>

/// Adds (`subtract` 0) or subtracts (`subtract` 1) the row-set elements of `count` rows to the
/// 1,024 16-bit lanes of `lanes` (modulo 2^16): each row's element is the first 2,048 bytes of the
/// ChaCha20 key stream (RFC 8439: nonce and initial counter zero) under the 32-byte key at
/// `keys + 32 * row`, read as 1,024 little-endian 16-bit lanes.
///
/// The key stream is computed in vector registers and summed there, never stored: with AVX-512
/// (16 blocks at a time) or AVX2 (8) where the CPU has them, else 4 blocks at a time with the
/// baseline vectors of the target (SSE2, NEON).
void reseed_row_set_combine(uint16_t lanes[1024], const uint8_t *keys, size_t count, int subtract);

/// The number of blocks the implementation reseed_row_set_combine runs on this CPU computes at a
/// time: 16, 8 or 4. For tests and benchmarks.
int reseed_row_set_width(void);

/// Runs the implementation of `width` blocks at a time (16, 8 or 4) as reseed_row_set_combine does;
/// returns -1 when this CPU cannot run it, 0 otherwise. For the tests that compare them.
int reseed_row_set_combine_width(int width, uint16_t lanes[1024], const uint8_t *keys, size_t count, int subtract);

#endif
