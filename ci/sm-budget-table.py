#!/usr/bin/env python3
"""The SM-budget table: one `artest bench --sm-budget N --json F` report per
budget in, a Markdown table out. Per variant, size and launch kind: at each
budget the collective's time per call beside the load (us), the load's
slowdown beside the calls (x) and the pair's span (us: first start to last
end of a repetition of calls and the load of fixed work); then the budget
whose span is smallest.

    ci/sm-budget-table.py bench-smb8.json bench-smb16.json ...
"""
import json
import sys


def read_report(path):
    """The JSON report at path, or exit 1 with one line naming the file."""
    try:
        with open(path) as f:
            r = json.load(f)
    except OSError as e:
        sys.exit(f"sm-budget-table: {path}: {e.strerror or e}")
    except ValueError as e:
        sys.exit(f"sm-budget-table: {path}: not a JSON report ({e}); give the --json report, not --jsonl")
    if not isinstance(r, dict):
        sys.exit(f"sm-budget-table: {path}: not an artest report")
    return r


def main(paths):
    rows = {}  # (variant, bytes, mode) -> {budget: case}
    budgets = []
    for p in paths:
        r = read_report(p)
        h = r.get("header", {})
        b = h.get("sm_budget")
        if not b:
            sys.exit(f"sm-budget-table: {p}: not an artest bench --sm-budget report")
        if h.get("overlap_note"):
            print(f"<!-- {p}: {h['overlap_note']} -->")
        budgets.append(b)
        for c in r.get("cases", []):
            if c.get("verdict") != "pass" or not c.get("pair_us"):
                continue
            rows.setdefault((c["variant"], c["bytes"], c["mode"]), {})[b] = c
    budgets = sorted(set(budgets))
    head = ["variant", "size", "mode"] + [f"{b} SMs: call us / load x / pair us" for b in budgets] + ["best budget"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for (v, n, mode), by in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        cells = []
        for b in budgets:
            c = by.get(b)
            cells.append("-" if c is None else f"{c['overlap_time_us']:.1f} / {c['load_slowdown']:.2f} / {c['pair_us']:.0f}")
        best = min(by, key=lambda b: by[b]["pair_us"])
        print(f"| {v} | {size(n)} | {mode} | " + " | ".join(cells) + f" | {best} |")


def size(n):
    for unit, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {s}"
    return f"{n} B"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        main(sys.argv[1:])
    except (KeyError, TypeError, AttributeError) as e:
        sys.exit(f"sm-budget-table: a report lacks what the table needs ({type(e).__name__}: {e})")
