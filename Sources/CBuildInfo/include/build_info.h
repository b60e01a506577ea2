#ifndef YKTERM_BUILD_INFO_H
#define YKTERM_BUILD_INFO_H

// ykterm's version: the one place it is written. `ykterm --version` prints it (with the commit below), and the
// Makefile reads it from this line for the Debian package, the tarball and the man page it installs.
#define YKTERM_VERSION "0.1.0"

// The commit this build was made from ("abc1234", "abc1234-dirty" when tracked files differed from it), or "" when
// the build was not told: a plain `swift build`, or a tree without git (a tarball). Only build_info.c sees the
// value (Package.swift defines it for this target alone, from the Makefile's YKTERM_COMMIT), so a new commit
// recompiles one C file and links again; everything else is left as built.
const char *ykterm_commit(void);

#endif
