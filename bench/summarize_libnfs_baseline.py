#!/usr/bin/python3
"""Prints a table of the libnfs baseline runs written by bench/baseline_netns.sh
(OUT_DIR/libnfs_baseline-direct.json, OUT_DIR/libnfs_baseline-netdelay-D.json): median time
per phase and per file at each one-way delay D, and the round trips per phase (and per
file) that the times imply. libnfs does not count its RPCs, so the estimate is
(t(D) - t(0)) / 2D: the extra time at delay D divided by the RTT the proxy adds
(bench/netdelay_rtt measures how closely it adds 2D).

    /usr/bin/python3 bench/summarize_libnfs_baseline.py [OUT_DIR]
"""
import glob
import json
import os
import sys


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    runs = {}
    for path in glob.glob(os.path.join(out_dir, "libnfs_baseline-netdelay-*.json")):
        with open(path) as f:
            data = json.load(f)
        d = float(os.path.basename(path)[len("libnfs_baseline-netdelay-"):-len(".json")])
        runs[d] = data
    if 0.0 not in runs:
        sys.exit(f"no libnfs_baseline-netdelay-0.json in {out_dir}")
    base = {p["phase"]: p["median_seconds"] for p in runs[0.0]["phases"]}
    print(f"{'phase':8} {'D ms':>6} {'median s':>10} {'ms/file':>9} {'calls/file':>11} {'RTs':>8} {'RTs/file':>9}")
    for d in sorted(runs):
        data = runs[d]
        files = data["parameters"]["files"]
        for p in data["phases"]:
            per_file = p["median_seconds"] / files * 1000
            calls = p["calls_total"] / files
            total = "" if d == 0 else (p["median_seconds"] - base[p["phase"]]) / (2 * d / 1000)
            rts = "" if d == 0 else f"{total:.1f}"
            rts_file = "" if d == 0 else f"{total / files:.2f}"
            print(f"{p['phase']:8} {d:6g} {p['median_seconds']:10.4f} {per_file:9.3f} {calls:11.2f} {rts:>8} {rts_file:>9}")


if __name__ == "__main__":
    main()
