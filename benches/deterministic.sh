#!/usr/bin/env bash
# What deterministic reductions cost, per algorithm: aiv-perf AllReduce (each --algo) and
# ReduceScatter on RANKS ranks with HCCL_DETERMINISTIC=true and =false, alternating, REPS runs
# each; prints the median time per op of each and their ratio, per size (out of place).
#
#   REPS=3 RANKS=4 bash benches/deterministic.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
RANKS=${RANKS:-4}
SIZES=(-b 64K -e 16M -f 16)
cargo build --release -q --bin aiv-perf
perf=target/release/aiv-perf
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cases=("all_reduce auto" "all_reduce one_shot" "all_reduce two_shot" "all_reduce push"
       "all_reduce hd" "reduce_scatter -")
for rep in $(seq "$REPS"); do
    for c in "${cases[@]}"; do
        set -- $c
        algo=()
        [ "$2" != "-" ] && algo=(--algo "$2")
        for det in true false; do
            HCCL_DETERMINISTIC=$det "$perf" "$1" "${SIZES[@]}" -p "$RANKS" -n 20 -w 3 \
                ${algo[@]+"${algo[@]}"} --json >"$out/$1.$2.$det.$rep.json"
        done
    done
done

python3 - "$out" "$REPS" "${cases[@]}" <<'EOF'
import json, statistics, sys
out, reps, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def times(coll, algo, det):
    runs = [json.load(open(f"{out}/{coll}.{algo}.{det}.{r}.json")) for r in range(1, reps + 1)]
    sizes = [row["size"] for row in runs[0]["rows"]]
    return sizes, [statistics.median(run["rows"][i]["out_of_place"]["time_us"] for run in runs)
                   for i in range(len(sizes))]
print("| collective | algo | size | deterministic (us) | default (us) | ratio |")
print("|---|---|---|---|---|---|")
for c in cases:
    coll, algo = c.split()
    sizes, on = times(coll, algo, "true")
    _, off = times(coll, algo, "false")
    for s, a, b in zip(sizes, on, off):
        size = f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
        print(f"| {coll} | {algo} | {size} | {a:.0f} | {b:.0f} | {a / b:.2f} |")
EOF
