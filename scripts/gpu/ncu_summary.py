#!/usr/bin/env python3
"""Sums the GPU time of each kernel in the output of session.sh's stepprofile
part (ncu --metrics gpu__time_duration.sum --print-summary per-kernel), one
table per "## model shape" section: invocations x average, by kernel and grid,
largest first, cuBLAS's kernels named by their layout and tile (sgemm_tn_128x64).

    python3 scripts/gpu/ncu_summary.py docs/bench/2026-11-26-h200/run19-55860f0/stepprofile.txt

ncu runs each kernel alone, with its caches flushed and its clocks at base, so
the totals exceed the wall time of the same work; their shares are what count.
"""
import collections
import re
import sys

UNITS = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}


def kernel_name(name):
    m = re.search(r"_(nn|tn|nt|tt)_n_tilesize(\w+?)_stage", name)
    if m and "gemm" in name:
        return "sgemm_%s_%s%s" % (m.group(1), m.group(2), "_splitk" if "split_k" in name else "")
    return name


def summarize(lines):
    sections = collections.OrderedDict()
    total, count, current = None, None, None
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("## "):
            total, count = collections.Counter(), collections.Counter()
            sections[line[3:]] = (total, count)
            continue
        m = re.match(r"  (\S+) \((.*?)\)x\((.*?)\), Device \d+, CC [\d.]+, Invocations (\d+)", line)
        if m and total is not None:
            current = ("%s %s" % (kernel_name(m.group(1)), m.group(2).replace(", ", "x")), int(m.group(4)))
            continue
        m = re.match(r"\s+gpu__time_duration.sum\s+(\w+)\s+[\d.,]+\s+[\d.,]+\s+([\d.,]+)", line)
        if m and current:
            key, n = current
            total[key] += n * float(m.group(2).replace(",", "")) * UNITS[m.group(1)]
            count[key] += n
            current = None
    return sections


def main():
    with open(sys.argv[1]) as f:
        sections = summarize(f)
    for name, (total, count) in sections.items():
        all_ms = sum(total.values())
        print("## %s: %.1f ms in %d launches" % (name, all_ms, sum(count.values())))
        for key, ms in total.most_common():
            print("  %-44s %9.2f ms %5.1f %%  n=%d" % (key, ms, 100 * ms / all_ms, count[key]))


if __name__ == "__main__":
    main()
