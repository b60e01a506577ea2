/*
 * The floor `make bench` compares ykterm's PC/SC commands against: a C client that sends exactly the APDUs
 * ykterm sends, through libpcsclite, with nothing else around them.
 *
 *   pcsc_ref oath-code READER   SELECT OATH, CALCULATE ALL for the current 30 s step, SEND REMAINING while the
 *                               key answers 61xx (what `ykterm oath code` sends)
 *   pcsc_ref list READER        SELECT Management, READ CONFIG (what `ykterm list` sends to one key)
 *
 * READER is a part of the reader name (the first reader whose name contains it is used). The PC/SC calls are
 * the ones any client needs: establish a context, list the readers, connect in shared mode, one transaction
 * around the exchange, disconnect leaving the card as it is, release the context. Each answer is printed in
 * hex with its status word, one line per APDU; on standard error, the time spent in SCardTransmit (the key's
 * own time plus one pcscd round trip per APDU) as `transmit_us=N apdus=N`.
 */
#include <PCSC/winscard.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint8_t select_oath[] = {0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01, 0x00};
static const uint8_t select_management[] = {0x00, 0xA4, 0x04, 0x00, 0x08, 0xA0, 0x00, 0x00, 0x05,
                                            0x27, 0x47, 0x11, 0x17, 0x00};
static const uint8_t read_config[] = {0x00, 0x1D, 0x00, 0x00, 0x00};
static const uint8_t send_remaining[] = {0x00, 0xA5, 0x00, 0x00, 0x00};

static SCARDHANDLE card;
static const SCARD_IO_REQUEST *pci;
static long long transmit_ns;
static int apdu_count;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void fail(const char *what, LONG rv) {
    fprintf(stderr, "pcsc_ref: %s: %s\n", what, pcsc_stringify_error(rv));
    exit(1);
}

/* Sends one APDU, prints the answer; returns its status word. */
static unsigned exchange(const uint8_t *apdu, size_t length) {
    uint8_t answer[258];
    DWORD answer_length = sizeof answer;
    long long started = now_ns();
    LONG rv = SCardTransmit(card, pci, apdu, (DWORD)length, NULL, answer, &answer_length);
    transmit_ns += now_ns() - started;
    apdu_count++;
    if (rv != SCARD_S_SUCCESS) fail("SCardTransmit", rv);
    if (answer_length < 2) {
        fprintf(stderr, "pcsc_ref: an answer without a status word\n");
        exit(1);
    }
    for (DWORD i = 0; i < answer_length - 2; i++) printf("%02X", answer[i]);
    printf(" %02X%02X\n", answer[answer_length - 2], answer[answer_length - 1]);
    return (unsigned)answer[answer_length - 2] << 8 | answer[answer_length - 1];
}

/* Sends `apdu` and fetches the rest of a long answer with SEND REMAINING, as OATH chains it. */
static unsigned exchange_chained(const uint8_t *apdu, size_t length) {
    unsigned sw = exchange(apdu, length);
    while ((sw & 0xFF00) == 0x6100) sw = exchange(send_remaining, sizeof send_remaining);
    return sw;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "oath-code") != 0 && strcmp(argv[1], "list") != 0)) {
        fprintf(stderr, "usage: pcsc_ref oath-code|list READER\n");
        return 2;
    }
    SCARDCONTEXT context;
    LONG rv = SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context);
    if (rv != SCARD_S_SUCCESS) fail("SCardEstablishContext", rv);

    DWORD readers_length = 0;
    rv = SCardListReaders(context, NULL, NULL, &readers_length);
    if (rv != SCARD_S_SUCCESS) fail("SCardListReaders", rv);
    char *readers = malloc(readers_length);
    if (readers == NULL) return 1;
    rv = SCardListReaders(context, NULL, readers, &readers_length);
    if (rv != SCARD_S_SUCCESS) fail("SCardListReaders", rv);
    const char *reader = NULL;
    for (const char *r = readers; *r != '\0'; r += strlen(r) + 1) {
        if (strstr(r, argv[2]) != NULL) {
            reader = r;
            break;
        }
    }
    if (reader == NULL) {
        fprintf(stderr, "pcsc_ref: no reader named like \"%s\"\n", argv[2]);
        return 3;
    }

    DWORD protocol;
    rv = SCardConnect(context, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card, &protocol);
    if (rv != SCARD_S_SUCCESS) fail("SCardConnect", rv);
    pci = protocol == SCARD_PROTOCOL_T0 ? SCARD_PCI_T0 : SCARD_PCI_T1;
    rv = SCardBeginTransaction(card);
    if (rv != SCARD_S_SUCCESS) fail("SCardBeginTransaction", rv);

    unsigned sw;
    if (strcmp(argv[1], "oath-code") == 0) {
        sw = exchange(select_oath, sizeof select_oath);
        if (sw == 0x9000) {
            /* CALCULATE ALL, truncated codes, for the 30 s step that holds now (the challenge: 8 bytes, big
             * endian). */
            uint64_t step = (uint64_t)time(NULL) / 30;
            uint8_t calculate_all[] = {0x00, 0xA4, 0x00, 0x01, 0x0A, 0x74, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0x00};
            for (int i = 0; i < 8; i++) calculate_all[7 + i] = (uint8_t)(step >> (56 - 8 * i));
            sw = exchange_chained(calculate_all, sizeof calculate_all);
        }
    } else {
        sw = exchange(select_management, sizeof select_management);
        if (sw == 0x9000) sw = exchange(read_config, sizeof read_config);
    }

    SCardEndTransaction(card, SCARD_LEAVE_CARD);
    SCardDisconnect(card, SCARD_LEAVE_CARD);
    SCardReleaseContext(context);
    free(readers);
    fprintf(stderr, "transmit_us=%lld apdus=%d\n", transmit_ns / 1000, apdu_count);
    return sw == 0x9000 ? 0 : 1;
}
