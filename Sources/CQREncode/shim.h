/* libqrencode (Debian's libqrencode-dev): the QR code of a generated account's URI, drawn in the terminal. Only its
 * types and constants come from here: the library is loaded with dlopen when a code is drawn
 * (AuthenticatorModel/QR/QRCode.swift), so that ykterm starts without it (the tarball for other systems needs only
 * glibc, libpcsclite and zlib). */
#include <qrencode.h>
