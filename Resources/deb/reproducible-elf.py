#!/usr/bin/env python3
"""Takes out of a linked Swift binary the only bytes two builds of the same commit do not share.

    reproducible-elf.py FILE...

swiftc writes a 16-byte module hash into every object it compiles, in the section .swift_modhash, and the value
differs from one compile to the next even when nothing else does: two release builds of the same commit, in the
same folder, gave binaries that differed in 1,722 bytes of that section (one hash per object) and, through them,
in the GNU build ID the linker computes over the whole file; nothing else differed. The hash serves the compiler
(whether an object file needs rewriting); nothing reads it at run time.

For each FILE: .swift_modhash is overwritten with zeros (its size and place stay, so nothing else moves), and the
build ID is computed again, as the SHA-1 of the file with its own bytes zeroed, truncated to the note's length: the
same bytes give the same ID. A file without those sections is left as it is. ELF64, little-endian.
"""

import hashlib
import struct
import sys


def sections(data):
    """{name: (offset, size)} from the section headers."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for h in headers:
        name_end = data.index(b"\0", names_at + h[0])
        out[data[names_at + h[0]:name_end].decode()] = (h[4], h[5])
    return out


def normalize(path):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    found = sections(data)
    changed = False
    if ".swift_modhash" in found:
        offset, size = found[".swift_modhash"]
        data[offset:offset + size] = bytes(size)
        changed = True
    if ".note.gnu.build-id" in found:
        offset, _ = found[".note.gnu.build-id"]
        namesz, descsz, _ = struct.unpack_from("<III", data, offset)
        desc = offset + 12 + (namesz + 3) // 4 * 4
        data[desc:desc + descsz] = bytes(descsz)
        data[desc:desc + descsz] = hashlib.sha1(data).digest()[:descsz].ljust(descsz, b"\0")
        changed = True
    if changed:
        with open(path, "r+b") as f:
            f.write(data)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        normalize(p)
