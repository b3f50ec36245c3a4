#!/usr/bin/env python3
"""A/B of two (or more) vnfsd builds on bench/txn_overhead, in turns.

    python3 bench/txn_ab.py --turns 3 --out-dir DIR OLD/vnfsd NEW/vnfsd -- \\
        --figures 4 --clients 1 --delays 0.1 --sizes 64K,256K,1M --repeats 3

Runs build/default/bench/txn_overhead once per binary per turn, the binaries taking turns
(A B A B ...), each with VNFSD_BIN naming it and the arguments after `--`; writes each
run's JSON to DIR/<label>_<turn>.json and prints, per point, the median over the turns of
each run's txn / plain ratio (itself the median over its repeats), with every turn's
value. On this shared two-core VM the layout of a binary alone moves some points by up
to a fifth (docs/transactions.md), so a difference means something only when it holds
turn after turn. Writes DIR/summary.json too.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from txn_ratios import keys, ratio  # noqa: E402


def labels_of(binaries):
    """A label per binary: its file name, or its folder and file name where names repeat."""
    names = [os.path.basename(b) for b in binaries]
    if len(set(names)) == len(names):
        return names
    return [os.path.basename(os.path.dirname(os.path.abspath(b))) + "-" + n for b, n in zip(binaries, names)]


def size_text(n):
    """1024 → "1 KiB", 4194304 → "4 MiB"."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main():
    argv = sys.argv[1:]
    bench_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="vnfsd binaries to compare (two or more)")
    ap.add_argument("--turns", type=int, default=3, help="runs of each binary (1..20)")
    ap.add_argument("--out-dir", required=True, help="where the runs' JSON files go")
    ap.add_argument("--bench", default="build/default/bench/txn_overhead", help="the txn_overhead binary")
    a = ap.parse_args(own)
    if len(a.binaries) < 2 or not 1 <= a.turns <= 20:
        sys.exit("txn_ab.py: give two or more vnfsd binaries and --turns 1..20")
    for b in a.binaries + [a.bench]:
        if not os.access(b, os.X_OK):
            sys.exit(f"txn_ab.py: {b} is not an executable")
    if "--out" in bench_args:
        sys.exit("txn_ab.py: --out is this script's to set (see --out-dir)")
    os.makedirs(a.out_dir, exist_ok=True)
    labels = labels_of(a.binaries)

    runs = {label: [] for label in labels}
    for turn in range(1, a.turns + 1):
        for binary, label in zip(a.binaries, labels):
            out = os.path.join(a.out_dir, f"{label}_{turn}.json")
            print(f"txn_ab: turn {turn}/{a.turns}: {label}", file=sys.stderr, flush=True)
            env = dict(os.environ, VNFSD_BIN=os.path.abspath(binary))
            done = subprocess.run([a.bench, *bench_args, "--out", out], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                sys.exit(f"txn_ab.py: {a.bench} with {binary} failed ({done.returncode}):\n{done.stderr[-2000:]}")
            with open(out) as f:
                runs[label].append(json.load(f)["points"])

    first = runs[labels[0]][0]
    rows = []
    for figure in sorted({p["figure"] for p in first}):
        for op, size, clients, delay in keys(first, figure, "op", "size", "clients", "delay_ms"):
            row = {"figure": figure, "op": op, "size": size, "clients": clients, "delay_ms": delay}
            for label in labels:
                per_turn = [r[0] for r in (ratio(points, figure=figure, op=op, size=size, clients=clients,
                                                  delay_ms=delay) for points in runs[label]) if r]
                row[label] = {"median": statistics.median(per_turn) if per_turn else None, "turns": per_turn}
            rows.append(row)
    with open(os.path.join(a.out_dir, "summary.json"), "w") as f:
        json.dump({"binaries": dict(zip(labels, a.binaries)), "turns": a.turns, "txn_overhead_args": bench_args,
                   "rows": rows}, f, indent=1)

    print("txn / plain, median over the turns (each turn's value in brackets)")
    print("| op | size | clients | delay ms | " + " | ".join(labels) + " |")
    print("|---|---|---|---|" + "---|" * len(labels))
    for row in rows:
        cells = []
        for label in labels:
            c = row[label]
            cells.append("-" if c["median"] is None else
                         f"{c['median']:.2f} ({' '.join(f'{x:.2f}' for x in c['turns'])})")
        print(f"| {row['op']} | {size_text(row['size'])} | {row['clients']} | {row['delay_ms']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
