#!/usr/bin/env python3
"""Plots bench/tpie_fig5's JSON (papers/003 Figure 5): merge throughput and client CPU per MB
against the record size, one line per configuration, and prints the goals of issue 14 checked
against the numbers (one line per record size).

    tpie_fig5.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def by(points):
    """{(config, record_bytes): point}."""
    return {(p["config"], p["record_bytes"]): p for p in points}


def main():
    res = json.load(open(sys.argv[1]))
    pts = res["points"]
    configs = list(dict.fromkeys(p["config"] for p in pts))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for c in configs:
        ps = [p for p in pts if p["config"] == c]
        style = "--" if c.startswith("sync") else "-"
        x = [p["record_bytes"] for p in ps]
        a.plot(x, [p["mb_per_s"] for p in ps], style, marker="o", label=c)
        b.plot(x, [p["cpu_ms_per_mb"] for p in ps], style, marker="o", label=c)
    for ax, label in ((a, "merge throughput, MB/s (2·n·x·y / t)"), (b, "client CPU ms / MB")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("record size, bytes")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    fig.suptitle("Merge of %d sorted inputs of %d MiB through the TPIE accessor, %d KiB requests (papers/003 Fig. 5)"
                 % (res["inputs"], res["input_mib"], res["request_bytes"] >> 10), fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)

    # The goals: with read-ahead and write-behind through the delay, at least 1.4 x the
    # synchronous port (papers/003's +40%); at 0 ms, within 10% of local files.
    p = by(pts)
    for y in sorted({q["record_bytes"] for q in pts}):
        parts = []
        e, s = p.get(("engine-tcp-delay", y)), p.get(("sync-tcp-delay", y))
        if e and s:
            r = e["mb_per_s"] / s["mb_per_s"]
            parts.append("engine/sync at %.1f ms RTT %.2fx (goal >= 1.4: %s)"
                         % (2 * float(res["delay_ms_each_way"]), r, "yes" if r >= 1.4 else "NO"))
        for t in ("tcp", "cma"):
            e, loc = p.get(("engine-" + t, y)), p.get(("local", y))
            if e and loc:
                r = e["mb_per_s"] / loc["mb_per_s"]
                parts.append("engine-%s %.0f%% of local (goal >= 90%%: %s)" % (t, 100 * r, "yes" if r >= 0.9 else "NO"))
        print("%5d B records: %s" % (y, "; ".join(parts)))


if __name__ == "__main__":
    main()
