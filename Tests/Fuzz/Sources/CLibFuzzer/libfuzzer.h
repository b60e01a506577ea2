#ifndef YKTERM_LIBFUZZER_H
#define YKTERM_LIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's driver, for programs whose main() is not libFuzzer's own (compiler-rt's FuzzerInterface.h). */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
