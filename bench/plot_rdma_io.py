#!/usr/bin/python3
"""Draws bench/results/rdma_io.json (written by the rdma_io benchmark) as papers/003 (DAFS)
draws Figures 3 and 4:

- PREFIX_fig3.png: read bandwidth (MB/s) against block size, left panel random reads without
  read-ahead (depth 1), right panel sequential reads with read-ahead (window W blocks);
- PREFIX_fig4.png: client CPU utilization (%, client CPU seconds / wall seconds) in the same
  two panels;
- PREFIX.png: the overview: client CPU seconds per GiB of every run (all depths and windows)
  and the many-small-files runs as bars.

TCP and RDMA (cma) are one line each; further depths or windows are extra, thinner lines.

    /usr/bin/python3 bench/plot_rdma_io.py [JSON] [PNG]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"tcp": dict(color="tab:blue", marker="s", label="TCP (nfs://)"),
         "rdma": dict(color="tab:red", marker="o", label="RPC-over-RDMA, cma (nfs+rdma://)")}


def size_label(n):
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"


def lines(rows, pattern):
    """{(transport, depth): rows sorted by size} for one pattern."""
    out = {}
    for r in rows:
        if r.get("pattern", "random") == pattern:
            out.setdefault((r["transport"], r["depth"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["size"]) for k, v in sorted(out.items())}


def paper_figure(data, key, ylabel, title, dst):
    rows = data["results"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for ax, pattern, name in ((axes[0], "random", "random reads, no read-ahead"),
                              (axes[1], "sequential", "sequential reads with read-ahead")):
        by = lines(rows, pattern)
        main_depth = min((d for _, d in by), default=None) if pattern == "random" else None
        for (transport, depth), mine in by.items():
            st = dict(STYLE.get(transport, dict(label=transport)))
            if pattern == "random":
                st["label"] = f"{st['label']}, depth {depth}"
                if depth != main_depth:
                    st.update(linewidth=0.8, alpha=0.5, markersize=3)
            else:
                st["label"] = f"{st['label']}, window {depth}"
            ax.plot([r["size"] for r in mine], [r[key] for r in mine], "-", **st)
        sizes = sorted({r["size"] for r in rows if r.get("pattern", "random") == pattern})
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([size_label(s) for s in sizes], fontsize=8)
        ax.set_xlabel("block size (bytes)")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        if by:
            ax.legend(fontsize=7)
    top = max((r[key] for r in rows), default=1)
    axes[0].set_ylim(0, top * 1.08)  # shared by both panels
    axes[0].set_ylabel(ylabel)
    fig.suptitle(f"{title} — vnfs::client against vnfsd on one {data['machine']['cpus']}-vCPU host "
                 f"({data['seconds_per_run']} s per point)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("wrote", dst)


def overview(data, dst):
    rows = data["results"]
    fig, (ax_cpu, ax_small) = plt.subplots(1, 2, figsize=(12, 4.2))
    for pattern, ls in (("random", "-"), ("sequential", "--")):
        for (transport, depth), mine in lines(rows, pattern).items():
            st = STYLE.get(transport, {})
            ax_cpu.plot([r["size"] / 1024 for r in mine], [r["cpu_seconds_per_gib"] for r in mine], ls,
                        color=st.get("color"), marker=st.get("marker", "o"), markersize=4,
                        label=f"{transport}, {pattern} {'depth' if pattern == 'random' else 'window'} {depth}")
    ax_cpu.set_xscale("log", base=2)
    ax_cpu.set_yscale("log")
    ax_cpu.set_xlabel("block size (KiB)")
    ax_cpu.set_ylabel("client CPU s/GiB")
    ax_cpu.set_title("client CPU per GiB read")
    ax_cpu.grid(True, alpha=0.3)
    ax_cpu.legend(fontsize=7)
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


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/rdma_io.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    with open(src) as f:
        data = json.load(f)
    stem = dst.rsplit(".", 1)[0]
    for r in data["results"]:  # files written before the paper's metrics were recorded
        r.setdefault("mb_per_second", r["mib_per_second"] * 1.048576)
        r.setdefault("cpu_utilization_percent", 100 * r["cpu_seconds"] / r["seconds"])
    paper_figure(data, "mb_per_second", "read bandwidth (MB/s)", "papers/003 Figure 3: read bandwidth",
                 stem + "_fig3.png")
    paper_figure(data, "cpu_utilization_percent", "client CPU utilization (% of one CPU)",
                 "papers/003 Figure 4: client CPU utilization", stem + "_fig4.png")
    overview(data, dst)


if __name__ == "__main__":
    main()
