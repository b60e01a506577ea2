#include <sys/prctl.h>
#include <sys/resource.h>

/* prctl is variadic, which Swift cannot call: fixed-argument wrappers. */
static inline int ykterm_set_dumpable(int on) { return prctl(PR_SET_DUMPABLE, on ? 1 : 0, 0, 0, 0); }
static inline int ykterm_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }
