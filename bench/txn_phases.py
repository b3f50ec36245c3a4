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
           decoding and encoding); also measured for the plain server's COMPOUNDs
and reports, per size and pass (write = create, overwrite = truncate and rewrite), the
median of each step over the pass's COMPOUNDs, beside txn_overhead's milliseconds per COMPOUND of
plain and txn. It also times what any durable commit of such a COMPOUND costs at least on
this file system, whatever its design: one fdatasync of its bytes (files per COMPOUND x size)
just written over allocated blocks of one file (device), in the directory the exports live
in (TMPDIR). The uprobes sit in the kernel (tracefs): no vnfsd code serves this bench.
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
import time

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
    # Inside commit: the journal's write and flush (transaction::barrier, which end_plan calls
    # too), and the apply of the redo records.
    "journal_in": ("_ZN4vnfs6server3txn11transaction7barrierEv", "p"),
    "journal_out": ("_ZN4vnfs6server3txn11transaction7barrierEv", "r"),
    "apply_in": ("_ZN4vnfs6server3txn11transaction10apply_redoEv", "p"),
    "apply_out": ("_ZN4vnfs6server3txn11transaction10apply_redoEv", "r"),
}
# Probes every transactional COMPOUND passes; the others fire only in some (no redo: no apply).
REQUIRED = ("handle_in", "handle_out", "plan_in", "end_plan_in", "end_plan_out", "commit_in", "commit_out")
STEPS = ("server", "plan", "barrier", "ops", "commit", "commit_journal", "commit_apply")


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
    write("options/record-tgid", "0")
    for name in PROBES:
        try:
            write("uprobe_events", f"-:{GROUP}/{name}\n", append=True)
        except OSError:
            pass


def add_probes(binary):
    remove_probes()
    for name, (sym, kind) in PROBES.items():
        write("uprobe_events", f"{kind}:{GROUP}/{name} {binary}:{file_offset(binary, sym):#x}\n", append=True)
    write("options/record-tgid", "1")  # the process of each event: plain or txn vnfsd
    write("trace", "")  # clears the buffer
    write(f"events/{GROUP}/enable", "1")


# "vnfsd-TID (TGID) [CPU] FLAGS SECONDS: PROBE:" (options/record-tgid)
EVENT = re.compile(r"-(\d+)\s+\(\s*(\d+)\)\s+\[\d+\]\s+\S+\s+(\d+\.\d+):\s+(\w+):")


def spans(trace_text):
    """Every COMPOUND the traced vnfsd processes handled, by process id, in order: dicts with
    its start and "server" (µs), and for a transactional one each step's µs."""
    out, cur = {}, {}
    for line in trace_text.splitlines():
        m = EVENT.search(line)
        if not m or m.group(4) not in PROBES:
            continue
        tid, pid, t, name = int(m.group(1)), int(m.group(2)), float(m.group(3)) * 1e6, m.group(4)
        if name == "handle_in":
            cur[tid] = {"handle_in": t}
        elif tid in cur:
            c = cur[tid]
            # The steps inside commit: their time once commit began (0 where none ran).
            if name in ("journal_out", "apply_out") and "commit_in" in c and name[:-4] + "_in" in c:
                step = "commit_" + name[:-4]
                c[step] = c.get(step, 0.0) + t - c[name[:-4] + "_in"]
            c[name] = t
            if name == "handle_out":
                span = {"start": c["handle_in"], "server": t - c["handle_in"]}
                if all(k in c for k in REQUIRED):
                    span.update(plan=c["end_plan_in"] - c["plan_in"],
                                barrier=c["end_plan_out"] - c["end_plan_in"],
                                ops=c["commit_in"] - c["end_plan_out"],
                                commit=c["commit_out"] - c["commit_in"],
                                commit_journal=c.get("commit_journal", 0.0),
                                commit_apply=c.get("commit_apply", 0.0))
                out.setdefault(pid, []).append(span)
                del cur[tid]
    return out


def pass_spans(by_pid, calls, reps, size):
    """The COMPOUNDs of the timed passes, repeat by repeat (write pass, then overwrite pass):
    the txn server's (each with its steps) and the plain server's."""
    txn_pids = [p for p, ss in by_pid.items() if any("plan" in x for x in ss)]
    if len(txn_pids) != 1:
        sys.exit(f"txn_phases.py: {len(txn_pids)} processes ran transactions at {size}, expected 1")
    # Before the timed passes, only the probes txn_overhead makes to find the batch.
    txn = [x for x in by_pid[txn_pids[0]] if "plan" in x]
    if len(txn) < 2 * calls * reps:
        sys.exit(f"txn_phases.py: {len(txn)} transactions traced at {size}, expected {2 * calls * reps}")
    txn = txn[len(txn) - 2 * calls * reps:]
    # txn_overhead connects to plain, durable and txn in this order, and in each repeat runs
    # plain's passes, then durable's, then txn's: plain's are the last 2 x calls COMPOUNDs of
    # the plain server before txn's of the same repeat. SEQUENCE-only ones (lease renewals,
    # set-up) are far shorter than a pass's and left out.
    others = sorted((p for p in by_pid if p != txn_pids[0]), key=lambda p: by_pid[p][0]["start"])
    plain, after = [], float("-inf")
    for r in range(reps):
        first = txn[2 * r * calls]["start"]
        window = [x for x in by_pid[others[0]] if after < x["start"] < first and x["server"] >= 100]
        if len(window) < 2 * calls:
            sys.exit(f"txn_phases.py: {len(window)} plain COMPOUNDs in repeat {r} at {size}, expected {2 * calls}")
        plain += window[len(window) - 2 * calls:]
        after = txn[2 * (r + 1) * calls - 1]["start"]
    return txn, plain


def device_us(nbytes, rounds=15):
    """Median microseconds of one fdatasync of `nbytes` just written over already allocated
    blocks of one file on the exports' file system (tempfile's directory, as txn_overhead's):
    the least a commit that makes a COMPOUND's bytes durable, dirty in the page cache however
    they got there, waits for the device. The write itself is not timed (plain pays it too)."""
    size = max(64 << 20, 4 * nbytes)
    block = os.urandom(1 << 20)
    data = (block * (nbytes // len(block) + 1))[:nbytes]
    times = []
    with tempfile.NamedTemporaryFile(prefix="txn-phases-device-") as f:
        fd = f.fileno()
        for off in range(0, size, len(block)):  # allocated and on disk before timing
            os.pwrite(fd, block, off)
        os.fsync(fd)
        for r in range(rounds):
            off = (r * nbytes) % (size - nbytes + 1)
            os.pwrite(fd, data, off)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def size_bytes(s):
    m = re.fullmatch(r"(\d+)([KM]?)", s)
    if not m:
        sys.exit(f"txn_phases.py: bad size '{s}' (bytes, or a number with K or M)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20}[m.group(2)]


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
                run = subprocess.run(cmd, env=dict(os.environ, VNFSD_BIN=vnfsd), stderr=subprocess.PIPE, text=True)
                if run.returncode != 0:
                    sys.exit(f"txn_phases.py: txn_overhead failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
                write(f"events/{GROUP}/enable", "0")
                with open(os.path.join(TRACING, "trace")) as f:
                    by_pid = spans(f.read())
                doc = json.load(open(tmp.name))
            pts = {(p["op"], p["mode"]): p for p in doc["points"]}
            calls = pts[("write", "txn")]["calls"]
            reps = len(pts[("write", "txn")]["samples"])
            txn_spans, plain_spans = pass_spans(by_pid, calls, reps, s)
            for k, op in enumerate(("write", "overwrite")):
                def of(lst):
                    return [c for r in range(reps) for c in lst[(2 * r + k) * calls:(2 * r + k + 1) * calls]]
                mine = of(txn_spans)
                plain, txn = pts[(op, "plain")], pts[(op, "txn")]
                points.append({
                    "op": op, "size": size_bytes(s), "files": txn["files"], "batch": txn["batch"],
                    "calls": calls, "repeats": reps,
                    "plain_ms_per_compound": plain["median_seconds"] / calls * 1e3,
                    "txn_ms_per_compound": txn["median_seconds"] / calls * 1e3,
                    "compounds_traced": len(mine),
                    "median_us": {st: statistics.median(c[st] for c in mine) for st in STEPS},
                    "plain_server_median_us": statistics.median(c["server"] for c in of(plain_spans)),
                    "device_us": device_us(txn["batch"] * size_bytes(s)),
                })
                m = points[-1]
                print(f"txn_phases: {op:9} {s:>4}: plain {m['plain_ms_per_compound']:.2f} ms, txn "
                      f"{m['txn_ms_per_compound']:.2f} ms per COMPOUND; " +
                      ", ".join(f"{st} {m['median_us'][st] / 1e3:.2f}" for st in STEPS) +
                      f" ms; plain server {m['plain_server_median_us'] / 1e3:.2f} ms; device "
                      f"{m['device_us'] / 1e3:.2f} ms",
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
                    "transactional COMPOUNDs, from uprobes on vnfsd (server: dispatcher::handle; plan: "
                    "txn::plan to end_plan; barrier: end_plan; ops: end_plan to commit; commit: commit, and "
                    "in it commit_journal: the journal's write and flush, commit_apply: the apply of "
                    "the redo records); "
                    "plain_server_median_us: dispatcher::handle of the plain server's COMPOUNDs of the pass; "
                    "device_us: median time of one fdatasync of files per COMPOUND x size bytes just written "
                    "over allocated blocks of one file in the exports' directory",
            "points": points,
        }, f, indent=1)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
