#!/usr/bin/env python3
"""Turns the raw output of benches/compare/run.sh into a markdown table (stdout) and busbw.svg.

Inputs in OUT: mpi.txt (mpi_bench lines), twin.jsonl (aiv-perf --json lines), memcpy.txt,
twin_checked.jsonl and twin_cost.jsonl (the same with --twin-checks and with --checks-cost;
target d), twin_d_off.jsonl and twin_d_on.jsonl (DPAIRS), twin_staged.jsonl (-R 0),
twin_procs.jsonl (a process per rank under mpirun, from 2026-12-07 on),
memcpy_ws.txt (run.sh from commit 1b6f328 on: the same copies over each >= 16 MiB cell's
working set, "coll ranks per-rank-size working-set GB/s"), and
(run.sh from 2026-12-01 on) corelat.txt: the two CPUs' cache-line round trip in ns measured
just before each MPI and twin run, shown per cell as a range and run by run for the 64 KiB
cells.
Traffic: what the twin's kernels moved in GM, all ranks together, as copy bandwidth (aiv-perf's
dmabw: (GM bytes the DMA read + GM bytes it wrote) / 2 per second, measured by the twin's
counters), as a fraction of the 2-thread memcpy bandwidth (bytes copied per second by both
threads, each byte one read and one write). When aiv-perf's JSON carries its census fields, a
second table gives the kernels' cost in NPU terms: GM data bytes per rank, flag waits, sync
rounds."""
import json
import statistics
import sys

out = sys.argv[1]
mem = {}
for line in open(f"{out}/memcpy.txt"):
    s, g = line.split()
    mem[int(s)] = float(g)
# 2-thread memcpy over the cell's working set (the bytes of every rank's inputs and outputs),
# by (collective, ranks, per-rank size); absent in outputs of older run.sh.
mem_ws = {}
try:
    for line in open(f"{out}/memcpy_ws.txt"):
        coll, n, s, _ws, g = line.split()
        mem_ws[(coll, int(n), int(s))] = float(g)
except FileNotFoundError:
    pass
def median_row(rows):
    """The repetition with the median time (its other columns come with it); wrong counts summed."""
    rows = sorted(rows, key=lambda r: r[0])
    m = rows[(len(rows) - 1) // 2]
    return (m[0], m[1], sum(r[2] for r in rows)) + tuple(m[3:])

mpi_all = {}
for line in open(f"{out}/mpi.txt"):
    coll, n, size, us, alg, bus, wrong = line.split()
    mpi_all.setdefault((coll, int(n), int(size)), []).append((float(us), float(bus), int(wrong)))
mpi = {k: median_row(v) for k, v in mpi_all.items()}
twin_all = {}
census = {}
registered = False  # aiv-perf -R 1 (run.sh from 2026-12-02 on)
for line in open(f"{out}/twin.jsonl"):
    d = json.loads(line)
    registered = registered or d.get("registered", False)
    for r in d["rows"]:
        # aiv-perf reports both placements; the comparison is out of place, as MPI's.
        o = r["out_of_place"]
        twin_all.setdefault((d["collective"], d["ranks"], r["size"]), []).append(
            (o["time_us"], o["busbw"], o["wrong"], o.get("dmabw", 0.0)))
        # The census call's figures (aiv-perf from issue 14e on; the same in every repetition).
        if "sync_rounds" in o:
            census[(d["collective"], d["ranks"], r["size"])] = (
                o["gm_data_read_per_rank"], o["gm_data_written_per_rank"],
                o["flag_waits_per_rank"], o["sync_rounds"])
twin = {k: median_row(v) for k, v in twin_all.items()}
def other_twin_runs(name):
    """Out-of-place (time, busbw, wrong) per cell of another aiv-perf JSON file of the run, every
    repetition; {} when this run.sh did not write it."""
    runs = {}
    try:
        for line in open(f"{out}/{name}"):
            d = json.loads(line)
            for r in d["rows"]:
                o = r["out_of_place"]
                runs.setdefault((d["collective"], d["ranks"], r["size"]), []).append(
                    (o["time_us"], o["busbw"], o["wrong"]))
    except FileNotFoundError:
        pass
    return runs

# The same cells with the twin's checkers on (run.sh from issue 14 on; absent in older outputs).
checked_all = other_twin_runs("twin_checked.jsonl")
# Target d's runs: the pairs above plus run.sh's extra off/on pairs (DPAIRS, from commit 32cb40a
# on; absent in older outputs), the median time of each side per cell.
d_extra = (other_twin_runs("twin_d_off.jsonl"), other_twin_runs("twin_d_on.jsonl"))
d_runs = {k: ([r[0] for r in twin_all.get(k, [])] + [r[0] for r in d_extra[0].get(k, [])],
              [r[0] for r in v] + [r[0] for r in d_extra[1].get(k, [])])
          for k, v in checked_all.items()}
def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]
# (A cell with runs on one side only, from a run stopped part-way, has no ratio.)
checked = {k: (median(off), median(on), min(len(off), len(on)))
           for k, (off, on) in d_runs.items() if off and on}
# Target d within one process (aiv-perf --checks-cost, run.sh from commit 4661d07 on;
# absent in older outputs): every repetition's adjacent off/on batch pairs of the cell, pooled;
# per cell (pairs, median us per operation off, median on, median of the pairs' on/off ratios
# (statistics.median: the mean of the middle two of an even count, as aiv-perf's own), median
# over the repetitions of the ratio of the two sides' totals). Which checkers the checked
# batches ran, over all runs (the verdict names them).
cost_pairs = {}
cost_totals = {}
cost_checkers = set()
try:
    for line in open(f"{out}/twin_cost.jsonl"):
        d = json.loads(line)
        cb = d.get("checked_batches")
        if cb:
            cost_checkers.add((cb["hazards"], cb["races"]))
        for r in d["rows"]:
            o = r["out_of_place"]
            key = (d["collective"], d["ranks"], r["size"])
            cost_pairs.setdefault(key, []).extend(
                (off, on) for off, on in (o.get("checks_pairs") or []) if off and on)
            if o.get("checked_time_us") and o.get("time_us"):
                cost_totals.setdefault(key, []).append(o["checked_time_us"] / o["time_us"])
except FileNotFoundError:
    pass
cost = {k: (len(v), statistics.median([p[0] for p in v]), statistics.median([p[1] for p in v]),
            statistics.median([on / off for off, on in v]),
            statistics.median(cost_totals[k]) if cost_totals.get(k) else None)
        for k, v in cost_pairs.items() if v}
# The same cells with a process per rank (aiv-perf under mpirun; run.sh from 2026-12-07 on).
procs = {k: median_row(v) for k, v in other_twin_runs("twin_procs.jsonl").items()}
# The same cells without buffer registration (aiv-perf -R 0; run.sh from 2026-12-02 on).
staged = {k: median_row(v) for k, v in other_twin_runs("twin_staged.jsonl").items()}
# Cross-core round trips before the cell's runs, in run order per (cell, kind): kind mpi, off
# (twin) or on (twin checked); absent in outputs of older run.sh.
lat = {}
try:
    for line in open(f"{out}/corelat.txt"):
        coll, n, size, kind, ns = line.split()
        lat.setdefault((coll, int(n), int(size), kind), []).append(ns)
except FileNotFoundError:
    pass
corelat = {}
for (coll, n, size, _kind), v in lat.items():
    corelat.setdefault((coll, n, size), []).extend(float(x) for x in v)
reps = max(len(v) for v in twin_all.values())
print(f"Medians of {reps} alternating runs per cell." if reps > 1 else "One run per cell.")
if registered:
    print("The twin's buffers are registered as window memory (aiv-perf -R 1): its AllGather and "
          "AllReduce read peers' inputs in place, as MPI's single-copy transport does.")
print()

def per_rank(coll, n, size):
    return size // n if coll == "all_gather" else size

def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"

rows = []
targets = []
cols = "| collective | ranks | per-rank size | MPI time (us) | twin time (us) | MPI busbw (GB/s) | twin busbw (GB/s) | twin/MPI busbw | 2-thread memcpy (GB/s) | twin DMA (GB/s) | twin traffic / memcpy | wrong (MPI, twin) |"
if mem_ws:
    cols += " memcpy over the working set (GB/s) | twin traffic / that |"
if checked:
    cols += " separate runs: off/on pairs | twin time, checkers off (us) | checkers on (us) | checkers on / off |"
if cost:
    cols += " target d, --checks-cost: off/on batch pairs | checkers off (us) | checkers on (us) | median pair on / off | totals on / off |"
if corelat:
    cols += " CPU-to-CPU round trip before the runs (ns) |"
print(cols)
print("|---" * (cols.count("|") - 1) + "|")
for key in sorted(twin, key=lambda k: (k[0], k[1], k[2])):
    coll, n, size = key
    pr = per_rank(coll, n, size)
    mkey = ("all_gather" if coll == "all_gather" else "all_reduce", n, size)
    if mkey not in mpi:
        continue
    mt, mb, mw = mpi[mkey]
    tt, tb, tw, dma = twin[key]
    m = mem.get(pr, 0.0)
    traffic = dma / m if m else 0.0
    rows.append((coll, n, pr, mb, tb))
    line = f"| {coll} | {n} | {human(pr)} | {mt:.1f} | {tt:.1f} | {mb:.3f} | {tb:.3f} | {tb / mb if mb else 0:.2f}x | {m:.2f} | {dma:.2f} | {traffic:.0%} | {mw}, {tw} |"
    ws = mem_ws.get((coll, n, pr))
    if mem_ws:
        line += f" {ws:.2f} | {dma / ws:.0%} |" if ws else " - | - |"
    ct = dt = None
    if checked:
        c = checked.get(key)
        if c:
            dt, ct, pairs = c
            line += f" {pairs} | {dt:.1f} | {ct:.1f} | {ct / dt if dt else 0:.2f}x |"
        else:
            line += " - | - | - | - |"
    cr = None
    if cost:
        c = cost.get(key)
        if c:
            pairs, off_us, on_us, cr, tot = c
            line += f" {pairs} | {off_us:.1f} | {on_us:.1f} | {cr:.2f}x | "
            line += f"{tot:.2f}x |" if tot else "- |"
        else:
            line += " - | - | - | - | - |"
    if corelat:
        ns = corelat.get(key, [])
        line += f" {min(ns):.0f}-{max(ns):.0f} |" if ns else " - |"
    targets.append((coll, n, pr, mt, tt, mb, tb, m, dma, ct, ws, dt, cr))
    print(line)

# Issue 14's targets, cell by cell, from the table above.
if targets:
    print()
    print("| target | cells | met | worst cell |")
    print("|---|---|---|---|")
    def verdict(name, cells):
        """cells: (label, value, goal, higher_is_better)."""
        if not cells:
            return
        ok = [c for c in cells if (c[1] >= c[2] if c[3] else c[1] <= c[2])]
        worst = min(cells, key=lambda c: c[1] / c[2] if c[3] else c[2] / c[1])
        print(f"| {name} | {len(cells)} | {len(ok)} | {worst[0]}: {worst[1]:.2f} (goal {worst[2]}) |")
    def label(t):
        return f"{t[0]} np{t[1]} {human(t[2])}"
    # a: time at 64 KiB <= MPI's (ratio twin / MPI time <= 1).
    verdict("a. 64 KiB time, twin / MPI", [(label(t), t[4] / t[3], 1.0, False) for t in targets if t[2] == 65536])
    # b: busbw >= 1.0x MPI at np 2, >= 1.5x at np 4 and 8, at 1, 16 and 64 MiB.
    verdict("b. busbw, twin / MPI", [(label(t), t[6] / t[5], 1.0 if t[1] == 2 else 1.5, True)
                                     for t in targets if t[2] >= 1 << 20 and t[5]])
    # c: twin DMA >= 90% of the 2-thread memcpy bandwidth at >= 16 MiB.
    verdict("c. twin DMA / memcpy", [(label(t), t[8] / t[7], 0.9, True) for t in targets if t[2] >= 16 << 20 and t[7]])
    # Not the letter: c against a memcpy that touches as much memory as the cell.
    verdict("(c with the working-set memcpy)", [(label(t), t[8] / t[10], 0.9, True) for t in targets
                                                 if t[2] >= 16 << 20 and t[10]])
    # d: checkers on <= 1.3x checkers off in every cell of a and b. Measured within one process
    # when the run has --checks-cost runs (the median of adjacent off/on batch pairs), else from
    # separate processes; with both, the separate runs' verdict follows for comparison.
    def ab(t):
        """A cell of targets a and b (64 KiB, or 1 MiB and more)."""
        return t[2] == 65536 or t[2] >= 1 << 20
    if cost:
        def on_off(b):
            return "on" if b else "off"
        ran = "".join(f"; hazards {on_off(h)}, races {on_off(r)}" for h, r in sorted(cost_checkers))
        verdict(f"d. checkers on / off (--checks-cost: median of batch pairs{ran})",
                [(label(t), t[12], 1.3, False) for t in targets if t[12] is not None and ab(t)])
    verdict("(d from separate runs)" if cost else "d. checkers on / off",
            [(label(t), t[9] / t[11], 1.3, False) for t in targets if t[9] is not None and ab(t)])

if corelat:
    # The 64 KiB cells run by run (fixed costs dominate there, and so does the CPUs' placement),
    # each time with the round trip measured just before it. run.sh writes corelat.txt as MPI,
    # then the twin and the checked twin (in either order), per repetition; each kind's lines
    # are in the order of its own output file.
    runs = {}
    def times(path, name):
        for line in open(path):
            d = json.loads(line)
            for r in d["rows"]:
                runs.setdefault((d["collective"], d["ranks"], r["size"]), {}).setdefault(
                    name, []).append(r["out_of_place"]["time_us"])
    times(f"{out}/twin.jsonl", "off")
    times(f"{out}/twin_checked.jsonl", "on")
    for key, v in mpi_all.items():  # keyed as the twin's cells (mpi_bench prints the same size)
        runs.setdefault(key, {})["mpi"] = [x[0] for x in v]
    print()
    print("| collective | ranks | run | MPI time (us) (round trip before, ns) | twin time (us) (ns) | twin time, checkers on (us) (ns) |")
    print("|---|---|---|---|---|---|")
    for key in sorted(runs):
        coll, n, size = key
        if per_rank(coll, n, size) != 65536:
            continue
        r = runs[key]
        for i in range(len(r.get("off", []))):
            cells = []
            for kind in ("mpi", "off", "on"):
                t = r.get(kind, [])
                ns = lat.get((coll, n, size, kind), [])
                cells.append(f"{t[i]:.1f} ({ns[i]})" if i < len(t) and i < len(ns) else "-")
            print(f"| {coll} | {n} | {i + 1} | " + " | ".join(cells) + " |")

if staged:
    # Without registration every input is staged in the HCCL buffer first (one copy more).
    print()
    print("| collective | ranks | per-rank size | MPI time (us) | twin time, registered (us) | twin time, staged (us) | staged / registered | MPI busbw (GB/s) | twin busbw, staged (GB/s) | staged twin / MPI busbw | wrong (staged) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(staged):
        coll, n, size = key
        mkey = ("all_gather" if coll == "all_gather" else "all_reduce", n, size)
        if mkey not in mpi or key not in twin:
            continue
        mt, mb, _ = mpi[mkey]
        tt = twin[key][0]
        st, sb, sw = staged[key]
        print(f"| {coll} | {n} | {human(per_rank(coll, n, size))} | {mt:.1f} | {tt:.1f} | {st:.1f} | "
              f"{st / tt if tt else 0:.2f}x | {mb:.3f} | {sb:.3f} | {sb / mb if mb else 0:.2f}x | {sw} |")

if procs:
    # A process per rank, as MPI's ranks are: the fair comparison (both on shared memory).
    print()
    print("| collective | ranks | per-rank size | MPI time (us) | twin time, one process (us) | twin time, a process per rank (us) | processes / one process | MPI busbw (GB/s) | twin busbw, processes (GB/s) | processes twin / MPI busbw | wrong (processes) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    proc_cells = []
    for key in sorted(procs):
        coll, n, size = key
        mkey = ("all_gather" if coll == "all_gather" else "all_reduce", n, size)
        if mkey not in mpi or key not in twin:
            continue
        mt, mb, _ = mpi[mkey]
        tt = twin[key][0]
        pt, pb, pw = procs[key][:3]
        pr = per_rank(coll, n, size)
        proc_cells.append((f"{coll} np{n} {human(pr)}", n, pr, pb / mb if mb else 0.0))
        print(f"| {coll} | {n} | {human(pr)} | {mt:.1f} | {tt:.1f} | {pt:.1f} | "
              f"{pt / tt if tt else 0:.2f}x | {mb:.3f} | {pb:.3f} | {pb / mb if mb else 0:.2f}x | {pw} |")
    # Issue 37: at np 4 and 8, from 1 MiB, busbw at least MPI's.
    goal = [c for c in proc_cells if c[1] >= 4 and c[2] >= 1 << 20]
    if goal:
        met = [c for c in goal if c[3] >= 1.0]
        worst = min(goal, key=lambda c: c[3])
        print()
        print("| target | cells | met | worst cell |")
        print("|---|---|---|---|")
        print(f"| e. processes busbw / MPI, np 4 and 8, from 1 MiB | {len(goal)} | {len(met)} | {worst[0]}: {worst[3]:.2f} (goal 1.0) |")

if census:
    # Kernel cost in NPU terms (BENCHMARKS.md sets them beside the floors docs/benchmarks.md defines).
    print()
    print("| collective | ranks | per-rank size | GM data read / rank (KiB) | GM data written / rank (KiB) | flag waits / rank | sync rounds |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(census):
        coll, n, size = key
        rd, wr, waits, rounds = census[key]
        print(f"| {coll} | {n} | {human(per_rank(coll, n, size))} | {rd / 1024:.0f} | {wr / 1024:.0f} | {waits} | {rounds} |")

# SVG plot: busbw vs per-rank size (log2 x), one panel per collective.
W, H, PAD = 460, 300, 50
colors = {2: "#1f77b4", 4: "#2ca02c", 8: "#d62728"}
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H + 40}" font-family="sans-serif" font-size="11">',
       '<rect width="100%" height="100%" fill="white"/>']
sizes = sorted({r[2] for r in rows})
for p, coll in enumerate(["all_gather", "all_reduce"]):
    x0 = p * W
    pts = [r for r in rows if r[0] == coll]
    ymax = max([max(r[3], r[4]) for r in pts] + [0.1]) * 1.1
    def X(s):
        i = sizes.index(s)
        return x0 + PAD + i * (W - 2 * PAD) / max(1, len(sizes) - 1)
    def Y(v):
        return H - PAD + 10 - v / ymax * (H - 2 * PAD)
    svg.append(f'<text x="{x0 + W / 2}" y="16" text-anchor="middle" font-size="13">{coll}: busbw (GB/s) vs per-rank size</text>')
    svg.append(f'<line x1="{x0 + PAD}" y1="{Y(0)}" x2="{x0 + W - PAD}" y2="{Y(0)}" stroke="black"/>')
    svg.append(f'<line x1="{x0 + PAD}" y1="{Y(0)}" x2="{x0 + PAD}" y2="{Y(ymax)}" stroke="black"/>')
    for k in range(5):
        v = ymax * k / 4
        svg.append(f'<text x="{x0 + PAD - 4}" y="{Y(v) + 4}" text-anchor="end">{v:.2f}</text>')
    for s in sizes:
        svg.append(f'<text x="{X(s)}" y="{Y(0) + 14}" text-anchor="middle">{human(s)}</text>')
    for n, col in colors.items():
        for idx, dash in ((3, "4,3"), (4, "")):
            line = sorted((r[2], r[idx]) for r in pts if r[1] == n)
            if not line:
                continue
            d = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in line)
            svg.append(f'<polyline points="{d}" fill="none" stroke="{col}" stroke-width="2" stroke-dasharray="{dash}"/>')
    for i, (n, col) in enumerate(colors.items()):
        svg.append(f'<text x="{x0 + PAD + 10 + i * 60}" y="{H + 30}" fill="{col}">np={n}</text>')
    svg.append(f'<text x="{x0 + PAD + 200}" y="{H + 30}">solid: aiv-comm twin, dashed: Open MPI</text>')
svg.append("</svg>")
open(f"{out}/busbw.svg", "w").write("\n".join(svg))
