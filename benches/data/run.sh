#!/usr/bin/env bash
# Regenerates the aiv-perf results BENCHMARKS.md's generated tables are rendered from
# (tests/integration/benchmarks_md.rs renders them; AIV_BLESS=1 rewrites BENCHMARKS.md):
#
#   set4/<collective>.json          aiv-perf <collective> -b 64K -e 16M -f 16 -p 4 -n 5 -w 1 --json
#                                   ("The collective set on 4 ranks")
#   census/<name>.np<N>.json        the census at per-rank sizes 64 KiB, 1 MiB and 16 MiB on N = 2,
#                                   4 and 8 ranks, one sweep per file ("Kernel cost in NPU terms";
#                                   <name> says the collective, the --algo and -R 1 if given)
#   <set>/provenance.json           commit, date, machine and the exact command of every file
#
#   bash benches/data/run.sh        # then: AIV_BLESS=1 cargo test --test integration benchmarks_md
#
# Every file is aiv-perf's --json output as written (checked results, -c 1). Census figures
# (data bytes, waits, rounds, launches) are deterministic; times and flag bytes are not (every
# poll rereads its cell), and on a shared machine times are as noisy as the machine.
# OUT=dir writes elsewhere (default benches/data).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-benches/data}
cargo build --release --bin aiv-perf
perf=${CARGO_TARGET_DIR:-target}/release/aiv-perf

commit=$(git rev-parse --short=12 HEAD)
# The binary's sources differ from the commit (the data and its renderer do not count).
if git diff --quiet HEAD -- . ':!benches/data' ':!BENCHMARKS.md' ':!tests'; then
    dirty=false
else
    dirty=true
fi
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || echo unknown)
nproc=$(nproc)
load=$(cut -d' ' -f1-3 /proc/loadavg)

# run SET FILE ARGS...: aiv-perf ARGS --json > OUT/SET/FILE, its command line kept for the
# provenance.
run() {
    local set=$1 file=$2
    shift 2
    echo "aiv-perf $* --json > $set/$file" >&2
    "$perf" "$@" --json >"$out/$set/$file.tmp"
    mv "$out/$set/$file.tmp" "$out/$set/$file"
    runs+=("$file|aiv-perf $*")
}

# provenance SET START: OUT/SET/provenance.json for the runs made since `runs=()`.
provenance() {
    local set=$1 start=$2 i sep=""
    {
        printf '{\n  "commit": "%s",\n  "sources_differ_from_commit": %s,\n' "$commit" "$dirty"
        printf '  "date": "%s",\n  "seconds": %d,\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
            $(($(date +%s) - start))
        printf '  "machine": {"nproc": %d, "cpu": "%s", "loadavg_before": "%s"},\n' \
            "$nproc" "$cpu" "$load"
        printf '  "build": "cargo build --release --bin aiv-perf",\n'
        printf '  "note": "%s",\n' "Times are one run of -n 5 on a shared machine: noisy"
        printf '  "runs": [\n'
        for i in "${runs[@]}"; do
            printf '%s    {"file": "%s", "command": "%s --json"}' "$sep" "${i%%|*}" "${i#*|}"
            sep=$',\n'
        done
        printf '\n  ]\n}\n'
    } >"$out/$set/provenance.json"
}

colls="all_gather all_reduce reduce_scatter broadcast alltoall alltoallv all_gather_v
       reduce_scatter_v sendrecv"

mkdir -p "$out/set4" "$out/census"

runs=()
start=$(date +%s)
for c in $colls; do
    run set4 "$c.json" "$c" -b 64K -e 16M -f 16 -p 4 -n 5 -w 1
done
provenance set4 "$start"

# census: NAME COLLECTIVE [ARGS...]; all_gather(_v)'s size is the gathered output (ranks x
# per-rank size), the others' the per-rank input.
cases=(
    "all_gather all_gather"
    "all_reduce.one_shot all_reduce --algo one_shot"
    "all_reduce.two_shot all_reduce --algo two_shot"
    "reduce_scatter reduce_scatter"
    "broadcast broadcast"
    "alltoall alltoall"
    "alltoallv alltoallv"
    "all_gather_v all_gather_v"
    "reduce_scatter_v reduce_scatter_v"
    "sendrecv sendrecv"
    "all_gather.push all_gather --algo push"
    "all_reduce.push all_reduce --algo push"
    "all_gather.R1 all_gather -R 1"
    "all_reduce.one_shot.R1 all_reduce --algo one_shot -R 1"
    "all_reduce.two_shot.R1 all_reduce --algo two_shot -R 1"
)
runs=()
start=$(date +%s)
for n in 2 4 8; do
    for c in "${cases[@]}"; do
        set -- $c
        name=$1 coll=$2
        shift 2
        case $coll in
        all_gather | all_gather_v) sizes=(-b "$((64 * n))K" -e "$((16 * n))M") ;;
        *) sizes=(-b 64K -e 16M) ;;
        esac
        run census "$name.np$n.json" "$coll" "${sizes[@]}" -f 16 -p "$n" -n 5 -w 1 "$@"
    done
done
provenance census "$start"
du -sh "$out"
