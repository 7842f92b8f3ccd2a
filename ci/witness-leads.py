#!/usr/bin/env python3
"""Summarises ARTEST_WITNESS_DUMP files (one line per stress iteration: case,
iteration, lead ns, first rank, last rank, loaded rank or -1, load ns, load
kind, why it was not compared or "-", and the loaded rank's call stamp less
its load's start and end in ns, "- -" where not stamped), to see where a
witness threshold would fall. Per file and case: how many iterations with no
load of their own and how many beside a side load led by more than each
threshold, those beside a side load by the load's length (count, median and
largest lead), and, where the loads were stamped, by where the loaded rank's
call ended against its load's end (within the load, at its end, after it).

    ci/witness-leads.py FILE.leads ...     (ci/probe-stress-catch.sh WITNESS_DUMP=1 writes them)
"""
import collections
import sys

THRESHOLDS_US = (10, 20, 30, 50, 70, 90, 120)
BINS_US = (0, 50, 100, 150, 200, 250)
# Where the loaded rank's call ended against its load's end (us): before
# it by more than PIN_US, within PIN_US of it, or after it by more.
PIN_US = 10


def rows(path):
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) not in (9, 11):
                continue
            r = {"case": w[0], "lead": int(w[2]) / 1e3, "last": int(w[4]), "loaded": int(w[5]),
                 "load": int(w[6]) / 1e3, "kind": w[7], "skipped": w[8], "after_end": None}
            if len(w) == 11 and w[10] != "-":
                r["after_start"], r["after_end"] = int(w[9]) / 1e3, int(w[10]) / 1e3
            yield r


def over(xs):
    return [sum(1 for r in xs if r["lead"] > t) for t in THRESHOLDS_US]


def main(paths):
    for path in paths:
        cases = collections.defaultdict(list)
        for r in rows(path):
            cases[r["case"]].append(r)
        if not cases:
            sys.exit(f"witness-leads: {path}: no witness rows (want a file ARTEST_WITNESS_DUMP wrote)")
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
            stamped = [r for r in side if r["after_end"] is not None]
            for name, keep in (("call ended within the load", lambda a: a < -PIN_US),
                               (f"call ended within {PIN_US} us of the load's end", lambda a: -PIN_US <= a <= PIN_US),
                               ("call ended after the load", lambda a: a > PIN_US)):
                xs = [r for r in stamped if keep(r["after_end"])]
                if xs:
                    late = [r for r in xs if r["last"] == r["loaded"]]
                    leads = sorted(r["lead"] for r in late) or [0]
                    print(f"      {name}: {len(xs)}; loaded rank last {len(late)}, of them past {over(late)}, "
                          f"median {leads[len(leads) // 2]:.1f}, largest {leads[-1]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        main(sys.argv[1:])
    except OSError as e:
        sys.exit(f"witness-leads: {e.filename}: {e.strerror or e}")
    except (ValueError, IndexError) as e:
        sys.exit(f"witness-leads: not an ARTEST_WITNESS_DUMP file ({e})")
