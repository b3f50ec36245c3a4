#!/usr/bin/env python3
"""bench/txn_phases.py — where a transactional COMPOUND's time goes in vnfsd.

For each size it runs bench/txn_overhead (papers/002 Figure 4: 1,000 files written, then
overwritten, by one client at 0.2 ms RTT, plain against txn vnfsd) with uprobes on this
build's vnfsd around the steps of a transaction (vnfs::server::txn):
  plan     txn::plan up to end_plan(): the look-ahead (lookups, locks, backups copied)
  barrier  end_plan(): the backups and undo records made durable (write, fdatasync)
  ops      from the end of the barrier to commit(): the COMPOUND's operations
  commit   commit(): every change made durable (syncfs or fsyncs), the commit record
  server   the whole COMPOUND in dispatcher::handle (the steps, VNFS_TXN's start and end,
           decoding and encoding)
and reports, per size and pass (write = create, overwrite = truncate and rewrite), the
median of each step over the pass's COMPOUNDs, beside txn_overhead's milliseconds per COMPOUND of
plain and txn. The uprobes sit in the kernel (tracefs): no vnfsd code serves this bench.
Needs root and /sys/kernel/tracing; takes under a minute per size.

  python3 bench/txn_phases.py [--sizes 1K,4K,16K,64K,256K,1M,4M] [--repeats 3]
                              [--out bench/results/txn_phases.json]
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

TRACING = "/sys/kernel/tracing"
GROUP = "vnfs_txn_phases"
# probe name -> (mangled symbol prefix, entry or return)
PROBES = {
    "handle_in": ("_ZN4vnfs6server10dispatcher6handleERKNS0_12decoded_call", "p"),
    "handle_out": ("_ZN4vnfs6server10dispatcher6handleERKNS0_12decoded_call", "r"),
    "plan_in": ("_ZN4vnfs6server3txn4planERNS1_11transaction", "p"),
    "end_plan_in": ("_ZN4vnfs6server3txn11transaction8end_planEv", "p"),
    "end_plan_out": ("_ZN4vnfs6server3txn11transaction8end_planEv", "r"),
    "commit_in": ("_ZN4vnfs6server3txn11transaction6commitEv", "p"),
    "commit_out": ("_ZN4vnfs6server3txn11transaction6commitEv", "r"),
}
STEPS = ("server", "plan", "barrier", "ops", "commit")


def file_offset(binary, symbol_prefix):
    """The file offset of the function whose mangled name starts with symbol_prefix (not a
    .cold part): what a uprobe on a position-independent binary is given."""
    syms = subprocess.run(["nm", binary], check=True, capture_output=True, text=True).stdout
    hits = [l.split() for l in syms.splitlines()
            if len(l.split()) == 3 and l.split()[2].startswith(symbol_prefix)
            and not l.split()[2].endswith(".cold") and l.split()[1] in "Tt"]
    if len(hits) != 1:
        sys.exit(f"txn_phases.py: {len(hits)} symbols in {binary} start with {symbol_prefix}")
    vaddr = int(hits[0][0], 16)
    segs = subprocess.run(["readelf", "-lW", binary], check=True, capture_output=True, text=True).stdout
    for line in segs.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, va, size = int(f[1], 16), int(f[2], 16), int(f[5], 16)
            if va <= vaddr < va + size:
                return vaddr - va + off
    sys.exit(f"txn_phases.py: {symbol_prefix} is in no loaded segment of {binary}")


def write(path, text, append=False):
    # os.open: Python's append mode seeks to the end, which tracefs files refuse.
    fd = os.open(os.path.join(TRACING, path), os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def remove_probes():
    if not os.path.isdir(os.path.join(TRACING, "events", GROUP)):
        return
    write(f"events/{GROUP}/enable", "0")
    for name in PROBES:
        try:
            write("uprobe_events", f"-:{GROUP}/{name}\n", append=True)
        except OSError:
            pass


def add_probes(binary):
    remove_probes()
    for name, (sym, kind) in PROBES.items():
        write("uprobe_events", f"{kind}:{GROUP}/{name} {binary}:{file_offset(binary, sym):#x}\n", append=True)
    write("trace", "")  # clears the buffer
    write(f"events/{GROUP}/enable", "1")


EVENT = re.compile(r"\s(\d+\.\d+):\s+(\w+):")


def compounds(trace_text):
    """The transactional COMPOUNDs in the trace, in order: each a dict of step -> µs. One
    client's calls one after another, so the events of one COMPOUND do not interleave with
    another's; the plain server's COMPOUNDs (dispatcher::handle without a plan) are skipped."""
    out, cur = [], None
    for line in trace_text.splitlines():
        m = EVENT.search(line)
        if not m or m.group(2) not in PROBES:
            continue
        t, name = float(m.group(1)) * 1e6, m.group(2)
        if name == "handle_in":
            cur = {"handle_in": t}
        elif cur is not None:
            cur[name] = t
            if name == "handle_out":
                if all(k in cur for k in PROBES):
                    out.append({
                        "server": cur["handle_out"] - cur["handle_in"],
                        "plan": cur["end_plan_in"] - cur["plan_in"],
                        "barrier": cur["end_plan_out"] - cur["end_plan_in"],
                        "ops": cur["commit_in"] - cur["end_plan_out"],
                        "commit": cur["commit_out"] - cur["commit_in"],
                    })
                cur = None
    return out


def size_bytes(s):
    return int(s[:-1]) << {"K": 10, "M": 20}[s[-1]] if s[-1] in "KM" else int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1K,4K,16K,64K,256K,1M,4M",
                    help="file sizes (each a single-COMPOUND transaction per call: at most 4M)")
    ap.add_argument("--repeats", type=int, default=3, help="txn_overhead's repeats per size")
    ap.add_argument("--out", default="bench/results/txn_phases.json", help="JSON output file")
    ap.add_argument("--build", default="build/default",
                    help="build tree of txn_overhead and vnfsd (VNFSD_BIN names another vnfsd)")
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists(os.path.join(TRACING, "uprobe_events")):
        sys.exit("txn_phases.py: needs root and uprobes in /sys/kernel/tracing")
    vnfsd = os.path.abspath(os.environ.get("VNFSD_BIN", f"{a.build}/tools/vnfsd"))
    bench = f"{a.build}/bench/txn_overhead"
    for b in (vnfsd, bench):
        if not os.access(b, os.X_OK):
            sys.exit(f"txn_phases.py: {b} is not built (cmake --build --preset default)")
    for s in a.sizes.split(","):
        if size_bytes(s) > 4 << 20:
            sys.exit("txn_phases.py: sizes above 4M span COMPOUNDs; use at most 4M")

    points = []
    try:
        for s in a.sizes.split(","):
            add_probes(vnfsd)
            with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
                cmd = [bench, "--figures", "4", "--sizes", s, "--clients", "1", "--delays", "0.1",
                       "--repeats", str(a.repeats), "--out", tmp.name]
                print("txn_phases:", " ".join(cmd), file=sys.stderr, flush=True)
                subprocess.run(cmd, check=True, env=dict(os.environ, VNFSD_BIN=vnfsd),
                               stderr=subprocess.DEVNULL)
                write(f"events/{GROUP}/enable", "0")
                with open(os.path.join(TRACING, "trace")) as f:
                    seen = compounds(f.read())
                doc = json.load(open(tmp.name))
            pts = {(p["op"], p["mode"]): p for p in doc["points"]}
            calls = pts[("write", "txn")]["calls"]
            reps = len(pts[("write", "txn")]["samples"])
            # The last repeats x (write pass, overwrite pass) COMPOUNDs; before them only the
            # probes txn_overhead makes to find the batch.
            if len(seen) < 2 * calls * reps:
                sys.exit(f"txn_phases.py: {len(seen)} transactions traced at {s}, expected {2 * calls * reps}")
            seen = seen[len(seen) - 2 * calls * reps:]
            for k, op in enumerate(("write", "overwrite")):
                mine = [c for r in range(reps) for c in seen[(2 * r + k) * calls:(2 * r + k + 1) * calls]]
                plain, txn = pts[(op, "plain")], pts[(op, "txn")]
                points.append({
                    "op": op, "size": size_bytes(s), "files": txn["files"], "batch": txn["batch"],
                    "calls": calls, "repeats": reps,
                    "plain_ms_per_compound": plain["median_seconds"] / calls * 1e3,
                    "txn_ms_per_compound": txn["median_seconds"] / calls * 1e3,
                    "compounds_traced": len(mine),
                    "median_us": {st: statistics.median(c[st] for c in mine) for st in STEPS},
                })
                m = points[-1]
                print(f"txn_phases: {op:9} {s:>4}: plain {m['plain_ms_per_compound']:.2f} ms, txn "
                      f"{m['txn_ms_per_compound']:.2f} ms per COMPOUND; " +
                      ", ".join(f"{st} {m['median_us'][st] / 1e3:.2f}" for st in STEPS) + " ms",
                      file=sys.stderr, flush=True)
    finally:
        remove_probes()

    with open(a.out, "w") as f:
        json.dump({
            "benchmark": "txn_phases",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release},
            "command": "python3 bench/txn_phases.py --sizes " + a.sizes + " --repeats " + str(a.repeats),
            "note": "bench/txn_overhead --figures 4 --clients 1 --delays 0.1 (0.2 ms RTT) per size; "
                    "milliseconds per COMPOUND from its medians; steps: medians over the pass's "
                    "transactional COMPOUNDs, from uprobes on vnfsd (plan: txn::plan to end_plan; "
                    "barrier: end_plan; ops: end_plan to commit; commit: commit)",
            "points": points,
        }, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
