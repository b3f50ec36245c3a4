#!/usr/bin/python3
"""Draws bench/results/rdma_io.json (written by the rdma_io benchmark): bandwidth and client
CPU seconds per GiB of direct reads against read size, one line per transport and queue
depth (papers/003 Figures 3-4 in spirit), and the many-small-files runs as bars.

    /usr/bin/python3 bench/plot_rdma_io.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/rdma_io.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    rows = data["results"]
    fig, (ax_bw, ax_cpu, ax_small) = plt.subplots(1, 3, figsize=(15, 4.2))
    for transport in sorted({r["transport"] for r in rows}):
        for depth in sorted({r["depth"] for r in rows}):
            mine = sorted((r for r in rows if r["transport"] == transport and r["depth"] == depth),
                          key=lambda r: r["size"])
            if not mine:
                continue
            sizes = [r["size"] / 1024 for r in mine]
            style = "-" if transport == "rdma" else "--"
            label = f"{transport}, depth {depth}"
            ax_bw.plot(sizes, [r["mib_per_second"] for r in mine], style, marker="o", label=label)
            ax_cpu.plot(sizes, [r["cpu_seconds_per_gib"] for r in mine], style, marker="o", label=label)
    for ax, title, unit in ((ax_bw, "read bandwidth", "MiB/s"), (ax_cpu, "client CPU per GiB", "CPU s/GiB")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("read size (KiB)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    ax_cpu.set_yscale("log")
    ax_bw.legend(fontsize=7)
    small = data.get("small_files", [])
    labels = [f'{s["transport"]}\n{s.get("mode", "scalar")}' for s in small]
    ax_small.bar(labels, [s["seconds"] for s in small])
    for i, s in enumerate(small):
        ax_small.annotate(f'{s["compounds"]} COMPOUNDs', (i, s["seconds"]), ha="center", va="bottom", fontsize=8)
    ax_small.set_ylabel("seconds")
    if small:
        ax_small.set_title(f'{small[0]["files"]} files of {small[0]["file_bytes"]} bytes')
    fig.suptitle("direct reads against vnfsd: TCP vs RPC-over-RDMA (cma)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("wrote", dst)


if __name__ == "__main__":
    main()
