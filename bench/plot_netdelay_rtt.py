#!/usr/bin/python3
"""Draws bench/results/netdelay_rtt.json (written by the netdelay_rtt benchmark): the
round-trip time vnfs-netdelay adds (median, p10-p90 bars) against the 2 x D it should add,
and its one-connection throughput next to a direct connection.

    /usr/bin/python3 bench/plot_netdelay_rtt.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/netdelay_rtt.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    direct = next(r for r in data["rtt"] if r["path"] == "direct")
    proxied = sorted((r for r in data["rtt"] if r["path"] == "netdelay"), key=lambda r: r["delay_ms"])

    fig, (ax_rtt, ax_tp) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    xs = list(range(len(proxied)))
    base = direct["median_ms"]
    added = [r["median_ms"] - base for r in proxied]
    lo = [r["median_ms"] - r["p10_ms"] for r in proxied]
    hi = [r["p90_ms"] - r["median_ms"] for r in proxied]
    ax_rtt.bar([x - 0.2 for x in xs], [2 * r["delay_ms"] for r in proxied], width=0.4, label="2 x D (goal)",
               color="#bbbbbb")
    ax_rtt.bar([x + 0.2 for x in xs], added, width=0.4, yerr=[lo, hi], capsize=3, label="measured (median, p10-p90)")
    for x, a in zip(xs, added):
        ax_rtt.annotate(f"{a:.3f}", (x + 0.2, a), fontsize=8, textcoords="offset points", xytext=(0, 6), ha="center")
    ax_rtt.set_xticks(xs)
    ax_rtt.set_xticklabels([f"D = {r['delay_ms']:g} ms" for r in proxied])
    ax_rtt.set_ylabel(f"RTT added to a direct connection (ms; direct {base * 1000:.0f} us)")
    ax_rtt.legend()
    ax_rtt.grid(True, axis="y", alpha=0.3)

    tps = data["throughput"]
    labels = [("direct" if t["path"] == "direct" else f"netdelay D={t['delay_ms']:g}") for t in tps]
    meds = [t["median_gb_per_s"] for t in tps]
    ax_tp.bar(range(len(tps)), meds, color=["#bbbbbb" if t["path"] == "direct" else "C0" for t in tps])
    for i, t in enumerate(tps):
        ax_tp.plot([i] * len(t["gb_per_s"]), t["gb_per_s"], "k.", markersize=4)
        ax_tp.annotate(f"{meds[i]:.2f}", (i, meds[i]), fontsize=8, textcoords="offset points", xytext=(0, 6),
                       ha="center")
    ax_tp.set_xticks(range(len(tps)))
    ax_tp.set_xticklabels(labels, fontsize=8)
    ax_tp.set_ylabel("GB/s, one connection (median; dots: runs)")
    ax_tp.set_ylim(bottom=0)
    ax_tp.grid(True, axis="y", alpha=0.3)
    m = data.get("machine", {})
    fig.suptitle(f"vnfs-netdelay on loopback ({m.get('cpus', '?')} CPUs)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
