/* A pcscd reader driver that hands every call to vsmartcard's vpcd driver but reports one slot, so the
 * virtual USB key's reader is one reader (named as the key's CCID interface) with no empty twin. */
#ifndef YKTERM_IFD_ONE_SLOT_H
#define YKTERM_IFD_ONE_SLOT_H
#endif
