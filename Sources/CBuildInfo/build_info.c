#include "build_info.h"

#ifndef YKTERM_COMMIT
#define YKTERM_COMMIT ""
#endif

const char *ykterm_commit(void) { return YKTERM_COMMIT; }
