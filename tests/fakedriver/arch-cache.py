#!/usr/bin/env python3
"""tests/fakedriver/arch-cache.py IN OUT MACHINE — rewrite a new-format
ld.so.cache (what glibc >= 2.32 writes) as the same driver would have it
on another architecture: every entry's arch byte becomes MACHINE's
(x86_64 0x03, aarch64 0x0a, ppc64le 0x05; glibc's FLAG_*_LIB64) and every
/usr/lib/<multiarch>/ in its path becomes MACHINE's multiarch directory.
The fake driver's files stay where they are: gpurun on a host of another
architecture must find none of these entries; one of MACHINE would find
them in MACHINE's directory (tests/unit/arch_test.c checks that side)."""
import struct
import sys

ARCH = {"x86_64": 0x03, "aarch64": 0x0A, "ppc64le": 0x05}
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu",
             "ppc64le": "powerpc64le-linux-gnu"}
MAGIC = b"glibc-ld.so.cache1.1"


def cstr(data, off):
    return data[off:data.index(b"\0", off)].decode()


def main():
    src, dst, machine = sys.argv[1:4]
    data = open(src, "rb").read()
    if not data.startswith(MAGIC):
        sys.exit("%s: not a new-format ld.so.cache" % src)
    nlibs = struct.unpack_from("<I", data, 20)[0]
    entries = []
    for i in range(nlibs):
        flags, key, value, osv, hwcap = struct.unpack_from("<iIIIQ", data, 48 + 24 * i)
        path = cstr(data, value)
        for m in MULTIARCH.values():
            path = path.replace("/usr/lib/%s/" % m, "/usr/lib/%s/" % MULTIARCH[machine])
        entries.append(((flags & 0xFF) | ARCH[machine] << 8, cstr(data, key), path, osv))
    strings = bytearray()
    table = bytearray()
    base = 48 + 24 * nlibs
    for flags, key, path, osv in entries:
        k = base + len(strings)
        strings += key.encode() + b"\0"
        v = base + len(strings)
        strings += path.encode() + b"\0"
        # hwcap 0: the glibc-hwcaps extension is not carried over.
        table += struct.pack("<iIIIQ", flags, k, v, osv, 0)
    header = bytearray(data[:48])
    struct.pack_into("<I", header, 24, len(strings))
    struct.pack_into("<I", header, 32, 0)
    open(dst, "wb").write(bytes(header) + bytes(table) + bytes(strings))


main()
