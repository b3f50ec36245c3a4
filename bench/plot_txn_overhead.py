#!/usr/bin/python3
"""Draws bench/results/txn_overhead.json (bench/txn_overhead) and txn_tree.json
(bench/txn_tree.sh) in the manner of papers/002 Figures 4-6 and 11-14, as one PNG of six
panels (lines instead of the paper's 3D bars; the bars are min..max over repeats):

(a) Fig. 4: one client, txn seconds / plain seconds against file size (higher is worse).
(b) Fig. 5: the most clients, relative throughput plain seconds / txn seconds (higher is better).
(c) Fig. 6: MB/s against clients for some sizes, plain and txn.
(d) Fig. 11: reading back, relative throughput.
(e) Fig. 12: one client, no proxy, slowdown against files per call (compounding degree).
(f) Figs. 13-14: cp -r, ls -lR, tar -x, rm -r of a tree: txn seconds / plain seconds.

    /usr/bin/python3 bench/plot_txn_overhead.py [JSON [TREE_JSON [PNG]]]
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from txn_ratios import find, keys, ratio, tree_ratio  # noqa: E402


def size_label(n):
    if n >= 1 << 20:
        return f"{n >> 20}M"
    if n >= 1 << 10:
        return f"{n >> 10}K"
    return str(n)


def errline(ax, xs, rs, label, invert=False, **kw):
    """Plots medians with min..max bars; rs are (median, min, max) or None."""
    pts = [(x, r) for x, r in zip(xs, rs) if r]
    if not pts:
        return
    if invert:
        pts = [(x, (1 / r[0], 1 / r[2], 1 / r[1])) for x, r in pts]
    ys = [r[0] for _, r in pts]
    err = [[r[0] - r[1] for _, r in pts], [r[2] - r[0] for _, r in pts]]
    ax.errorbar([x for x, _ in pts], ys, yerr=err, marker="o", capsize=3, label=label, **kw)


def size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes], fontsize=8)
    ax.set_xlabel("file size")
    ax.grid(True, which="both", alpha=0.3)


def by_size(pts, op, clients, delay, invert, ax):
    sizes = sorted({p["size"] for p in pts if p["figure"] == "4"})
    rs = [ratio(pts, figure="4", op=op, clients=clients, delay_ms=delay, size=s) for s in sizes]
    rtt = 2 * float(delay)
    errline(ax, sizes, rs, f"{op}, {rtt:g} ms", invert=invert, ls="-" if op != "overwrite" else "--")
    return sizes


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/txn_overhead.json"
    tree_src = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(src), "txn_tree.json")
    dst = sys.argv[3] if len(sys.argv) > 3 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    tree = None
    if os.path.exists(tree_src):
        with open(tree_src) as f:
            tree = json.load(f)
    pts = data["points"]
    delays = [d for (d,) in keys(pts, "4", "delay_ms")]
    counts = sorted({c for (c,) in keys(pts, "4", "clients")})
    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    (a, b, c), (d, e, f) = axes

    sizes = []
    for op in ("write", "overwrite"):
        for delay in delays:
            sizes = by_size(pts, op, 1, delay, False, a)
    if sizes:
        size_axis(a, sizes)
    a.axhline(1, color="gray", lw=0.8)
    a.set_ylabel("txn s / plain s")
    a.set_title("(a) Fig. 4: 1 client writes (lower is better)")
    a.legend(fontsize=8)

    many = max(counts) if counts else 0
    for op in ("write", "overwrite"):
        for delay in delays:
            by_size(pts, op, many, delay, True, b)
    if sizes:
        size_axis(b, sizes)
    b.axhline(1, color="gray", lw=0.8)
    b.set_ylabel("relative throughput (plain s / txn s)")
    b.set_title(f"(b) Fig. 5: {many} clients write (higher is better)")
    b.legend(fontsize=8)

    if delays:
        shown = [s for s in (1024, 64 << 10, 1 << 20, 16 << 20) if s in sizes]
        for i, s in enumerate(shown):
            for mode, ls in (("plain", "-"), ("txn", "--")):
                xs, ys = [], []
                for n in counts:
                    p = find(pts, figure="4", op="write", mode=mode, clients=n, delay_ms=delays[0], size=s)
                    if p and p["median_seconds"] > 0:
                        xs.append(n)
                        ys.append(p["files"] * s / p["median_seconds"] / 1e6)
                c.plot(xs, ys, marker="o", ls=ls, color=f"C{i}", label=f"{mode} {size_label(s)}")
        c.set_xticks(counts)
        c.set_yscale("log")
        c.set_xlabel("clients")
        c.set_ylabel("MB/s written")
        c.set_title(f"(c) Fig. 6: write throughput, {2 * float(delays[0]):g} ms RTT")
        c.grid(True, which="both", alpha=0.3)
        c.legend(fontsize=7, ncol=2)

    for n in counts:
        for delay in delays:
            rs = [ratio(pts, figure="4", op="read", clients=n, delay_ms=delay, size=s) for s in sizes]
            errline(d, sizes, rs, f"{n} client{'s' if n > 1 else ''}, {2 * float(delay):g} ms", invert=True)
    if sizes:
        size_axis(d, sizes)
    d.axhline(1, color="gray", lw=0.8)
    d.set_ylabel("relative throughput (plain s / txn s)")
    d.set_title("(d) Fig. 11: reading the files back (higher is better)")
    d.legend(fontsize=8)

    for (s,) in keys(pts, "12", "size"):
        degs = sorted({p["batch"] for p in pts if p["figure"] == "12" and p["size"] == s})
        rs = [ratio(pts, figure="12", size=s, batch=k) for k in degs]
        errline(e, degs, rs, f"{size_label(s)} files")
    e.set_xscale("log", base=2)
    e.axhline(1, color="gray", lw=0.8)
    e.set_xlabel("files per call (one COMPOUND, one transaction)")
    e.set_ylabel("txn s / plain s")
    e.set_title("(e) Fig. 12: compounding degree, 1 client, no proxy")
    e.grid(True, which="both", alpha=0.3)
    e.legend(fontsize=8)

    if tree:
        cmds = ["cp-r", "ls-lR", "tar-x", "rm-r"]
        rtts = sorted({r["rtt_ms"] for r in tree["results"]})
        width = 0.8 / max(1, len(rtts))
        for i, rtt in enumerate(rtts):
            rs = [tree_ratio(tree, "txn", "plain", cmd, rtt) for cmd in cmds]
            ys = [r[0] if r else 0 for r in rs]
            bars = f.bar([j + i * width for j in range(len(cmds))], ys, width, label=f"{rtt:g} ms RTT")
            f.bar_label(bars, labels=[f"{y:.2f}" for y in ys], fontsize=8)
        f.set_xticks([j + width * (len(rtts) - 1) / 2 for j in range(len(cmds))])
        f.set_xticklabels(["cp -r\n(--atomic)", "ls -lR", "tar -x\n(--atomic)", "rm -r"])
        f.axhline(1, color="gray", lw=0.8)
        f.set_ylabel("txn s / plain s")
        f.set_title(f"(f) Figs. 13-14: a tree of {tree['files']} files (lower is better)")
        f.legend(fontsize=8)
    m = data.get("machine", {})
    fig.suptitle(f"Transactional vs non-transactional vnfsd, the same vnfs client ({m.get('cpus', '?')} CPUs, "
                 f"loopback + vnfs-netdelay)")
    fig.tight_layout()
    fig.savefig(dst, dpi=100)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
