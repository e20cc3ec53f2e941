#!/usr/bin/env python3
# Hostile variants of an ELF file for tests/e2e/trust-files.sh:
#   mkhostile.py ELF OUTDIR  writes OUTDIR/{trunc,shnum,shext,overlap,hugesym}
# (cut at 200 bytes; 65535 sections past the end; an extended section count
# of 2^32-1; every section over the whole file; symbol tables of 2^40 bytes).
import struct, sys, os
src, out = sys.argv[1], sys.argv[2]
d = bytearray(open(src, 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
files = {}
files['trunc'] = bytes(d[:200])
x = bytearray(d); struct.pack_into('<H', x, 0x3c, 0xffff); files['shnum'] = bytes(x)
x = bytearray(d); struct.pack_into('<H', x, 0x3c, 0)
struct.pack_into('<Q', x, shoff + 0x20, 0xffffffff); files['shext'] = bytes(x)
x = bytearray(d)
for i in range(1, shnum):
    o = shoff + i * shentsize
    struct.pack_into('<QQ', x, o + 0x18, 0, len(d))   # sh_offset, sh_size: all overlap
files['overlap'] = bytes(x)
x = bytearray(d)
for i in range(1, shnum):
    o = shoff + i * shentsize
    t, = struct.unpack_from('<I', x, o + 4)
    if t in (2, 11):   # SYMTAB, DYNSYM: a huge table
        struct.pack_into('<Q', x, o + 0x20, 1 << 40)
files['hugesym'] = bytes(x)
os.makedirs(out, exist_ok=True)
for k, v in files.items():
    open(os.path.join(out, k), 'wb').write(v)
