#!/usr/bin/env python3
"""Summarises ARTEST_WITNESS_DUMP files (one line per stress iteration: case,
iteration, lead ns, first rank, last rank, loaded rank or -1, load ns, load
kind, why it was not compared or "-"), to see where a witness threshold
would fall. Per file and case: how many iterations with no load of their own
and how many beside a side load led by more than each threshold, and those
beside a side load by the load's length (count, median and largest lead).

    ci/witness-leads.py FILE.leads ...     (ci/probe-stress-catch.sh WITNESS_DUMP=1 writes them)
"""
import collections
import sys

THRESHOLDS_US = (30, 50, 70, 90, 120)
BINS_US = (0, 50, 100, 150, 200, 250)


def rows(path):
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) != 9:
                continue
            yield {"case": w[0], "lead": int(w[2]) / 1e3, "last": int(w[4]), "loaded": int(w[5]),
                   "load": int(w[6]) / 1e3, "kind": w[7], "skipped": w[8]}


def over(xs):
    return [sum(1 for r in xs if r["lead"] > t) for t in THRESHOLDS_US]


def main(paths):
    for path in paths:
        cases = collections.defaultdict(list)
        for r in rows(path):
            cases[r["case"]].append(r)
        print(f"== {path}  (leads past {', '.join(map(str, THRESHOLDS_US))} us)")
        for case, rs in cases.items():
            none = [r for r in rs if r["loaded"] < 0 and r["skipped"] in ("-", "load")]
            side = [r for r in rs if r["loaded"] >= 0 and r["kind"] == "side"]
            print(f"  {case}: {len(rs)} iterations; no load of their own {len(none)}: {over(none)}; "
                  f"beside a side load {len(side)}: {over(side)}; largest {max(r['lead'] for r in rs):.1f} us")
            for lo, hi in zip(BINS_US, BINS_US[1:]):
                xs = sorted(r["lead"] for r in side if lo <= r["load"] < hi)
                if xs:
                    print(f"      load [{lo}, {hi}) us: {len(xs)}, median {xs[len(xs) // 2]:.1f}, largest {xs[-1]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
