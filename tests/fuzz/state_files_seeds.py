#!/usr/bin/env python3
"""Writes seeds for fuzz_state_files into tests/fuzz/corpus/state_files: outcome logs (first
byte even) as vnfsd writes them, whole and with a torn last entry, and client records
(first byte odd) as vnfsd stores them.

    python3 tests/fuzz/state_files_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(__file__), "corpus", "state_files")
COMMITTED, ABORTED = 2, 3


def fnv1a(b):
    h = 2166136261
    for c in b:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def entry(txnid, outcome, minute):
    """outcome_log.hpp: u64 txnid, u32 (minute << 8 | outcome), u32 FNV-1a of the 12 before."""
    head = struct.pack(">QI", txnid, minute << 8 | outcome)
    return head + struct.pack(">I", fnv1a(head))


LOG = entry(7, COMMITTED, 3_600_000) + entry(8, ABORTED, 3_600_001) + entry(7, ABORTED, 3_600_002)
SEEDS = {
    "outcomes_whole": b"\x00" + LOG,
    "outcomes_torn_last": b"\x00" + LOG + entry(9, COMMITTED, 3_600_003)[:11],
    "outcomes_before_minutes": b"\x00" + entry(1, COMMITTED, 0) + entry(2, ABORTED, 0),
    "clients": b"\x01vnfsd-clients 1\n1 1000 1000 6c696e75782d686f73742d31\n0 0 0 00ff\n",
    "clients_empty": b"\x01vnfsd-clients 1\n",
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
