/*
 * LD_PRELOAD for libfido2's tools in `make bench`: the virtual USB key's hidraw nodes are files served through FUSE
 * (there is no uhid here), regular files to fstat(2), and libfido2 opens only character devices. This makes fstat
 * report a file opened as /dev/hidraw* as a character device; every other call goes to the device as it is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fstat(int fd, struct stat *st) {
    static int (*real)(int, struct stat *);
    if (real == NULL) real = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
    int rv = real(fd, st);
    if (rv == 0 && S_ISREG(st->st_mode)) {
        char link[32], target[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strncmp(target, "/dev/hidraw", 11) == 0) st->st_mode = (st->st_mode & ~(mode_t)S_IFMT) | S_IFCHR;
        }
    }
    return rv;
}
