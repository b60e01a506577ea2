#!/usr/bin/env python3
"""Links ykterm a second time from the objects of the release build, against Debian's shared libraries.

    link-shared.py ROOT STATIC_LINK OUTPUT

`make release` links libcrypto, hidapi, ncursesw and tinfo, libstdc++ and the unwinder from their archives: SwiftPM
finds the archives first because the pkg-config files it reads put STATIC_LINK, which holds only them, before the
system's folder. The Debian package wants them shared (their security updates then reach ykterm), the Swift
runtime still static (Debian has no package of it). This runs SwiftPM's own link command for the release binary,
as the build wrote it in .build/release.yaml, with these changes:

- no -L STATIC_LINK: each library is then found as the system's shared one;
- no -lgcc_eh: the shared unwinder, libgcc_s, comes with libstdc++;
- the libraries pkg-config named (-lX) are given to the linker after --as-needed: each is then named as needed
  only when the binary uses it. hidapi is in the link (Sources/CHIDAPI, a dependency of KeyKit and ykterm) but
  no longer used (HIDRawDevice makes hidapi's system calls itself), so the loader does not load it at each start
  and the package does not depend on it. (swiftc puts its -l options before every -Xlinker one, so a plain
  -Xlinker --as-needed would come after them.)
- -z now: every symbol bound at start, so that the whole GOT is read-only from then on (full RELRO, lintian's
  hardening-no-bindnow); it costs about 0.03 ms;
- no -no-pie: a position-independent executable, as Debian builds every program (lintian's hardening-no-pie),
  so that the executable's own code is at a random address too, in a program that holds PINs and keys and parses
  what keys and files send it. The release build's objects are position-independent already. It costs about
  0.5 ms and 2 MiB at each start (the loader relocates and copies the pointers no-pie spares it; `make bench`
  measures it).

Everything else stays: the objects, -static-stdlib, the exports map, the order of the hot functions. One compile,
two links: the static binary stays where it is, for `make release`, `make install` and `make bench`.
"""

import json
import os
import subprocess
import sys
from pathlib import Path


def link_command(manifest, binary):
    """The args of the llbuild command whose only output is `binary`."""
    args = outputs = None
    for line in manifest.read_text().splitlines():
        if line.startswith('  "') and line.endswith('":'):
            args = outputs = None  # a new command
        elif line.startswith("    outputs: "):
            outputs = json.loads(line.split(": ", 1)[1])
        elif line.startswith("    args: ") and outputs == [str(binary)]:
            args = json.loads(line.split(": ", 1)[1])
            return args
    raise SystemExit(f"{manifest} has no link command for {binary}: build with `make release` first")


def main():
    root, output = Path(sys.argv[1]).resolve(), Path(sys.argv[3]).resolve()
    static_link = str(Path(sys.argv[2]).resolve())
    binary = (root / ".build" / "release").resolve() / "ykterm"
    args = link_command(root / ".build" / "release.yaml", binary)
    out, libraries = [], []
    i = 0
    while i < len(args):
        a, following = args[i], args[i + 1] if i + 1 < len(args) else None
        if a == "-L" + static_link:
            i += 1
        elif a == "-L" and (following or "").rstrip("/") == static_link:
            i += 2
        elif (a, following) in (("-Xlinker", "-lgcc_eh"), ("-Xclang-linker", "-no-pie")):
            i += 2
        elif a in ("-Xlinker", "-Xclang-linker", "-L", "-target"):  # an option and its value, as they are
            out += [a, following]
            i += 2
        elif a.startswith("-l"):  # a library pkg-config named
            libraries += ["-Xlinker", a]
            i += 1
        elif a == "-o":
            out += ["-o", str(output) + ".tmp"]
            i += 2
        else:
            out.append(a)
            i += 1
    out[1:1] = (["-Xlinker", "--as-needed"] + libraries + ["-Xlinker", "--no-as-needed"]
                + ["-Xlinker", "-z", "-Xlinker", "now"])
    if any(static_link in a or a in ("-no-pie", "-lgcc_eh") for a in out):
        raise SystemExit(f"the link command is not the one expected: {out}")
    output.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(out, check=True, cwd=root)
    os.replace(str(output) + ".tmp", output)


if __name__ == "__main__":
    main()
