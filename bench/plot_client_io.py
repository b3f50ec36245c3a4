#!/usr/bin/python3
"""Draws bench/results/client_io.json (written by the client_io benchmark): IOPS and client
CPU seconds per GiB of 4 KiB random reads against queue depth, one line per kind of memory
(registered: direct receive; plain: received into a library buffer and copied; sync: one
synchronous pread into registered memory after another, a single point at depth 1).

    /usr/bin/python3 bench/plot_client_io.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/client_io.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    rows = data["results"]
    modes = sorted({r["mode"] for r in rows}, key=lambda m: (m != "registered", m))

    fig, (ax_iops, ax_cpu) = plt.subplots(1, 2, figsize=(10, 4.2))
    for mode in modes:
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["depth"])
        depths = [r["depth"] for r in mine]
        ax_iops.plot(depths, [r["iops"] for r in mine], marker="o", label=mode)
        ax_cpu.plot(depths, [r["cpu_seconds_per_gib"] for r in mine], marker="o", label=mode)
        for r in mine:
            ax_iops.annotate(f"{r['iops'] / 1000:.1f}k", (r["depth"], r["iops"]), fontsize=8,
                             textcoords="offset points", xytext=(0, 5), ha="center")
    all_depths = sorted({r["depth"] for r in rows})
    for ax in (ax_iops, ax_cpu):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_depths)
        ax.set_xticklabels([str(d) for d in all_depths])
        ax.set_xlabel("reads in flight (queue depth)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    ax_iops.set_ylabel("4 KiB reads per second")
    ax_cpu.set_ylabel("client CPU seconds per GiB read")
    m = data.get("machine", {})
    fig.suptitle(f"vnfs::client 4 KiB random reads from vnfsd on loopback "
                 f"({m.get('cpus', '?')} CPUs, {data.get('seconds_per_run', '?')} s per run)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
