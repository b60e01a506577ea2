/* libjpeg (Debian's libjpeg62-turbo-dev): a JPEG image as 8-bit grey, for the QR scanner. libjpeg reports a damaged
 * image by calling error_exit, which must not return: it jumps back here with longjmp, which Swift cannot do, so the
 * whole decode is this one C function. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

struct cjpeg_error {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static inline void cjpeg_error_exit(j_common_ptr info) {
    struct cjpeg_error *error = (struct cjpeg_error *)info->err;
    (*info->err->format_message)(info, error->message);
    longjmp(error->jump, 1);
}

/* Warnings (a corrupt byte libjpeg got past) are not printed on standard error. */
static inline void cjpeg_output_message(j_common_ptr info) { (void)info; }

/* Decodes a JPEG image to 8-bit grey, one byte per pixel, rows without padding. Returns 0 with *pixels (malloc'd: the
 * caller frees it), *width and *height; 1 when the header announces an empty image or more than max_pixels pixels
 * (*width and *height say how many); -1 when the data is not a JPEG image libjpeg can decode (message: libjpeg's
 * words, in English). */
static inline int cjpeg_decode_grey(const unsigned char *data, unsigned long size, unsigned long max_pixels,
                                    unsigned char **pixels, unsigned int *width, unsigned int *height,
                                    char *message, size_t message_size) {
    struct jpeg_decompress_struct info;
    struct cjpeg_error error;
    unsigned char *volatile out = NULL;
    *pixels = NULL;
    *width = 0;
    *height = 0;
    memset(&info, 0, sizeof info);
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = cjpeg_error_exit;
    error.manager.output_message = cjpeg_output_message;
    error.message[0] = 0;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        free(out);
        snprintf(message, message_size, "%s", error.message);
        return -1;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, size);
    jpeg_read_header(&info, TRUE);
    *width = info.image_width;
    *height = info.image_height;
    if (info.image_width == 0 || info.image_height == 0 ||
        (unsigned long)info.image_width * info.image_height > max_pixels) {
        jpeg_destroy_decompress(&info);
        return 1;
    }
    info.out_color_space = JCS_GRAYSCALE;
    jpeg_start_decompress(&info);
    out = malloc((size_t)info.output_width * info.output_height);
    if (out == NULL) {
        jpeg_destroy_decompress(&info);
        snprintf(message, message_size, "out of memory");
        return -1;
    }
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = out + (size_t)info.output_scanline * info.output_width;
        jpeg_read_scanlines(&info, &row, 1);
    }
    *width = info.output_width;
    *height = info.output_height;
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    *pixels = out;
    return 0;
}
