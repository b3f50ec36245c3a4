#!/usr/bin/python3
"""Draws bench/results/filebench_personalities.json (written by bench/filebench_personalities)
in the style of papers/000 Figure 12: the speedup of the vectorized flows over the scalar
flows against the RTT, one line per Filebench personality (the bar is the spread, min..max
over pairs of runs), and next to it the flows per second of each mode.

    /usr/bin/python3 bench/plot_filebench_personalities.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"nfs-server": "NFS-Server", "file-server": "File-Server", "varmail": "Varmail"}


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/filebench_personalities.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src[:-len(".json")] + ".png"
    with open(src) as f:
        data = json.load(f)
    names = []
    for r in data["speedups"]:
        if r["personality"] not in names:
            names.append(r["personality"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.4))
    for i, name in enumerate(names):
        rows = sorted((r for r in data["speedups"] if r["personality"] == name), key=lambda r: r["rtt_ms"])
        xs = [r["rtt_ms"] for r in rows]
        ys = [r["median"] for r in rows]
        err = [[r["median"] - r["min"] for r in rows], [r["max"] - r["median"] for r in rows]]
        cpf = {m: [p["median_compounds_per_flow"] for p in data["points"] if p["personality"] == name and p["mode"] == m]
               for m in ("scalar", "vec")}
        label = LABELS.get(name, name)
        if cpf["scalar"] and cpf["vec"]:
            label += f" ({max(cpf['scalar']):.0f} -> {max(cpf['vec']):.0f} COMPOUNDs/flow)"
        ax.errorbar(xs, ys, yerr=err, marker="os^"[i % 3], capsize=3, label=label)
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        color = ax.get_lines()[-1].get_color()
        for mode, style in (("vec", "-"), ("scalar", "--")):
            pts = sorted((p for p in data["points"] if p["personality"] == name and p["mode"] == mode),
                         key=lambda p: p["rtt_ms"])
            ax2.plot([p["rtt_ms"] for p in pts], [p["median_flows_per_second"] for p in pts], style, marker="os^"[i % 3],
                     color=color, label=f"{LABELS.get(name, name)} {'vectorized' if mode == 'vec' else 'scalar'}")
    ax.axhline(1, color="gray", linewidth=0.8)
    ax.set_xlabel("RTT (ms; 0 = no proxy)")
    ax.set_ylabel("speedup (vectorized / scalar flows per second)")
    ax.set_title("Filebench personalities: speedup of vectorized flows")
    ax.legend()
    ax.grid(alpha=0.3)
    ax2.set_yscale("log")
    ax2.set_xlabel("RTT (ms; 0 = no proxy)")
    ax2.set_ylabel("flows per second (median)")
    ax2.set_title("throughput")
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3, which="both")
    p = data["parameters"]
    fig.suptitle(f"papers/000 Figure 12 on vnfsd through vnfs-netdelay ({p['seconds_per_run']:g} s per run, "
                 f"{p['repeats']} pairs{', quick' if p['quick'] else ''})", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
