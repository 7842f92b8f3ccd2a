#!/usr/bin/env python3
"""Summarises artest stress reports (--json) for catch rates: one line per
report and variant with the cases that failed, the stress iterations found
wrong (per case, the most any one rank found), the wall time from the
job's first case to the end of its first failing case, and the end-barrier
witness: the cases it warned in and the largest lead it saw.

    ci/catch-summary.py REPORT.json ...
"""
import json
import re
import sys

WRONG = re.compile(r"(\d+) of (\d+) stress iterations wrong")


def summarise(path):
    with open(path) as f:
        rep = json.load(f)
    head = rep.get("header", {})
    sched = head.get("schedules", "") or "none"
    per = {}
    elapsed, first_fail = 0.0, None
    for c in rep.get("cases", []):
        elapsed += c.get("seconds", 0.0)
        if c.get("verdict") == "skipped":
            continue
        v = per.setdefault(c["variant"], {"cases": 0, "failed": 0, "wrong": 0, "iters": 0, "sizes": {}, "warned": 0, "lead": 0.0, "linklead": 0.0, "linkover": 0, "loadlead": 0.0, "loadover": 0})
        w = c.get("witness") or {}
        if w.get("warning"):
            v["warned"] += 1
        v["lead"] = max(v["lead"], w.get("max_lead_us", 0.0))
        v["linklead"] = max(v["linklead"], w.get("link_max_lead_us", 0.0))
        v["linkover"] += w.get("link_over", 0)
        v["loadlead"] = max(v["loadlead"], w.get("load_max_lead_us", 0.0))
        v["loadover"] += w.get("load_over", 0)
        v["stamps"] = w.get("stamps", v.get("stamps", "-"))
        v["cases"] += 1
        n = c.get("stress", 0)
        v["iters"] += n
        worst = 0
        for fl in c.get("failures", []) or []:
            m = WRONG.search(fl.get("detail", ""))
            if m:
                worst = max(worst, int(m.group(1)))
        if c.get("verdict") == "FAIL":
            v["failed"] += 1
            if first_fail is None:
                first_fail = elapsed
        v["wrong"] += worst
        key = "%dB/%s" % (c["bytes"], c["mode"])
        s = v["sizes"].setdefault(key, [0, 0])
        s[0] += worst
        s[1] += n
    name = path.rsplit("/", 1)[-1]
    for var, v in per.items():
        sizes = " ".join("%s:%d/%d" % (k, w, n) for k, (w, n) in sorted(v["sizes"].items()) if w)
        print("%-44s %-16s sched=%-38s failed %3d/%-3d cases, wrong iters %6d/%-7d first fail %s, witness[%s] %d/%d cases (max lead %.1f us; beside link loads %.1f us, %d over; beside side loads %.1f us, %d over) %s" % (
            name, var, sched, v["failed"], v["cases"], v["wrong"], v["iters"],
            "%.0fs" % first_fail if first_fail is not None else "-", v["stamps"], v["warned"], v["cases"], v["lead"], v["linklead"], v["linkover"], v["loadlead"], v["loadover"], sizes))


if len(sys.argv) < 2:
    sys.exit(__doc__)
failed = 0
for p in sys.argv[1:]:
    try:
        summarise(p)
    except OSError as e:
        print("catch-summary: %s: %s" % (p, e.strerror or e), file=sys.stderr)
        failed += 1
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        print("catch-summary: %s: not an artest --json report (%s: %s)" % (p, type(e).__name__, e), file=sys.stderr)
        failed += 1
# Every report was tried; one that could not be read fails the summary.
sys.exit(1 if failed else 0)
