#!/usr/bin/env python3
"""artest's NCCL times beside nccl-tests' on the same machine: reads the
logs and reports ci/nccl-tests.sh wrote into OUTDIR and prints, per
collective and size, nccl-tests' out-of-place time at -R 0, 1 and 2 (CUDA
graphs) and artest bench's nccl, nccl-reg and nccl-win times (graph
replays, out of place, registered), with artest's over nccl-tests' (-R 0
for nccl, -R 1 for nccl-reg, -R 2 for nccl-win). Exit 1 when a ratio of
nccl or nccl-reg leaves 0.9 to 1.1 (nccl-win's is shown, not gated). nccl-tests ran as
OUTDIR/launch.txt says (a process per GPU, as artest, where MPI was
there to build it); with it, a column gives nccl-tests -R 0 with one
process driving every GPU, and with NO_SHIFT=1 two more give nccl-tests -R 0
with its buffers held in place and artest's nccl over it (shown, not gated).

    ci/nccl-tests-compare.py OUTDIR
"""
import json
import os
import sys

COLLS = (("all_reduce", "allreduce", ""), ("reduce_scatter", "reduce-scatter", "reduce-scatter:"),
         ("all_gather", "all-gather", "all-gather:"))


def nccl_tests_times(path):
    """size -> out-of-place time (us) from an nccl-tests *_perf log."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 13 or line.lstrip().startswith("#"):
                continue
            try:
                out[int(w[0])] = float(w[5])
            except ValueError:
                continue
    return out


def artest_times(path, prefix):
    """(variant, size) -> time (us) of artest bench's graph replays, oop-reg."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        r = json.load(f)
    for c in r.get("cases", []):
        v = c.get("variant", "")
        if c.get("verdict") != "pass" or c.get("mode") != "oop-reg-graph" or not v.startswith(prefix):
            continue
        base = v[len(prefix):]
        if prefix == "" and ":" in base:
            continue
        out[(base, c["bytes"])] = c["time_us"]
    return out


def main(d):
    bad = win_bad = 0
    launch = "one process driving every GPU"
    if os.path.exists(os.path.join(d, "launch.txt")):
        with open(os.path.join(d, "launch.txt")) as f:
            launch = f.read().strip()
    for tname, coll, prefix in COLLS:
        nt = {reg: nccl_tests_times(os.path.join(d, f"{tname}-R{reg}.log")) for reg in (0, 1, 2)}
        one = nccl_tests_times(os.path.join(d, f"{tname}-R0-1proc.log"))
        # nccl-tests -R 0 with every call's buffers held in place (NO_SHIFT=1), as artest's are.
        still = nccl_tests_times(os.path.join(d, f"{tname}-R0-noshift.log"))
        js = "artest-nccl.json" if coll == "allreduce" else "artest-nccl-colls.json"
        at = artest_times(os.path.join(d, js), prefix)
        sizes = sorted(set(nt[0]) | {n for (_, n) in at})
        if not sizes:
            continue
        print(f"\n{coll}: time per call (us), out of place, CUDA graphs; ratio = artest / nccl-tests; nccl-tests: {launch}\n")
        print("| size | nccl-tests -R 0 | artest nccl | ratio | nccl-tests -R 1 | artest nccl-reg | ratio | nccl-tests -R 2 | artest nccl-win | ratio |" + (" nccl-tests -R 0, one process |" if one else "") + (" nccl-tests -R 0, buffers in place | artest nccl / it |" if still else ""))
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" + (" ---: |" if one else "") + (" ---: | ---: |" if still else ""))
        for n in sizes:
            cells = [str(n)]
            for reg, var in ((0, "nccl"), (1, "nccl-reg")):
                a, b = nt[reg].get(n), at.get((var, n))
                cells += [f"{a:.2f}" if a else "-", f"{b:.2f}" if b else "-"]
                if a and b:
                    ratio = b / a
                    flag = "" if 0.9 <= ratio <= 1.1 else " **outside 10 %**"
                    bad += flag != ""
                    cells.append(f"{ratio:.2f}{flag}")
                else:
                    cells.append("-")
            # nccl-win against -R 2 is shown, not gated: the exit status
            # is about artest's timing of NCCL's one path (-R 0, -R 1).
            r2, w = nt[2].get(n), at.get(("nccl-win", n))
            cells += [f"{r2:.2f}" if r2 else "-", f"{w:.2f}" if w else "-"]
            if r2 and w:
                ratio = w / r2
                win_bad += not 0.9 <= ratio <= 1.1
                cells.append(f"{ratio:.2f}" + ("" if 0.9 <= ratio <= 1.1 else " (outside 10 %)"))
            else:
                cells.append("-")
            if one:
                cells.append(f"{one[n]:.2f}" if one.get(n) else "-")
            if still:
                a, b = still.get(n), at.get(("nccl", n))
                cells += [f"{a:.2f}" if a else "-", f"{b / a:.2f}" if a and b else "-"]
            print("| " + " | ".join(cells) + " |")
    print(f"\n{bad} ratio(s) outside 0.9 to 1.1 (nccl-win against -R 2, not counted: {win_bad})")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
