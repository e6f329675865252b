#!/usr/bin/env bash
# Side-by-side comparison of aiv-perf (aiv-comm on the CPU twin) with Open MPI on this machine:
# MPI_Allgather / MPI_Allreduce(float, sum) vs aiv-comm AllGather / AllReduce f32 sum, per-rank
# sizes 64 KiB, 1 MiB, 16 MiB, 64 MiB, 2/4/8 ranks (oversubscribed on 2 cores, like the twin),
# run alternately in one go, plus the machine's 2-thread memcpy bandwidth at each size (and, from
# 16 MiB on, over each cell's working set); the twin
# runs twice per cell, with its checkers off (aiv-perf's default) and on (`--twin-checks`, the
# library's default, what tests run with; off first in odd reps, on first in even ones), and
# once more with `--checks-cost` for the checkers' cost (target d): one process alternating
# batches of iterations with the checkers off and on, the report taking the median over the
# adjacent off/on pairs of batches of every rep. Separate processes vary 1.3-2x on this VM,
# which made the ratio of separate runs a matter of chance; DPAIRS=N adds N more separate
# off/on pairs per cell and rep (default 0; 2 from 32cb40a to 4661d07) for comparison. Before
# each run but those extra pairs and the --checks-cost run it measures how long the two CPUs
# take to hand a cache line back and forth (corelat.c), which on this VM decides much of the
# twin's speed; the report gives the range per cell.
#
#   bash benches/compare/run.sh            # writes benches/compare/out/{report.md,busbw.svg,...}
#   REPS=3 bash benches/compare/run.sh     # every cell 3 times (all cells, then all again, ...:
#                                          # MPI, twin, ... per cell); the report takes medians
#                                          # (the VM is noisy)
#
# NPS="2 4" / COLLS=all_reduce / SIZES="65536" / OUT=dir restrict the cells and move the output
# (default: every cell, benches/compare/out).
#
# The twin's buffers are registered as window memory (aiv-perf -R 1, Communicator::register):
# AllGather and AllReduce then read peers' inputs in place, one copy per byte and
# rank, as Open MPI's shared-memory transport does with its default single-copy mechanism
# (CMA). Every cell also runs the twin without registration (-R 0, staging every input in the
# HCCL buffer: one copy more) for the report's second table; STAGED=0 skips those runs.
#
# Every cell also runs the twin with a process per rank, as MPI's ranks are (aiv-perf under
# mpirun: Communicator::from_env on the multi-process twin, registered, checked) for the
# report's third table; PROCS=0 skips those runs.
#
# Installs Open MPI from the distribution if mpicc/mpirun are missing. With STAGED=0 a rep took
# 3.5 minutes on the 2-vCPU VM of BENCHMARKS.md (2026-12-03, before the PROCS runs), the
# --checks-cost run included; the staged runs add to it.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-benches/compare/out}
mkdir -p "$out"

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev
fi
mpicc -O2 -o "$out/mpi_bench" benches/compare/mpi_bench.c
cc -O2 -pthread -o "$out/memcpy_bw" benches/compare/memcpy_bw.c
cc -O2 -pthread -o "$out/corelat" benches/compare/corelat.c
cargo build --release --bin aiv-perf
perf_bin=target/release/aiv-perf

sizes=${SIZES:-65536 1048576 16777216 67108864}
iters_for() { # same counts (and 5 warm-up iterations) as mpi_bench.c: each timed loop lasts
    # tens of ms at least, so start-up noise (threads waking, the previous run's processes
    # leaving) does not dominate a cell
    if [ "$1" -le 65536 ]; then echo 1000; elif [ "$1" -le 1048576 ]; then echo 100;
    elif [ "$1" -le 16777216 ]; then echo 10; else echo 3; fi
}

: > "$out/mpi.txt"
: > "$out/twin.jsonl"
: > "$out/twin_checked.jsonl"
: > "$out/twin_staged.jsonl"
: > "$out/twin_procs.jsonl"
: > "$out/twin_d_off.jsonl"
: > "$out/twin_d_on.jsonl"
: > "$out/twin_cost.jsonl"
: > "$out/corelat.txt"
"$out/memcpy_bw" $sizes > "$out/memcpy.txt"
# The same copies spread over as much memory as each cell's buffers take in all (inputs and
# outputs of every rank): from 16 MiB on, a collective's buffers outgrow the cache that a single
# pair of 16 MiB buffers stays in, and the report compares the twin with both references.
: > "$out/memcpy_ws.txt"
for np in ${NPS:-2 4 8}; do
    for coll in ${COLLS:-all_gather all_reduce}; do
        for s in $sizes; do
            [ "$s" -ge 16777216 ] || continue
            if [ "$coll" = all_gather ]; then ws=$((s * np * (np + 1))); else ws=$((s * np * 2)); fi
            echo "$coll $np $s $ws $("$out/memcpy_bw" "$s:$ws" | cut -d' ' -f2)" >> "$out/memcpy_ws.txt"
        done
    done
done
reps=${REPS:-1}
# The checkers' order in pair K: off first when K is odd, on first when it is even.
pair_order() { if [ $(($1 % 2)) = 1 ]; then echo "off on"; else echo "on off"; fi; }
# One registered twin run of the current cell (coll, np, total, n): checkers $1 (off or on),
# host check of the results $2 (aiv-perf -c), JSON appended to file $3 of the output.
twin_run() {
    local checks=()
    if [ "$1" = on ]; then checks=(--twin-checks); fi
    "$perf_bin" "$coll" -b "$total" -e "$total" -p "$np" -n "$n" -w 5 -c "$2" -R 1 --json \
        "${checks[@]}" >> "$out/$3"
}
# Repetitions outermost: every cell once, then every cell again, ... A cell's repetitions are
# then minutes apart, so a slow stretch of the VM (its host busy for seconds or a minute) falls
# on one of them, which the median drops, rather than on all of them in a row.
for rep in $(seq "$reps"); do
    for np in ${NPS:-2 4 8}; do
        for coll in ${COLLS:-all_gather all_reduce}; do
            for s in $sizes; do
                echo "np=$np $coll per-rank $s (rep $rep of $reps)" >&2
                if [ "$coll" = all_gather ]; then total=$((s * np)); else total=$s; fi
                # How far apart the two CPUs are just before each run (corelat.c): the report
                # shows the range per cell, as the VM's host moves them.
                echo "$coll $np $total mpi $("$out/corelat")" >> "$out/corelat.txt"
                mpirun --allow-run-as-root --oversubscribe -np "$np" "$out/mpi_bench" "$coll" "$s" >> "$out/mpi.txt"
                sleep 0.5 # let the MPI processes' exit finish before the twin starts
                n=$(iters_for "$s")
                # Checkers off, then on; every other rep on first, so that whatever the run
                # before leaves behind (MPI's exiting processes, the page cache) does not
                # always fall on the same side of target d's ratio.
                for mode in $(pair_order "$rep"); do
                    echo "$coll $np $total $mode $("$out/corelat")" >> "$out/corelat.txt"
                    if [ "$mode" = off ]; then file=twin.jsonl; else file=twin_checked.jsonl; fi
                    twin_run "$mode" 1 "$file"
                done
                # Target d within one process: the checkers off and on in alternating batches
                # (aiv-perf --checks-cost), at least 8 calls a side (8 one-call pairs at 64 MiB,
                # where a call takes tens of ms). It skips the host's check of the results (-c 0:
                # the same timed work, and the pair above checked them); at 64 MiB on 8 ranks the
                # check takes twice as long as the rest of the run.
                "$perf_bin" "$coll" -b "$total" -e "$total" -p "$np" -n "$((n < 8 ? 8 : n))" -w 5 \
                    -c 0 -R 1 --checks-cost --json >> "$out/twin_cost.jsonl"
                # More separate off/on pairs, for comparison (twin against twin, no MPI run
                # between, -c 0): a timed loop lasts tens of ms, and a quarter to a third of the
                # runs here land in a stretch where the VM runs everything 1.3-2x slower.
                for pair in $(seq "${DPAIRS:-0}"); do
                    for mode in $(pair_order $((rep + pair))); do
                        twin_run "$mode" 0 "twin_d_$mode.jsonl"
                    done
                done
                if [ "${PROCS:-1}" != 0 ]; then
                    echo "$coll $np $total procs $("$out/corelat")" >> "$out/corelat.txt"
                    mpirun --allow-run-as-root --oversubscribe -np "$np" "$perf_bin" "$coll" \
                        -b "$total" -e "$total" -n "$n" -w 5 -c 1 -R 1 --json \
                        >> "$out/twin_procs.jsonl"
                    sleep 0.5
                fi
                if [ "${STAGED:-1}" != 0 ]; then
                    echo "$coll $np $total staged $("$out/corelat")" >> "$out/corelat.txt"
                    "$perf_bin" "$coll" -b "$total" -e "$total" -p "$np" -n "$n" -w 5 -c 1 -R 0 --json \
                        >> "$out/twin_staged.jsonl"
                fi
                sleep 0.5
            done
        done
    done
done
python3 benches/compare/report.py "$out" > "$out/report.md"
cat "$out/report.md"
