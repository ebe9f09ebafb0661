// The system zlib (Debian: zlib1g-dev; in the SDK on Apple platforms), for Reseed's gzip codec.
#include <zlib.h>
