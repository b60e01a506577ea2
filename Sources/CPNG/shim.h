/* libpng (Debian's libpng-dev): a PNG image as 8-bit grey, for the QR scanner. Its simplified API
 * (png_image_begin_read_from_memory, png_image_finish_read) returns errors instead of jumping out of the caller. */
#include <png.h>
