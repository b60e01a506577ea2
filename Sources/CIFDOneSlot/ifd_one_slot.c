/* The IFD handler API (pcsc-lite's ifdhandler.h), forwarded to the driver named by YKTERM_IFD_DRIVER
 * (default: vsmartcard's vpcd), except that the number of slots is always 1. */
#include "ifd_one_slot.h"
#include <dlfcn.h>
#include <stdlib.h>

typedef unsigned long DWORD;
typedef DWORD *PDWORD;
typedef long RESPONSECODE;
typedef unsigned char UCHAR;
typedef UCHAR *PUCHAR;
typedef char *LPSTR;
typedef struct { DWORD Protocol; DWORD Length; } IO_HEADER;

#define TAG_SLOTS 0x0FAEUL
#define NO_SUCH_DEVICE 617L
#define DEFAULT_DRIVER "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"

static void *driver(void) {
    static void *handle;
    if (!handle) {
        const char *path = getenv("YKTERM_IFD_DRIVER");
        handle = dlopen(path && *path ? path : DEFAULT_DRIVER, RTLD_NOW | RTLD_LOCAL);
    }
    return handle;
}

#define FORWARD(name, params) \
    RESPONSECODE (*f) params = (RESPONSECODE (*) params)(driver() ? dlsym(driver(), name) : NULL); \
    if (!f) return NO_SUCH_DEVICE

RESPONSECODE IFDHCreateChannelByName(DWORD lun, LPSTR device) {
    FORWARD("IFDHCreateChannelByName", (DWORD, LPSTR));
    return f(lun, device);
}

RESPONSECODE IFDHCreateChannel(DWORD lun, DWORD channel) {
    FORWARD("IFDHCreateChannel", (DWORD, DWORD));
    return f(lun, channel);
}

RESPONSECODE IFDHCloseChannel(DWORD lun) {
    FORWARD("IFDHCloseChannel", (DWORD));
    return f(lun);
}

RESPONSECODE IFDHGetCapabilities(DWORD lun, DWORD tag, PDWORD length, PUCHAR value) {
    if (tag == TAG_SLOTS && length && *length >= 1 && value) {
        *length = 1;
        value[0] = 1;
        return 0;
    }
    FORWARD("IFDHGetCapabilities", (DWORD, DWORD, PDWORD, PUCHAR));
    return f(lun, tag, length, value);
}

RESPONSECODE IFDHSetCapabilities(DWORD lun, DWORD tag, DWORD length, PUCHAR value) {
    FORWARD("IFDHSetCapabilities", (DWORD, DWORD, DWORD, PUCHAR));
    return f(lun, tag, length, value);
}

RESPONSECODE IFDHSetProtocolParameters(DWORD lun, DWORD protocol, UCHAR flags, UCHAR pts1, UCHAR pts2, UCHAR pts3) {
    FORWARD("IFDHSetProtocolParameters", (DWORD, DWORD, UCHAR, UCHAR, UCHAR, UCHAR));
    return f(lun, protocol, flags, pts1, pts2, pts3);
}

RESPONSECODE IFDHPowerICC(DWORD lun, DWORD action, PUCHAR atr, PDWORD atrLength) {
    FORWARD("IFDHPowerICC", (DWORD, DWORD, PUCHAR, PDWORD));
    return f(lun, action, atr, atrLength);
}

RESPONSECODE IFDHTransmitToICC(DWORD lun, IO_HEADER sendPci, PUCHAR tx, DWORD txLength, PUCHAR rx,
                               PDWORD rxLength, IO_HEADER *recvPci) {
    FORWARD("IFDHTransmitToICC", (DWORD, IO_HEADER, PUCHAR, DWORD, PUCHAR, PDWORD, IO_HEADER *));
    return f(lun, sendPci, tx, txLength, rx, rxLength, recvPci);
}

RESPONSECODE IFDHControl(DWORD lun, DWORD code, PUCHAR tx, DWORD txLength, PUCHAR rx, DWORD rxLength,
                         PDWORD returned) {
    FORWARD("IFDHControl", (DWORD, DWORD, PUCHAR, DWORD, PUCHAR, DWORD, PDWORD));
    return f(lun, code, tx, txLength, rx, rxLength, returned);
}

RESPONSECODE IFDHICCPresence(DWORD lun) {
    FORWARD("IFDHICCPresence", (DWORD));
    return f(lun);
}
