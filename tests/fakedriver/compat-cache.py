#!/usr/bin/env python3
"""tests/fakedriver/compat-cache.py IN OUT — rewrite a new-format ld.so.cache
(what glibc >= 2.32 writes) into the "compat" layout older glibc wrote: an
old libc5-style section whose entries mirror the new ones, then, 8-aligned,
the new section unchanged.  gpurun must read the new section of such a file
the same as the plain one."""
import struct
import sys

NEW_MAGIC = b"glibc-ld.so.cache1.1"


def main():
    data = open(sys.argv[1], "rb").read()
    if not data.startswith(NEW_MAGIC):
        sys.exit("%s: not a new-format ld.so.cache" % sys.argv[1])
    nlibs = struct.unpack_from("<I", data, 20)[0]
    table_end = 16 + 12 * nlibs
    new_off = (table_end + 7) & ~7
    pad = new_off - table_end
    old = bytearray(b"ld.so-1.7.0\0" + struct.pack("<I", nlibs))
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, 48 + 24 * i)
        # Old string offsets count from the end of the old table; the
        # strings are those of the new section that follows it.
        old += struct.pack("<iII", flags, pad + key, pad + value)
    old += b"\0" * pad
    new = bytearray(data)
    # The glibc-hwcaps extension offset counts from the start of the file
    # (`ldconfig -p` rejects the cache otherwise); gpurun ignores it.
    ext = struct.unpack_from("<I", new, 32)[0]
    if ext:
        struct.pack_into("<I", new, 32, ext + new_off)
    open(sys.argv[2], "wb").write(bytes(old) + bytes(new))


main()
