#!/usr/bin/env python3
"""Puts the points of a partial vnfs_experiments run into the full run's JSON.

    python3 bench/replace_points.py FULL.json PART.json "COMMAND"

Every point of FULL whose (figure, server) pair PART measured is replaced by PART's points
of that pair (speedups likewise); the rest of FULL is kept. FULL records the replacement
under "reruns" (the pairs, PART's date and parameters, COMMAND, the command that made PART,
and the medians of the points replaced), which bench/make_readme.py reports.
"""
import datetime
import json
import sys


def dumps(doc):
    """The layout vnfs_experiments writes: a key per line, a list of objects an object per line."""
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            rows = ",\n".join("    " + json.dumps(x) for x in v)
            lines.append(f"  {json.dumps(k)}: [\n{rows}\n  ]")
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    full_path, part_path, command = sys.argv[1:]
    with open(full_path) as f:
        full = json.load(f)
    with open(part_path) as f:
        part = json.load(f)
    pairs = sorted({(p["figure"], p["server"]) for p in part["points"]})
    if not pairs:
        sys.exit("replace_points: no points in " + part_path)

    def replaced(rows, new):
        """rows less those of the pairs, with `new` where the first of them was."""
        at = next((i for i, r in enumerate(rows) if (r["figure"], r["server"]) in pairs), len(rows))
        out = [r for r in rows[:at] if (r["figure"], r["server"]) not in pairs] + new
        return out + [r for r in rows[at:] if (r["figure"], r["server"]) not in pairs]

    before = [{k: r.get(k) for k in ("figure", "server", "op", "mode", "delay_ms", "size", "files",
                                     "median_seconds", "median_compounds")}
              for r in full["points"] if (r["figure"], r["server"]) in pairs]
    full["points"] = replaced(full["points"], part["points"])
    full["speedups"] = replaced(full.get("speedups", []), part.get("speedups", []))
    full.setdefault("reruns", []).append({
        "pairs": [{"figure": f, "server": s} for f, s in pairs],
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": part.get("total_seconds"),
        "command": command,
        "parameters": part.get("parameters"),
        "before": before,
    })
    with open(full_path, "w") as f:
        f.write(dumps(full))
    print(f"replace_points: {', '.join(f'Figure {f} {s}' for f, s in pairs)} replaced in {full_path}")


if __name__ == "__main__":
    main()
