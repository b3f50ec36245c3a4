#!/usr/bin/python3
"""Draws bench/results/compound_rate.json (written by the compound_rate benchmark) as a
grouped bar chart: COMPOUNDs per second per workload and connection count, one bar per server.

    /usr/bin/python3 bench/plot_compound_rate.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/compound_rate.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    rows = data["results"]
    servers = sorted({r["server"] for r in rows}, key=lambda s: (s != "vnfsd", s))
    groups = []
    for r in rows:
        key = (r["workload"], r["connections"])
        if key not in groups:
            groups.append(key)
    rate = {(r["server"], r["workload"], r["connections"]): r["compounds_per_second"] for r in rows}

    width = 0.8 / len(servers)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, server in enumerate(servers):
        xs = [g + i * width for g in range(len(groups))]
        ys = [rate.get((server, w, c), 0) for (w, c) in groups]
        bars = ax.bar(xs, ys, width, label=server)
        ax.bar_label(bars, labels=[f"{y / 1000:.1f}k" for y in ys], fontsize=8)
    ax.set_xticks([g + width * (len(servers) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"{w}\n{c} conn" for (w, c) in groups])
    ax.set_ylabel("COMPOUNDs per second")
    m = data.get("machine", {})
    ax.set_title(f"SEQUENCE+PUTFH+GETATTR / READ 4 KiB on loopback "
                 f"({m.get('cpus', '?')} CPUs, {data.get('seconds_per_run', '?')} s per run)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
