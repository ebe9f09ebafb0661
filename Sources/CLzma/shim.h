// The system liblzma (Debian: liblzma-dev), for Reseed's xz codec on Linux.
#include <lzma.h>

// The filter IDs are macros over LZMA_VLI_C, which Swift does not import.
static const lzma_vli reseed_lzma_filter_lzma2 = LZMA_FILTER_LZMA2;
static const lzma_vli reseed_lzma_vli_unknown = LZMA_VLI_UNKNOWN;
