#!/usr/bin/env python3
"""Run-to-run agreement of two `porta bench --json` files.

    python3 bench/compare_runs.py RUN1.json RUN2.json [--min-us 100] [--tolerance 0.10]

For every (op, case, dtype, device, variant) present and timed in both runs whose median is at
least --min-us in both, prints the relative difference of the medians
|m1 - m2| / min(m1, m2), then how many cases agree within --tolerance, the median and the worst
difference. Exit status 0 always: this is a report, not a test (timings are never pass/fail).
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = {}
    for r in doc.get("results", []):
        t = r.get("device_time_us") or {}
        if r.get("status") != "ok" or t.get("median") is None:
            continue
        key = (r["op"], r["case"], r["dtype"], r["device"], r.get("variant", ""))
        rows[key] = t["median"]
    return doc.get("host", {}), rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run1")
    ap.add_argument("run2")
    ap.add_argument("--min-us", type=float, default=100.0)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--all", action="store_true", help="print every case, not only the outliers")
    args = ap.parse_args()

    host1, a = load(args.run1)
    host2, b = load(args.run2)
    diffs = []
    for key, m1 in a.items():
        m2 = b.get(key)
        if m2 is None or min(m1, m2) < args.min_us:
            continue
        diffs.append((abs(m1 - m2) / min(m1, m2), key, m1, m2))
    if not diffs:
        print("no case timed in both runs above %.0f us" % args.min_us)
        return 0
    diffs.sort()
    agree = sum(1 for d in diffs if d[0] <= args.tolerance)
    median = diffs[len(diffs) // 2][0]
    print("load average (1 min): run1 %s, run2 %s" % (host1.get("load_average_1m"), host2.get("load_average_1m")))
    print("%d of %d cases (median >= %.0f us) agree within %.0f%%; median difference %.1f%%, worst %.1f%%"
          % (agree, len(diffs), args.min_us, args.tolerance * 100, median * 100, diffs[-1][0] * 100))
    shown = diffs if args.all else [d for d in diffs if d[0] > args.tolerance]
    for d, key, m1, m2 in shown:
        op, case, dtype, device, variant = key
        name = " ".join(x for x in (op, case, dtype, device, variant) if x)
        print("  %-60s %12.1f %12.1f us  %5.1f%%" % (name, m1, m2, d * 100))
    return 0


if __name__ == "__main__":
    sys.exit(main())
