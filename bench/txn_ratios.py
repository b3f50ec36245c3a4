"""What bench/txn_overhead.json and bench/txn_tree.json say, as ratios: shared by
bench/plot_txn_overhead.py and bench/make_readme.py.

A ratio of one repeat is txn seconds / plain seconds of that repeat (the two modes of a
repeat run back to back): the slowdown of papers/002 for one client, the inverse of its
relative throughput for several.
"""
import statistics


def find(points, **kw):
    """The point whose fields equal kw, or None."""
    return next((p for p in points if all(p.get(k) == v for k, v in kw.items())), None)


def spread(values):
    """(median, min, max) of a non-empty list; None for an empty one."""
    return (statistics.median(values), min(values), max(values)) if values else None


def ratio(points, num="txn", den="plain", **kw):
    """(median, min, max) over repeats of num seconds / den seconds for the point kw, or None."""
    a, b = find(points, mode=num, **kw), find(points, mode=den, **kw)
    if not a or not b:
        return None
    return spread([x["seconds"] / y["seconds"] for x, y in zip(a["samples"], b["samples"]) if y["seconds"] > 0])


def keys(points, figure, *fields):
    """The distinct values of `fields` among the points of `figure`, in order of appearance."""
    out = []
    for p in points:
        k = tuple(p[f] for f in fields)
        if p["figure"] == figure and k not in out:
            out.append(k)
    return out


def tree_cell(tree, server, command, rtt):
    """(median seconds, median COMPOUNDs, per-run seconds by run) of txn_tree.json's rows, or None."""
    rows = [r for r in tree["results"] if r["server"] == server and r["command"] == command and r["rtt_ms"] == rtt]
    if not rows:
        return None
    return (statistics.median(r["stats"]["seconds"] for r in rows),
            statistics.median(r["stats"]["compounds"] for r in rows),
            {r["run"]: r["stats"]["seconds"] for r in rows})


def tree_ratio(tree, num, den, command, rtt, den_command=None):
    """(median, min, max) over runs of num seconds / den seconds (same run), or None."""
    a, b = tree_cell(tree, num, command, rtt), tree_cell(tree, den, den_command or command, rtt)
    if not a or not b:
        return None
    return spread([a[2][k] / b[2][k] for k in a[2] if k in b[2] and b[2][k] > 0])
