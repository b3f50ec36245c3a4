#!/usr/bin/python3
"""Writes bench/README.md: tables of the latest results in bench/results/ (vnfs_experiments.json,
the libnfs baseline files, cli_copy.json, netdelay_rtt.json), the goals of issue 6 checked
against them, and the command that produced them.

    /usr/bin/python3 bench/make_readme.py [RESULTS_DIR] [README] [COMMAND...]

The model of a vectorized run is COMPOUNDs x RTT + server time, where RTT is the nominal
2 x delay-ms and the server time is the same run without the proxy (delay "direct").
COMPOUNDs of one call may be in flight together, so the model is an upper bound there.
"""
import glob
import json
import math
import os
import statistics
import sys


def size_label(n):
    if n >= 1 << 20:
        return f"{n >> 20} MiB"
    if n >= 1 << 10:
        return f"{n >> 10} KiB"
    return f"{n} B"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fx(x):
    return f"{x:.0f}x" if x >= 10 else f"{x:.2g}x"


def fmt_s(x):
    return f"{x:.4f}" if x < 10 else f"{x:.2f}"


def tree_rows(ct):
    """cli_tree.json as (command, rtt, (median s, median COMPOUNDs) vectorized, the same --scalar,
    sorted scalar/vectorized ratios of the runs that have both)."""
    keys = []
    for r in ct["results"]:
        if (r["command"], r["rtt_ms"]) not in keys:
            keys.append((r["command"], r["rtt_ms"]))
    for cmd, rtt in keys:
        by_mode = {}
        for mode in ("vectorized", "scalar"):
            by_mode[mode] = {r["run"]: r["stats"] for r in ct["results"]
                             if r["command"] == cmd and r["rtt_ms"] == rtt and r["mode"] == mode}
        cell = {}
        for mode, runs in by_mode.items():
            secs = sorted(x["seconds"] for x in runs.values())
            comps = sorted(x["compounds"] for x in runs.values())
            cell[mode] = (statistics.median(secs), statistics.median(comps)) if runs else None
        ratios = sorted(by_mode["scalar"][k]["seconds"] / by_mode["vectorized"][k]["seconds"]
                        for k in by_mode["vectorized"] if k in by_mode["scalar"] and by_mode["vectorized"][k]["seconds"] > 0)
        yield cmd, rtt, cell["vectorized"], cell["scalar"], ratios


def model_points(ex):
    """(vectorized time / model, point) of every vnfsd vectorized Figure 6 point with a direct run."""
    pts = ex["points"]
    out = []
    for q in pts:
        if q["figure"] != "6" or q["mode"] != "vec" or q["delay_ms"] == "direct" or q["server"] != "vnfsd":
            continue
        d = next((x for x in pts if x["figure"] == "6" and x["server"] == "vnfsd" and x["op"] == q["op"]
                  and x["size"] == q["size"] and x["delay_ms"] == "direct" and x["mode"] == "vec"), None)
        if d:
            out.append((q["median_seconds"] / (q["median_compounds"] * q["rtt_ms"] / 1000 + d["median_seconds"]), q))
    return out


def model_excess_sentence(ex):
    """Which points exceed the model by more than 10%, from the data."""
    over = [(x, q) for x, q in model_points(ex) if x > 1.1]
    if not over:
        return "- Every vnfsd vectorized point of Figure 6 is within 1.1x of the model."
    names = ", ".join(f"{q['op']} {size_label(q['size'])} at {q['rtt_ms']:g} ms ({x:.2f}x)" for x, q in sorted(over, key=lambda t: -t[0]))
    return f"- Points above 1.1x the model: {names}."


def compound_count_sentence(ex):
    """The COMPOUNDs of the same 1 KiB vectors against vnfsd and Ganesha, from the data."""
    rows = []
    for op in ("read", "write"):
        v = next((q for q in ex["points"] if q["figure"] == "6" and q["server"] == "vnfsd" and q["op"] == op
                  and q["size"] == 1024 and q["mode"] == "vec" and q["delay_ms"] == "direct"), None)
        g = next((q for q in ex["points"] if q["figure"] == "6" and q["server"] == "ganesha" and q["op"] == op
                  and q["size"] == 1024 and q["mode"] == "vec" and q["delay_ms"] == "direct"), None)
        if v and g and v["files"] == g["files"]:
            rows.append(f"{op} {g['median_compounds']:.0f} against Ganesha, {v['median_compounds']:.0f} against vnfsd")
    if not rows:
        return ""
    return ("- The same vector of 1 KiB files takes more COMPOUNDs against Ganesha, which takes at most 100 "
            "operations per COMPOUND (vnfsd takes the 1,024 the client asks for): " + "; ".join(rows) + ".")


def goals(ex, lib, w, bw=None, ct=None):
    """The goals of issue 6 against these results (reported, not asserted)."""
    pts = ex["points"]

    def pt(**kw):
        return next((q for q in pts if all(q.get(k) == v for k, v in kw.items())), None)

    def sp(op, delay, size):
        return next((r for r in ex["speedups"] if r["figure"] == "6" and r["server"] == "vnfsd" and r["op"] == op
                     and r["delay_ms"] == delay and r["size"] == size), None)

    w("## Goals of issue 6 against these results\n")
    w("| goal | measured | met |")
    w("|---|---|---|")
    for op, delay, rtt, target in (("read", "2.6", 5.2, 120), ("read", "0.1", 0.2, 25),
                                   ("write", "2.6", 5.2, 60), ("write", "0.1", 0.2, 8)):
        r = sp(op, delay, 1024)
        if not r:
            continue
        v = pt(figure="6", server="vnfsd", op=op, size=1024, delay_ms=delay, mode="vec")
        w(f"| {op} {v['files']} x 1 KiB at {rtt:g} ms: vectorized >= {target}x the scalar API | "
          f"{fx(r['median'])} [{fx(r['min'])}-{fx(r['max'])}] | {'yes' if r['median'] >= target else 'NO'} |")
        d = float(delay)
        g = pt(figure="6", server="ganesha", op=op, size=1024, delay_ms=delay, mode="vec")
        if d in lib and g:
            data = lib[d]
            n = data["parameters"]["files"]
            ph = {q["phase"]: q["median_seconds"] for q in data["phases"]}
            if op in ph:
                # Like with like: both clients against NFS-Ganesha through the same delay.
                x = ph[op] / n / (g["median_seconds"] / g["files"])
                w(f"| {op} 1 KiB at {rtt:g} ms, both against NFS-Ganesha: vnfs vectorized >= {target}x libnfs "
                  f"(per file; libnfs ran {n} files) | {fx(x)} | {'yes' if x >= target else 'NO'} |")
    big = max((r["size"] for r in ex["speedups"] if r["figure"] == "6"), default=0)
    for r in ex["speedups"]:
        if r["figure"] == "6" and r["size"] == big and r["server"] == "vnfsd":
            slower = 1 / r["median"]
            where = "without added latency" if r["delay_ms"] == "direct" else f"at {r['rtt_ms']:g} ms"
            w(f"| {r['op']} {size_label(big)} files {where} (largest size run): vectorized at most 1.05x "
              f"the scalar time | {slower:.2f}x | {'yes' if slower <= 1.05 else 'NO'} |")
    worst = []
    for x, q in model_points(ex):
        m = q["median_seconds"] / x
        extra = q["files"] * q["size"] / (bw * 1e9) if bw else 0
        worst.append((x, q, q["median_seconds"] / (m + extra)))
    if worst:
        within = sum(1 for t in worst if t[0] <= 1.1)
        x, q, _ = max(worst, key=lambda t: t[0])
        w(f"| each vectorized time <= 1.1x (COMPOUNDs x RTT + server time) | {within} of {len(worst)} points; worst "
          f"{x:.2f}x ({q['op']} {size_label(q['size'])} at {q['rtt_ms']:g} ms) | {'yes' if within == len(worst) else 'NO'} |")
        if bw:
            within = sum(1 for t in worst if t[2] <= 1.1)
            _, q, x = max(worst, key=lambda t: t[2])
            w(f"| the same with the proxy's copy time of the payload added (bytes / {bw} GB/s) | {within} of {len(worst)} "
              f"points; worst {x:.2f}x ({q['op']} {size_label(q['size'])} at {q['rtt_ms']:g} ms) | "
              f"{'yes' if within == len(worst) else 'NO'} |")
    for cmd, rtt, v, s_, ratios in (tree_rows(ct) if ct else ()):
        if cmd in ("tar-c", "tar-x") and rtt == 5.2 and ratios:
            m = statistics.median(ratios)
            w(f"| {'tar' if cmd == 'tar-c' else 'untar'} of the tree (scale {ct['scale']}) at 5.2 ms: vectorized >= 40x "
              f"the --scalar path | {fx(m)} [{fx(ratios[0])}-{fx(ratios[-1])}] ({v[1]:g} vs {s_[1]:g} COMPOUNDs) | "
              f"{'yes' if m >= 40 else 'NO'} |")
    w("")


def filebench(res, w):
    """papers/000 Figure 12: bench/results/filebench_personalities.json (bench/filebench_personalities)."""
    fb = load(os.path.join(res, "filebench_personalities.json"))
    if not fb:
        return
    p = fb["parameters"]
    w("## Figure 12: Filebench NFS-Server, File-Server, Varmail, scalar vs vectorized flows (vnfsd)\n")
    w(f"bench/filebench_personalities ({fb['total_seconds']:.0f} s; quick={str(p['quick']).lower()}, "
      f"{p['seconds_per_run']:g} s per run, {p['repeats']} pairs of runs, vnfsd --threads {p['vnfsd_threads']}). "
      "A flow is one pass through the personality's flowops; ops/s = flows per second (median of the repeats), "
      "COMPOUNDs per flow in parentheses (exact, client::stats()); speedup per pair of runs, median [min-max]. "
      "Scalar flow: the scalar calls a POSIX program makes (cold-cache kernel-client round trips, a GETATTR "
      "before each append); vectorized flow: all reads of the flow in one vread, creates and appends in one "
      "vwrite, deletes in one vremove, stats in one vgetattrs.\n")
    w("| personality | threads | files | flow |")
    w("|---|---|---|---|")
    for q in fb["personalities"]:
        w(f"| {q['name']} | {q['threads']} | {q['files']} | {q['flow']} |")
    w("")
    w("| personality | RTT ms | scalar ops/s (COMPOUNDs/flow) | vectorized ops/s (COMPOUNDs/flow) | speedup median [min-max] |")
    w("|---|---|---|---|---|")
    for r in fb["speedups"]:
        pt = {q["mode"]: q for q in fb["points"] if q["personality"] == r["personality"] and q["delay_ms"] == r["delay_ms"]}
        s, v = pt.get("scalar"), pt.get("vec")
        if not s or not v:
            continue
        rtt = "direct" if r["delay_ms"] == "direct" else f"{r['rtt_ms']:g}"
        w(f"| {r['personality']} | {rtt} | {s['median_flows_per_second']:.1f} ({s['median_compounds_per_flow']:.1f}) | "
          f"{v['median_flows_per_second']:.1f} ({v['median_compounds_per_flow']:.1f}) | "
          f"{r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}] |")
    w("")
    w("![Figure 12](results/filebench_personalities.png)\n")


def user_copy(res, lib, w):
    """The whole `vnfs cp -r` process against libnfs_baseline's copy phase, both from Ganesha through the
    same vnfs-netdelay proxy (bench/baseline_netns.sh: vnfs_cp-netdelay-D.json beside libnfs_baseline-netdelay-D.json;
    a run with TMPDIR=/dev/shm kept as vnfs_cp-tmpfs-netdelay-D.json and libnfs_baseline-tmpfs-netdelay-D.json)."""
    rows = []
    for storage, prefix in (("disk", ""), ("tmpfs", "tmpfs-")):
        runs = [v for v in map(load, glob.glob(os.path.join(res, f"vnfs_cp-{prefix}netdelay-*.json"))) if v and v["runs"]]
        for v in sorted(runs, key=lambda v: float(v["delay_ms"])):
            d = float(v["delay_ms"])
            libnfs = lib.get(d) if not prefix else load(os.path.join(res, f"libnfs_baseline-{prefix}netdelay-{d:g}.json"))
            ph = {q["phase"]: q for q in libnfs["phases"]} if libnfs else {}
            if "copy" not in ph or libnfs["parameters"]["files"] != v["files"]:
                continue
            vs = statistics.median(r["wall_seconds"] for r in v["runs"])
            ls = ph["copy"]["median_seconds"]
            comps = statistics.median(r["stats"]["compounds"] for r in v["runs"])
            rows.append(f"| {2 * d:g} | {storage} | {v['files']} | {size_label(v['size'])} | {ls:.3f} | "
                        f"{vs:.3f} ({comps:g} COMPOUNDs) | {fx(ls / vs)} |")
    if not rows:
        return
    w("## What a user runs: copying the files from NFS-Ganesha (bench/baseline_netns.sh)\n")
    w("Both clients copy the same files from the same Ganesha through the same vnfs-netdelay proxy into a local "
      "directory. vnfs: the whole `vnfs --stats cp -r` process timed by the wall clock (process start, NFSv4.1 "
      "session set-up and end, listing, reads, local writes). libnfs: a fresh mount (NFSv3), the listing, and "
      "open/pread/close of each file with a local write, timed inside libnfs_baseline (no process start). "
      "Medians of the repeats. Storage: where the scratch is (Ganesha's export and both local copies): this "
      "disk's ext4 under /tmp, or tmpfs (`TMPDIR=/dev/shm bash bench/baseline_netns.sh ...`). On the disk, "
      "libnfs's copy phase has just deleted its 1,000 local files when vnfs starts, and each vnfs run deletes the "
      "last one's, which makes creating files there slower for some seconds (see the cli_copy_delay notes).\n")
    w("| RTT ms | storage | files | size | libnfs s | vnfs cp -r s | vnfs faster by |")
    w("|---|---|---|---|---|---|---|")
    for r in rows:
        w(r)
    w("")


def bdb_fig7(res, w):
    """papers/003 Figure 7: bench/results/bdb_fig7.json (bench/bdb_fig7)."""
    b = load(os.path.join(res, "bdb_fig7.json"))
    if not b:
        return
    w(f"## papers/003 Figure 7: Berkeley DB on vnfs (bench/bdb_fig7, {b['page_size'] >> 10} KiB pages, "
      f"{b['cache_mib']} MiB cache)\n")
    w("Read-only transactions, each reading one small record chosen at random from a B-tree, warm cache, the "
      "database swept from 1/4 to 4 times the cache; through adapters/bdb against local disk and vnfsd (TCP, "
      f"RPC-over-RDMA/cma, TCP through vnfs-netdelay at {2 * float(b['delay_ms']):g} ms RTT, and TCP with Berkeley "
      "DB's cache left unregistered). Misses, COMPOUNDs and copied bytes per transaction are exact "
      "(client::stats()); the goals are in results/bdb_fig7.txt.\n")
    w("| config | DB / cache | txn/s | % of local | client CPU µs/txn | misses/txn | COMPOUNDs/txn | bytes copied/txn |")
    w("|---|---|---|---|---|---|---|---|")
    local = {q["db_mib"]: q for q in b["points"] if q["config"] == "local"}
    for q in b["points"]:
        base = local.get(q["db_mib"])
        share = f"{100 * q['txn_per_s'] / base['txn_per_s']:.0f}%" if base and q["config"] != "local" else ""
        w(f"| {q['config']} | {q['db_mib'] / q['cache_mib']:.2f} | {q['txn_per_s']:.0f} | {share} | "
          f"{q['cpu_us_per_txn']:.2f} | {q['misses_per_txn']:.3f} | {q['compounds_per_txn']:.3f} | "
          f"{q['copied_bytes_per_txn']:.0f} |")
    w("")
    w("![Figure 7 of papers/003](results/bdb_fig7.png)\n")


def tpie_fig5(res, w):
    """papers/003 Figure 5: bench/results/tpie_fig5.json (bench/tpie_fig5)."""
    t = load(os.path.join(res, "tpie_fig5.json"))
    if not t:
        return
    delay = float(t["delay_ms_each_way"])
    w(f"## papers/003 Figure 5: a merge through the TPIE accessor (bench/tpie_fig5)\n")
    w(f"{t['inputs']} sorted input files of {t['input_mib']} MiB merged into one, in "
      f"{t['request_bytes'] >> 10} KiB requests through vnfs::tpie::raw_file_accessor (adapters/tpie); record "
      "size swept; throughput 2·n·x·y / t, median of "
      f"{t['runs']} run(s). `sync-*` is the accessor without read-ahead and write-behind, `engine-*` with them; "
      f"`*-tcp-delay` goes through vnfs-netdelay at {2 * delay:g} ms RTT; cma is RPC-over-RDMA on one host, no "
      "delay. `local` reads and writes local files (page cache). The goals are in results/tpie_fig5.txt.\n")
    w("| config | record bytes | MB/s | % of local | client CPU ms/MB | COMPOUNDs |")
    w("|---|---|---|---|---|---|")
    local = {q["record_bytes"]: q for q in t["points"] if q["config"] == "local"}
    for q in t["points"]:
        base = local.get(q["record_bytes"])
        share = f"{100 * q['mb_per_s'] / base['mb_per_s']:.0f}%" if base and q["config"] != "local" else ""
        w(f"| {q['config']} | {q['record_bytes']} | {q['mb_per_s']:.0f} | {share} | {q['cpu_ms_per_mb']:.2f} | "
          f"{q['compounds']:.0f} |")
    w("")
    w("![Figure 5 of papers/003](results/tpie_fig5.png)\n")


def cpu_fit(pts):
    """(a seconds per block, b seconds per byte) of client CPU per block = a + b x size, by least
    squares on relative error (each point weighted by 1 / its CPU per block squared), b >= 0."""
    sw = sx = sy = sxx = sxy = 0.0
    for r in pts:
        y = r["cpu_seconds"] / r["reads"]
        x = float(r["size"])
        wt = 1 / (y * y) if y > 0 else 0.0
        sw += wt
        sx += wt * x
        sy += wt * y
        sxx += wt * x * x
        sxy += wt * x * y
    det = sw * sxx - sx * sx
    if det == 0:
        return (sy / sw if sw else 0.0, 0.0)
    b = (sw * sxy - sx * sy) / det
    if b < 0:  # noise can tilt the line below zero: a cost per byte is not negative
        return (sy / sw, 0.0)
    return ((sy - b * sx) / sw, b)


def cpu_ratio(rdma, tcp):
    """RDMA's client CPU per byte over TCP's, of two bench/rdma_io results."""
    return rdma["cpu_seconds_per_gib"] / tcp["cpu_seconds_per_gib"]


def rdma_point(doc, transport, pattern, size, depth=None):
    """The result of a bench/rdma_io JSON document at one point (any depth if DEPTH is None), or None."""
    return next((q for q in doc["results"] if (q["transport"], q["pattern"], q["size"]) == (transport, pattern, size)
                 and (depth is None or q["depth"] == depth)), None)


def before_after_points(after, before, pattern=None):
    """For each TCP point of bench/rdma_io document AFTER (of PATTERN, if given): (TCP after,
    TCP before, RDMA before, RDMA after) at the same pattern, size and depth, where BEFORE and
    AFTER both have them."""
    for q in after["results"]:
        if q["transport"] != "tcp" or (pattern and q["pattern"] != pattern):
            continue
        key = (q["pattern"], q["size"], q["depth"])
        t0, r0, r1 = (rdma_point(before, "tcp", *key), rdma_point(before, "rdma", *key),
                      rdma_point(after, "rdma", *key))
        if None not in (t0, r0, r1):
            yield q, t0, r0, r1


def rdma_io_section(res, w, name="rdma_io"):
    """papers/003 (DAFS) Figures 3-4 from NAME.json: tables, the plots, the CPU-per-byte claim."""
    ri = load(os.path.join(res, name + ".json"))
    if not ri or not any("pattern" in r for r in ri["results"]):
        return
    rows = ri["results"]
    reps = ri.get("repeats", 1)
    repeats_text = (f", {reps} times per transport, and the table shows the run with the median client CPU per "
                    "byte" if reps > 1 else "")
    w("## papers/003 Figures 3-4: direct reads over TCP and RPC-over-RDMA/cma (bench/rdma_io, vnfsd)\n")
    w(f"vnfs::client reads a {ri['file_bytes'] >> 20} MiB file (in vnfsd's page cache) into registered memory; vnfsd "
      f"({ri['server_threads']} threads) is a separate process on the same {ri['machine']['cpus']}-vCPU host, serving "
      f"nfs:// (TCP over loopback) and nfs+rdma://?provider=cma (RPC-over-RDMA v1; the server moves READ data "
      f"into the client's memory with process_vm_writev, standing in for an RDMA NIC's DMA). Random: one block "
      f"outstanding at a time at random block-aligned offsets (papers/003's \"without read-ahead\"). "
      f"Sequential: the file in order with a read-ahead window of W blocks in flight in a completion group, "
      f"consumed in order (the DAFS client's asynchronous read-ahead). Blocks over 1 MiB are several 1 MiB READs. "
      f"Each point runs {ri['seconds_per_run']} s (at most {ri['max_gib_per_run']} GiB){repeats_text}; the transports take turns at "
      f"each point{'; the whole step took %.0f s' % ri['total_seconds'] if 'total_seconds' in ri else ''}. Client CPU % = client process CPU seconds (user + system, its I/O thread included) / wall "
      f"seconds, so 100% is one full CPU. MB = 10^6 bytes; COMPOUNDs and payload bytes are the client's exact "
      f"counters (direct = straight into registered memory, copied = through a library buffer).\n")

    def get(t, pattern, size, depth):
        return next((r for r in rows if r["transport"] == t and r.get("pattern") == pattern and r["size"] == size
                     and r["depth"] == depth), None)

    claim = {}
    for pattern, what in (("random", "depth"), ("sequential", "read-ahead window")):
        keys = sorted({(r["depth"], r["size"]) for r in rows if r.get("pattern") == pattern})
        if not keys:
            continue
        w(f"### {pattern} reads ({'Figures 3-4 left' if pattern == 'random' else 'Figures 3-4 right'})\n")
        w(f"| {what} | block | TCP MB/s | TCP CPU % | TCP CPU s/GiB | TCP COMPOUNDs | TCP bytes direct / copied | "
          f"RDMA MB/s | RDMA CPU % | RDMA CPU s/GiB | RDMA COMPOUNDs | RDMA bytes direct / copied | "
          f"RDMA / TCP CPU per byte |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for depth, size in keys:
            t, r = get("tcp", pattern, size, depth), get("rdma", pattern, size, depth)
            cells = [str(depth), size_label(size)]
            for x in (t, r):
                if x:
                    cells += [f"{x['mb_per_second']:.0f}", f"{x['cpu_utilization_percent']:.0f}",
                              f"{x['cpu_seconds_per_gib']:.3f}", str(x["compounds"]),
                              f"{x['payload_bytes_direct']} / {x['payload_bytes_copied']}"]
                else:
                    cells += [""] * 5
            if t and r and t["cpu_seconds_per_gib"] > 0:
                ratio = r["cpu_seconds_per_gib"] / t["cpu_seconds_per_gib"]
                claim.setdefault(pattern, []).append((depth, size, ratio))
                cells.append(f"{ratio:.2f}{'' if ratio <= 1 / 3 else ' (> 1/3)'}")
            else:
                cells.append("")
            w("| " + " | ".join(cells) + " |")
        w("")
    w(f"![Figure 3: read bandwidth](results/{name}_fig3.png)\n")
    w(f"![Figure 4: client CPU utilization](results/{name}_fig4.png)\n")
    fits = {}
    for pattern in ("random", "sequential"):
        for depth in sorted({r["depth"] for r in rows if r.get("pattern") == pattern}):
            for t in ("tcp", "rdma"):
                pts = [r for r in rows if r.get("pattern") == pattern and r["depth"] == depth and r["transport"] == t
                       and r["reads"] > 0]
                if len(pts) >= 2:
                    fits[(pattern, depth, t)] = cpu_fit(pts)
    if fits:
        w("Client CPU per block, fitted as a + b x block size (least squares on relative error over the block "
             "sizes above): a is the client's cost per block (one COMPOUND up to 1 MiB), b its cost per byte.\n")
        w("| pattern | depth / window | TCP a (us per block) | TCP b (CPU s/GiB) | RDMA a (us per block) | "
             "RDMA b (CPU s/GiB) | block size from which RDMA <= TCP / 3 (model) |")
        w("|---|---|---|---|---|---|---|")
        for (pattern, depth) in sorted({(k[0], k[1]) for k in fits}):
            ft, fr = fits.get((pattern, depth, "tcp")), fits.get((pattern, depth, "rdma"))
            if not ft or not fr:
                continue
            # 3 (a_r + b_r S) <= a_t + b_t S  <=>  S >= (3 a_r - a_t) / (b_t - 3 b_r)
            den = ft[1] - 3 * fr[1]
            if den <= 0:
                cross = "never"
            else:
                x = max(0.0, (3 * fr[0] - ft[0]) / den)
                cross = (f"{x / (1 << 20):.1f} MiB" if x >= 1 << 20 else f"{x / 1024:.0f} KiB" if x >= 1024
                         else f"{x:.0f} B")
            w(f"| {pattern} | {depth} | {ft[0] * 1e6:.1f} | {ft[1] * (1 << 30):.3f} | {fr[0] * 1e6:.1f} | "
                 f"{fr[1] * (1 << 30):.3f} | {cross} |")
        w("")
    if claim:
        parts = []
        for pattern, pts in claim.items():
            ok = [p for p in pts if p[2] <= 1 / 3]
            bad = [p for p in pts if p[2] > 1 / 3]
            deps = sorted({p[0] for p in pts})

            def names(ps):
                return ", ".join(size_label(p[1]) + (f" ({'d' if pattern == 'random' else 'W'}={p[0]})" if len(deps) > 1 else "") for p in ps) or "none"
            parts.append(f"{pattern} ({'depth' if pattern == 'random' else 'window'} "
                         f"{'/'.join(map(str, deps))}): holds at {len(ok)} of {len(pts)} block sizes "
                         f"({names(ok)}), not at {names(bad)}; RDMA/TCP ratio {min(p[2] for p in pts):.2f}.."
                         f"{max(p[2] for p in pts):.2f}")
        w("**DAFS claim check** (papers/003: client CPU per byte over RDMA at most 1/3 of TCP's, i.e. "
             "RDMA CPU s/GiB <= TCP CPU s/GiB / 3): " + "; ".join(parts) + ".\n")
        w("Why: over TCP the kernel copies every payload byte from socket buffers into the client's registered "
          "memory inside the client's recv calls (the SDK itself copies nothing: all bytes count as direct), so TCP "
          "pays per byte (b above). Over cma, vnfsd's process_vm_writev does that copy, as an RDMA NIC's DMA would, "
          "so the client pays per COMPOUND only and its CPU per byte falls as 1 / block size, as DAFS's does in "
          "Figure 4. Per COMPOUND, though, the two clients do the same work (compare their a above): the call "
          "goes out and the reply comes in over a socket (a Unix socket for cma), the client's I/O thread wakes "
          "for each, and the application thread is woken when its call completes. Since the client "
          "pre-authorizes its registered regions, no other message reaches it. `perf trace -s -p PID` of the "
          "client at 256 KiB, depth 1, over cma (2026-11-27) counted about 11.5 system calls per COMPOUND: in the "
          "I/O thread 3.5 epoll_wait, 2 recvmsg (one answering EAGAIN), 1 sendmsg, 1 futex (the wake-up), "
          "0.5 epoll_ctl and 0.5 eventfd read; in the application thread 2 futex and 0.5 eventfd write. "
          "The system calls themselves are cheap here (next section); the context switches are not: "
          "`perf record -g -p PID` of the client at 16 KiB puts about two thirds of its CPU time in the "
          "scheduler's switch and wake-up paths (finish_task_switch, _raw_spin_unlock_irqrestore), which this "
          "virtual machine (Firecracker with nested PVM, /proc/cmdline) makes dear, and the client switches "
          "2.3 times per COMPOUND (the voluntary switches in the JSON). The next section measures the floor "
          "under a: one round trip between two processes, with nothing else. "
          "So below the crossover block size, where these per-COMPOUND costs dominate, RDMA/cma costs the client "
          "about as much as TCP, and the 1/3 claim "
          "holds only for large blocks. Bandwidth here is bound by the two shared vCPUs that client, vnfsd and "
          "the kernel all use, not by a wire: the client process itself used at most "
          f"{max(r['cpu_utilization_percent'] for r in rows):.0f}% of one CPU at any point of this run.\n")
    small = ri.get("small_files", [])
    if small:
        w(f"Many small files, same run: {small[0]['files']} files of {size_label(small[0]['file_bytes'])} read "
          f"with scalar open/read/close ({small[0]['depth']} files in flight) and with one vread.\n")
        w("| transport | mode | seconds | client CPU s | COMPOUNDs |")
        w("|---|---|---|---|---|")
        for s in small:
            w(f"| {s['transport']} | {s['mode']} | {s['seconds']:.3f} | {s['cpu_seconds']:.3f} | {s['compounds']} |")
        w("")


def round_trip_floor_section(res, w):
    """bench/results/round_trip_floor.json: what one request and reply cost the requester here."""
    f = load(os.path.join(res, "round_trip_floor.json"))
    if not f:
        return
    p = f["parameters"]
    w("## The floor under a COMPOUND's client CPU (bench/round_trip_floor)\n")
    w(f"Two processes exchange a {p['request_bytes']}-byte request and a {p['reply_bytes']}-byte reply, one at a "
      "time, with nothing else in the way (no RPC, no NFS, no vnfs), over a Unix SOCK_SEQPACKET socket pair (what "
      "the cma provider's messages travel on) and over TCP on loopback; the requester sleeps in recv for each reply. "
      "The responder sleeps in recv (blocking: a server thread gone idle, woken by each request), spins on a "
      "non-blocking recv (polling: the requester never wakes it, as with an RDMA NIC), or sleeps with both "
      "processes pinned to one CPU (one_cpu). Requester CPU = its getrusage per round trip "
      f"(`build/default/bench/round_trip_floor`; a getppid system call takes {f['syscall_us']:.2f} us here). "
      "A vnfs client at one call in flight (bench/rdma_io at depth 1, a in the fit above) cannot spend less per "
      "COMPOUND than the round trip that carries it.\n")
    w("| transport | responder | round trips | us per round trip | requester CPU us per round trip | voluntary switches per round trip |")
    w("|---|---|---|---|---|---|")
    for r in f["results"]:
        w(f"| {r['transport']} | {r['peer']} | {r['round_trips']} | {r['wall_us_per_round_trip']:.1f} | "
          f"{r['cpu_us_per_round_trip']:.2f} | {r['voluntary_switches_per_round_trip']:.2f} |")
    w("")


def journal_crc_section(res, w):
    """bench/results/journal_crc.json: the CRC-32 of vnfsd's transaction journal."""
    f = load(os.path.join(res, "journal_crc.json"))
    if not f:
        return
    p = f["parameters"]
    w("## The CRC-32 of vnfsd's transaction journal (bench/journal_crc)\n")
    w(f"The journal checksums every record, and redo records carry file data: {p['mib']} MiB, a COMPOUND's worth, "
      f"checksummed {p['runs']} times by ISA-L's crc32_gzip_refl (what vnfsd uses) and by zlib's crc32 (what it used "
      "before; the same values), `build/default/bench/journal_crc` (docs/transactions.md, \"The journal\").\n")
    w("| implementation | best ms | median ms |")
    w("|---|---|---|")
    for r in f["results"]:
        w(f"| {r['implementation']} | {r['best_ms']:.3f} | {r['median_ms']:.3f} |")
    w("")


def heavy_load(res, w):
    """Issue 17: bench/results/heavy_load.json (bench/heavy_load)."""
    h = load(os.path.join(res, "heavy_load.json"))
    if not h:
        return
    p = h["parameters"]
    w(f"## Heavy load on vnfsd (bench/heavy_load{' --quick' if p['quick'] else ''})\n")
    w(f"{p['clients']} clients (one connection and session each) x {p['compounds_per_client']} COMPOUNDs of mixed "
      f"writes, reads, exclusive creates, removes, renames and getattrs (files up to {p['max_file']} bytes), vnfsd "
      f"with {p['vnfsd_threads']} threads, all on loopback. Every read compared byte for byte with what was written, "
      "every getattr size with the size written, and at the end every file on disk with each client's model.\n")
    w("| COMPOUNDs | calls | errors | bytes checked | seconds | COMPOUNDs/s | call p50 ms | call p99 ms | max ms | vnfsd peak RSS MiB |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    l = h["latency_us"]
    w(f"| {h['compounds']} | {h['calls']} | {h['errors']} | {h['bytes_checked']} | {h['seconds']:.1f} | "
      f"{h['compounds_per_second']:.0f} | {l['p50'] / 1000:.2f} | {l['p99'] / 1000:.2f} | {l['max'] / 1000:.2f} | "
      f"{h['vnfsd_peak_rss_kib'] / 1024:.1f} |")
    w("")


def round2(res, w):
    """Issue 18 (performance round 2): its figures before and after, each from its JSON in
    bench/results/ (NAME-before.json from the binaries of before the change, NAME.json after)."""
    cr, cr0 = load(os.path.join(res, "compound_rate.json")), load(os.path.join(res, "compound_rate-before.json"))
    one, one0 = load(os.path.join(res, "cli_single.json")), load(os.path.join(res, "cli_single-before.json"))
    srv, srv0 = load(os.path.join(res, "cli_servers.json")), load(os.path.join(res, "cli_servers-before.json"))
    lc, lc0 = load(os.path.join(res, "local_copy.json")), load(os.path.join(res, "local_copy-before.json"))
    cd, cd0 = load(os.path.join(res, "cli_copy_delay.json")), load(os.path.join(res, "cli_copy_delay-before.json"))
    cdt = load(os.path.join(res, "cli_copy_delay-tmpfs.json"))
    vr, vr0 = load(os.path.join(res, "vread_16m.json")), load(os.path.join(res, "vread_16m-before.json"))
    rv, rv0 = load(os.path.join(res, "rdma_vread.json")), load(os.path.join(res, "rdma_vread-before.json"))
    rg, rg0 = load(os.path.join(res, "rdma_io_grant.json")), load(os.path.join(res, "rdma_io_grant-before.json"))
    vrc = load(os.path.join(res, "vread_16m-copy.json"))
    ex = load(os.path.join(res, "vnfs_experiments.json")) or {}
    g6 = load(os.path.join(res, "ganesha_fig6-before.json"))
    if not (cr and cr0) and not (one and one0) and not (srv and srv0) and not (lc and lc0) and not cd \
            and not (g6 and ex) and not (vr and vr0) and not (rv and rv0) and not (rg and rg0):
        return
    w("## Issue 18: before and after\n")
    if g6 and ex:
        w("Figure 6's vectorized calls against NFS-Ganesha, without delay: COMPOUNDs per call, before: the points "
          "of the full run of 2026-11-22 (bench/results/ganesha_fig6-before.json; the client packed under half of "
          "Ganesha's limit after a refusal), after: the full run above, whose client knows Ganesha's limit of 100 "
          "operations. The goal: as many COMPOUNDs as Ganesha's real limit requires.\n")
        w("| op | size | files | COMPOUNDs before | after | vnfsd's |")
        w("|---|---|---|---|---|---|")
        for b in g6["points"]:
            if b["figure"] != "6" or b["server"] != "ganesha" or b["delay_ms"] != "direct":
                continue
            key = {k: b[k] for k in ("op", "mode", "delay_ms", "size")}
            a = next((q for q in ex["points"] if q["figure"] == "6" and q["server"] == "ganesha"
                      and all(q[k] == v for k, v in key.items())), None)
            v = next((q for q in ex["points"] if q["figure"] == "6" and q["server"] == "vnfsd"
                      and all(q[k] == v for k, v in key.items())), None)
            vc = f"{v['median_compounds']:.0f}" if v else "-"
            if a:
                w(f"| {b['op']} | {size_label(b['size'])} | {a['files']} | {b['median_compounds']:.0f} | "
                  f"{a['median_compounds']:.0f} | {vc} |")
        w("")
    if cr and cr0:
        def rate(doc, server, wl, n):
            for r in doc["results"]:
                if (r["server"], r["workload"], r["connections"]) == (server, wl, n):
                    return r["compounds_per_second"]
            return None
        w("vnfsd's COMPOUNDs per second (bench/compound_rate: SEQUENCE, PUTFH and GETATTR or a 4 KiB READ, one "
          "request in flight per connection, vnfsd --threads 4), before: the vnfsd of before the change "
          "(`VNFSD_BIN=OLD/vnfsd build/default/bench/compound_rate --out bench/results/compound_rate-before.json`), "
          "after: this build's, with NFS-Ganesha in the same run "
          "(`build/default/bench/compound_rate --out bench/results/compound_rate.json`). The goal: at least 1.5 x "
          "Ganesha's.\n")
        w("| workload | connections | vnfsd before | vnfsd after | Ganesha (same run as after) | after / Ganesha |")
        w("|---|---|---|---|---|---|")
        for r in cr["results"]:
            if r["server"] != "vnfsd":
                continue
            wl, n = r["workload"], r["connections"]
            before, g = rate(cr0, "vnfsd", wl, n), rate(cr, "ganesha", wl, n)
            w(f"| {wl} | {n} | {before:.0f} | {r['compounds_per_second']:.0f} | "
              f"{g:.0f} | {r['compounds_per_second'] / g:.2f} |" if before and g else
              f"| {wl} | {n} | - | {r['compounds_per_second']:.0f} | - | - |")
        w("")
    if one and one0:
        w("Single-file commands on vnfsd: COMPOUNDs and operations of `vnfs --stats cat` and `vnfs --stats stat` "
          "of one 1 KiB file, session set-up included (the teardown's two COMPOUNDs come after the line is "
          "printed): `bash bench/cli_single.sh`, before with `VNFS_BIN` and `VNFSD_BIN` naming the binaries of "
          "before the change.\n")
        w("| command | COMPOUNDs before | after | operations before | after |")
        w("|---|---|---|---|---|")
        for r, r0 in zip(one["results"], one0["results"]):
            w(f"| {r['command']} | {r0['stats']['compounds']} | {r['stats']['compounds']} | "
              f"{r0['stats']['ops']} | {r['stats']['ops']} |")
        w("")
    if srv and srv0:
        w("Third-party servers: COMPOUNDs and operations of `vnfs --stats` commands on 1,000 x 1 KiB files in one "
          "directory, against vnfsd and NFS-Ganesha 4.3 over loopback (`bash bench/cli_servers.sh`; before: "
          "`VNFS_BIN=OLD/vnfs bash bench/cli_servers.sh bench/results/cli_servers-before.json`). The goal: "
          "operations per file against Ganesha within 1.2 x vnfsd's.\n")
        w("| command | server | COMPOUNDs before | after | operations before | after | after / vnfsd's |")
        w("|---|---|---|---|---|---|---|")
        def stats(doc, server, cmd):
            for r in doc["results"]:
                if (r["server"], r["command"]) == (server, cmd):
                    return r["stats"]
            return None
        for r in srv["results"]:
            r0 = stats(srv0, r["server"], r["command"])
            v = stats(srv, "vnfsd", r["command"])
            if not r0 or not v:
                continue
            w(f"| {r['command']} | {r['server']} | {r0['compounds']} | {r['stats']['compounds']} | {r0['ops']} | "
              f"{r['stats']['ops']} | {r['stats']['ops'] / v['ops']:.2f} |")
        w("")


    if lc and lc0:
        w("file:// on its own: `vnfs cp -r file:///SRC file:///DST` of 1,000 x 1 KiB files in one directory beside "
          "GNU `cp -r` of the same tree on the same disk, taking turns, whole processes timed by the wall clock, "
          "medians (`bash bench/local_copy.sh`; before: `VNFS_BIN=OLD/vnfs bash bench/local_copy.sh "
          "bench/results/local_copy-before.json`). System calls of one vnfs copy from `strace -f -c`. The goal: "
          "within 1.5 x GNU cp.\n")
        w("| | vnfs s | GNU cp s (same run) | vnfs / cp | system calls | of which futex |")
        w("|---|---|---|---|---|---|")
        shm, shm0 = load(os.path.join(res, "local_copy-shm.json")), load(os.path.join(res, "local_copy-shm-before.json"))
        rows = [("before, disk", lc0), ("after, disk", lc)]
        if shm and shm0:  # LOCAL_COPY_DIR=/dev/shm: the same copies with the disk left out
            rows += [("before, tmpfs", shm0), ("after, tmpfs", shm)]
        for label, doc in rows:
            sc = doc.get("vnfs_syscalls") or {}
            w(f"| {label} | {doc['vnfs_median']:.3f} | {doc['cp_median']:.3f} | {doc['ratio']:.2f} | "
              f"{sum(sc.values()) if sc else '-'} | {sc.get('futex', '-')} |")
        w("")
    if cd:
        libnfs = load(os.path.join(res, f"libnfs_baseline-netdelay-{cd['delay_ms']:g}.json"))
        ph = {q["phase"]: q for q in libnfs["phases"]} if libnfs else {}
        same_files = bool(libnfs) and libnfs["parameters"]["files"] == cd["files"]
        # libnfs doing the same direction: copying the files from the server (mount, listing, reads, local
        # writes), or writing them to it (create, pwrite, close: no listing, no local reads).
        lib_s = {d: ph[phase]["median_seconds"] for d, phase in (("from_server", "copy"), ("to_server", "write"))
                 if phase in ph and same_files}
        lib_what = (f"its copy phase for from server ({lib_s['from_server']:.2f} s), its write phase for to server "
                    f"({lib_s['to_server']:.2f} s)" if len(lib_s) == 2 else "not in this run")
        w(f"`vnfs cp -r` between local disk and a server, 1,000 x 1 KiB files in one directory, both ways, through "
          f"vnfs-netdelay at {2 * cd['delay_ms']:g} ms RTT and with no proxy (0 ms): whole `vnfs --stats` processes "
          f"timed by the wall clock, medians (`bash bench/cli_copy_delay.sh`; before: `VNFS_BIN=OLD/vnfs bash "
          f"bench/cli_copy_delay.sh bench/results/cli_copy_delay-before.json`). libnfs: the same files with the same "
          f"Ganesha at the same delay, a separate run (`bash bench/baseline_netns.sh --delays {cd['delay_ms']:g} "
          f"--files 1000 --repeat 3`), {lib_what}. The goal: >= 120 x libnfs.\n")
        if cdt:
            w(f"The servers take turns run by run. After: the scratch (exports and local trees) on "
              f"{cd.get('scratch_fs', 'the disk')} under /tmp, and on {cdt.get('scratch_fs', 'tmpfs')} "
              f"(`TMPDIR=/dev/shm bash bench/cli_copy_delay.sh bench/results/cli_copy_delay-tmpfs.json`): "
              "this disk's ext4 has no journal, and on it creating a file costs more for some seconds after "
              "files were deleted nearby (the allocator passes over recently deleted inodes one by one), which "
              "is what the slow runs on disk, of either server, spend their time on.\n")
        w(f"| server | RTT ms | direction | before s | after s (COMPOUNDs) |{' after, tmpfs s |' if cdt else ''} "
          "libnfs s / after s |")
        w(f"|---|---|---|---|---|{'---|' if cdt else ''}---|")
        def runs(doc, server, rtt, direction):
            return [r for r in (doc or {}).get("results", [])
                    if (r["server"], r["rtt_ms"], r["direction"]) == (server, rtt, direction)]
        keys = []
        for r in cd["results"]:
            k = (r["server"], r["rtt_ms"], r["direction"])
            if k not in keys:
                keys.append(k)
        for k in keys:
            after = runs(cd, *k)
            before = runs(cd0, *k)
            a = statistics.median(r["wall_seconds"] for r in after)
            b = f"{statistics.median(r['wall_seconds'] for r in before):.3f}" if before else "-"
            comps = statistics.median(r["stats"]["compounds"] for r in after)
            ratio = f"{fx(lib_s[k[2]] / a)}" if k[2] in lib_s and k[1] > 0 else "-"
            t = runs(cdt, *k)
            tcol = (f" {statistics.median(r['wall_seconds'] for r in t):.3f} |" if t else " - |") if cdt else ""
            w(f"| {k[0]} | {k[1]:g} | {k[2].replace('_', ' ')} | {b} | {a:.3f} ({comps:g}) |{tcol} {ratio} |")
        w("")
    if vr and vr0:
        w("8 x 16 MiB files read by one vread (vec) and by the scalar calls (open, 1 MiB preads one after "
          "another, close) from vnfsd over loopback, without delay, taking turns run by run; speedup = scalar "
          "seconds / vec seconds of the same turn. Before: vnfsd before its workers began to write their own "
          "replies"
          + (", copy: the vnfsd of just before READ payloads were sent from the page cache (its workers write their "
             "own replies, READ payloads read into memory first), run right before after with `VNFSD_BIN=OLD/vnfsd` "
             "and `--out bench/results/vread_16m-copy.json`" if vrc else "")
          + ", after: this build's"
          + (", READ payloads of 64 KiB or more sent from the page cache by sendfile" if vrc else "")
          + " (`build/default/bench/vnfs_experiments --figures 6 --ops read --sizes 16M "
          f"--servers vnfsd --delays direct --repeats {vr['parameters']['repeats']} --out bench/results/vread_16m.json`; "
          "before: the same with `VNFSD_BIN=OLD/vnfsd` and `--out bench/results/vread_16m-before.json`). The goal: "
          "never slower than the scalar calls.\n")
        w("| vnfsd | vec s, median (min) | scalar s, median (min) | speedup, median (min-max) |")
        w("|---|---|---|---|")
        for label, doc in (("before", vr0), ("copy", vrc), ("after", vr)):
            if not doc:
                continue
            pts = {q["mode"]: q for q in doc["points"]}
            sp = doc["speedups"][0]
            w(f"| {label} | {pts['vec']['median_seconds']:.4f} ({pts['vec']['min_seconds']:.4f}) | "
              f"{pts['scalar']['median_seconds']:.4f} ({pts['scalar']['min_seconds']:.4f}) | "
              f"{sp['median']:.2f} ({sp['min']:.2f}-{sp['max']:.2f}) |")
        w("")
    if rv and rv0:
        items = rv["vreads"][0]["items"] if rv["vreads"] else 0
        w(f"Vreads of {items} blocks each at random offsets of one open file into registered memory (PUTFH and READ "
          "per block, packed into COMPOUNDs by the planner), over TCP and over RPC-over-RDMA/cma, from vnfsd in its "
          f"own process, one vread after another for {rv['seconds_per_run']:g} s per point: client CPU seconds per "
          "GiB (getrusage of the client process) and COMPOUNDs per vread. Before: one Write chunk per call, so only "
          "a COMPOUND's single READ was placed by RDMA Write and the READs of these COMPOUNDs came inline and were "
          "copied; after: a Write chunk per READ, and the client's regions pre-authorized for vnfsd's RDMA Writes (see the next table; with the Write chunks alone, each RDMA Write cost the client an access request and its answer, and its CPU per GiB over cma rose to 2.55, 0.65 and 0.17 s) (`build/default/bench/rdma_io --sizes '' --small-files 0 "
          f"--vread-sizes 4K,16K,64K --vread-items {items} --file-mib 64 --seconds {rv['seconds_per_run']:g} "
          "--out bench/results/rdma_vread.json`; before: the same bench/rdma_io.cpp built with the library of "
          "before the change, `--out bench/results/rdma_vread-before.json`). The goal: every READ's payload "
          "placed by RDMA.\n")
        w("| block | transport | COMPOUNDs per vread before | after | payload placed before | after | "
          "client CPU s/GiB before | after |")
        w("|---|---|---|---|---|---|---|---|")
        def point(doc, t, size):
            return next((q for q in doc["vreads"] if (q["transport"], q["size"]) == (t, size)), None)
        for q in rv["vreads"]:
            q0 = point(rv0, q["transport"], q["size"])
            if not q0:
                continue
            def placed(x):
                return f"{100 * x['payload_bytes_direct'] / max(1, x['bytes']):.0f} %"
            w(f"| {size_label(q['size'])} | {q['transport']} | {q0['compounds_per_vread']:.2f} | "
              f"{q['compounds_per_vread']:.2f} | {placed(q0)} | {placed(q)} | {q0['cpu_seconds_per_gib']:.3f} | "
              f"{q['cpu_seconds_per_gib']:.3f} |")
        w("")
    if rg and rg0:
        w("bench/rdma_io, random reads at depth 1 into registered memory, TCP and RPC-over-RDMA/cma taking turns "
          "point by point, client CPU seconds per GiB. Before: every RDMA Write or Read of vnfsd into or from the "
          "client cost the client an access request and its answer (the cma owner check); after: the client "
          "pre-authorizes its registered regions once per connection (endpoint::grant) and vnfsd checks its "
          "accesses itself (`build/default/bench/rdma_io --sizes 4K,8K,16K,32K,64K,256K,1M --patterns random "
          f"--depths 1 --vread-sizes '' --small-files 0 --file-mib 128 --seconds {rg['seconds_per_run']:g} --out "
          "bench/results/rdma_io_grant.json`; before: the same bench/rdma_io.cpp built with the library of before "
          "the change, `--out bench/results/rdma_io_grant-before.json`). The goals: RDMA <= TCP at every size, "
          "<= 1/3 of TCP from 256 KiB.\n")
        w("| block | TCP before | RDMA before | RDMA / TCP before | TCP after | RDMA after | RDMA / TCP after |")
        w("|---|---|---|---|---|---|---|")
        def cpu(doc, t, size):
            q = rdma_point(doc, t, "random", size, 1)
            return q["cpu_seconds_per_gib"] if q else None
        for q in rg["results"]:
            if q["transport"] != "tcp" or q["pattern"] != "random" or q["depth"] != 1:
                continue
            z = q["size"]
            t0, r0, t1, r1 = cpu(rg0, "tcp", z), cpu(rg0, "rdma", z), cpu(rg, "tcp", z), cpu(rg, "rdma", z)
            if None in (t0, r0, t1, r1):
                continue
            w(f"| {size_label(z)} | {t0:.3f} | {r0:.3f} | {r0 / t0:.2f} | {t1:.3f} | {r1:.3f} | {r1 / t1:.2f} |")
        w("")
    rio, rio0 = load(os.path.join(res, "rdma_payloads.json")), load(os.path.join(res, "rdma_payloads-before.json"))
    if rio and rio0:
        w("vnfsd's READ payloads, random reads of bench/rdma_io: before, vnfsd read each payload into a buffer of "
          "its own, freed once the reply was out; glibc gave those pages back to the kernel and the next READ "
          "faulted them in again, with TLB flushes across vnfsd's threads (the thread that sent the RDMA replies "
          "was busy all the time at depth 16). After: the buffers are reused (src/server/payload_buffers.hpp), and "
          "over cma a pre-authorized RDMA Write moves its bytes in the thread that made the reply. The two vnfsd "
          "one after the other, the same client (`build/default/bench/rdma_io --sizes 64K,256K,1M,4M --patterns "
          f"random --depths 1,16 --vread-sizes '' --small-files 0 --file-mib 256 --seconds {rio['seconds_per_run']:g} "
          "--out bench/results/rdma_payloads.json`; before: `VNFSD_BIN=OLD/vnfsd ... --out "
          "bench/results/rdma_payloads-before.json`). MB/s, and the client's CPU seconds per GiB in brackets. "
          "Over TCP these READs leave their payloads in the file (sendfile): no buffer, no change but noise.\n")
        w("| depth | block | TCP before | TCP after | RDMA before | RDMA after | RDMA / TCP CPU before | after |")
        w("|---|---|---|---|---|---|---|---|")
        cell = lambda p: f"{p['mb_per_second']:.0f} ({p['cpu_seconds_per_gib']:.3f})"
        for q, t0, r0, r1 in before_after_points(rio, rio0, "random"):
            w(f"| {q['depth']} | {size_label(q['size'])} | {cell(t0)} | {cell(q)} | {cell(r0)} | {cell(r1)} | "
              f"{cpu_ratio(r0, t0):.2f} | {cpu_ratio(r1, q):.2f} |")
        w("")
    ho, ho0 = load(os.path.join(res, "rdma_handoff.json")), load(os.path.join(res, "rdma_handoff-before.json"))
    if ho and ho0:
        w("How a call reaches the client's I/O thread (src/client/nfs/io_handoff.hpp): before, asio::post, which "
          "wakes the I/O thread while holding the io_context's mutex, so that at one call in flight the woken "
          "thread mostly went to sleep again on that mutex; after, a queue and an eventfd of the engine's own, "
          "rung after every lock is let go. The same bench/rdma_io.cpp built with the library of before and of "
          "after, one run each (`build/default/bench/rdma_io --sizes 4K,16K,64K,256K --depths 1 --readahead 16 "
          f"--vread-sizes '' --small-files 0 --file-mib 128 --seconds {ho['seconds_per_run']:g} --out "
          "bench/results/rdma_handoff.json`; before: `... --out bench/results/rdma_handoff-before.json`). Client "
          "CPU microseconds per COMPOUND, with the client's voluntary context switches per COMPOUND in brackets, "
          "and RDMA / TCP CPU per byte.\n")
        w("| pattern | block | TCP before | TCP after | RDMA before | RDMA after | RDMA / TCP before | after |")
        w("|---|---|---|---|---|---|---|---|")
        def cell(p):
            n = max(1, p["compounds"])
            return f"{1e6 * p['cpu_seconds'] / n:.1f} ({p['voluntary_switches'] / n:.2f})"
        for q, t0, r0, r1 in before_after_points(ho, ho0):
            label = f"random, depth {q['depth']}" if q["pattern"] == "random" else f"sequential, window {q['depth']}"
            w(f"| {label} | {size_label(q['size'])} | {cell(t0)} | {cell(q)} | {cell(r0)} | {cell(r1)} | "
              f"{cpu_ratio(r0, t0):.2f} | {cpu_ratio(r1, q):.2f} |")
        w("")
    rr, rr0 = load(os.path.join(res, "rdma_replies.json")), load(os.path.join(res, "rdma_replies-before.json"))
    if rr and rr0:
        w("How vnfsd sends an RPC-over-RDMA reply made on a worker: before, the worker's RDMA Writes (under the "
          "client's grant, in the worker) completed on the connection's strand in the network thread, which then "
          "sent the reply; after, the worker's writes complete in the worker and the worker sends the reply "
          "itself, as TCP's workers do (the cma endpoint sends from the calling thread when nothing is queued "
          "ahead), and the network threads poll on for 50 us after a worker's reply as after their own work. "
          "READs of up to 64 KiB run on the network thread in both (inline_calls.hpp). Client and vnfsd "
          "pinned (client on one vCPU, vnfsd on the other); the same bench/rdma_io.cpp and vnfsd built before and "
          "after, one run each (`build/default/bench/rdma_io --pin --sizes 4K,16K,64K,256K,1M --patterns random "
          f"--depths 1,16 --vread-sizes '' --small-files 0 --file-mib 256 --seconds {rr['seconds_per_run']:g} "
          f"--repeats {rr['repeats']} --out bench/results/rdma_replies.json`; before: `VNFSD_BIN=OLD/vnfsd "
          "OLD/rdma_io ... --out bench/results/rdma_replies-before.json`; the median repeat). Microseconds per "
          "COMPOUND (the read's latency at depth 1), MB/s, client CPU microseconds per COMPOUND, and RDMA / TCP "
          "client CPU per byte.\n")
        w("| depth | block | TCP us before | after | RDMA us before | after | TCP MB/s before | after | "
          "RDMA MB/s before | after | TCP CPU us before | after | RDMA CPU us before | after | "
          "RDMA / TCP before | after |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        per = lambda p, k: 1e6 * p[k] / max(1, p["compounds"])
        for q, t0, r0, r1 in before_after_points(rr, rr0, "random"):
            w(f"| {q['depth']} | {size_label(q['size'])} | {per(t0, 'seconds'):.1f} | {per(q, 'seconds'):.1f} | "
              f"{per(r0, 'seconds'):.1f} | {per(r1, 'seconds'):.1f} | {t0['mb_per_second']:.0f} | "
              f"{q['mb_per_second']:.0f} | {r0['mb_per_second']:.0f} | {r1['mb_per_second']:.0f} | "
              f"{per(t0, 'cpu_seconds'):.1f} | {per(q, 'cpu_seconds'):.1f} | {per(r0, 'cpu_seconds'):.1f} | "
              f"{per(r1, 'cpu_seconds'):.1f} | {cpu_ratio(r0, t0):.2f} | {cpu_ratio(r1, q):.2f} |")
        w("")
    pn = load(os.path.join(res, "rdma_io_pinned.json"))
    if pn:
        w("The same random reads at depth 1 with the client on one vCPU and vnfsd on the other, as on two hosts "
          "(`build/default/bench/rdma_io --pin --sizes 4K,8K,16K,32K,64K,256K,1M --patterns random --depths 1 "
          f"--vread-sizes '' --small-files 0 --file-mib 128 --seconds {pn['seconds_per_run']:g} --repeats "
          f"{pn['repeats']} --out bench/results/rdma_io_pinned.json`; the median repeat, every repeat's CPU s/GiB in "
          "brackets). Unpinned, the scheduler puts the client's application thread and its I/O thread on one vCPU "
          "in some runs and on two in others, and a 4 KiB read's COMPOUND costs the client about 22 or about 35 "
          "us of CPU by that alone, which is most of the spread of the tables above; pinned, the repeats of a point "
          "differ by a tenth or less, by a fifth at most. Client CPU microseconds per COMPOUND, of it the application thread's (the rest is the "
          "I/O thread's), and the I/O thread's voluntary context switches per COMPOUND (1 when it sleeps only for "
          "the reply; more when it went to sleep before the application handed it the next call, whose "
          "hand-off then has to wake it).\n")
        w("| block | TCP s/GiB | RDMA s/GiB | RDMA / TCP | TCP us (application) | RDMA us (application) | "
          "TCP I/O thread sleeps | RDMA I/O thread sleeps |")
        w("|---|---|---|---|---|---|---|---|")
        for q in pn["results"]:
            if q["transport"] != "tcp":
                continue
            r = rdma_point(pn, "rdma", "random", q["size"], q["depth"])
            if r is None:
                continue
            reps = lambda p: ", ".join(f"{x:.3f}" for x in p["repeat_cpu_seconds_per_gib"])
            us = lambda p: (f"{1e6 * p['cpu_seconds'] / max(1, p['compounds']):.1f} "
                            f"({1e6 * p['caller_cpu_seconds'] / max(1, p['compounds']):.1f})")
            sleeps = lambda p: (p["voluntary_switches"] - p["caller_voluntary_switches"]) / max(1, p["compounds"])
            w(f"| {size_label(q['size'])} | {q['cpu_seconds_per_gib']:.3f} [{reps(q)}] | "
              f"{r['cpu_seconds_per_gib']:.3f} [{reps(r)}] | {cpu_ratio(r, q):.2f} | "
              f"{us(q)} | {us(r)} | {sleeps(q):.2f} | {sleeps(r):.2f} |")
        w("")
    sy = load(os.path.join(res, "rdma_sync.json"))
    if sy:
        w("Synchronous calls run the client's I/O on the waiting thread (src/client/caller_drive.hpp): the same "
          "random reads at depth 1, pinned, through a completion group (random: the application thread waits on "
          "the group while the client's I/O thread sends and receives, which is how every call went before) and "
          "through the synchronous call (sync: the waiting thread sends, receives and completes itself), taking "
          "turns point by point in one run (`build/default/bench/rdma_io --pin --sizes "
          f"{','.join(size_label(x).replace(' KiB', 'K').replace(' MiB', 'M') for x in sorted({q['size'] for q in sy['results']}))} "
          "--patterns random,sync --depths 1 --vread-sizes '' --small-files 0 "
          f"--file-mib {sy['file_bytes'] >> 20} --seconds {sy['seconds_per_run']:g} --repeats {sy['repeats']} "
          "--out bench/results/rdma_sync.json`; the median repeat). Client CPU microseconds per COMPOUND, with "
          "the client's voluntary + involuntary context switches per COMPOUND in brackets, and RDMA / TCP client "
          "CPU per byte. The goals: RDMA <= TCP at every size, <= 1/3 of TCP from 256 KiB.\n")
        w("| block | TCP group | TCP sync | RDMA group | RDMA sync | RDMA / TCP group | sync |")
        w("|---|---|---|---|---|---|---|")
        for q in sy["results"]:
            if (q["transport"], q["pattern"]) != ("tcp", "random"):
                continue
            ts = rdma_point(sy, "tcp", "sync", q["size"])
            rg = rdma_point(sy, "rdma", "random", q["size"])
            rs = rdma_point(sy, "rdma", "sync", q["size"])
            if ts is None or rg is None or rs is None:
                continue
            cell = lambda p: (f"{1e6 * p['cpu_seconds'] / max(1, p['compounds']):.1f} "
                              f"({p['voluntary_switches'] / max(1, p['compounds']):.2f} + "
                              f"{p['involuntary_switches'] / max(1, p['compounds']):.2f})")
            w(f"| {size_label(q['size'])} | {cell(q)} | {cell(ts)} | {cell(rg)} | {cell(rs)} | "
              f"{cpu_ratio(rg, q):.2f} | {cpu_ratio(rs, ts):.2f} |")
        w("")


def txn_section(res, w):
    """papers/002 Figures 4-6 and 11-14: bench/results/txn_overhead.json (bench/txn_overhead) and
    txn_tree.json (bench/txn_tree.sh); the goals of issue 15 against them (reported, not asserted)."""
    from txn_ratios import find, keys, ratio, tree_cell, tree_ratio
    t = load(os.path.join(res, "txn_overhead.json"))
    tree = load(os.path.join(res, "txn_tree.json"))
    if not t and not tree:
        return
    w("## papers/002 Figures 4-6 and 11-14: transactional COMPOUNDs (vnfsd)\n")
    goal_rows = []
    if t:
        p = t["parameters"]
        pts = t["points"]
        old = any(q["mode"] == "old" for q in pts)
        w(f"`build/default/bench/txn_overhead{' --quick' if p['quick'] else ''}"
          f"{' --old-vnfsd OLD/vnfsd' if old else ''}` ({t['total_seconds']:.0f} s; {p['repeats']} repeats, "
          f"files x size capped at {p['bytes_cap'] >> 20} MiB per pass, vnfsd --threads {p['vnfsd_threads']}). "
          "The same vnfs::client against vnfsd --no-transactions (plain: ordinary vwrite) and vnfsd with every vwrite "
          "call one transaction (txn: `client_options::atomic_vectors`, one COMPOUND; files too large for one COMPOUND "
          "are one `vnfs::transaction` per call, the call made by `transaction::committing()`: in runs from 2026-11-27 on, "
          "TXN_BEGIN rides in its first COMPOUND and TXN_COMMIT in its last, before that each was a COMPOUND of its own), both through "
          "vnfs-netdelay. One repeat: write (create) the files, overwrite them (truncate and rewrite: the txn server "
          "backed up every old file until 2026-11-28 and now defers the overwrites to the commit, redo in "
          "docs/transactions.md, below 256 KiB per file from 2026-11-28 05:00 UTC and at every size from 08:00 UTC; in runs from 2026-11-27 12:40 UTC on, vnfsd writes over the old bytes and then cuts "
          "the file where the new ones end, in every mode (mode durable's stable writes from 13:02 UTC on), where it "
          "used to truncate first: on this ext4 that made plain overwrites of 1 KiB files about 3 times and of 1 MiB "
          "files about 1.5 times faster), read them back "
          "(every byte compared). The files are split evenly over the "
          "clients, each client (one connection and session) in its own directory; a pass's time runs from the start "
          "of the first client to the end of the last. Ratio = txn s / plain s per repeat, median [min-max]: "
          "papers/002's slowdown for one client, the inverse of its relative throughput for several. "
          + ("Mode old: the vnfsd of before transactions existed (commit fd7398f), ordinary vwrite. " if old else "")
          + "Plain writes are UNSTABLE (no COMMIT), txn ones are on disk at the commit (it fsyncs every object the "
          "transaction changed): the ratio includes durability that plain does not give. Mode durable, where measured: "
          "another vnfsd --no-transactions, every write `vio_flags::stable` (DATA_SYNC4, on disk when the call "
          "returns): txn s / durable s is what the transaction costs beyond the durability. papers/002's "
          "baseline made its writes durable too (§4.1.1: the local simulation of both servers fsyncs after each "
          "write, as the NFS servers did), so txn / durable is the ratio "
          "closest to how TC-NFS's 1.55x was measured; the goals below hold txn / plain, the stricter one.\n")
        def cell(r):
            return f"{r[0]:.2f} [{r[1]:.2f}-{r[2]:.2f}]" if r else ""

        def table(pts, old):
            durable = any(q["mode"] == "durable" for q in pts)
            w("| size | files | per call (unit) | RTT ms | clients | write plain s | write txn s | write ratio | "
              "overwrite plain s | overwrite txn s | overwrite ratio | read ratio |"
              + (" write txn / durable | overwrite txn / durable |" if durable else "")
              + (" plain / old (write) |" if old else ""))
            w("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if durable else "") + ("---|" if old else ""))
            for size, delay, clients in keys(pts, "4", "size", "delay_ms", "clients"):
                kw = dict(figure="4", size=size, delay_ms=delay, clients=clients)
                pw, tw = find(pts, op="write", mode="plain", **kw), find(pts, op="write", mode="txn", **kw)
                po, to = find(pts, op="overwrite", mode="plain", **kw), find(pts, op="overwrite", mode="txn", **kw)
                if not (pw and tw and po and to):
                    continue
                row = (f"| {size_label(size)} | {pw['files']} | {pw['batch']} ({tw['txn_unit']}) | {pw['rtt_ms']:g} | "
                       f"{clients} | {fmt_s(pw['median_seconds'])} | {fmt_s(tw['median_seconds'])} | "
                       f"{cell(ratio(pts, op='write', **kw))} | {fmt_s(po['median_seconds'])} | "
                       f"{fmt_s(to['median_seconds'])} | {cell(ratio(pts, op='overwrite', **kw))} | "
                       f"{cell(ratio(pts, op='read', **kw))} |")
                if durable:
                    row += (f" {cell(ratio(pts, 'txn', 'durable', op='write', **kw))} |"
                            f" {cell(ratio(pts, 'txn', 'durable', op='overwrite', **kw))} |")
                if old:
                    row += f" {cell(ratio(pts, 'plain', 'old', op='write', **kw))} |"
                w(row)
            w("")

        table(pts, old)
        durable = any(q["mode"] == "durable" for q in pts)
        ram = load(os.path.join(res, "txn_overhead-ramdisk.json"))
        if ram:
            w(f"The same on the storage papers/002's figures assume (`bash bench/txn_ramdisk.sh`, "
              f"{ram['total_seconds']:.0f} s, {ram['parameters']['repeats']} repeats): every export on XFS with "
              "reflinks in a file on /dev/shm, where a flush costs next to nothing, as on TC-NFS's capacitor-backed "
              "SSD (its Figure 9 ran on such a RAM disk), and range backups of 256 KiB or more are clones. What is left of txn / plain "
              "is the transactions' own work.\n")
            table(ram["points"], False)
        f12 = [q for q in pts if q["figure"] == "12"]
        if f12:
            w("Figure 12, compounding degree: one client, no proxy, the same number of calls of k files each "
              "(each call one COMPOUND; in txn one transaction); txn s / plain s.\n")
            degs = sorted({q["batch"] for q in f12})
            w("| size | calls | " + " | ".join(f"k={k}" for k in degs) + " |")
            w("|---|---|" + "---|" * len(degs))
            for (size,) in keys(pts, "12", "size"):
                calls = next(q["calls"] for q in f12 if q["size"] == size)
                w(f"| {size_label(size)} | {calls} | "
                  + " | ".join(cell(ratio(pts, figure="12", size=size, batch=k)) for k in degs) + " |")
            w("")

        def worst(pts, clients, den="plain"):
            rs = []
            for size, delay in keys(pts, "4", "size", "delay_ms"):
                for op in ("write", "overwrite"):
                    r = ratio(pts, "txn", den, figure="4", op=op, size=size, delay_ms=delay, clients=clients)
                    if r:
                        rs.append((r[0], f"{op} {size_label(size)} at {2 * float(delay):g} ms"))
            return max(rs) if rs else None

        # TC-NFS's 1.55x and 25x compare with a vanilla NFS-Ganesha that made every write durable
        # (papers/002 §4.1.1: its local simulation of that server "fsync is called after each
        # write to match the behavior ... of the NFS server"): the like-for-like baseline here is
        # mode durable (every WRITE DATA_SYNC4). Against plain (UNSTABLE writes, on disk only when
        # the kernel writes them back) the ratio is stricter, and shown too.
        counts = sorted({c for (c,) in keys(pts, "4", "clients")})
        for clients, goal, tc in ((1, 1.3, 1.55), (8, 3, 25)):
            who = f"{clients} client{'s' if clients > 1 else ''}"
            if durable and worst(pts, clients, "durable"):
                x, where = worst(pts, clients, "durable")
                goal_rows.append(f"| worst case, {who}: txn / non-transactional with every write made durable, as "
                                 f"TC-NFS's baseline (papers/002 §4.1.1) <= {goal}x (TC-NFS: {tc}x) | {x:.2f}x "
                                 f"({where}; median of the repeats) | {'yes' if x <= goal else 'NO'} |")
            if clients in counts and worst(pts, clients):
                x, where = worst(pts, clients)
                goal_rows.append(f"| the same, stricter: txn / plain (UNSTABLE writes, on disk only when the kernel "
                                 f"writes them back) <= {goal}x, {who} | {x:.2f}x ({where}; median of the repeats) | "
                                 f"{'yes' if x <= goal else 'NO'} |")
        if ram:
            for clients in sorted({c for (c,) in keys(ram["points"], "4", "clients")}):
                if worst(ram["points"], clients):
                    x, where = worst(ram["points"], clients)
                    goal_rows.append(f"| (not a goal: the same on XFS on a RAM disk, papers/002's storage) worst "
                                     f"txn / plain, {clients} client{'s' if clients > 1 else ''} | {x:.2f}x ({where}) | - |")
        # The comparison with the vnfsd of before transactions: from this run if it has mode old,
        # else from the last run that had (txn_overhead-pretxn.json, kept as it was).
        pre = t if old else load(os.path.join(res, "txn_overhead-pretxn.json"))
        pre_pts = pre["points"] if pre else []
        if any(q["mode"] == "old" for q in pre_pts):
            if not old:
                w("The comparison with the vnfsd of before transactions (the goal row \"non-transactional COMPOUNDs no "
                  "slower\" below) comes from an earlier run with `--old-vnfsd OLD/vnfsd` "
                  f"({pre['total_seconds']:.0f} s), kept as bench/results/txn_overhead-pretxn.json.\n")
            rs = [ratio(pre_pts, "plain", "old", figure="4", op=op, size=s, delay_ms=d, clients=c)
                  for s, d, c in keys(pre_pts, "4", "size", "delay_ms", "clients") for op in ("write", "overwrite", "read")]
            meds = sorted(r[0] for r in rs if r)
            if meds:
                gm = math.exp(sum(math.log(x) for x in meds) / len(meds))
                goal_rows.append(f"| non-transactional COMPOUNDs no slower than before transactions (<= 1.05x; old "
                                 f"also lacks every other change made since) | "
                                 f"plain / old over {len(meds)} points: geometric mean {gm:.3f}x, median "
                                 f"{statistics.median(meds):.3f}x, range {meds[0]:.2f}-{meds[-1]:.2f}x | "
                                 f"{'yes' if gm <= 1.05 else 'NO'} |")
    if tree:
        w(f"Figures 13-14: `bash bench/txn_tree.sh --scale {tree['scale']}` ({tree['date']}): bench/make_tree.py's tree, "
          f"{tree['files']} files, {tree['directories']} directories, {tree['symlinks']} symlinks, {tree['bytes']} "
          "bytes. plain: `vnfs cp -r`, `vnfs tar -x` against vnfsd --no-transactions; txn: `vnfs cp -r --atomic`, "
          "`vnfs tar -x --atomic` (each one transaction spanning COMPOUNDs) against vnfsd; ls -lR and rm -r are "
          "ordinary on both. scalar: `vnfs --scalar tar -x` against vnfsd. Medians over runs (COMPOUNDs); "
          "ratios per run.\n")
        w("| command | RTT ms | plain s (COMPOUNDs) | txn s (COMPOUNDs) | txn / plain | scalar tar -x s (COMPOUNDs) | scalar / txn |")
        w("|---|---|---|---|---|---|---|")
        for rtt in sorted({r["rtt_ms"] for r in tree["results"]}):
            for cmd in ("cp-r", "ls-lR", "tar-x", "rm-r"):
                a, b = tree_cell(tree, "plain", cmd, rtt), tree_cell(tree, "txn", cmd, rtt)
                if not a or not b:
                    continue
                r = tree_ratio(tree, "txn", "plain", cmd, rtt)
                sc = tree_cell(tree, "scalar", cmd, rtt) if cmd == "tar-x" else None
                sr = tree_ratio(tree, "scalar", "txn", cmd, rtt) if sc else None
                w(f"| {cmd} | {rtt:g} | {a[0]:.3f} ({a[1]:g}) | {b[0]:.3f} ({b[1]:g}) | "
                  f"{r[0]:.2f} [{r[1]:.2f}-{r[2]:.2f}] | {f'{sc[0]:.2f} ({sc[1]:g})' if sc else ''} | "
                  f"{f'{fx(sr[0])} [{fx(sr[1])}-{fx(sr[2])}]' if sr else ''} |")
        w("")
        sr = tree_ratio(tree, "scalar", "txn", "tar-x", 5.2)
        if sr:
            goal_rows.append(f"| atomic untar of the tree ({tree['files']} files) at 5.2 ms >= 100x faster than the "
                             f"scalar path | {fx(sr[0])} [{fx(sr[1])}-{fx(sr[2])}] | {'yes' if sr[0] >= 100 else 'NO'} |")
    ph = load(os.path.join(res, "txn_phases.json"))
    if ph:
        floors = [(q["plain_ms_per_compound"] + (q["median_us"]["barrier"] + q["median_us"]["commit"]) / 1e3)
                  / q["plain_ms_per_compound"] for q in ph["points"] if q["op"] == "overwrite"]
        if floors:
            goal_rows.append(f"| (not a goal: the floor of vnfsd's design on this disk, bench/txn_phases.py below) a plain "
                             f"COMPOUND plus only the barrier and the commit, 1 client overwriting 1,000 files at 0.2 ms "
                             f"| {min(floors):.2f}-{max(floors):.2f}x over {len(floors)} sizes | - |")
        dev = [((q["plain_ms_per_compound"] + q["device_us"] / 1e3) / q["plain_ms_per_compound"], q["size"])
               for q in ph["points"] if q["op"] == "overwrite" and "device_us" in q]
        if dev:
            hi = max(dev)
            goal_rows.append(f"| (not a goal: the floor of any design on this disk, bench/txn_phases.py below) a plain "
                             f"COMPOUND plus one fdatasync of its bytes, 1 client overwriting 1,000 files at 0.2 ms "
                             f"| {min(dev)[0]:.2f}-{hi[0]:.2f}x over {len(dev)} sizes (highest at "
                             f"{size_label(hi[1])}) | - |")
    if goal_rows:
        w("Goals of issue 15 against these results. The issue's bounds come with TC-NFS's figures, 1.55x and 25x, "
          "which compare TC-NFS with a vanilla NFS-Ganesha that made each write durable (papers/002 §4.1.1: the "
          "local program that mimics that server's work calls fsync after each write \"to match the behavior ... "
          "of the NFS server\"). Here that baseline is mode durable, the same client and vnfsd without transactions "
          "with every WRITE DATA_SYNC4; mode plain (UNSTABLE writes, which reach the disk only when the kernel "
          "writes them back, after the pass) asks more of a transaction, which must be on disk when it answers, "
          "and is shown as well.\n")
        w("| goal | measured | met |")
        w("|---|---|---|")
        for r in goal_rows:
            w(r)
        w("")
    if t:
        w("![papers/002 Figures 4-6, 11-14](results/txn_overhead.png)\n")
    txn_phases(res, w)


def txn_phases(res, w):
    """Where a transactional COMPOUND's time goes in vnfsd: bench/results/txn_phases.json
    (bench/txn_phases.py)."""
    ph = load(os.path.join(res, "txn_phases.json"))
    if not ph:
        return
    w(f"Where a transactional COMPOUND's time goes (`{ph['command']}`, {ph['date']}): Figure 4 with one client at "
      "0.2 ms RTT, size by size, with uprobes on vnfsd around the steps of each transaction. server: the whole "
      "COMPOUND in vnfsd (dispatcher::handle), for the plain server and for txn; plan: the look-ahead (lookups, locks, backups copied); barrier: "
      "backups and undo records made durable; ops: the operations; commit: every change made durable and the "
      "commit record (with redo, docs/transactions.md, used for the overwrites of the overwrite pass: the redo records written with "
      "the commit record and applied after it; no barrier), and in it journal: the journal's write and flush, apply: the redo "
      "records applied. Milliseconds per COMPOUND: plain and txn from the pass times (client side), the steps "
      "medians over the pass's transactional COMPOUNDs. durability only: (plain + barrier + commit) / plain, the "
      "ratio left if planning cost nothing and the operations no more than plain's. device: one fdatasync of the "
      "COMPOUND's bytes (files per COMPOUND x size) just written over allocated blocks of one file on the exports' "
      "file system, median of 15; device only: (plain + device) / plain, the least any design pays that makes a "
      "COMPOUND's bytes durable after it has arrived and before it answers (undo flushes them twice: the old bytes "
      "at the barrier, the new ones at the commit; redo once, and again in its checkpoint after the reply). The write passes create files "
      "where the pass before removed its own, which on this ext4 varies by up to 4 times from run to run (the "
      "inode allocator skips recently deleted inodes), so their ratios say little; the overwrite passes are "
      "steadier.\n")
    w("| pass | size | files per COMPOUND | plain ms | txn ms | txn / plain | plain server ms | txn server ms | plan ms "
      "| barrier ms | ops ms | commit ms | of it journal ms | of it apply ms | durability only | device ms | device only |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for op in ("write", "overwrite"):
        for q in sorted((q for q in ph["points"] if q["op"] == op), key=lambda q: q["size"]):
            m, pl, tx = q["median_us"], q["plain_ms_per_compound"], q["txn_ms_per_compound"]
            w(f"| {op} | {size_label(q['size'])} | {q['batch']} | {pl:.2f} | {tx:.2f} | {tx / pl:.2f} | "
              f"{q['plain_server_median_us'] / 1e3:.2f} | "
              + " | ".join(f"{m[k] / 1e3:.2f}" for k in ("server", "plan", "barrier", "ops", "commit"))
              + " | " + " | ".join(f"{m[k] / 1e3:.2f}" if k in m else "-" for k in ("commit_journal", "commit_apply"))
              + f" | {(pl + (m['barrier'] + m['commit']) / 1e3) / pl:.2f} | "
              + (f"{q['device_us'] / 1e3:.2f} | {(pl + q['device_us'] / 1e3) / pl:.2f} |" if "device_us" in q
                 else " | |"))
    w("")


def main():
    res = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    dst = sys.argv[2] if len(sys.argv) > 2 else "bench/README.md"
    command = " ".join(sys.argv[3:]) or "bench/run --quick"
    out = []
    w = out.append
    w("# Benchmark results (generated by bench/make_readme.py; do not edit)\n")
    w(f"Produced by: `{command}`\n")
    ex = load(os.path.join(res, "vnfs_experiments.json"))
    if ex:
        p = ex["parameters"]
        w(f"Machine: {ex['machine']['cpus']} vCPUs, kernel {ex['machine']['kernel']}: a shared, noisy VM; "
          f"servers, proxy and client all on one host over loopback, so the client, the proxy and the "
          f"server compete for two cores. vnfs_experiments took {ex['total_seconds']:.0f} s "
          f"(quick={str(p['quick']).lower()}, {p['repeats']} repeats, files x size capped at "
          f"{p['bytes_cap'] >> 20} MiB per point). Times are medians of the repeats; [min-max] is the spread; "
          f"speedups are computed per pair of runs (the vectorized and the scalar run of the same repeat, back to back). "
          f"RTT is nominal (2 x vnfs-netdelay --delay-ms); see netdelay_rtt below. "
          f"Data buffers: {p.get('memory', 'plain')} memory in both modes"
          + (" (READ payload received in place)" if p.get("memory") == "registered" else "")
          + (f"; vectorized calls keep at most {p['vector_window_bytes'] >> 20} MiB in flight"
             if p.get("vector_window_bytes") else "")
          + ("; points moving 64 MiB or more per run had one untimed warm-up run per mode" if "memory" in p else "")
          + ".\n")
        pts = ex["points"]

        def find(**kw):
            for q in pts:
                if all(q.get(k) == v for k, v in kw.items()):
                    return q
            return None

        w("## Figure 6: reading and writing many files, vectorized vs scalar vnfs (vnfsd)\n")
        nd0 = load(os.path.join(res, "netdelay_rtt.json"))
        bw = next((t["median_gb_per_s"] for t in (nd0 or {}).get("throughput", [])
                   if t["path"] == "netdelay" and t["delay_ms"] == 0), None)
        w("Model = COMPOUNDs x RTT + the same vectorized run without the proxy. The last but one column "
          "adds the time the proxy needs to copy the payload at the throughput netdelay_rtt measured "
          f"({bw} GB/s on one connection), which the model of issue 6 leaves out.\n" if bw else
          "Model = COMPOUNDs x RTT + the same vectorized run without the proxy.\n")
        w("| op | size | files | RTT ms | vectorized s (COMPOUNDs) | scalar s (COMPOUNDs) | speedup median [min-max] | model s | vec / model | vec / (model + bytes / proxy throughput) | Ganesha vectorized s (COMPOUNDs) |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in ex["speedups"]:
            if r["figure"] != "6":
                continue
            v = find(figure="6", server=r["server"], op=r["op"], size=r["size"], delay_ms=r["delay_ms"], mode="vec")
            s = find(figure="6", server=r["server"], op=r["op"], size=r["size"], delay_ms=r["delay_ms"], mode="scalar")
            d = find(figure="6", server=r["server"], op=r["op"], size=r["size"], delay_ms="direct", mode="vec")
            g = find(figure="6", server="ganesha", op=r["op"], size=r["size"], delay_ms=r["delay_ms"], mode="vec")
            model = ""
            ratio = ""
            ratio_bw = ""
            if d and r["delay_ms"] != "direct":
                m = v["median_compounds"] * r["rtt_ms"] / 1000 + d["median_seconds"]
                model = fmt_s(m)
                ratio = f"{v['median_seconds'] / m:.2f}"
                if bw:
                    ratio_bw = f"{v['median_seconds'] / (m + v['files'] * v['size'] / (bw * 1e9)):.2f}"
            gs = f"{fmt_s(g['median_seconds'])} ({g['median_compounds']:.0f})" if g else ""
            rtt = "direct" if r["delay_ms"] == "direct" else f"{r['rtt_ms']:g}"
            w(f"| {r['op']} | {size_label(r['size'])} | {v['files']} | {rtt} | {fmt_s(v['median_seconds'])} "
              f"({v['median_compounds']:.0f}) | {fmt_s(s['median_seconds'])} ({s['median_compounds']:.0f}) | "
              f"{r['median']:.1f} [{r['min']:.1f}-{r['max']:.1f}] | {model} | {ratio} | {ratio_bw} | {gs} |")
        w("")
        f7 = [q for q in pts if q["figure"] == "7"]
        if f7:
            w(f"## Figure 7: compounding degree ({f7[0]['files']} items, 1 KiB files, {f7[0]['rtt_ms']:g} ms RTT, vnfsd)\n")
            degrees = sorted({q["degree"] for q in f7})
            w("| call | " + " | ".join(f"k={k}" for k in degrees) + " |")
            w("|---|" + "---|" * len(degrees))
            for op in ("vread", "vgetattrs", "vwrite"):
                cells = []
                for k in degrees:
                    q = find(figure="7", op=op, degree=k)
                    cells.append(f"{fmt_s(q['median_seconds'])} s ({q['median_compounds']:.0f})" if q else "")
                w(f"| {op} | " + " | ".join(cells) + " |")
            w("")
        f8 = [q for q in pts if q["figure"] == "8"]
        if f8:
            w(f"## Figure 8: open, read, close one file repeatedly ({f8[0]['rtt_ms']:g} ms RTT, vnfsd)\n")
            w("| size | iterations | scalar ms/iter (COMPOUNDs/iter) | one vread ms/iter (COMPOUNDs/iter) | speedup median [min-max] |")
            w("|---|---|---|---|---|")
            for r in ex["speedups"]:
                if r["figure"] != "8":
                    continue
                v = find(figure="8", size=r["size"], mode="vec")
                s = find(figure="8", size=r["size"], mode="scalar")
                it = v["iterations"]
                w(f"| {size_label(r['size'])} | {it} | {s['median_seconds'] / it * 1000:.3f} ({s['median_compounds'] / it:.1f}) | "
                  f"{v['median_seconds'] / it * 1000:.3f} ({v['median_compounds'] / it:.1f}) | "
                  f"{r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}] |")
            w("")

    # libnfs baseline: files of libnfs_baseline-netdelay-D.json (bench/baseline_netns.sh).
    lib = {}
    for path in glob.glob(os.path.join(res, "libnfs_baseline-netdelay-*.json")):
        d = float(os.path.basename(path)[len("libnfs_baseline-netdelay-"):-len(".json")])
        lib[d] = load(path)
    if lib:
        w("## libnfs 4.0 baseline (NFSv3, synchronous API) and vnfs, both against NFS-Ganesha\n")
        w("libnfs from bench/baseline_netns.sh (Ganesha in a private namespace; a separate run, its date is the "
          "files'); vnfs from vnfs_experiments' 1 KiB vectorized runs against Ganesha through the same delay. "
          "Per-file times (the file counts may differ: the comparison extrapolates linearly). The speedups compare "
          "like with like, both clients on Ganesha; the vnfsd columns show the same vnfs call against vnfsd, "
          "for reference only.\n")
        w("| RTT ms | files | size | op | libnfs ms/file (Ganesha) | vnfs vectorized ms/file (Ganesha) | speedup vs libnfs | vnfs vectorized ms/file (vnfsd) |")
        w("|---|---|---|---|---|---|---|---|")

        def per_file(server, op, size, d):
            key = "direct" if d == 0 else f"{d:g}"
            q = next((x for x in (ex or {}).get("points", []) if x["figure"] == "6" and x["server"] == server
                      and x["mode"] == "vec" and x["op"] == op and x["size"] == size and x["delay_ms"] == key), None)
            return q["median_seconds"] / q["files"] * 1000 if q else None

        for d in sorted(lib):
            if d == 0:
                continue  # vnfs_experiments' runs without delay bypass the proxy: not the same path
            data = lib[d]
            n = data["parameters"]["files"]
            size = data["parameters"]["size"]
            ph = {q["phase"]: q["median_seconds"] for q in data["phases"]}
            for op in ("read", "write"):
                if op not in ph:
                    continue
                libnfs = ph[op] / n * 1000
                g, v = per_file("ganesha", op, size, d), per_file("vnfsd", op, size, d)
                w(f"| {2 * d:g} | {n} | {size_label(size)} | {op} | {libnfs:.3f} | {f'{g:.4f}' if g else ''} | "
                  f"{fx(libnfs / g) if g else ''} | {f'{v:.4f}' if v else ''} |")
        w("")
    user_copy(res, lib, w)
    for extra in sorted(glob.glob(os.path.join(res, "vnfs_experiments_*.json"))):
        x = load(extra)
        if not x or "speedups" not in x:
            continue
        p = x["parameters"]
        w(f"## Figures 6 and 8 (speedups), separate run {os.path.basename(extra)}\n")
        w(f"`build/default/bench/vnfs_experiments --figures {p['figures']} --servers {p['servers']} --sizes {p['sizes']} "
          f"--bytes-cap-mib {p['bytes_cap'] >> 20} --delays {p['delays_ms']} --repeats {p['repeats']}` "
          f"({x['total_seconds']:.0f} s)\n")
        w("| op | size | files | RTT ms | vectorized s (COMPOUNDs) | scalar s (COMPOUNDs) | speedup median [min-max] |")
        w("|---|---|---|---|---|---|---|")
        for r in x["speedups"]:
            if r["figure"] not in ("6", "8"):
                continue  # files written before Figure 7 stopped emitting meaningless pairs
            v = next(q for q in x["points"] if q["figure"] == r["figure"] and q["op"] == r["op"] and q["size"] == r["size"]
                     and q["delay_ms"] == r["delay_ms"] and q["server"] == r["server"] and q["mode"] == "vec")
            s = next(q for q in x["points"] if q["figure"] == r["figure"] and q["op"] == r["op"] and q["size"] == r["size"]
                     and q["delay_ms"] == r["delay_ms"] and q["server"] == r["server"] and q["mode"] == "scalar")
            rtt = "direct" if r["delay_ms"] == "direct" else f"{r['rtt_ms']:g}"
            w(f"| {r['op']} | {size_label(r['size'])} | {v['files']} | {rtt} | {fmt_s(v['median_seconds'])} "
              f"({v['median_compounds']:.0f}) | {fmt_s(s['median_seconds'])} ({s['median_compounds']:.0f}) | "
              f"{r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}] |")
        w("")
    if ex:
        nd1 = load(os.path.join(res, "netdelay_rtt.json"))
        goals(ex, lib, w, next((t["median_gb_per_s"] for t in (nd1 or {}).get("throughput", [])
                                if t["path"] == "netdelay" and t["delay_ms"] == 0), None),
              load(os.path.join(res, "cli_tree.json")))
    cp = load(os.path.join(res, "cli_copy.json"))
    if cp:
        w("## `vnfs cp -r` of a small tree to vnfsd and back (bench/cli_copy.sh, loopback, no proxy)\n")
        w(f"{cp['files']} files, {cp['directories']} directories, {cp['bytes']} bytes ({cp.get('date', '')}).\n")
        w("| mode | direction | run | COMPOUNDs | operations | seconds |")
        w("|---|---|---|---|---|---|")
        for r in cp["results"]:
            s = r["stats"]
            w(f"| {r['mode']} | {r['direction']} | {r['run']} | {s['compounds']} | {s['ops']} | {s['seconds']} |")
        w("")
    ct = load(os.path.join(res, "cli_tree.json"))
    if ct:
        w("## Figures 9-11: `vnfs cp -r`, `ls -lR`, `tar -c`, `tar -x`, `rm -r` of a generated source tree "
          "(bench/cli_tree.sh, vnfsd)\n")
        w(f"papers/000's tree scaled by {ct['scale']}: {ct['files']} files, {ct['directories']} directories, "
          f"{ct['symlinks']} symlinks, {ct['bytes']} bytes ({ct['date']}). Medians over runs; COMPOUNDs in parentheses; "
          "speedups per pair of runs (the vectorized and the --scalar run of the same repeat). tar -c writes a local "
          "archive of the copy on vnfsd; tar -x extracts it to vnfsd (checked with diff -r against the source).\n")
        w("| command | RTT ms | vectorized s (COMPOUNDs) | --scalar s (COMPOUNDs) | speedup median [min-max] |")
        w("|---|---|---|---|---|")
        for cmd, rtt, v, s, ratios in tree_rows(ct):
            sp = f"{fx(statistics.median(ratios))} [{fx(ratios[0])}-{fx(ratios[-1])}]" if ratios else ""
            fv = f"{v[0]:.3f} ({v[1]:g})" if v else ""
            fs = f"{s[0]:.3f} ({s[1]:g})" if s else ""
            w(f"| {cmd} | {rtt:g} | {fv} | {fs} | {sp} |")
        w("")
    filebench(res, w)
    nd = load(os.path.join(res, "netdelay_rtt.json"))
    if nd:
        w("## netdelay_rtt: the RTT vnfs-netdelay adds (goal 2 x D)\n")
        w("| path | delay ms | median RTT ms | p10 | p90 |")
        w("|---|---|---|---|---|")
        for r in nd["rtt"]:
            w(f"| {r['path']} | {r['delay_ms']} | {r['median_ms']:.4f} | {r['p10_ms']:.4f} | {r['p90_ms']:.4f} |")
        w("")
    rdma_io_section(res, w)
    round_trip_floor_section(res, w)
    journal_crc_section(res, w)
    bdb_fig7(res, w)
    tpie_fig5(res, w)
    heavy_load(res, w)
    txn_section(res, w)
    round2(res, w)
    for mode in ("quick", "full"):
        times = os.path.join(res, f"run_times-{mode}.txt")
        if os.path.exists(times):
            # The first line, "run of DATE UTC", is written by bench/run when it starts (a
            # file's mtime is only the time of the checkout).
            with open(times) as f:
                lines = f.read().rstrip().split("\n")
            when = lines.pop(0) if lines and lines[0].startswith("run of ") else "date unknown"
            w(f"## Duration of each step of the last {'`bench/run --quick`' if mode == 'quick' else '`bench/run`'} "
              f"({when})\n")
            w("```")
            w("\n".join(lines))
            w("```\n")
    w("Other results (JSON and PNG) in bench/results/: compound_rate, client_io, rdma_io; plots of "
      "Figures 6-8 in vnfs_experiments_fig{6,7,8}.png.\n")
    w("## How to run, and how to read these numbers\n")
    w("- `bench/run --quick`: every benchmark, bounded (Figure 6 at 1 KiB, 64 KiB, 1 MiB with "
      "files x size capped at 16 MiB, so 1,000 / 256 / 16 files; Figure 7 with 256 items; Figure 8 up to "
      "16 MiB; the tree of Figures 9-11 scaled by 0.005). `bench/run`: the full run (Figure 6 at "
      "1 KiB..16 MiB, 1,000 files capped at 128 MiB per point; Figure 7 with 1,000 items; tree scale 0.02, "
      "2 runs; libnfs with 1,000 files; Figure 12 with 5 s runs; Figures 3-4 of papers/003 up to 4 MiB).")
    w("- One benchmark alone: `build/default/bench/vnfs_experiments --help` (e.g. `--figures 6 --delays 2.6 "
      "--sizes 1K --servers vnfsd`), `bash bench/cli_tree.sh --help`, `bash bench/baseline_netns.sh --help`, `build/default/bench/txn_overhead --help`, "
      "`bash bench/txn_tree.sh --help`; two vnfsd builds against each other on txn_overhead, in turns: "
      "`python3 bench/txn_ab.py --help`.")
    w("- The model COMPOUNDs x RTT + server time assumes the COMPOUNDs of a call go one after another. "
      "vread/vgetattrs send the COMPOUNDs of one call concurrently over the session's slots, so there it "
      "is an upper bound.")
    if ex:
        w(model_excess_sentence(ex))
        w(compound_count_sentence(ex))
    w("- All processes (vnfsd, Ganesha, vnfs-netdelay) are children of the benchmark, on one 2-vCPU VM "
      "shared with other work: treat differences under ~20% as noise; the spread columns show it.\n")
    with open(dst, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
