#!/usr/bin/env python3
"""Writes seeds for fuzz_rdma_header into tests/fuzz/corpus/rdma_header: one RPC-over-RDMA v1
header of each shape RFC 8166 §4 defines (the RDMA traffic of cma is not recorded by the
test proxy, so these are built from the wire layout), and RFC 8797 private data.

    python3 tests/fuzz/rdma_header_seeds.py
"""
import os
import struct

from xdr_seed import words

OUT = os.path.join(os.path.dirname(__file__), "corpus", "rdma_header")


def segment(handle, length, offset):
    return words(handle, length) + struct.pack(">Q", offset)


SEEDS = {
    # xid, vers 1, credits, RDMA_MSG, no Read list, no Write list, no Reply chunk, then an RPC call
    "msg_inline": words(1, 1, 32, 0, 0, 0, 0) + words(1, 0, 2, 100003, 4, 1),
    # RDMA_MSG with a Read chunk (WRITE payload at position 128)
    "msg_read_list": words(2, 1, 32, 0) + words(1, 128) + segment(7, 8192, 0x10000) + words(0, 0, 0),
    # RDMA_MSG with one Write chunk of two segments (READ payload) and a Reply chunk
    "msg_write_list_reply_chunk": words(3, 1, 32, 0, 0) + words(1, 2) + segment(8, 4096, 0) +
    segment(8, 4096, 4096) + words(0) + words(1, 1) + segment(9, 65536, 0),
    # RDMA_MSG with three Write chunks of one segment each (a COMPOUND of three READs)
    "msg_write_list_three_chunks": words(7, 1, 32, 0, 0) + words(1, 1) + segment(8, 4096, 0) + words(1, 1) +
    segment(8, 100, 8192) + words(1, 1) + segment(11, 65536, 0) + words(0, 0),
    # RDMA_NOMSG with a position-zero Read chunk (a long call)
    "nomsg_long_call": words(4, 1, 32, 1) + words(1, 0) + segment(10, 9000, 0) + words(0, 0, 0),
    # RDMA_ERROR: ERR_VERS with the range, and ERR_CHUNK
    "error_vers": words(5, 1, 0, 4, 1, 1, 1),
    "error_chunk": words(6, 1, 0, 4, 2),
    # RFC 8797 private data: magic, version 1, flags, 4 KiB send and receive
    "private_data": bytes([0xF6, 0xAB, 0x0E, 0x18, 1, 1, 3, 3]),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
