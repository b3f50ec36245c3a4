#!/usr/bin/env python3
"""Writes the reliability table of docs/hardening.md from what the runs recorded.

Sources, each optional (a source that is missing gives no rows):
- CTest's logs, build/PRESET/Testing/Temporary/LastTest.log for the presets default, asan
  and fuzz: the rows tests print (`vnfs-reliability: {json}`, tests/support's
  record_reliability) with each test's verdict and time; and every fuzz_NAME test of the
  fuzz preset (libFuzzer's final stats), with the properties its harness states
  (the "Properties:" paragraph of tests/fuzz/NAME.cpp);
- longer fuzz campaigns, tests/fuzz/campaigns/NAME.log (scripts/fuzz_campaign.sh's record of
  a run): the command and libFuzzer's final stats; a campaign continued
  (`fuzz_campaign.sh --continue`) keeps its earlier runs as NAME.part-K.log, and its row
  gives every run and their total;
- bench/results/heavy_load.json (bench/heavy_load).
A campaign's row stays as the document has it until a record of that campaign in
tests/fuzz/campaigns replaces it (the campaigns of earlier sessions left theirs in build/).

The table replaces what lies between the markers
<!-- reliability-table:begin --> and <!-- reliability-table:end --> in docs/hardening.md.

Usage: python3 scripts/reliability_table.py [--check]   (--check: exit 1 if the file would change)
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "hardening.md"
BEGIN, END = "<!-- reliability-table:begin -->", "<!-- reliability-table:end -->"
PRESETS = ["default", "asan", "fuzz"]


def ctest_blocks(log):
    """(name, output, seconds, passed) of each test in a LastTest.log."""
    text = log.read_text(errors="replace")
    for m in re.finditer(r"^\d+/\d+ Test: (\S+)\n(.*?)^Test time =\s*([\d.]+) sec\n-+\n(Test Passed|Test Fail\w*)",
                         text, re.S | re.M):
        yield m.group(1), m.group(2), float(m.group(3)), m.group(4) == "Test Passed"


def fuzz_stats(text):
    """libFuzzer's final stats in a log, as a dict of ints."""
    return {k: int(v) for k, v in re.findall(r"^stat::(\w+):\s*(\d+)", text, re.M)}


def harness_properties(name):
    """The "Properties:" paragraph of a harness's header comment, in one line."""
    src = ROOT / "tests" / "fuzz" / f"{name}.cpp"
    if not src.exists():
        return ""
    comment = []
    for line in src.read_text().splitlines():
        if not line.startswith("//"):
            break
        comment.append(line[2:].strip())
    text = " ".join(comment)
    m = re.search(r"Propert(?:y|ies): (.*)", text)
    return (m.group(1) if m else text).strip()


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def rows_from_ctest():
    rows = []
    for preset in PRESETS:
        log = ROOT / "build" / preset / "Testing" / "Temporary" / "LastTest.log"
        if not log.exists():
            continue
        for name, output, seconds, passed in ctest_blocks(log):
            verdict = f"{'passed' if passed else 'FAILED'} ({preset}, {seconds:.0f} s)"
            for rec in re.findall(r"^vnfs-reliability: (\{.*\})$", output, re.M):
                r = json.loads(rec)
                rows.append((r["test"], r["size"], r["checked"], f"{r['result']}; {verdict}"))
            if preset == "fuzz" and name.startswith("fuzz_"):
                st = fuzz_stats(output)
                if "number_of_executed_units" not in st:
                    continue
                size = (f"{st['number_of_executed_units']:,} executions in {seconds:.0f} s "
                        f"({st.get('average_exec_per_sec', 0):,}/s), {st.get('new_units_added', 0):,} new inputs, "
                        f"peak RSS {st.get('peak_rss_mb', 0)} MB")
                rows.append((f"{name} (CTest)", size, harness_properties(name[5:]), verdict))
    return rows


def campaign_run(log):
    """(executions, text describing the run, whether it crashed) of one campaign log, or None
    if the log has no final stats (a run still going, or killed)."""
    text = log.read_text(errors="replace")
    st = fuzz_stats(text)
    command = re.search(r"^# command: (.*)$", text, re.M)
    if "number_of_executed_units" not in st or not command:
        return None
    seconds = re.search(r"^# seconds: (\d+)", text, re.M)
    crashed = re.search(r"^SUMMARY: |ERROR: libFuzzer", text, re.M) is not None
    size = (f"{st['number_of_executed_units']:,} executions"
            + (f" in {seconds.group(1)} s" if seconds else "")
            + f" ({st.get('average_exec_per_sec', 0):,}/s), {st.get('new_units_added', 0):,} new inputs, "
            f"peak RSS {st.get('peak_rss_mb', 0)} MB; `{command.group(1)}`")
    return st["number_of_executed_units"], size, crashed


def rows_from_campaigns():
    rows = []
    folder = ROOT / "tests" / "fuzz" / "campaigns"
    for log in sorted(folder.glob("*.log")):
        if ".part-" in log.name:
            continue  # an earlier run, reported with the campaign's last one
        parts = sorted(folder.glob(f"{log.stem}.part-*.log"),
                       key=lambda p: int(p.name.rsplit("-", 1)[1].split(".")[0]))
        last = campaign_run(log)
        if last is None:
            continue
        runs = [r for r in map(campaign_run, parts) if r] + [last]
        if len(runs) == 1:
            size = last[1]
        else:
            size = (f"{sum(r[0] for r in runs):,} executions in {len(runs)} runs sharing one corpus "
                    "(libFuzzer reloads it, so runs side by side share what each finds): "
                    + "; ".join(f"run {i}: {r[1]}" for i, r in enumerate(runs, 1)))
        crashed = any(r[2] for r in runs)
        result = "a crash or sanitizer report (see the log)" if crashed else "no crash, leak, hang or violated property"
        rows.append((f"fuzz_{log.stem} (campaign)", size, harness_properties(log.stem), result))
    return rows


def kept_campaign_rows(doc, fresh):
    """The document's "(campaign)" rows for campaigns with no log here (not in fresh)."""
    if BEGIN not in doc or END not in doc:
        return []
    kept = []
    for line in doc.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        m = re.match(r"^\| (fuzz_\S+ \(campaign\)) \| ", line)
        if m and m.group(1) not in fresh:
            kept.append(line)
    return kept


def rows_from_bench():
    path = ROOT / "bench" / "results" / "heavy_load.json"
    if not path.exists():
        return []
    j = json.loads(path.read_text())
    p = j["parameters"]
    return [("bench/heavy_load",
             f"{p['clients']} clients x {p['compounds_per_client']:,} COMPOUNDs ({j['compounds']:,}), "
             f"vnfsd --threads {p['vnfsd_threads']}, {j['seconds']:.0f} s",
             "every read compared with what was written, every getattr size, every file on disk at the end",
             f"{j['errors']} errors, {j['bytes_checked']:,} bytes checked, p50 {j['latency_us']['p50'] / 1000:.2f} ms, "
             f"p99 {j['latency_us']['p99'] / 1000:.2f} ms, vnfsd peak RSS {j['vnfsd_peak_rss_kib'] / 1024:.1f} MiB, "
             f"vnfsd {'alive' if j['vnfsd_alive'] else 'DEAD'}")]


def table(doc):
    line = lambda r: "| " + " | ".join(cell(x) for x in r) + " |"
    campaigns = rows_from_campaigns()
    campaign_lines = sorted([line(r) for r in campaigns] + kept_campaign_rows(doc, {r[0] for r in campaigns}))
    out = [BEGIN, "",
           "Generated by `python3 scripts/reliability_table.py` from the last runs' logs (do not edit by hand).", "",
           "| test | size | checked | result |", "|---|---|---|---|"]
    out += [line(r) for r in rows_from_ctest()] + campaign_lines + [line(r) for r in rows_from_bench()]
    out += ["", END]
    return "\n".join(out)


def main():
    doc = DOC.read_text()
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        new = head + table(doc) + tail
    else:
        new = doc.rstrip("\n") + "\n\n" + table(doc) + "\n"
    if "--check" in sys.argv[1:]:
        sys.exit(0 if new == doc else 1)
    DOC.write_text(new)


if __name__ == "__main__":
    main()
