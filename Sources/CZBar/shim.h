/* zbar (Debian's libzbar-dev): the QR codes in an image. Only its types and constants come from here: the library
 * is loaded with dlopen when an image is scanned (AuthenticatorModel/QR/QRScanner.swift), because libzbar.so.0
 * brings 17 more shared libraries (X11, dbus, v4l and theirs), about 2 ms at every start of ykterm. */
#include <zbar.h>
