#!/usr/bin/env python3
"""Writes seeds for fuzz_txn_journal into tests/fuzz/corpus/txn_journal: one record of each
type of src/server/txn/journal.hpp, built from its layout, as the harness's framed input
(first byte odd: generation, then {u16 length, body}; bit 1 picks VNFSTXN3 over VNFSTXN2),
as a whole journal file of the current format and of the one before (first byte even), and
as one of the format before generations.

    python3 tests/fuzz/txn_journal_seeds.py
"""
import os
import struct
import zlib

from xdr_seed import opaque, u32, u64

OUT = os.path.join(os.path.dirname(__file__), "corpus", "txn_journal")


def fnv1a(b):
    h = 2166136261
    for c in b:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


FH, DIR = bytes(range(1, 13)), bytes(range(20, 32))
ATTRS = u32(1) + u32(0o644) + u32(1000) + u32(1000) + u64(4096) + u64(1700000000) + u32(5) + u64(1700000001) + u32(6)
# The index in the record variant, then the fields in order.
RECORDS = [
    u32(0) + u64(7) + u64(42),                                   # rec_begin
    u32(1) + opaque(FH) + ATTRS,                                 # rec_attrs
    u32(2) + opaque(FH) + u64(0) + u64(4096) + u64(0),           # rec_range
    u32(3) + opaque(DIR) + opaque(b"new"),                       # rec_created
    u32(4) + opaque(DIR) + opaque(b"old") + opaque(b"grave-1"),  # rec_removed
    u32(5) + opaque(DIR) + opaque(b"sub") + opaque(FH) + ATTRS,  # rec_rmdir
    u32(6) + opaque(DIR) + opaque(b"a") + opaque(DIR) + opaque(b"b"),  # rec_renamed
    u32(7) + u32(0),                                             # rec_commit
    u32(8) + u32(3),                                             # rec_end
    u32(9) + opaque(FH) + u64(4096) + u32(1) + opaque(b"redo bytes"),  # rec_redo_write
    u32(10) + opaque(FH) + u64(10),                              # rec_redo_size
    u32(11) + u32(0),                                            # rec_checkpoint
]


def framed_input(gen, records, v3=False):
    return (b"\3" if v3 else b"\1") + u64(gen) + b"".join(struct.pack(">H", len(r)) + r for r in records)


def journal_file(gen, records, v3=True):
    magic, check = (b"VNFSTXN3", zlib.crc32) if v3 else (b"VNFSTXN2", fnv1a)
    out = magic + u64(gen) + u32(check(u64(gen)))
    for r in records:
        out += u32(len(r)) + u32(check(r)) + u64(gen) + r + b"\0" * (-len(r) % 4)
    return out


def journal_file_v1(records):
    return b"VNFSTXN1" + b"".join(u32(len(r)) + u32(fnv1a(r)) + r + b"\0" * (-len(r) % 4) for r in records)


SEEDS = {
    "framed_every_record": framed_input(3, RECORDS),
    "framed_committed": framed_input(9, [RECORDS[0], RECORDS[2], RECORDS[7]]),
    "framed_v3_every_record": framed_input(3, RECORDS, v3=True),
    "framed_v3_redo_pending": framed_input(5, [RECORDS[0], RECORDS[9], RECORDS[10], RECORDS[7]], v3=True),
    "file_every_record": b"\0" + journal_file(3, RECORDS),
    "file_v2_every_record": b"\0" + journal_file(3, RECORDS[:9], v3=False),
    "file_torn_last": b"\0" + journal_file(4, RECORDS[:4])[:-5],
    "file_old_format": b"\0" + journal_file_v1(RECORDS[:3]),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
