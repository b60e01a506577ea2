#include <sys/prctl.h>
#include <sys/resource.h>

/* prctl is variadic, which Swift cannot call: fixed-argument wrappers. */
static inline int ykterm_set_dumpable(int on) { return prctl(PR_SET_DUMPABLE, on ? 1 : 0, 0, 0, 0); }
static inline int ykterm_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calling thread's kernel ID and name, for a crash report (both async-signal-safe system calls). */
static inline long ykterm_thread_id(void) { return syscall(SYS_gettid); }
static inline int ykterm_thread_name(char *buffer16) { return prctl(PR_GET_NAME, buffer16, 0, 0, 0); }
/* An anonymous in-memory file (memfd_create sits behind _GNU_SOURCE in Swift's Glibc module). */
static inline int ykterm_memory_file(const char *name) { return (int)syscall(SYS_memfd_create, name, 1U /* MFD_CLOEXEC */); }
