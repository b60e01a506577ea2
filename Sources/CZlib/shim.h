#include <zlib.h>

/* inflateInit2 is a macro (it passes the library's version and the stream's size); Swift sees this instead. */
static inline int czlib_inflate_init2(z_streamp stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

/* deflateInit2 likewise. */
static inline int czlib_deflate_init2(z_streamp stream, int level, int method, int window_bits, int mem_level,
                                      int strategy) {
    return deflateInit2(stream, level, method, window_bits, mem_level, strategy);
}
