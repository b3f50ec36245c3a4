#!/usr/bin/python3
"""Draws bench/results/vnfs_experiments.json (written by bench/vnfs_experiments) in the style
of papers/000 Figures 6-8, one PNG per figure next to the JSON:

- *_fig6.png: speedup of vectorized over scalar vnfs (reading, writing) against file size,
  one line per RTT; the bar is the spread (min..max over pairs of runs).
- *_fig7.png: seconds for N items against the compounding degree, per vectorized call.
- *_fig8.png: time per open-read-close iteration against file size, scalar vs one vread.

    /usr/bin/python3 bench/plot_vnfs_experiments.py [JSON]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def size_label(n):
    if n >= 1 << 20:
        return f"{n >> 20}M"
    if n >= 1 << 10:
        return f"{n >> 10}K"
    return str(n)


def fig6(data, dst):
    ratios = [r for r in data["speedups"] if r["figure"] == "6"]
    if not ratios:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, op in zip(axes, ("read", "write")):
        mine = [r for r in ratios if r["op"] == op]
        for rtt in sorted({r["rtt_ms"] for r in mine}):
            rows = sorted((r for r in mine if r["rtt_ms"] == rtt), key=lambda r: r["size"])
            xs = [r["size"] for r in rows]
            ys = [r["median"] for r in rows]
            err = [[r["median"] - r["min"] for r in rows], [r["max"] - r["median"] for r in rows]]
            label = "no proxy" if rtt == 0 else f"{rtt:g} ms RTT"
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({r["size"] for r in mine})
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks])
        ax.axhline(1, color="gray", lw=0.8)
        ax.set_xlabel("file size")
        ax.set_title(f"{ {'read': 'reading', 'write': 'writing'}[op]} files: vectorized vs scalar vnfs")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("speedup (scalar s / vectorized s)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


def fig7(data, dst):
    pts = [p for p in data["points"] if p["figure"] == "7"]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for op in ("vread", "vgetattrs", "vwrite"):
        rows = sorted((p for p in pts if p["op"] == op), key=lambda p: p["degree"])
        if not rows:
            continue
        xs = [p["degree"] for p in rows]
        ys = [p["median_seconds"] for p in rows]
        err = [[p["median_seconds"] - p["min_seconds"] for p in rows], [p["max_seconds"] - p["median_seconds"] for p in rows]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=op)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    degrees = sorted({p["degree"] for p in pts})
    ax.set_xticks(degrees)
    ax.set_xticklabels([str(k) for k in degrees])
    ax.set_xlabel("compounding degree (items per call)")
    ax.set_ylabel(f"seconds for {pts[0]['files']} items")
    ax.set_title(f"Compounding degree at {pts[0]['rtt_ms']:g} ms RTT")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


def fig8(data, dst):
    pts = [p for p in data["points"] if p["figure"] == "8"]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for mode, label in (("scalar", "open, read, close (scalar)"), ("vec", "one vread")):
        rows = sorted((p for p in pts if p["mode"] == mode), key=lambda p: p["size"])
        xs = [p["size"] for p in rows]
        ys = [p["median_seconds"] / p["iterations"] * 1000 for p in rows]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted({p["size"] for p in pts})
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks])
    ax.set_xlabel("file size")
    ax.set_ylabel("ms per iteration")
    ax.set_title(f"Open-read-close one file at {pts[0]['rtt_ms']:g} ms RTT")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/vnfs_experiments.json"
    base = src.rsplit(".", 1)[0]
    with open(src) as f:
        data = json.load(f)
    fig6(data, base + "_fig6.png")
    fig7(data, base + "_fig7.png")
    fig8(data, base + "_fig8.png")


if __name__ == "__main__":
    main()
