#!/usr/bin/python3
"""Generates the source tree of papers/000's statistics (53,640 files averaging 11.6 KB,
3,604 directories, 23 symlinks) scaled by SCALE, deterministically, under ROOT: directories
in a 4-ary hierarchy, files spread over them round robin, sizes 0..23,200 bytes, symlinks to
files. Prints "FILES DIRECTORIES SYMLINKS BYTES".

    /usr/bin/python3 bench/make_tree.py ROOT SCALE
"""
import os
import sys


def main():
    root, scale = sys.argv[1], float(sys.argv[2])
    nfiles = max(1, round(53640 * scale))
    ndirs = max(1, round(3604 * scale))
    nlinks = max(1, round(23 * scale))
    dirs = [root]
    for j in range(1, ndirs):
        dirs.append(os.path.join(dirs[(j - 1) // 4], f"d{j}"))
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    total = 0
    block = bytes(range(256)) * 100
    for i in range(nfiles):
        size = (i * 7919) % 23201
        with open(os.path.join(dirs[i % ndirs], f"f{i}.c"), "wb") as f:
            f.write((block * (size // len(block) + 1))[:size])
        total += size
    for k in range(nlinks):
        os.symlink(f"f{k}.c", os.path.join(dirs[k % ndirs], f"l{k}"))
    print(nfiles, ndirs, nlinks, total)


if __name__ == "__main__":
    main()
