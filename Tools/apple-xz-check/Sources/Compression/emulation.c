// An emulation of the Compression framework's stream API over liblzma, with the documented
// semantics (consume src until empty or dst full; END once the stream ended; ERROR otherwise),
// only to run Reseed's Apple xz decoder's logic on Linux.
#include "compression.h"
#include <lzma.h>
#include <stdlib.h>
compression_status compression_stream_init(compression_stream *s, compression_stream_operation op, compression_algorithm alg) {
    if (op != COMPRESSION_STREAM_DECODE || alg != COMPRESSION_LZMA) return COMPRESSION_STATUS_ERROR;
    lzma_stream *z = calloc(1, sizeof(lzma_stream));
    if (lzma_stream_decoder(z, UINT64_MAX, 0) != LZMA_OK) return COMPRESSION_STATUS_ERROR;
    s->state = z; s->src_size = 0; s->dst_size = 0;
    return COMPRESSION_STATUS_OK;
}
compression_status compression_stream_process(compression_stream *s, int flags) {
    lzma_stream *z = s->state;
    z->next_in = s->src_ptr; z->avail_in = s->src_size;
    z->next_out = s->dst_ptr; z->avail_out = s->dst_size;
    lzma_ret r = LZMA_OK;
    while (z->avail_out > 0) {
        size_t before_in = z->avail_in, before_out = z->avail_out;
        r = lzma_code(z, (flags & COMPRESSION_STREAM_FINALIZE) ? LZMA_FINISH : LZMA_RUN);
        if (r != LZMA_OK) break;
        if (z->avail_in == 0 && !(flags & COMPRESSION_STREAM_FINALIZE)) break;
        if (before_in == z->avail_in && before_out == z->avail_out) break;
    }
    s->src_ptr = z->next_in; s->src_size = z->avail_in;
    s->dst_ptr = z->next_out; s->dst_size = z->avail_out;
#ifdef RESEED_END_ONLY_WHEN_FINALIZING
    if (r == LZMA_STREAM_END) return (flags & COMPRESSION_STREAM_FINALIZE) ? COMPRESSION_STATUS_END : COMPRESSION_STATUS_OK;
#else
    if (r == LZMA_STREAM_END) return COMPRESSION_STATUS_END;
#endif
    if (r == LZMA_OK || r == LZMA_BUF_ERROR) return COMPRESSION_STATUS_OK;
    return COMPRESSION_STATUS_ERROR;
}
compression_status compression_stream_destroy(compression_stream *s) {
    lzma_end(s->state); free(s->state); return COMPRESSION_STATUS_OK;
}
