#!/usr/bin/env python3
"""Plots bench/bdb_fig7's JSON (papers/003 Figure 7): transactions per second and client CPU
per transaction against the database size in units of the Berkeley DB cache, one line per
configuration, and prints the goals of issue 13 checked against the numbers.

    bdb_fig7.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    res = json.load(open(sys.argv[1]))
    pts = res["points"]
    configs = list(dict.fromkeys(p["config"] for p in pts))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for c in configs:
        ps = [p for p in pts if p["config"] == c]
        x = [p["db_mib"] / p["cache_mib"] for p in ps]
        a.plot(x, [p["txn_per_s"] for p in ps], marker="o", label=c)
        b.plot(x, [p["cpu_us_per_txn"] for p in ps], marker="o", label=c)
    for ax, label in ((a, "transactions / s"), (b, "client CPU µs / transaction")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("database size / Berkeley DB cache size")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    fig.suptitle("Berkeley DB random read-only transactions, 16 KiB pages, %d MiB cache (papers/003 Fig. 7)"
                 % res["cache_mib"], fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)

    # The goals: within 5% of local disk while the database fits the cache; beyond it,
    # within 1.2 x of 1 / (misses per transaction x measured READ time).
    local = {round(p["db_mib"] / p["cache_mib"], 2): p for p in pts if p["config"] == "local"}
    for p in pts:
        if p["config"] == "local":
            continue
        r = round(p["db_mib"] / p["cache_mib"], 2)
        line = "%-17s %.2fx cache: %9.0f txn/s" % (p["config"], r, p["txn_per_s"])
        if p["misses_per_txn"] < 0.01 and r in local:
            line += ", %.1f%% of local disk" % (100 * p["txn_per_s"] / local[r]["txn_per_s"])
        elif p["config"] in res["read_seconds"]:
            model = 1 / (p["misses_per_txn"] * res["read_seconds"][p["config"]])
            line += ", %.3f misses/txn, model %.0f txn/s, ratio %.2f" % (p["misses_per_txn"], model, model / p["txn_per_s"])
        print(line)


if __name__ == "__main__":
    main()
