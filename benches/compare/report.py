#!/usr/bin/env python3
"""Turns the raw output of benches/compare/run.sh into a markdown table (stdout) and busbw.svg.

Inputs in OUT: mpi.txt (mpi_bench lines), twin.jsonl (aiv-perf --json lines), memcpy.txt.
Traffic: what the twin's kernels moved in GM, all ranks together, as copy bandwidth (aiv-perf's
dmabw: (GM bytes the DMA read + GM bytes it wrote) / 2 per second, measured by the twin's
counters), as a fraction of the 2-thread memcpy bandwidth (bytes copied per second by both
threads, each byte one read and one write). When aiv-perf's JSON carries its census fields, a
second table gives the kernels' cost in NPU terms: GM data bytes per rank, flag waits, sync
rounds."""
import json
import sys

out = sys.argv[1]
mem = {}
for line in open(f"{out}/memcpy.txt"):
    s, g = line.split()
    mem[int(s)] = float(g)
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
for line in open(f"{out}/twin.jsonl"):
    d = json.loads(line)
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
reps = max(len(v) for v in twin_all.values())
print(f"Medians of {reps} alternating runs per cell." if reps > 1 else "One run per cell.")
print()

def per_rank(coll, n, size):
    return size // n if coll == "all_gather" else size

def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"

rows = []
print("| collective | ranks | per-rank size | MPI time (us) | twin time (us) | MPI busbw (GB/s) | twin busbw (GB/s) | twin/MPI busbw | 2-thread memcpy (GB/s) | twin DMA (GB/s) | twin traffic / memcpy | wrong (MPI, twin) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
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
    print(f"| {coll} | {n} | {human(pr)} | {mt:.1f} | {tt:.1f} | {mb:.3f} | {tb:.3f} | {tb / mb if mb else 0:.2f}x | {m:.2f} | {dma:.2f} | {traffic:.0%} | {mw}, {tw} |")

if census:
    # Kernel cost in NPU terms (BENCHMARKS.md has the floors beside them).
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
