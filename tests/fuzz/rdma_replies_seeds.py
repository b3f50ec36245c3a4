#!/usr/bin/env python3
"""Writes hand-built seeds for fuzz_rdma_replies into tests/fuzz/corpus/rdma_replies: COMPOUNDs
of several READs, whose replies use several Write chunks (one per READ), which the recorded
TCP traffic does not show as such. Layout: rdma_replies.cpp and client_call.hpp.

    python3 tests/fuzz/rdma_replies_seeds.py
"""
import os
import struct

from xdr_seed import words

OUT = os.path.join(os.path.dirname(__file__), "corpus", "rdma_replies")

PUTFH, READ = 0, 4  # indexes into client_call.hpp's call_kinds
SIZE_INDEX = {0: 0, 1: 1, 3: 2, 8: 3, 100: 4, 1000: 5, 4096: 6, 70000: 7}  # target_sizes


def call(*ops):
    """The call's layout: the operation count, then each operation (a READ with its target size)."""
    out = bytes([len(ops)])
    for op in ops:
        out += bytes([PUTFH]) if op is None else bytes([READ, SIZE_INDEX[op]])
    return out


def reply(*reads):
    """An RPC reply (accepted, success) with SEQUENCE, PUTFH, then a successful READ of each
    (length, eof), its data a pattern."""
    res = words(53, 0) + bytes(16) + words(1, 0, 63, 63, 0)  # SEQUENCE4resok
    res += words(22, 0)  # PUTFH
    for n, eof in reads:
        data = bytes((i * 7 + n) & 0xFF for i in range(n))
        res += words(25, 0, eof, n) + data + bytes((4 - n % 4) % 4)
    return words(1, 1, 0, 0, 0, 0) + words(0, 0, 2 + len(reads)) + res


SEEDS = {
    # Four READs, each with a target: four Write chunks, each payload into its own.
    "several_reads_placed": b"\x00" + call(None, 4096, 100, 3, 1000) + reply((4096, 0), (100, 0), (3, 0), (1000, 1)),
    # The second READ has no target: one Write chunk (the first READ's); the rest inline.
    "several_reads_fewer_chunks": b"\x00" + call(None, 1000, 0, 100) + reply((1000, 0), (50, 0), (100, 1)),
    # A short READ at EOF into a larger target, and an empty one.
    "several_reads_short_at_eof": b"\x00" + call(None, 4096, 100) + reply((10, 1), (0, 1)),
    # Hostile: 16 bytes written at the first chunk, every chunk of the Write list claiming 16.
    # (type RDMA_MSG; credits 8, payload 16, shift 0, Write list claim 16, Reply chunk claim 0)
    "several_reads_hostile_claims": b"\x01" + call(None, 100, 100, 100) + bytes([0]) +
    struct.pack(">HHHHH", 8, 16, 0, 16, 0) + reply((100, 0), (100, 0), (100, 0))[:60],
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
