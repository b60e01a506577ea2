/*
 * The floor `make bench` compares ykterm's FIDO commands over HID against: a C client that opens a hidraw node
 * and does what every CTAP2 client does first, CTAPHID_INIT on the broadcast channel and authenticatorGetInfo
 * on the channel it was given, with plain read(2) and write(2) and nothing else.
 *
 *   ctaphid_ref /dev/hidrawN
 *
 * Prints the getInfo answer (status byte and CBOR) in hex; on standard error, the time from the INIT request to
 * the last packet of the answer as `exchange_us=N`.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

enum { REPORT = 64, CMD_INIT = 0x86, CMD_CBOR = 0x90, CMD_KEEPALIVE = 0xBB, CMD_ERROR = 0xBF, GET_INFO = 0x04 };

static int fd;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "ctaphid_ref: %s: %s\n", what, errno ? strerror(errno) : "unexpected answer");
    exit(1);
}

/* One output report: report ID 0, then the 64-byte packet. */
static void send_packet(const uint8_t packet[REPORT]) {
    uint8_t report[REPORT + 1] = {0};
    memcpy(report + 1, packet, REPORT);
    if (write(fd, report, sizeof report) != (ssize_t)sizeof report) fail("write");
}

/* One input report, waiting at most 5 s. */
static void receive_packet(uint8_t packet[REPORT]) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready = poll(&p, 1, 5000);
    if (ready <= 0) {
        if (ready == 0) errno = ETIMEDOUT;
        fail("read");
    }
    if (read(fd, packet, REPORT) != REPORT) fail("read");
}

/* Sends a message of one packet (all this client needs) on channel `cid`. */
static void send_message(uint32_t cid, uint8_t command, const uint8_t *data, size_t length) {
    uint8_t packet[REPORT] = {0};
    packet[0] = (uint8_t)(cid >> 24);
    packet[1] = (uint8_t)(cid >> 16);
    packet[2] = (uint8_t)(cid >> 8);
    packet[3] = (uint8_t)cid;
    packet[4] = command;
    packet[5] = (uint8_t)(length >> 8);
    packet[6] = (uint8_t)length;
    memcpy(packet + 7, data, length);
    send_packet(packet);
}

/* Receives the answer on channel `cid` (skipping other channels' packets and keep-alives) into `out`;
 * returns its length. */
static size_t receive_message(uint32_t cid, uint8_t command, uint8_t *out, size_t capacity) {
    uint8_t packet[REPORT];
    for (;;) {
        receive_packet(packet);
        uint32_t from = (uint32_t)packet[0] << 24 | (uint32_t)packet[1] << 16 | (uint32_t)packet[2] << 8 | packet[3];
        if (from != cid || packet[4] == CMD_KEEPALIVE) continue;
        if (packet[4] != command) {
            errno = 0;
            fail(packet[4] == CMD_ERROR ? "CTAPHID error" : "answer");
        }
        break;
    }
    size_t total = (size_t)packet[5] << 8 | packet[6];
    if (total > capacity) {
        errno = EMSGSIZE;
        fail("answer");
    }
    size_t got = total < REPORT - 7 ? total : REPORT - 7;
    memcpy(out, packet + 7, got);
    for (uint8_t sequence = 0; got < total; sequence++) {
        receive_packet(packet);
        uint32_t from = (uint32_t)packet[0] << 24 | (uint32_t)packet[1] << 16 | (uint32_t)packet[2] << 8 | packet[3];
        if (from != cid) continue;
        if (packet[4] != sequence) {
            errno = 0;
            fail("continuation packet");
        }
        size_t n = total - got < REPORT - 5 ? total - got : REPORT - 5;
        memcpy(out + got, packet + 5, n);
        got += n;
    }
    return total;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ctaphid_ref /dev/hidrawN\n");
        return 2;
    }
    fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd < 0) fail(argv[1]);

    long long started = now_ns();
    uint8_t nonce[8];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) fail("getrandom");
    send_message(0xFFFFFFFF, CMD_INIT, nonce, sizeof nonce);
    uint8_t init[64];
    size_t n;
    do {
        n = receive_message(0xFFFFFFFF, CMD_INIT, init, sizeof init);
    } while (n < 17 || memcmp(init, nonce, sizeof nonce) != 0);
    uint32_t cid = (uint32_t)init[8] << 24 | (uint32_t)init[9] << 16 | (uint32_t)init[10] << 8 | init[11];

    uint8_t get_info = GET_INFO;
    send_message(cid, CMD_CBOR, &get_info, 1);
    uint8_t info[7609];
    n = receive_message(cid, CMD_CBOR, info, sizeof info);
    long long took = now_ns() - started;
    close(fd);

    for (size_t i = 0; i < n; i++) printf("%02X", info[i]);
    printf("\n");
    fprintf(stderr, "exchange_us=%lld\n", took / 1000);
    return n > 0 && info[0] == 0 ? 0 : 1;
}
