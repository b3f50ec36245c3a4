#!/usr/bin/env python3
"""Writes seeds for fuzz_server_requests into tests/fuzz/corpus/server_requests (txn-*):
transactional COMPOUNDs, so that the fuzzer starts inside vnfsd's transaction engine
(planner, locks, backups, undo, commit) rather than having to find VNFS_TXN's opnum and
arguments by itself. Each seed is the harness's sequenced form: a first byte
(operations after SEQUENCE << 1 | 1), then those operations in XDR (RFC 8881 op numbers,
VNFS_TXN from include/vnfs/nfs4/txn_ops.hpp). The harness's export holds file, dir/inner,
dir/sub and link; state carries over from input to input, so the multi-COMPOUND seeds
(begin, join, commit, abort, status of one txnid) chain as a client's would.

    python3 tests/fuzz/server_txn_seeds.py
"""
import os

from xdr_seed import opaque, u32, u64

OUT = os.path.join(os.path.dirname(__file__), "corpus", "server_requests")


CURRENT_STATEID = u32(1) + b"\0" * 12  # seqid 1, other all zero: the current stateid
ANONYMOUS_STATEID = u32(0) + b"\0" * 12
NO_ATTRS = u32(0) + opaque(b"")  # fattr4: empty bitmap, no values
MODE_0600 = u32(2) + u32(0) + u32(1 << (33 - 32)) + opaque(u32(0o600))  # fattr4 {mode}
SIZE_0 = u32(1) + u32(1 << 4) + opaque(u64(0))  # fattr4 {size}
SIZE_10 = u32(1) + u32(1 << 4) + opaque(u64(10))


def txn(action, txnid=0):
    return u32(0x766E0001) + u32(action) + u64(txnid) + u32(0)


ONE, BEGIN, JOIN, COMMIT, ABORT, STATUS = 1, 2, 3, 4, 5, 6
PUTROOTFH = u32(24)
SAVEFH = u32(32)
GETATTR = u32(9) + u32(1) + u32(1 << 4 | 1 << 1)  # type, size


def lookup(name):
    return u32(15) + opaque(name)


def mkdir(name):
    return u32(6) + u32(2) + opaque(name) + NO_ATTRS  # CREATE NF4DIR


def symlink(name, target):
    return u32(6) + u32(5) + opaque(target) + opaque(name) + NO_ATTRS  # CREATE NF4LNK


def open_file(name, truncate=False):
    """OPEN with create (UNCHECKED4: an existing file is opened, cut to size 0 with `truncate`)."""
    how = u32(1) + u32(0) + (SIZE_0 if truncate else NO_ATTRS)
    return (u32(18) + u32(0) + u32(2) + u32(0)  # seqid, share access WRITE, deny none
            + u64(0) + opaque(b"fuzz-owner") + how + u32(0) + opaque(name))  # CLAIM_NULL


def write(offset, data):
    return u32(38) + CURRENT_STATEID + u64(offset) + u32(0) + opaque(data)  # UNSTABLE4


def read(offset, count):
    return u32(25) + CURRENT_STATEID + u64(offset) + u32(count)


CLOSE = u32(4) + u32(0) + CURRENT_STATEID


def setattr(attrs):
    return u32(34) + ANONYMOUS_STATEID + attrs


def remove(name):
    return u32(28) + opaque(name)


def rename(old, new):
    return u32(29) + opaque(old) + opaque(new)


def link(name):
    return u32(11) + opaque(name)


def copy(length):
    # COPY (RFC 7862): src and dst stateids, offsets, count, consecutive, synchronous, no source servers
    return u32(60) + CURRENT_STATEID + CURRENT_STATEID + u64(0) + u64(0) + u64(length) + u32(1) + u32(1) + u32(0)


SEEDS = {
    # One COMPOUND of creations and a write, then a failing LOOKUP: all of it rolled back.
    "txn-one-rollback": [txn(ONE), PUTROOTFH, mkdir(b"tdir"), PUTROOTFH, open_file(b"tfile"),
                         write(0, b"x" * 100), CLOSE, PUTROOTFH, symlink(b"tlink", b"file"),
                         PUTROOTFH, lookup(b"missing")],
    # Overwrite, attributes, remove, rename: committed.
    "txn-one-commit": [txn(ONE), PUTROOTFH, open_file(b"file", truncate=True), write(0, b"new bytes"), CLOSE,
                       setattr(MODE_0600), PUTROOTFH, remove(b"link"), PUTROOTFH, SAVEFH,
                       rename(b"dir", b"dir2"), GETATTR],
    # Truncate by SETATTR, then a hard link (saved: the file, current: the directory).
    "txn-one-setattr-link": [txn(ONE), PUTROOTFH, lookup(b"file"), setattr(SIZE_10), SAVEFH, PUTROOTFH,
                             link(b"file2"), GETATTR],
    # A COPY inside a transaction (source and destination the same file here).
    "txn-one-copy": [txn(ONE), PUTROOTFH, lookup(b"file"), SAVEFH, copy(5), GETATTR],
    # Reads inside a transaction see its own writes.
    "txn-one-read-own": [txn(ONE), PUTROOTFH, open_file(b"rfile"), write(0, b"abc"), read(0, 3), CLOSE],
    # A transaction spanning COMPOUNDs: begin, join, commit; and one aborted; and status.
    "txn-begin": [txn(BEGIN, 77), PUTROOTFH, mkdir(b"multi")],
    "txn-join": [txn(JOIN, 77), PUTROOTFH, lookup(b"multi"), open_file(b"f"), write(0, b"joined"), CLOSE],
    "txn-commit": [txn(COMMIT, 77), PUTROOTFH, lookup(b"dir"), remove(b"inner")],
    "txn-begin-abort": [txn(BEGIN, 78), PUTROOTFH, remove(b"file")],
    "txn-abort": [txn(ABORT, 78)],
    "txn-status": [txn(STATUS, 77)],
    # VNFS_TXN where it must not be: after another operation.
    "txn-misplaced": [PUTROOTFH, txn(ONE), GETATTR],
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, ops in SEEDS.items():
        assert len(ops) <= 127
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([len(ops) << 1 | 1]) + b"".join(ops))
    print(f"wrote {len(SEEDS)} seeds to {OUT}")


if __name__ == "__main__":
    main()
