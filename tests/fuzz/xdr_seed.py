"""XDR pieces (RFC 4506, big-endian) that the tests/fuzz/*_seeds.py scripts build seeds from."""
import struct


def words(*w):
    """Unsigned 32-bit integers, one after another."""
    return struct.pack(f">{len(w)}I", *w)


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def opaque(b):
    """A variable-length opaque: its length, the bytes, zeros to a multiple of four."""
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)
