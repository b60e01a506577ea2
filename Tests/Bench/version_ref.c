/*
 * The floor `make bench` compares `ykterm --version` against: a C program linked (with --no-as-needed, so
 * every one is loaded and initialised) with the shared libraries the ykterm binary needs, as its DT_NEEDED
 * entries list them, that prints one line and exits.
 */
#include <stdio.h>

int main(void) {
    puts("version_ref 1");
    return 0;
}
