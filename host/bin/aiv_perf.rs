//! aiv-perf: hccl_test / nccl-tests style bandwidth sweep of aiv-comm's collectives on the CPU
//! twin (or, with the `npu` feature, the device).
//!
//! ```text
//! aiv-perf <collective> [-b 8K] [-e 64M] [-f 2 | -i STEP] [-d fp32] [-o sum] [-r 0] [-p RANKS]
//!          [-n ITERS] [-w WARMUP] [-c 0|1] [-T SECONDS] [--buffsize MB] [--blocks-per-peer K] [--algo ALGO]
//!          [-R 0|1] [--twin-checks | --checks-cost] [--json]
//! aiv-perf [<collective>] --help
//! ```
//!
//! One subcommand per collective, each an entry of [`COLLECTIVES`] (name and aliases, how the
//! size argument becomes a per-rank count, buffer shapes, the busbw factor, whether it has a root
//! or a reduce op, its in-place layout, how to run it and the reference it is checked against).
//! Every row is run out of place and then in place, as nccl-tests does, and printed with
//! nccl-tests' columns, plus the twin's `dmabw` (what the kernels' DMA moved in GM, all ranks
//! together, as copy bandwidth: (GM bytes read + GM bytes written) / 2 per second,
//! `ascendc_twin::Twin::gm_traffic`) and two figures in NPU terms from the twin's per-core
//! counters (`ascendc_twin::Twin::core_traffic`): how many cores (block indices) a rank's kernels
//! used, and what the busiest core moved per operation. After the timed iterations of each
//! placement, one more call with the same arguments runs untimed with the twin's sync census on
//! (`ascendc_twin::Twin::set_census`), so the timed calls never pay for it: per rank, the GM
//! bytes of data and flag memory its DMA read and wrote, its flag waits, and the sync rounds on
//! the critical path (the Lamport depth over flag stores and loads, `ascendc_twin::Census`);
//! the table shows them out of place, JSON for both placements. `--checks-cost` times the
//! iterations with the twin's checkers off and on in alternating batches of one process
//! ([`cost_schedule`], [`cost_sides`]). Exit status: 0 ok, 1 if any element is wrong (or the run
//! failed), 2 on bad arguments.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use aiv_comm::bootstrap::LaunchEnv;
use aiv_comm::world::{MAX_BUFFER_BYTES, MIN_BUFFER_BYTES};
use aiv_comm::{
    AllGatherAlgo, AllReduceAlgo, BackendChoice, CommStream, Communicator, Config, DataType,
    DeviceBuffer, ReduceOp, World,
};
use ascendc_twin::{Census, CheckedLaunches, GmTraffic, RankCensus, Twin};
use half::{bf16, f16};

// ------------------------------------------------------------------------------------------
// The registry of collectives. To add one: write its `run` and `reference` functions and add
// an entry to `COLLECTIVES`; parsing, help, buffers, timing, checking and output follow from
// the entry.
// ------------------------------------------------------------------------------------------

/// One rank's call of one row: what a collective's `run` function gets.
struct Call<'a> {
    /// The rank's communicator.
    comm: &'a Communicator,
    /// The rank's sub-stream, for collectives with [`Collective::side_stream`].
    side: Option<&'a CommStream>,
    /// Input: [`Collective::send_elems`] elements (in place: inside `recv`'s allocation).
    send: &'a DeviceBuffer,
    /// Output: [`Collective::recv_elems`] elements.
    recv: &'a DeviceBuffer,
    /// Per-rank element count (nccl-tests' `count` column; the mean for the v-collectives).
    count: usize,
    /// Element type.
    dtype: DataType,
    /// Reduce op (collectives with [`Collective::reduces`]).
    op: ReduceOp,
    /// Root rank (collectives with [`Collective::rooted`]).
    root: u32,
    /// AllReduce kernel (`--algo` of all_reduce).
    ar_algo: AllReduceAlgo,
    /// AllGather kernel (`--algo` of all_gather).
    ag_algo: AllGatherAlgo,
}

/// Every rank's input: `input(rank, i)` is element `i` of `rank`'s send buffer.
type Inputs<'a> = &'a dyn Fn(usize, usize) -> f64;

/// The values one rank's output must hold, in order (produced as the check compares them, so
/// that checking a row of gigabytes needs no copy of it).
type Reference<'a> = Box<dyn Iterator<Item = f64> + 'a>;

/// What a reference function needs to know about one rank's call.
struct RefCase {
    /// Ranks in the world.
    ranks: usize,
    /// The rank whose output is wanted.
    rank: usize,
    /// Per-rank element count.
    count: usize,
    /// Reduce op.
    op: ReduceOp,
    /// Root rank.
    root: usize,
}

/// A function of (rank, count, ranks) giving elements: buffer lengths and in-place offsets.
type RankElems = fn(usize, usize, usize) -> usize;

/// Where a collective's in-place buffers sit, as nccl-tests lays them out: one buffer (the
/// out-of-place recv buffer), the input at `send_offset` elements, the output at `recv_offset`.
struct InPlace {
    /// Input offset in elements for (rank, count, ranks).
    send_offset: RankElems,
    /// Output offset in elements for (rank, count, ranks).
    recv_offset: RankElems,
    /// The layout in words, for `--help`.
    doc: &'static str,
}

/// A collective aiv-perf can sweep: one entry of [`COLLECTIVES`].
struct Collective {
    /// Subcommand name (nccl-tests' spelling without `_perf`).
    name: &'static str,
    /// Other accepted names (nccl-tests' and hccl_test's binary names, ...).
    aliases: &'static [&'static str],
    /// One line for `--help`.
    about: &'static str,
    /// What the size argument means, for `--help`.
    size_doc: &'static str,
    /// What the count column counts, for `--help`.
    count_doc: &'static str,
    /// How the ranks' counts differ (v-collectives), for `--help`.
    counts_doc: Option<&'static str>,
    /// Per-rank element count of a row of `size` bytes, for (size, element size, ranks);
    /// 0 skips the row.
    count: fn(usize, usize, usize) -> usize,
    /// The row's size column in elements for (count, ranks): nccl-tests' larger of the send
    /// and receive buffers (what algbw divides).
    size_elems: fn(usize, usize) -> usize,
    /// Input elements of a rank for (rank, count, ranks).
    send_elems: RankElems,
    /// Output elements of a rank for (rank, count, ranks).
    recv_elems: RankElems,
    /// busbw / algbw for a number of ranks (nccl-tests' factors).
    busbw_factor: fn(usize) -> f64,
    /// The factor in words, for `--help`.
    busbw_doc: &'static str,
    /// Has a root (`-r` is used and printed; others print -1).
    rooted: bool,
    /// Reduces (`-o` applies; others print `none` and refuse `-o`).
    reduces: bool,
    /// The kernels `--algo` chooses among (`auto` first), if the collective takes it.
    algos: Option<&'static str>,
    /// Fewest ranks it runs on.
    min_ranks: usize,
    /// Needs a sub-stream per rank (passed as [`Call::side`]).
    side_stream: bool,
    /// In-place layout, if the collective runs in place; `None` prints N/A in the in-place
    /// columns.
    in_place: Option<InPlace>,
    /// Enqueues one call (the harness synchronizes).
    run: fn(&Call) -> aiv_comm::Result<()>,
    /// The values one rank's output must hold, given every rank's input.
    reference: for<'a> fn(&RefCase, Inputs<'a>) -> Reference<'a>,
}

/// The uneven counts of all_gather_v and reduce_scatter_v, for `--help`.
const RANK_WEIGHTED: &str = "rank q's share is proportional to q+1: the T = count x n elements \
     are cut at floor(T x q(q+1)/2 / (n(n+1)/2)) for q = 0..n, so rank 0 has the least, rank \
     n-1 about 2 count, and the total is exactly T (count column = the mean, size = T)";

/// The counts matrix of alltoallv, for `--help`.
const PAIR_WEIGHTED: &str = "rank p sends rank q a share of its T = count x n elements \
     proportional to ((p+q) mod n) + 1: p's row is cut at floor(T x S(p,q) / (n(n+1)/2)), \
     S(p,q) = sum of those weights for peers 0..q-1, in peer order; every rank sends exactly T \
     and receives about T (count column = the mean per peer, size = T)";

/// Every collective aiv-perf runs (what `--help` lists).
const COLLECTIVES: &[Collective] = &[
    Collective {
        name: "all_gather",
        aliases: &["allgather", "all_gather_perf", "all_gather_test"],
        about: "every rank gathers every rank's input, in rank order",
        size_doc: "the gathered output per rank (input per rank x ranks)",
        count_doc: "elements each rank contributes",
        counts_doc: None,
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: count_once,
        recv_elems: count_per_rank_times_ranks,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: false,
        algos: Some("auto pull pull_parts push"),
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: rank_slot,
            recv_offset: at_start,
            doc: "input = rank r's slot of the output (recv + r x count elements)",
        }),
        run: run_all_gather,
        reference: ref_all_gather,
    },
    Collective {
        name: "all_reduce",
        aliases: &["allreduce", "all_reduce_perf", "all_reduce_test"],
        about: "element-wise reduction of every rank's input, into every rank's output",
        size_doc: "the buffer (input = output per rank)",
        count_doc: "elements per rank",
        counts_doc: None,
        count: size_whole,
        size_elems: count_alone,
        send_elems: count_once,
        recv_elems: count_once,
        busbw_factor: two_n_minus_1_over_n,
        busbw_doc: "2(n-1)/n",
        rooted: false,
        reduces: true,
        algos: Some("auto one_shot two_shot hd push"),
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: at_start,
            recv_offset: at_start,
            doc: "input = output",
        }),
        run: run_all_reduce,
        reference: ref_all_reduce,
    },
    Collective {
        name: "reduce_scatter",
        aliases: &[
            "reducescatter",
            "reduce_scatter_perf",
            "reduce_scatter_test",
        ],
        about: "element-wise reduction of every rank's block r, into rank r's output",
        size_doc: "the input per rank (output per rank x ranks)",
        count_doc: "elements each rank receives: one block of its input",
        counts_doc: None,
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: count_per_rank_times_ranks,
        recv_elems: count_once,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: true,
        algos: None,
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: at_start,
            recv_offset: rank_slot,
            doc: "output = rank r's block of the input (send + r x count elements)",
        }),
        run: run_reduce_scatter,
        reference: ref_reduce_scatter,
    },
    Collective {
        name: "broadcast",
        aliases: &["bcast", "broadcast_perf", "broadcast_test"],
        about: "the root's input into every rank's output (-r ROOT)",
        size_doc: "the buffer (input on the root = output per rank)",
        count_doc: "elements broadcast",
        counts_doc: None,
        count: size_whole,
        size_elems: count_alone,
        send_elems: count_once,
        recv_elems: count_once,
        busbw_factor: one,
        busbw_doc: "1",
        rooted: true,
        reduces: false,
        algos: None,
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: at_start,
            recv_offset: at_start,
            doc: "input = output (broadcast_in_place)",
        }),
        run: run_broadcast,
        reference: ref_broadcast,
    },
    Collective {
        name: "alltoall",
        aliases: &["all_to_all", "alltoall_perf", "alltoall_test"],
        about: "block q of rank p's input lands in block p of rank q's output",
        size_doc: "the input per rank (= output per rank; count x ranks)",
        count_doc: "elements per peer: each of a rank's n blocks",
        counts_doc: None,
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: count_per_rank_times_ranks,
        recv_elems: count_per_rank_times_ranks,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: false,
        algos: None,
        min_ranks: 1,
        // The library refuses overlapping send and recv (AlltoAll has no in-place form).
        in_place: None,
        side_stream: false,
        run: run_alltoall,
        reference: ref_alltoall,
    },
    Collective {
        name: "alltoallv",
        aliases: &["all_to_all_v", "alltoallv_perf", "alltoallv_test"],
        about: "alltoall with an uneven counts matrix (see its --help)",
        size_doc: "the input per rank (count x ranks)",
        count_doc: "elements per peer, the mean over the matrix",
        counts_doc: Some(PAIR_WEIGHTED),
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: count_per_rank_times_ranks,
        recv_elems: a2av_recv_elems,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: false,
        algos: None,
        min_ranks: 1,
        in_place: None,
        side_stream: false,
        run: run_alltoallv,
        reference: ref_alltoallv,
    },
    Collective {
        name: "all_gather_v",
        aliases: &["allgatherv", "all_gather_v_perf", "allgatherv_test"],
        about: "all_gather with uneven counts per rank (see its --help)",
        size_doc: "the gathered output per rank (count x ranks)",
        count_doc: "elements per rank, the mean over the ranks",
        counts_doc: Some(RANK_WEIGHTED),
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: weighted_count,
        recv_elems: count_per_rank_times_ranks,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: false,
        algos: None,
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: weighted_displ,
            recv_offset: at_start,
            doc: "input = rank r's segment of the output",
        }),
        run: run_all_gather_v,
        reference: ref_all_gather_v,
    },
    Collective {
        name: "reduce_scatter_v",
        aliases: &[
            "reducescatterv",
            "reduce_scatter_v_perf",
            "reduce_scatter_v_test",
        ],
        about: "reduce_scatter with uneven blocks per rank (see its --help)",
        size_doc: "the input per rank (count x ranks)",
        count_doc: "elements each rank receives, the mean over the ranks",
        counts_doc: Some(RANK_WEIGHTED),
        count: size_per_rank,
        size_elems: count_times_ranks,
        send_elems: count_per_rank_times_ranks,
        recv_elems: weighted_count,
        busbw_factor: n_minus_1_over_n,
        busbw_doc: "(n-1)/n",
        rooted: false,
        reduces: true,
        algos: None,
        min_ranks: 1,
        side_stream: false,
        in_place: Some(InPlace {
            send_offset: at_start,
            recv_offset: weighted_displ,
            doc: "output = rank r's block of the input",
        }),
        run: run_reduce_scatter_v,
        reference: ref_reduce_scatter_v,
    },
    Collective {
        name: "sendrecv",
        aliases: &["send_recv", "sendrecv_perf"],
        about: "ring: rank r sends to (r+1)%n and receives from (r-1+n)%n at once",
        size_doc: "the message (sent = received per rank)",
        count_doc: "elements per message",
        counts_doc: None,
        count: size_whole,
        size_elems: count_alone,
        send_elems: count_once,
        recv_elems: count_once,
        busbw_factor: one,
        busbw_doc: "1",
        rooted: false,
        reduces: false,
        algos: None,
        min_ranks: 2,
        side_stream: true,
        // A rank's send and recv run on two streams at once: in place, the recv could
        // overwrite the bytes before the send has read them (nccl-tests does not check it
        // either).
        in_place: None,
        run: run_sendrecv,
        reference: ref_sendrecv,
    },
];

/// Count = the size in elements (all_reduce, sendrecv, broadcast).
fn size_whole(size: usize, es: usize, _n: usize) -> usize {
    size / es
}

/// Count = the size in elements / ranks (all_gather, reduce_scatter, alltoall, the v ones).
fn size_per_rank(size: usize, es: usize, n: usize) -> usize {
    size / (es * n)
}

fn count_alone(count: usize, _n: usize) -> usize {
    count
}

fn count_times_ranks(count: usize, n: usize) -> usize {
    count * n
}

fn count_once(_rank: usize, count: usize, _n: usize) -> usize {
    count
}

fn count_per_rank_times_ranks(_rank: usize, count: usize, n: usize) -> usize {
    count * n
}

fn at_start(_rank: usize, _count: usize, _n: usize) -> usize {
    0
}

fn rank_slot(rank: usize, count: usize, _n: usize) -> usize {
    rank * count
}

/// Where the cut before part `k` of `total` elements falls, when the parts have weights
/// whose sum before `k` is `before` and whose sum in all is `sum`: floor(total x before / sum).
fn cut(total: usize, before: usize, sum: usize) -> usize {
    (total as u128 * before as u128 / sum as u128) as usize
}

/// The all_gather_v / reduce_scatter_v split ([`RANK_WEIGHTED`]): where rank `q`'s segment
/// starts.
fn weighted_displ(q: usize, count: usize, n: usize) -> usize {
    cut(count * n, q * (q + 1) / 2, n * (n + 1) / 2)
}

/// Rank `q`'s count in the [`RANK_WEIGHTED`] split.
fn weighted_count(q: usize, count: usize, n: usize) -> usize {
    weighted_displ(q + 1, count, n) - weighted_displ(q, count, n)
}

/// Every rank's (count, displacement) in the [`RANK_WEIGHTED`] split.
fn weighted_split(count: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (0..n)
        .map(|q| (weighted_count(q, count, n), weighted_displ(q, count, n)))
        .unzip()
}

/// Where rank `p`'s piece for rank `q` starts in p's send buffer ([`PAIR_WEIGHTED`]).
fn a2av_send_displ(p: usize, q: usize, count: usize, n: usize) -> usize {
    let before: usize = (0..q).map(|j| (p + j) % n + 1).sum();
    cut(count * n, before, n * (n + 1) / 2)
}

/// Elements rank `p` sends rank `q` ([`PAIR_WEIGHTED`]).
fn a2av_count(p: usize, q: usize, count: usize, n: usize) -> usize {
    a2av_send_displ(p, q + 1, count, n) - a2av_send_displ(p, q, count, n)
}

/// Where rank `p`'s piece lands in rank `q`'s recv buffer: after those of ranks 0..p.
fn a2av_recv_displ(q: usize, p: usize, count: usize, n: usize) -> usize {
    (0..p).map(|j| a2av_count(j, q, count, n)).sum()
}

fn a2av_recv_elems(q: usize, count: usize, n: usize) -> usize {
    a2av_recv_displ(q, n, count, n)
}

fn one(_n: usize) -> f64 {
    1.0
}

fn n_minus_1_over_n(n: usize) -> f64 {
    (n as f64 - 1.0) / n as f64
}

fn two_n_minus_1_over_n(n: usize) -> f64 {
    2.0 * (n as f64 - 1.0) / n as f64
}

fn run_all_gather(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .all_gather_with(c.send, c.recv, c.count, c.dtype, c.ag_algo)
}

fn run_all_reduce(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .all_reduce_with(c.send, c.recv, c.count, c.dtype, c.op, c.ar_algo)
}

fn run_reduce_scatter(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .reduce_scatter(c.send, c.recv, c.count, c.dtype, c.op)
}

/// Out of place `broadcast`; in place (the same range) HCCL's `broadcast_in_place`.
fn run_broadcast(c: &Call) -> aiv_comm::Result<()> {
    if c.send.addr() == c.recv.addr() && c.send.len() == c.recv.len() {
        c.comm.broadcast_in_place(c.recv, c.count, c.dtype, c.root)
    } else {
        c.comm.broadcast(c.send, c.recv, c.count, c.dtype, c.root)
    }
}

fn run_alltoall(c: &Call) -> aiv_comm::Result<()> {
    c.comm.all_to_all(c.send, c.recv, c.count, c.dtype)
}

fn run_alltoallv(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size() as usize;
    let me = c.comm.rank() as usize;
    let m = c.count;
    let sc: Vec<usize> = (0..n).map(|q| a2av_count(me, q, m, n)).collect();
    let sd: Vec<usize> = (0..n).map(|q| a2av_send_displ(me, q, m, n)).collect();
    let rc: Vec<usize> = (0..n).map(|p| a2av_count(p, me, m, n)).collect();
    let rd: Vec<usize> = (0..n).map(|p| a2av_recv_displ(me, p, m, n)).collect();
    c.comm
        .all_to_all_v(c.send, &sc, &sd, c.recv, &rc, &rd, c.dtype)
}

fn run_all_gather_v(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size() as usize;
    let me = c.comm.rank() as usize;
    let (counts, displs) = weighted_split(c.count, n);
    c.comm
        .all_gather_v(c.send, counts[me], c.recv, &counts, &displs, c.dtype)
}

fn run_reduce_scatter_v(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size() as usize;
    let me = c.comm.rank() as usize;
    let (counts, displs) = weighted_split(c.count, n);
    c.comm
        .reduce_scatter_v(c.send, &counts, &displs, c.recv, counts[me], c.dtype, c.op)
}

/// nccl-tests' sendrecv_perf pattern; the send goes on the sub-stream, the recv on the main
/// stream (on one stream each rank's send would wait for its own recv, a ring deadlock).
fn run_sendrecv(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size();
    let r = c.comm.rank();
    let side = c.side.expect("sendrecv runs with a sub-stream");
    side.send(c.send, c.count, c.dtype, (r + 1) % n)?;
    c.comm
        .stream()
        .recv(c.recv, c.count, c.dtype, (r + n - 1) % n)
}

fn ref_all_gather<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let count = c.count;
    Box::new((0..c.ranks).flat_map(move |j| (0..count).map(move |i| input(j, i))))
}

fn ref_all_reduce<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (op, ranks) = (c.op, c.ranks);
    Box::new((0..c.count).map(move |i| reduce(op, (0..ranks).map(|r| input(r, i)))))
}

fn ref_reduce_scatter<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (op, ranks, base) = (c.op, c.ranks, c.rank * c.count);
    Box::new((0..c.count).map(move |i| reduce(op, (0..ranks).map(|r| input(r, base + i)))))
}

fn ref_broadcast<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let root = c.root;
    Box::new((0..c.count).map(move |i| input(root, i)))
}

fn ref_alltoall<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (count, base) = (c.count, c.rank * c.count);
    Box::new((0..c.ranks).flat_map(move |p| (0..count).map(move |i| input(p, base + i))))
}

fn ref_alltoallv<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (q, m, n) = (c.rank, c.count, c.ranks);
    Box::new((0..n).flat_map(move |p| {
        let from = a2av_send_displ(p, q, m, n);
        (0..a2av_count(p, q, m, n)).map(move |i| input(p, from + i))
    }))
}

fn ref_all_gather_v<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (m, n) = (c.count, c.ranks);
    Box::new((0..n).flat_map(move |q| (0..weighted_count(q, m, n)).map(move |i| input(q, i))))
}

fn ref_reduce_scatter_v<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (m, n, op) = (c.count, c.ranks, c.op);
    let base = weighted_displ(c.rank, m, n);
    Box::new(
        (0..weighted_count(c.rank, m, n))
            .map(move |i| reduce(op, (0..n).map(|r| input(r, base + i)))),
    )
}

fn ref_sendrecv<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let from = (c.rank + c.ranks - 1) % c.ranks;
    Box::new((0..c.count).map(move |i| input(from, i)))
}

/// `op` over `vals` (exact: the check values are small integers).
fn reduce(op: ReduceOp, vals: impl Iterator<Item = f64>) -> f64 {
    match op {
        ReduceOp::Sum => vals.sum(),
        ReduceOp::Max => vals.fold(f64::MIN, f64::max),
        ReduceOp::Min => vals.fold(f64::MAX, f64::min),
        ReduceOp::Prod => vals.product(),
        // `-o` parses to the four above only.
        other => unreachable!("aiv-perf has no reference for {other}"),
    }
}

fn find_collective(name: &str) -> Option<&'static Collective> {
    let name = name.to_ascii_lowercase();
    COLLECTIVES
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name.as_str()))
}

fn collective_names() -> String {
    COLLECTIVES
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

// ------------------------------------------------------------------------------------------
// Command line.
// ------------------------------------------------------------------------------------------

/// Where the exec timeout came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeoutSource {
    /// `-T`.
    Flag,
    /// `HCCL_EXEC_TIMEOUT`.
    Env,
    /// Neither: the library's default.
    Default,
}

/// A parsed command line.
struct Opts {
    coll: &'static Collective,
    begin: usize,
    end: usize,
    factor: Option<usize>,
    step: Option<usize>,
    dtype: DataType,
    op: ReduceOp,
    root: usize,
    ranks: usize,
    iters: usize,
    warmup: usize,
    check: bool,
    buffsize_mb: Option<usize>,
    /// `--blocks-per-peer`: Config::blocks_per_peer.
    blocks_per_peer: Option<u32>,
    /// `AIV_PERF_INJECT_WRONG=1` (or `last`): rank 0 flips a byte of the first (last) element
    /// of what it read back before comparing (a self-test of the check, the `#wrong` count and
    /// exit status 1).
    inject_wrong: Option<Flip>,
    /// `--algo` as given (parsed for the collective once it is known).
    algo: Option<String>,
    ar_algo: AllReduceAlgo,
    ag_algo: AllGatherAlgo,
    json: bool,
    twin_checks: bool,
    /// `--checks-cost`: time the iterations with the twin's checkers off and on, in alternating
    /// batches of one run.
    checks_cost: bool,
    /// `-R 1`: every rank registers its send and recv buffers as window memory.
    register: bool,
    timeout: Option<Duration>,
    timeout_source: TimeoutSource,
    /// `--backend`: the devices (None: `AIV_BACKEND`, else auto).
    backend: Option<BackendChoice>,
    /// Started by a launcher (mpirun, torchrun, `AIV_RANK`/`AIV_WORLD_SIZE`): this process is
    /// one rank of `ranks`, which the launcher sets; `-p` then means NPUs per node, as in
    /// hccl_test.
    launch: Option<LaunchEnv>,
    /// `-p` under a launcher: NPUs per node, hccl_test's meaning. On the twin it only labels
    /// the run (the header shows it); nothing picks a device by it yet.
    npus_per_node: Option<usize>,
}

/// What the command line asks for.
enum Parsed {
    /// Print this on stdout and exit 0.
    Help(String),
    /// Run the sweep.
    Run(Box<Opts>),
}

const OPTIONS: &str = "\
options:
  -b, --minbytes SIZE       smallest size (default 8K)
  -e, --maxbytes SIZE       largest size (default 64M)
  -f, --stepfactor N        multiply the size by N from row to row (default 2)
  -i, --stepbytes SIZE      add SIZE from row to row instead
  -d, --datatype TYPE       fp32 (default) fp16 bfp16 int32 int16 int8 uint8 uint16 uint32 int64
                            uint64 fp64; nccl-tests' (float half bfloat16 double ...) and Rust's
                            (f32 bf16 u16 ...) names too, any case
  -o, --op OP               sum (default) max min; reducing collectives only
  -r, --root RANK           root rank (broadcast), below the rank count (default 0);
                            collectives without a root check it, ignore it and print -1
  -p, --npus, -g, --ngpus N ranks (default 8, 1..=32; --ranks too)
  -n, --iters N             timed iterations per row and placement (default 20)
  -w, --warmup_iters N      warm-up iterations per row and placement (default 5)
  -c, --check 0|1           check every result against a host reference (default 1); the
                            inputs are written either way, so both time the same work
  -T, --timeout SECONDS     deadline of every device-side wait, as HCCL_EXEC_TIMEOUT in AIV mode:
                            0..=1091 with up to two decimals (0.05 = 50 ms); 0 or more than
                            1091 means 1091. Overrides HCCL_EXEC_TIMEOUT; with neither, the
                            library's default (120 s)
      --buffsize MB         HCCL buffer per rank (default HCCL_BUFFSIZE, else 200)
      --blocks-per-peer K   cores per peer of every launch, 1..=8 (default: by size,
                            aiv_comm::plan::BLOCKS_PER_PEER); one-shot all_reduce and
                            all_gather pull_parts run K blocks in all, one per part
  AIV_PERF_INJECT_WRONG=1   self-test of the check: rank 0 flips a byte of its result
                            as read back, so #wrong is 1 and the exit status 1
                            (=last: of its last element instead of its first)
      --algo ALGO           kernel: all_reduce auto (default) one_shot two_shot hd push;
                            all_gather auto (default: pull_parts) pull (staging + pull,
                            seed 000's) pull_parts (the same, a block per part) push
  -R, --register 0|1        1: every rank registers its send and recv buffers as window memory
                            (Communicator::register, as nccl-tests' -R registers its buffers):
                            all_gather and all_reduce (one-shot out of place, two-shot) then
                            read peers' inputs where they are instead of staged copies
                            (default 0)
      --twin-checks         keep the twin's pipe-hazard and GM race checkers on (off here so
                            that the figures measure the twin at full speed); AIV_TWIN_HAZARDS=0
                            or AIV_TWIN_RACES=0 still turns one off. The output says which were
                            on (the line Twin checkers; JSON: twin_checks)
      --checks-cost         what the checkers cost: every row runs its -n timed iterations
                            with the checkers off and -n more with them on (as --twin-checks
                            would), in alternating batches of one run (off, on, on, off, ...;
                            32 a side, or -n of one call each when -n is 32 or less), after
                            -w warm-up calls each way. The main figures are the unchecked
                            side's (timed batch by batch, so not quite a plain run's); two
                            more columns give the checked time per operation and on/off, the
                            median over adjacent off/on pairs of batches of their time ratio,
                            which a slow stretch of a shared machine or one descheduled batch
                            hardly moves (nor a cost the checkers pay in a few batches only:
                            compare checked_time_us / time_us, the sides' totals). Each batch
                            adds a stream synchronisation to both sides, which pulls on/off
                            toward 1 when calls are short: give small sizes a few hundred
                            calls a side. JSON: checked_time_us, checks_ratio, checks_pairs
                            (every pair's us per operation off and on), checked_batches (which
                            checkers ran); every run's JSON gives checked_launches, the timed
                            launches that ran with each checker on. Not with --twin-checks;
                            an error when AIV_TWIN_HAZARDS=0 and AIV_TWIN_RACES=0 leave
                            nothing to time
      --backend auto|twin|acl
                            the devices: the CPU twin, or NPUs through the ACL runtime
                            (libascendcl.so on the loader's path; acl-twin's runs the twin
                            behind it); auto (default; AIV_BACKEND) is ACL when a device
                            runtime (not acl-twin) loads with enough devices, else the twin.
                            The header names the backend (through ACL: the SoC and CANN
                            version the runtime reports); the twin's own figures (dmabw,
                            cores, census) print N/A through ACL
      --json                one JSON object on stdout instead of the table
  -h, --help                this help (anywhere on the command line)

SIZE is bytes with an optional K, M or G (x1024, x1024^2, x1024^3), also spelt KB, MB, GB,
in any case: 1000, 8K, 64KB, 1m, 1G. Rows whose size holds less than one element per rank are
skipped. Flags take their value as the next word, or attached: -b8K, --minbytes=8K.

Columns as nccl-tests: size count type redop root, then time algbw busbw #wrong out of place
and in place (N/A where a collective has no in-place form), then the twin's dmabw (GM bytes its
DMA read + wrote, / 2, per second, all ranks) out of place and in place, then two NPU figures
of the out-of-place loop, from the twin's per-core counters: cores (block indices, i.e. AIV
cores, whose DMA touched GM on a rank, the most of any rank; flag traffic counts, so a core
that only signals is used) and GMB/core (KiB of GM the busiest core of any rank read + wrote
per operation), then the twin's sync census of one more call with the same arguments (out of
place; untimed, after the timed ones): rdKiB and wrKiB (KiB of GM data memory the DMA of one
rank's kernels read / wrote in the call, the most of any rank; flag memory apart), waits (flag
waits of one rank, the most of any: poll loops, each a run of loads of one flag range) and
rounds (sync rounds on the critical path of a launch: the Lamport depth over flag stores and
loads, i.e. store -> wait hops of the longest chain, each launch starting at 0; an operation
of k chunks runs k such launches one after the other; ascendc-twin/src/census.rs defines them).
--json gives, per placement: cores_used, gm_read_per_rank and gm_written_per_rank (bytes per
operation of the rank that moved the most, flags included), max_core_bytes; from the census:
gm_data_read_per_rank, gm_data_written_per_rank, gm_flag_read_per_rank,
gm_flag_written_per_rank, flag_waits_per_rank, blocking_waits_per_rank (each the most of any
rank), sync_rounds, and census: one object per rank (gm_data_read, gm_data_written,
gm_flag_read, gm_flag_written, flag_loads, flag_stores, flag_waits, blocking_waits (waits that
raised the rank's depth), launches, blocks, depth).

Exit status: 0 ok, 1 wrong elements (or a failed run), 2 bad arguments.";

fn usage() -> String {
    let mut s = String::from(
        "aiv-perf: nccl-tests / hccl_test style bandwidth sweep of aiv-comm's collectives on the CPU twin\n\n\
         usage: aiv-perf <collective> [options]\n       aiv-perf <collective> --help\n\ncollectives:\n",
    );
    for c in COLLECTIVES {
        s += &format!(
            "  {:<16} {} (also {})\n",
            c.name,
            c.about,
            c.aliases.join(", ")
        );
    }
    s += "\n";
    s += OPTIONS;
    s += "\n";
    s
}

fn collective_usage(c: &Collective) -> String {
    let mut s = format!(
        "aiv-perf {}: {}\n\nusage: aiv-perf {} [options]   (also: {})\n\n",
        c.name,
        c.about,
        c.name,
        c.aliases.join(", ")
    );
    s += &format!("  size (-b/-e)   {}\n", c.size_doc);
    s += &format!("  count column   {} (nccl-tests' count)\n", c.count_doc);
    if let Some(doc) = c.counts_doc {
        s += &format!("  counts         {}\n", wrap(doc, 17, 96));
    }
    s += &format!(
        "  busbw          algbw x {} (algbw = size / time)\n",
        c.busbw_doc
    );
    s += &format!(
        "  in place       {}\n",
        c.in_place
            .as_ref()
            .map_or("not run (the in-place columns print N/A)", |ip| ip.doc)
    );
    s += &format!(
        "  -o             {}\n",
        if c.reduces {
            "sum max min"
        } else {
            "refused (nothing is reduced; redop prints none)"
        }
    );
    s += &format!(
        "  -r             {}\n",
        if c.rooted {
            "the root rank"
        } else {
            "checked, then ignored (root prints -1)"
        }
    );
    if let Some(a) = c.algos {
        s += &format!("  --algo         {a}\n");
    }
    if c.min_ranks > 1 {
        s += &format!("  ranks          at least {}\n", c.min_ranks);
    }
    s += "\n";
    s += OPTIONS;
    s += "\n";
    s
}

/// `text` in lines of at most `width` characters, the second and later indented by `indent`.
fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut col = indent;
    for (k, word) in text.split_whitespace().enumerate() {
        if k > 0 && col + 1 + word.len() > width {
            out += "\n";
            out += &" ".repeat(indent);
            col = indent;
        } else if k > 0 {
            out.push(' ');
            col += 1;
        }
        out += word;
        col += word.len();
    }
    out
}

/// Parses a size: bytes with an optional K/M/G or KB/MB/GB (powers of 1024), any case.
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix('b').unwrap_or(&lower);
    let (num, mult) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1usize << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        _ => (body, 1),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "bad size `{s}` (bytes, with an optional K, M, G or KB, MB, GB)"
        ));
    }
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("size `{s}` is too large"))
}

fn parse_num(flag: &str, s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("{flag} needs a whole number, got `{s}`"))
}

/// Reads seconds as HCCL's AIV mode reads `HCCL_EXEC_TIMEOUT` (the library's parser).
fn parse_exec_timeout(s: &str) -> Option<Duration> {
    aiv_comm::world::parse_hccl_exec_timeout(s)
}

/// Flags that take a value.
const VALUE_FLAGS: &[&str] = &[
    "-b",
    "--minbytes",
    "-e",
    "--maxbytes",
    "-f",
    "--stepfactor",
    "-i",
    "--stepbytes",
    "-d",
    "--datatype",
    "-o",
    "--op",
    "-r",
    "--root",
    "-p",
    "--npus",
    "--ranks",
    "-g",
    "--ngpus",
    "-n",
    "--iters",
    "-w",
    "--warmup_iters",
    "-c",
    "--check",
    "-T",
    "--timeout",
    "--buffsize",
    "--blocks-per-peer",
    "--backend",
    "--algo",
    "-R",
    "--register",
];

/// Splits `--flag=value` and `-fVALUE` (getopt's forms) into flag and value.
fn normalize(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        if let Some((flag, value)) = a.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            out.push(flag.to_string());
            out.push(value.to_string());
        } else if a.len() > 2
            && !a.starts_with("--")
            && a.is_char_boundary(2)
            && VALUE_FLAGS.contains(&&a[..2])
        {
            out.push(a[..2].to_string());
            out.push(a[2..].to_string());
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// A 0|1 flag's value.
fn parse_switch(flag: &str, val: &str) -> Result<bool, String> {
    match val.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("{flag} takes 0 or 1, got `{val}`")),
    }
}

/// Parses the command line (without the program name); `env` looks up environment variables.
fn parse(args: &[String], env: impl Fn(&str) -> Option<String>) -> Result<Parsed, String> {
    let args = normalize(args);
    let named = args.first().and_then(|a| find_collective(a));
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Parsed::Help(named.map_or_else(usage, collective_usage)));
    }
    let coll = match (args.first(), named) {
        (_, Some(c)) => c,
        (Some(flag), None) if flag.starts_with('-') => {
            return Err(format!(
            "the first argument must be the collective (one of: {}; aiv-perf --help), got `{flag}`",
            collective_names()
        ))
        }
        (Some(other), None) => {
            return Err(format!(
                "unknown collective `{other}` (one of: {}; aiv-perf --help)",
                collective_names()
            ))
        }
        (None, None) => {
            return Err(format!(
                "missing collective (one of: {}; aiv-perf --help)",
                collective_names()
            ))
        }
    };
    let mut o = Opts {
        coll,
        begin: 8 << 10,
        end: 64 << 20,
        factor: None,
        step: None,
        dtype: DataType::F32,
        op: ReduceOp::Sum,
        root: 0,
        ranks: 8,
        iters: 20,
        warmup: 5,
        check: true,
        buffsize_mb: None,
        blocks_per_peer: None,
        inject_wrong: None,
        algo: None,
        ar_algo: AllReduceAlgo::Auto,
        ag_algo: AllGatherAlgo::Auto,
        json: false,
        twin_checks: false,
        checks_cost: false,
        register: false,
        timeout: None,
        timeout_source: TimeoutSource::Default,
        backend: None,
        launch: None,
        npus_per_node: None,
    };
    let mut op_given = false;
    let mut ranks_given = false;
    let mut timeout_flag = None;
    let mut i = 1;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--json" => {
                o.json = true;
                i += 1;
                continue;
            }
            "--twin-checks" => {
                o.twin_checks = true;
                i += 1;
                continue;
            }
            "--checks-cost" => {
                o.checks_cost = true;
                i += 1;
                continue;
            }
            _ if !VALUE_FLAGS.contains(&flag) => {
                return Err(format!("unknown option `{flag}` (aiv-perf --help)"));
            }
            _ => {}
        }
        let val = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        match flag {
            "-b" | "--minbytes" => o.begin = parse_size(val)?,
            "-e" | "--maxbytes" => o.end = parse_size(val)?,
            "-f" | "--stepfactor" => o.factor = Some(parse_num(flag, val)?),
            "-i" | "--stepbytes" => o.step = Some(parse_size(val)?),
            "-d" | "--datatype" => o.dtype = val.parse()?,
            "-o" | "--op" => {
                o.op = val.parse()?;
                op_given = true;
            }
            "-r" | "--root" => o.root = parse_num(flag, val)?,
            "-p" | "--npus" | "--ranks" | "-g" | "--ngpus" => {
                o.ranks = parse_num(flag, val)?;
                ranks_given = true;
            }
            "-n" | "--iters" => o.iters = parse_num(flag, val)?,
            "-w" | "--warmup_iters" => o.warmup = parse_num(flag, val)?,
            "-c" | "--check" => o.check = parse_switch(flag, val)?,
            "-T" | "--timeout" => timeout_flag = Some(val.to_string()),
            "--buffsize" => o.buffsize_mb = Some(parse_num(flag, val)?),
            "--blocks-per-peer" => {
                let k = parse_num(flag, val)?;
                if !(1..=aiv_comm::plan::MAX_BLOCKS_PER_PEER as usize).contains(&k) {
                    return Err(format!(
                        "--blocks-per-peer takes 1..={}, got {k}",
                        aiv_comm::plan::MAX_BLOCKS_PER_PEER
                    ));
                }
                o.blocks_per_peer = Some(k as u32);
            }
            "--algo" => o.algo = Some(val.to_string()),
            "--backend" => o.backend = Some(val.parse().map_err(|e| format!("--backend: {e}"))?),
            "-R" | "--register" => o.register = parse_switch(flag, val)?,
            _ => unreachable!("every value flag is matched"),
        }
        i += 2;
    }
    if let Some(v) = timeout_flag {
        o.timeout = Some(parse_exec_timeout(&v).ok_or_else(|| {
            format!("-T takes seconds 0..=1091 with at most two decimals, got `{v}`")
        })?);
        o.timeout_source = TimeoutSource::Flag;
    } else if let Some(v) = env("HCCL_EXEC_TIMEOUT") {
        o.timeout = Some(parse_exec_timeout(&v).ok_or_else(|| {
            format!("HCCL_EXEC_TIMEOUT takes seconds 0..=1091 with at most two decimals, got `{v}`")
        })?);
        o.timeout_source = TimeoutSource::Env;
    }
    if o.factor.is_some() && o.step.is_some() {
        return Err("give either -f or -i, not both".into());
    }
    if o.factor == Some(0) || o.factor == Some(1) && o.begin != o.end {
        return Err("-f must be at least 2".into());
    }
    if o.step == Some(0) {
        return Err("-i must be positive".into());
    }
    if o.begin > o.end {
        return Err(format!("-b {} is larger than -e {}", o.begin, o.end));
    }
    let max = aiv_comm::world::MAX_RANKS;
    if o.ranks == 0 || o.ranks > max {
        return Err(format!("-p must be 1..={max}, got {}", o.ranks));
    }
    // Under a launcher the job's size is the launcher's; -p is NPUs per node (hccl_test).
    o.launch = LaunchEnv::from_vars(&env).map_err(|e| e.to_string())?;
    if let Some(l) = &o.launch {
        o.npus_per_node = ranks_given.then_some(o.ranks);
        o.ranks = l.world_size as usize;
        if o.checks_cost {
            return Err(
                "--checks-cost switches every rank's checkers from one process: run it without a launcher (-p ranks in one process)"
                    .into(),
            );
        }
    }
    if o.ranks < coll.min_ranks {
        return Err(format!(
            "{} needs at least {} ranks, got -p {}",
            coll.name, coll.min_ranks, o.ranks
        ));
    }
    if o.root >= o.ranks {
        return Err(format!(
            "-r {} is not a rank of {} (0..={})",
            o.root,
            o.ranks,
            o.ranks - 1
        ));
    }
    if o.checks_cost && o.twin_checks {
        return Err("--checks-cost times the checkers both off and on: drop --twin-checks".into());
    }
    let twin = ascendc_twin::TwinConfig::try_from_lookup(&env)?;
    if o.checks_cost && !twin.hazard_check && !twin.race_check {
        return Err(
            "--checks-cost: AIV_TWIN_HAZARDS=0 and AIV_TWIN_RACES=0 leave no checker to time"
                .into(),
        );
    }
    if o.iters == 0 {
        return Err("-n must be at least 1".into());
    }
    if op_given && !coll.reduces {
        return Err(format!("{} does not reduce: -o does not apply", coll.name));
    }
    if let Some(a) = &o.algo {
        if coll.algos.is_none() {
            return Err(format!("--algo does not apply to {}", coll.name));
        }
        match coll.name {
            "all_reduce" => o.ar_algo = a.parse()?,
            "all_gather" => o.ag_algo = a.parse()?,
            _ => {
                return Err(format!(
                    "{} lists kernels that aiv-perf cannot parse",
                    coll.name
                ))
            }
        }
    }
    if coll.reduces && (o.dtype.reduce_code().is_none() || o.op.code().is_none()) {
        return Err(format!(
            "{} cannot reduce {} with {} on the device (types fp32 fp16 bf16 int32 int16 int8; ops sum max min)",
            coll.name, o.dtype, o.op
        ));
    }
    if sizes(&o).iter().all(|&s| row_count(&o, s) == 0) {
        return Err(format!(
            "no size in -b {} .. -e {} holds one {} element per rank for {} on {} ranks",
            o.begin, o.end, o.dtype, coll.name, o.ranks
        ));
    }
    if let Some(mb) = o.buffsize_mb {
        let fits = mb
            .checked_mul(1 << 20)
            .is_some_and(|b| (MIN_BUFFER_BYTES..=MAX_BUFFER_BYTES).contains(&b));
        if !fits {
            return Err(format!(
                "--buffsize takes MB from 1 to {}, got {mb}",
                MAX_BUFFER_BYTES >> 20
            ));
        }
    }
    let cfg = config(&o);
    cfg.buffer_bytes_with(&env).map_err(|e| e.to_string())?;
    cfg.timeout_with(&env).map_err(|e| e.to_string())?;
    cfg.deterministic_with(&env).map_err(|e| e.to_string())?;
    o.inject_wrong = match env("AIV_PERF_INJECT_WRONG").as_deref() {
        Some("1") => Some(Flip::First),
        Some("last") => Some(Flip::Last),
        _ => None,
    };
    Ok(Parsed::Run(Box::new(o)))
}

/// The world's configuration for `o`.
fn config(o: &Opts) -> Config {
    Config {
        buffer_bytes: o.buffsize_mb.map(|mb| mb << 20),
        blocks_per_peer: o.blocks_per_peer,
        exec_timeout: o.timeout,
        cores: (o.ranks as u32).max(ascendc_twin::DEFAULT_CORES),
        backend: o.backend,
        ..Config::default() // HCCL_DETERMINISTIC
    }
}

/// The sizes of the sweep, before skipping.
fn sizes(o: &Opts) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = o.begin;
    loop {
        v.push(s);
        let next = match (o.step, o.factor) {
            (Some(step), _) => s.saturating_add(step),
            (None, f) => s.saturating_mul(f.unwrap_or(2)),
        };
        if next > o.end || next == s {
            break;
        }
        s = next;
    }
    v
}

/// Per-rank element count of a row of `size` bytes (0: the row is skipped).
fn row_count(o: &Opts, size: usize) -> usize {
    (o.coll.count)(size, o.dtype.size(), o.ranks)
}

// ------------------------------------------------------------------------------------------
// Data and checks.
// ------------------------------------------------------------------------------------------

/// Check data: small integers, exact in every type for any reduction order.
fn check_value(r: usize, i: usize) -> f64 {
    ((r * 3 + i * 7) % 8) as f64
}

/// A byte that no check result holds in any type (element bytes all 0xFF: NaN, -1 or the
/// maximum of an unsigned type), written over the output before each check.
const POISON: u8 = 0xFF;

/// Appends `v` as `dtype`; integers wrap as the device's integer sums do.
fn encode(dtype: DataType, v: f64, out: &mut Vec<u8>) {
    let i = v as i64;
    match dtype {
        DataType::F32 => out.extend((v as f32).to_le_bytes()),
        DataType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
        DataType::Bf16 => out.extend(bf16::from_f64(v).to_le_bytes()),
        DataType::F64 => out.extend(v.to_le_bytes()),
        DataType::I32 => out.extend((i as i32).to_le_bytes()),
        DataType::I16 => out.extend((i as i16).to_le_bytes()),
        DataType::I8 => out.extend((i as i8).to_le_bytes()),
        DataType::U8 => out.extend((i as u8).to_le_bytes()),
        DataType::I64 => out.extend(i.to_le_bytes()),
        DataType::U64 => out.extend((i as u64).to_le_bytes()),
        DataType::U16 => out.extend((i as u16).to_le_bytes()),
        DataType::U32 => out.extend((i as u32).to_le_bytes()),
        // `-d` parses to the types above only.
        other => unreachable!("aiv-perf cannot encode {other}"),
    }
}

fn encode_all(dtype: DataType, vals: impl Iterator<Item = f64>) -> Vec<u8> {
    let mut v = Vec::new();
    for x in vals {
        encode(dtype, x, &mut v);
    }
    v
}

// ------------------------------------------------------------------------------------------
// The sweep.
// ------------------------------------------------------------------------------------------

/// One rank's buffers and streams, allocated once for the largest row.
struct RankState {
    send: DeviceBuffer,
    recv: DeviceBuffer,
    side: Option<CommStream>,
}

/// Out of place or in place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Out,
    In,
}

/// One placement's figures of one row.
struct Measure {
    time_us: f64,
    /// `--checks-cost`: the checked side.
    cost: Option<Checked>,
    /// Launches of the timed calls (both sides with `--checks-cost`) that ran with each of the
    /// twin's checkers on, all ranks.
    checked_launches: CheckedLaunches,
    algbw: f64,
    busbw: f64,
    /// GM bytes the kernels' DMA read plus wrote, per operation (all ranks).
    dma_per_op: f64,
    /// Those bytes as copy bandwidth: (read + written) / 2 per second, all ranks together.
    dmabw: f64,
    /// Block indices with GM traffic on a rank (the cores its kernels used), max over ranks.
    cores_used: usize,
    /// GM bytes read and written per operation by the busiest rank (the most read + written).
    rank_gm: GmTraffic,
    /// GM bytes read + written per operation by the busiest core of any rank.
    max_core_bytes: f64,
    /// The twin's sync census of one more call (untimed, same arguments): per rank, GM data and
    /// flag bytes, flag waits, sync depth.
    census: Census,
    /// Wrong elements over all ranks; `None` without `-c 1`.
    wrong: Option<usize>,
    /// The twin's figures (DMA, cores, census) were measured: the world runs on the twin.
    on_twin: bool,
    /// The census covers the job: every rank in this process. In a job of processes each
    /// process's census sees its own rank only (its sync depth stops at the flags other
    /// processes wrote), so it is not shown.
    census_known: bool,
}

impl Measure {
    /// The largest figure `f` of any rank in the census.
    fn census_max(&self, f: impl Fn(&RankCensus) -> u64) -> u64 {
        self.census.ranks.iter().map(f).max().unwrap_or(0)
    }
}

/// One row: a size, out of place and (if the collective runs in place) in place.
struct Row {
    size: usize,
    count: usize,
    out: Measure,
    inp: Option<Measure>,
}

/// What a sweep measured: its rows, and which of the twin's checkers were on.
struct Sweep {
    rows: Vec<Row>,
    /// The twin's checkers as they ran (`None`: not on the twin).
    checkers: Option<Checkers>,
    /// `--checks-cost`: the checkers of the checked batches.
    checked: Option<Checkers>,
}

/// Which of the twin's checkers run.
#[derive(Clone, Copy)]
struct Checkers {
    /// The pipe-hazard checker.
    hazards: bool,
    /// The GM race checker.
    races: bool,
}

impl Checkers {
    /// Both off.
    const OFF: Checkers = Checkers {
        hazards: false,
        races: false,
    };
}

/// Turns the twin's checkers on or off for the launches that start afterwards.
fn set_checkers(twin: &Twin, c: Checkers) {
    twin.set_hazard_check(c.hazards);
    twin.set_race_check(c.races);
}

/// Batches a side of `--checks-cost` (fewer when `-n` is smaller). Each rank times a batch from
/// the rendezvous that starts it to the end of its stream synchronisation, and the batch's
/// time is its slowest rank's: the synchronisation is a fixed cost per batch, alike on both
/// sides, which brings the ratio closer to 1 the shorter the batch (in one call of a few us it
/// is a large part; in 25 calls of 100 us, or one of several ms, a small one). 32 pairs give the
/// median ratio a narrow spread on a noisy 2-vCPU VM.
const COST_BATCHES: usize = 32;

/// `--checks-cost`'s schedule of `iters` calls a side: (checkers on, calls) per batch, in the
/// order off, on, on, off, off, on, ... Each side comes first in half of the adjacent pairs, so
/// that a steady drift of the machine's speed over the run falls on both alike; each side makes
/// `iters` calls in `min(iters, COST_BATCHES)` batches of nearly equal size.
fn cost_schedule(iters: usize) -> Vec<(bool, usize)> {
    let b = iters.clamp(1, COST_BATCHES);
    let mut next = [0; 2];
    (0..2 * b)
        .map(|k| {
            let side = k.div_ceil(2) % 2;
            let i = next[side];
            next[side] += 1;
            (side == 1, cut(iters, i + 1, b) - cut(iters, i, b))
        })
        .collect()
}

/// `--checks-cost`'s figures of one placement.
struct Checked {
    /// Time per operation with the checkers on: the checked batches' times (each its slowest
    /// rank's) over the calls they made.
    time_us: f64,
    /// The median, over the adjacent pairs of batches (one of each side, as many calls each), of
    /// the checked batch's time over the unchecked one's. A pair runs back to back, so a slow
    /// stretch of the machine or a descheduled worker (one batch taking several times its
    /// neighbours) moves one pair's ratio, not the median; a ratio of the two sides' total
    /// times would take such a batch whole. (It would also take whole a cost the checkers pay
    /// in a few batches only; the totals are in [`Checked::time_us`] and the main time.)
    ratio: f64,
    /// Every pair's time per operation, (checkers off, on), in run order.
    pairs: Vec<(f64, f64)>,
}

/// Both sides of `--checks-cost` from the ranks' batch times.
struct CostSides {
    /// The unchecked side's time per operation: its batches' times (each its slowest rank's)
    /// over the calls they made.
    time_us: f64,
    /// The checked side, and the ratio.
    checked: Checked,
}

/// [`CostSides`] of `iters` calls a side, from every rank's batches.
fn cost_sides(iters: usize, per_rank: &[RankMeasure]) -> CostSides {
    let schedule = cost_schedule(iters);
    // Per batch: (checkers on, time per call of the slowest rank, time of the slowest rank).
    let batches: Vec<(bool, f64, f64)> = schedule
        .iter()
        .enumerate()
        .map(|(k, &(checks, calls))| {
            let t = per_rank
                .iter()
                .filter_map(|m| m.batches.get(k))
                .max()
                .map_or(0.0, |t| t.as_secs_f64() * 1e6);
            (checks, t / calls as f64, t)
        })
        .collect();
    let side = |on: bool| -> f64 {
        batches
            .iter()
            .filter(|b| b.0 == on)
            .map(|b| b.2)
            .sum::<f64>()
            / iters as f64
    };
    let pairs: Vec<(f64, f64)> = batches
        .chunks_exact(2)
        .map(|p| {
            if p[0].0 {
                (p[1].1, p[0].1)
            } else {
                (p[0].1, p[1].1)
            }
        })
        .collect();
    let mut ratios: Vec<f64> = pairs
        .iter()
        .filter(|(off, _)| *off > 0.0)
        .map(|(off, on)| on / off)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let ratio = match ratios.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ratios[n / 2],
        n => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    CostSides {
        time_us: side(false),
        checked: Checked {
            time_us: side(true),
            ratio,
            pairs,
        },
    }
}

/// Where the ranks meet between the phases of a row: threads of this process, or the processes
/// of a job (over the bootstrap's connections; a failing process exits, and its end breaks the
/// others' wait).
enum Meet<'a> {
    Threads(Rendezvous),
    Processes(&'a aiv_comm::bootstrap::Peers),
}

impl Meet<'_> {
    /// Waits for every rank; `Err` if a rank failed.
    fn wait(&self) -> Result<(), RankError> {
        match self {
            Meet::Threads(r) => r.wait(),
            Meet::Processes(p) => p.barrier().map_err(|_| RankError::PeerFailed),
        }
    }

    fn break_it(&self) {
        if let Meet::Threads(r) = self {
            r.break_it();
        }
    }
}

/// A barrier that a failing rank breaks, so that the others stop instead of waiting for it.
struct Rendezvous {
    ranks: usize,
    /// (arrived in this round, round, broken)
    state: Mutex<(usize, u64, bool)>,
    cv: Condvar,
}

impl Rendezvous {
    fn new(ranks: usize) -> Rendezvous {
        Rendezvous {
            ranks,
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
        }
    }

    /// Waits for every rank; `Err` if a rank broke the barrier.
    fn wait(&self) -> Result<(), RankError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.2 {
            return Err(RankError::PeerFailed);
        }
        s.0 += 1;
        if s.0 == self.ranks {
            s.0 = 0;
            s.1 += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let round = s.1;
        while s.1 == round && !s.2 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.1 == round {
            Err(RankError::PeerFailed)
        } else {
            Ok(())
        }
    }

    fn break_it(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.2 = true;
        self.cv.notify_all();
    }
}

/// Why a rank stopped.
enum RankError {
    /// Its own call failed.
    Own(aiv_comm::Error),
    /// Another rank failed (and broke the rendezvous).
    PeerFailed,
}

impl From<aiv_comm::Error> for RankError {
    fn from(e: aiv_comm::Error) -> Self {
        RankError::Own(e)
    }
}

/// What one rank measured of one placement.
struct RankMeasure {
    /// The timed iterations (zero with `--checks-cost`, whose times are in `batches`).
    time: Duration,
    /// `--checks-cost`: the time of every batch, in [`cost_schedule`]'s order (empty without).
    batches: Vec<Duration>,
    /// The calls the traffic counters below cover (both sides with `--checks-cost`).
    counted_calls: usize,
    /// Launches of the twin in those calls that ran with each checker on.
    checked_launches: CheckedLaunches,
    /// Wrong elements of its output; `None` without `-c 1`.
    wrong: Option<usize>,
    /// GM bytes every rank's DMA read plus wrote in the timed iterations (the twin's total).
    dma: u64,
    /// GM bytes this rank's kernels moved in the timed iterations, per block index.
    cores: Vec<GmTraffic>,
    /// The census call's figures (rank 0 collects them for every rank).
    census: Option<Census>,
}

/// The views a placement uses on one rank: (send, recv).
fn views(
    o: &Opts,
    st: &RankState,
    place: Place,
    rank: usize,
    count: usize,
) -> aiv_comm::Result<(DeviceBuffer, DeviceBuffer)> {
    let es = o.dtype.size();
    let n = o.ranks;
    let sb = (o.coll.send_elems)(rank, count, n) * es;
    let rb = (o.coll.recv_elems)(rank, count, n) * es;
    match (place, &o.coll.in_place) {
        (Place::In, Some(ip)) => Ok((
            st.recv.view((ip.send_offset)(rank, count, n) * es, sb)?,
            st.recv.view((ip.recv_offset)(rank, count, n) * es, rb)?,
        )),
        _ => Ok((st.send.view(0, sb)?, st.recv.view(0, rb)?)),
    }
}

fn sync(comm: &Communicator, st: &RankState) -> aiv_comm::Result<()> {
    comm.synchronize()?;
    if let Some(s) = &st.side {
        s.synchronize()?;
    }
    Ok(())
}

/// One rank's share of one placement of one row: inputs written, warm-up, timed iterations,
/// one untimed call with the twin's sync census on, then (with `-c 1`) one call from fresh
/// inputs over a poisoned output, checked against the reference.
#[allow(clippy::too_many_arguments)]
fn measure(
    o: &Opts,
    twin: Option<&Twin>,
    comm: &Communicator,
    st: &RankState,
    place: Place,
    count: usize,
    rv: &Meet,
    checked: Option<Checkers>,
) -> Result<RankMeasure, RankError> {
    let r = comm.rank() as usize;
    // Who switches the twin's knobs: rank 0 for every rank of one process, each process of a
    // job for its own share of the twin.
    let switches = r == 0 || o.launch.is_some();
    let (send, recv) = views(o, st, place, r, count)?;
    let call = Call {
        comm,
        side: st.side.as_ref(),
        send: &send,
        recv: &recv,
        count,
        dtype: o.dtype,
        op: o.op,
        root: o.root as u32,
        ar_algo: o.ar_algo,
        ag_algo: o.ag_algo,
    };
    let send_elems = (o.coll.send_elems)(r, count, o.ranks);
    // The inputs are written with or without `-c 1`: GM the host never wrote reads the
    // system's shared zero page (a GM buffer of 1 MiB or more is an anonymous mapping),
    // which stays in the CPU's caches, and timed the twin's copies 1.7x too fast at 1-16 MiB
    // per rank.
    let input = encode_all(o.dtype, (0..send_elems).map(|i| check_value(r, i)));
    // Nobody starts before every rank has finished the previous placement.
    rv.wait()?;
    send.write(0, &input)?;
    // Kept for the check only (at 32 ranks of 64 MiB, 2 GiB of host memory).
    let input = o.check.then_some(input);
    rv.wait()?;
    for _ in 0..o.warmup {
        (o.coll.run)(&call)?;
    }
    sync(comm, st)?;
    // `--checks-cost`: as many warm-up calls with the checkers on, so that the first checked
    // batch does not pay for what the checkers build at their first launches (participants,
    // flag cells, shadow segments). Rank 0 switches while the others wait, as in the batches.
    if let Some(on) = checked {
        rv.wait()?;
        // `checked` is only ever Some on the twin.
        let twin = twin.expect("--checks-cost runs on the twin");
        if switches {
            set_checkers(twin, on);
        }
        rv.wait()?;
        for _ in 0..o.warmup {
            (o.coll.run)(&call)?;
        }
        sync(comm, st)?;
        rv.wait()?;
        if switches {
            set_checkers(twin, Checkers::OFF);
        }
    }
    // Every rank's warm-up has finished (and moved its last byte) before the twin's DMA
    // counters are read; nobody starts before that reading (the rendezvous that starts
    // `calls_from_rendezvous`).
    rv.wait()?;
    // The twin's counters (none on another backend: its figures stay zero and print N/A).
    let counters = |t: Option<&Twin>| {
        t.map(|t| {
            (
                t.gm_traffic(),
                t.core_traffic(r as u32),
                t.checked_launches(),
            )
        })
    };
    let before = counters(twin);
    // Makes `calls` calls once every rank is ready, and waits for them to finish on this rank;
    // returns when they started.
    let calls_from_rendezvous = |calls: usize| -> Result<Instant, RankError> {
        rv.wait()?;
        let t0 = Instant::now();
        for _ in 0..calls {
            (o.coll.run)(&call)?;
        }
        sync(comm, st)?;
        Ok(t0)
    };
    let mut batches = Vec::new();
    let time = match checked {
        None => {
            // From the moment every rank is ready to the moment every rank's last call has
            // finished.
            let t0 = calls_from_rendezvous(o.iters)?;
            rv.wait()?;
            t0.elapsed()
        }
        Some(on) => {
            let twin = twin.expect("--checks-cost runs on the twin");
            for (checks, calls) in cost_schedule(o.iters) {
                // Rank 0 switches while the others wait (a launch reads the knobs when it
                // starts; every rank's calls of the batch before have finished).
                if switches {
                    set_checkers(twin, if checks { on } else { Checkers::OFF });
                }
                let t0 = calls_from_rendezvous(calls)?;
                // This rank's time, before the rendezvous (its wake-up is no part of the
                // batch); the batch's time is the slowest rank's.
                batches.push(t0.elapsed());
                rv.wait()?;
            }
            if switches {
                set_checkers(twin, Checkers::OFF);
            }
            Duration::ZERO
        }
    };
    let mut m = RankMeasure {
        time,
        batches,
        counted_calls: o.iters * if checked.is_some() { 2 } else { 1 },
        checked_launches: CheckedLaunches::default(),
        wrong: None,
        dma: 0,
        cores: Vec::new(),
        census: None,
    };
    if let (Some((dma0, cores0, launches0)), Some((dma1, cores1, launches1))) =
        (before, counters(twin))
    {
        m.checked_launches = launches1.since(launches0);
        m.dma = (dma1.read - dma0.read) + (dma1.written - dma0.written);
        m.cores = cores1
            .iter()
            .zip(&cores0)
            .map(|(b, a)| b.since(*a))
            .collect();
    }
    // The census (on the twin): one more call with the same arguments, untimed, with the twin's
    // sync census on. Rank 0 switches it while the others wait (a launch reads the knob when it
    // starts), and off again before anyone starts the next call.
    if let Some(twin) = twin {
        if switches {
            let _stale = twin.take_census();
            twin.set_census(true);
        }
        rv.wait()?;
        (o.coll.run)(&call)?;
        sync(comm, st)?;
        rv.wait()?;
        if switches {
            twin.set_census(false);
            m.census = Some(twin.take_census());
        }
    }
    let Some(input) = input else {
        return Ok(m);
    };
    // The timed iterations may have accumulated (in place) or left the right answer from an
    // earlier call: check one call from fresh inputs over an output nobody's result matches.
    recv.fill(POISON)?;
    send.write(0, &input)?;
    rv.wait()?;
    (o.coll.run)(&call)?;
    sync(comm, st)?;
    let case = RefCase {
        ranks: o.ranks,
        rank: r,
        count,
        op: o.op,
        root: o.root,
    };
    m.wrong = Some(count_wrong(
        o.dtype,
        (o.coll.reference)(&case, &check_value),
        &recv,
        o.inject_wrong.filter(|_| r == 0),
    )?);
    Ok(m)
}

/// Output bytes [`count_wrong`] reads and compares at a time.
const CHECK_CHUNK: usize = 1 << 20;

/// Which element of the result `AIV_PERF_INJECT_WRONG` spoils.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flip {
    /// The first (`=1`).
    First,
    /// The last (`=last`: the check's last chunk must be compared too).
    Last,
}

/// The elements of `recv` (from its start) that differ from `want`, encoded as `dtype`, compared
/// a chunk at a time, so that the comparison takes no memory in proportion to the output (the
/// rank's input, kept to write it again before the checked call, is the only row-sized host copy
/// left). `flip`: the self-test of the check (`AIV_PERF_INJECT_WRONG`), which flips the first
/// byte of that element as read back.
fn count_wrong(
    dtype: DataType,
    want: Reference,
    recv: &DeviceBuffer,
    flip: Option<Flip>,
) -> aiv_comm::Result<usize> {
    let mut want = want.peekable();
    let es = dtype.size();
    let per_chunk = (CHECK_CHUNK / es).max(1);
    let (mut expected, mut got) = (
        Vec::with_capacity(per_chunk * es),
        vec![0u8; per_chunk * es],
    );
    let (mut offset, mut wrong) = (0, 0);
    loop {
        expected.clear();
        for v in want.by_ref().take(per_chunk) {
            encode(dtype, v, &mut expected);
        }
        if expected.is_empty() {
            return Ok(wrong);
        }
        let got = &mut got[..expected.len()];
        recv.read(offset, got)?;
        match flip {
            Some(Flip::First) if offset == 0 => got[0] ^= 0xff,
            Some(Flip::Last) if want.peek().is_none() => got[got.len() - es] ^= 0xff,
            _ => {}
        }
        if *got != expected[..] {
            wrong += got
                .chunks(es)
                .zip(expected.chunks(es))
                .filter(|(g, w)| g != w)
                .count();
        }
        offset += expected.len();
    }
}

/// Combines the ranks' measurements of one placement.
fn combine(o: &Opts, size: usize, per_rank: &[RankMeasure], on_twin: bool) -> Measure {
    let time = per_rank
        .iter()
        .map(|m| m.time)
        .max()
        .unwrap_or(Duration::ZERO);
    let wrong = if o.check {
        Some(per_rank.iter().filter_map(|m| m.wrong).sum())
    } else {
        None
    };
    let cost = o.checks_cost.then(|| cost_sides(o.iters, per_rank));
    let time_us = match &cost {
        Some(c) => c.time_us,
        None => time.as_secs_f64() * 1e6 / o.iters as f64,
    };
    let per_us = |bytes: f64| {
        if time_us > 0.0 {
            bytes / time_us / 1e3
        } else {
            0.0
        }
    };
    let algbw = per_us(size as f64);
    // The calls the traffic counters covered (both sides with `--checks-cost`).
    let counted = per_rank.first().map_or(o.iters, |m| m.counted_calls) as u64;
    // A twin's counters cover its ranks: every rank's in one process, the process's own in a
    // job of processes.
    let dma = match o.launch {
        None => per_rank.first().map_or(0, |m| m.dma),
        Some(_) => per_rank.iter().map(|m| m.dma).sum(),
    };
    let dma_per_op = dma as f64 / counted as f64;
    let moved = |t: &GmTraffic| t.read + t.written;
    let cores_used = per_rank
        .iter()
        .map(|m| m.cores.iter().filter(|t| moved(t) > 0).count())
        .max()
        .unwrap_or(0);
    let max_core = per_rank
        .iter()
        .flat_map(|m| m.cores.iter().map(moved))
        .max()
        .unwrap_or(0);
    let busiest = per_rank
        .iter()
        .map(|m| {
            m.cores.iter().fold(GmTraffic::default(), |a, t| GmTraffic {
                read: a.read + t.read,
                written: a.written + t.written,
            })
        })
        .max_by_key(moved)
        .unwrap_or_default();
    Measure {
        time_us,
        cost: cost.map(|c| c.checked),
        checked_launches: per_rank
            .first()
            .map_or_else(CheckedLaunches::default, |m| m.checked_launches),
        algbw,
        busbw: algbw * (o.coll.busbw_factor)(o.ranks),
        dma_per_op,
        dmabw: per_us(dma_per_op / 2.0),
        cores_used,
        rank_gm: GmTraffic {
            read: busiest.read / counted,
            written: busiest.written / counted,
        },
        max_core_bytes: max_core as f64 / counted as f64,
        census: per_rank
            .iter()
            .find_map(|m| m.census.clone())
            .unwrap_or_default(),
        wrong,
        on_twin,
        census_known: o.launch.is_none(),
    }
}

/// The ranks of the sweep this process runs: all of them in one process, or (started by a
/// launcher) its own.
enum Ranks {
    /// Every rank, as threads of this process.
    World(World),
    /// This process's rank of a job whose ranks are processes.
    Process(Communicator),
}

impl Ranks {
    /// The ranks this process runs.
    fn comms(&self) -> &[Communicator] {
        match self {
            Ranks::World(w) => w.comms(),
            Ranks::Process(c) => std::slice::from_ref(c),
        }
    }

    /// Runs `f` on every rank of this process (each on a thread of its own in a World).
    fn run<R: Send>(&self, f: impl Fn(&Communicator) -> R + Sync) -> Vec<R> {
        match self {
            Ranks::World(w) => w.run(f),
            Ranks::Process(c) => vec![f(c)],
        }
    }

    /// The twin whose counters and knobs this process reads: the world's, or the process's
    /// share of the job's.
    fn twin(&self) -> Option<&Twin> {
        match self {
            Ranks::World(w) => w.twin(),
            Ranks::Process(c) => c.twin(),
        }
    }

    fn backend_name(&self) -> &'static str {
        match self {
            Ranks::World(w) => w.backend_name(),
            Ranks::Process(c) => c.backend_name(),
        }
    }

    fn backend_description(&self) -> String {
        match self {
            Ranks::World(w) => w.backend_description(),
            Ranks::Process(c) => c.backend_description(),
        }
    }

    /// This process prints the results (rank 0 of a job of processes).
    fn prints(&self) -> bool {
        match self {
            Ranks::World(_) => true,
            Ranks::Process(c) => c.rank() == 0,
        }
    }

    /// The bootstrap's connections to the other processes of the job.
    fn peers(&self) -> Option<&aiv_comm::bootstrap::Peers> {
        match self {
            Ranks::World(_) => None,
            Ranks::Process(c) => c.peers(),
        }
    }
}

/// The ranks of the sweep, on the backend `o` asks for.
fn make_world(o: &Opts) -> Result<Ranks, String> {
    let made = match &o.launch {
        None => World::new(o.ranks, config(o)).map(Ranks::World),
        Some(l) => Communicator::from_rank(l.rank, l.world_size, l.unique_id(), config(o))
            .map(Ranks::Process),
    };
    made.map_err(|e| match o.buffsize_mb {
        Some(mb) => format!("--buffsize {mb}: {e}"),
        None => e.to_string(),
    })
}

/// Runs the sweep on `world`, printing each row as it is done (unless `--json`).
fn run(o: &Opts, world: &Ranks) -> Result<Sweep, String> {
    // A bandwidth run measures the twin at full speed; its pipe-hazard and GM race checkers
    // (on by default in the library, for development and tests) are opt-in here. With
    // `--twin-checks` the twin keeps its configuration, so `AIV_TWIN_HAZARDS=0` or
    // `AIV_TWIN_RACES=0` still turns one of them off (to measure the other alone).
    // `--checks-cost` runs half its timed batches with the checkers as configured.
    let twin = world.twin();
    if twin.is_none() && (o.twin_checks || o.checks_cost) {
        return Err(format!(
            "--twin-checks and --checks-cost switch the twin's checkers, and this world runs on the {} backend (acl-twin takes them from its AIV_TWIN_* environment)",
            world.backend_name()
        ));
    }
    let configured = twin.map(|t| Checkers {
        hazards: t.hazard_check(),
        races: t.race_check(),
    });
    if let (Some(t), false) = (twin, o.twin_checks) {
        set_checkers(t, Checkers::OFF);
    }
    let checked = if o.checks_cost { configured } else { None };
    let es = o.dtype.size();
    let n = o.ranks;
    let list: Vec<usize> = sizes(o)
        .into_iter()
        .filter(|&s| row_count(o, s) > 0)
        .collect();
    // One length for every rank and row: the largest any needs (a v-collective's rounded
    // counts need not grow with the row), at least one element.
    let (mut send_len, mut recv_len) = (es, es);
    for &size in &list {
        let count = row_count(o, size);
        for r in 0..n {
            let (se, re) = (
                (o.coll.send_elems)(r, count, n),
                (o.coll.recv_elems)(r, count, n),
            );
            send_len = send_len.max(se * es);
            recv_len = recv_len.max(re * es);
            if let Some(ip) = &o.coll.in_place {
                let ends = [
                    (ip.send_offset)(r, count, n) + se,
                    (ip.recv_offset)(r, count, n) + re,
                ];
                recv_len = recv_len.max(ends[0] * es).max(ends[1] * es);
            }
        }
    }
    let states: Vec<RankState> = world
        .comms()
        .iter()
        .map(|c| -> aiv_comm::Result<RankState> {
            let st = RankState {
                send: c.alloc(send_len)?,
                recv: c.alloc(recv_len)?,
                side: if o.coll.side_stream {
                    Some(c.create_stream("aiv-perf-side")?)
                } else {
                    None
                },
            };
            if o.register {
                c.register(&st.send)?;
                c.register(&st.recv)?;
            }
            Ok(st)
        })
        .collect::<aiv_comm::Result<_>>()
        .map_err(|e| e.to_string())?;
    let progress = std::io::stderr().is_terminal();
    let t_start = Instant::now();
    let mut shown = false;
    let mut rows = Vec::new();
    for (k, &size) in list.iter().enumerate() {
        let count = row_count(o, size);
        let size = (o.coll.size_elems)(count, n) * es;
        let rv = match world.peers() {
            None => Meet::Threads(Rendezvous::new(n)),
            Some(p) => Meet::Processes(p),
        };
        let results = world.run(|comm| {
            let here = world.comms().iter().position(|c| c.rank() == comm.rank());
            let st = &states[here.expect("a rank of this process")];
            let r = (|| -> Result<(RankMeasure, Option<RankMeasure>), RankError> {
                let out = measure(o, twin, comm, st, Place::Out, count, &rv, checked)?;
                let inp = match o.coll.in_place {
                    Some(_) => Some(measure(o, twin, comm, st, Place::In, count, &rv, checked)?),
                    None => None,
                };
                Ok((out, inp))
            })();
            if r.is_err() {
                rv.break_it();
            }
            r
        });
        let results = gather_results(world, results)?;
        let mut outs = Vec::new();
        let mut ins = Vec::new();
        let mut peer_failed = false;
        for (r, res) in results.into_iter().enumerate() {
            match res {
                Ok((out, inp)) => {
                    outs.push(out);
                    ins.extend(inp);
                }
                // A deadline shorter than the work fails a healthy run: say which deadline.
                Err(RankError::Own(e @ aiv_comm::Error::WaitTimeout { .. })) => {
                    return Err(format!(
                        "rank {r}: {e} [this run's exec timeout: {}]",
                        timeout_note(o)
                    ))
                }
                Err(RankError::Own(e)) => return Err(format!("rank {r}: {e}")),
                Err(RankError::PeerFailed) => peer_failed = true,
            }
        }
        if peer_failed {
            return Err("a rank failed".into());
        }
        let row = Row {
            size,
            count,
            out: combine(o, size, &outs, twin.is_some()),
            inp: o
                .coll
                .in_place
                .as_ref()
                .map(|_| combine(o, size, &ins, twin.is_some())),
        };
        if !o.json && world.prints() {
            print_row(o, &row);
        }
        rows.push(row);
        if progress && world.prints() && t_start.elapsed() > Duration::from_secs(1) {
            eprint!(
                "\raiv-perf: {}/{} sizes done, {:.1} s elapsed   ",
                k + 1,
                list.len(),
                t_start.elapsed().as_secs_f64()
            );
            let _ = std::io::stderr().flush();
            shown = true;
        }
    }
    if shown {
        eprintln!();
    }
    Ok(Sweep {
        rows,
        checkers: twin.map(|t| Checkers {
            hazards: t.hazard_check(),
            races: t.race_check(),
        }),
        checked,
    })
}

/// One rank's measurements of a row: out of place, and in place if the collective has it.
type RankResult = Result<(RankMeasure, Option<RankMeasure>), RankError>;

/// Every rank's measurements of a row, in rank order: this process's, and in a job of
/// processes the others' too (over the bootstrap). A process whose own call failed says why
/// and exits at once: the others then stop at their next meeting (its end breaks it), or
/// sooner (a peer that ends without leaving stops every rank's launches).
fn gather_results(world: &Ranks, mine: Vec<RankResult>) -> Result<Vec<RankResult>, String> {
    let Some(peers) = world.peers() else {
        return Ok(mine);
    };
    let rank = peers.rank();
    let own = mine.into_iter().next().expect("one rank per process");
    let (out, inp) = match own {
        Ok(m) => m,
        Err(RankError::PeerFailed) => return Err("a rank failed".into()),
        Err(RankError::Own(e)) => {
            eprintln!("aiv-perf: rank {rank}: {e}");
            std::process::exit(1);
        }
    };
    let mut bytes = Vec::new();
    encode_measure(&out, &mut bytes);
    if let Some(m) = &inp {
        encode_measure(m, &mut bytes);
    }
    let all = peers
        .all_gather(&bytes)
        .map_err(|e| format!("gathering the ranks' figures: {e}"))?;
    let mut own = Some((out, inp));
    all.iter()
        .enumerate()
        .map(|(r, b)| {
            if r as u32 == rank {
                return Ok(Ok(own.take().expect("own figures once")));
            }
            let mut words = b
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
            let out = decode_measure(&mut words)
                .ok_or_else(|| format!("rank {r} sent malformed figures"))?;
            let inp = decode_measure(&mut words);
            Ok(Ok((out, inp)))
        })
        .collect()
}

/// A rank's measurement as words for [`decode_measure`] (the census stays with its process:
/// rank 0 prints its own).
fn encode_measure(m: &RankMeasure, out: &mut Vec<u8>) {
    let mut put = |v: u64| out.extend_from_slice(&v.to_le_bytes());
    put(m.time.as_nanos() as u64);
    put(m.batches.len() as u64);
    for b in &m.batches {
        put(b.as_nanos() as u64);
    }
    put(m.counted_calls as u64);
    put(m.checked_launches.hazards);
    put(m.checked_launches.races);
    put(m.wrong.map_or(u64::MAX, |w| w as u64));
    put(m.dma);
    put(m.cores.len() as u64);
    for c in &m.cores {
        put(c.read);
        put(c.written);
    }
}

/// The next measurement of `words` ([`encode_measure`]); None when they end.
fn decode_measure(words: &mut impl Iterator<Item = u64>) -> Option<RankMeasure> {
    let time = Duration::from_nanos(words.next()?);
    let batches = (0..words.next()?)
        .map(|_| words.next().map(Duration::from_nanos))
        .collect::<Option<_>>()?;
    let counted_calls = words.next()? as usize;
    let checked_launches = CheckedLaunches {
        hazards: words.next()?,
        races: words.next()?,
    };
    let wrong = words
        .next()
        .map(|w| (w != u64::MAX).then_some(w as usize))?;
    let dma = words.next()?;
    let cores = (0..words.next()?)
        .map(|_| {
            Some(GmTraffic {
                read: words.next()?,
                written: words.next()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(RankMeasure {
        time,
        batches,
        counted_calls,
        checked_launches,
        wrong,
        dma,
        cores,
        census: None,
    })
}

// ------------------------------------------------------------------------------------------
// Output.
// ------------------------------------------------------------------------------------------

/// Writes one line (`out!(...)`) or text as is (`out!("{text}")` with its own newlines) to
/// stdout; if stdout is gone (`aiv-perf ... | head`), exits with status 1 instead of
/// panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        if !line.ends_with('\n') {
            line.push('\n');
        }
        write_stdout(&line);
    }};
}

fn write_stdout(s: &str) {
    let mut so = std::io::stdout().lock();
    if so.write_all(s.as_bytes()).and_then(|_| so.flush()).is_err() {
        std::process::exit(1);
    }
}

/// C's `%g`: 6 significant digits, trailing zeros dropped, exponent form outside 1e-4..1e6.
fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() { "nan" } else { "inf" }.into();
    }
    let e = format!("{v:.5e}");
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..6).contains(&exp) {
        format!("{}{}", strip_zeros(mant), c_exponent(exp))
    } else {
        strip_zeros(&format!("{:.*}", (5 - exp) as usize, v)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// C's exponent suffix: `e+06`, `e-05`.
fn c_exponent(exp: i32) -> String {
    format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// nccl-tests' number cell: `width` characters, 2, 1 or 0 decimals as they fit, else exponent.
fn fmt_cell(v: f64, width: usize) -> String {
    for prec in [2, 1, 0] {
        let s = format!("{v:>width$.prec$}");
        if s.len() <= width {
            return s;
        }
    }
    let prec = if width >= 7 { 1 } else { 0 };
    let e = format!("{v:.prec$e}");
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let s = format!("{mant}{}", c_exponent(exp.parse().expect("exponent")));
    format!("{s:>width$}")
}

fn redop(o: &Opts) -> &'static str {
    if o.coll.reduces {
        o.op.name()
    } else {
        "none"
    }
}

fn root(o: &Opts) -> i64 {
    if o.coll.rooted {
        o.root as i64
    } else {
        -1
    }
}

fn timeout_note(o: &Opts) -> String {
    let t = config(o)
        .resolved_timeout()
        .map_or_else(|e| e.to_string(), |t| format!("{:.2} s", t.as_secs_f64()));
    let from = match o.timeout_source {
        TimeoutSource::Flag => "-T",
        TimeoutSource::Env => "HCCL_EXEC_TIMEOUT",
        TimeoutSource::Default => "default",
    };
    format!("{t} ({from})")
}

fn print_header(o: &Opts, world: &Ranks) {
    let buffer = config(o)
        .resolved_buffer_bytes()
        .map_or_else(|e| e.to_string(), |b| format!("{} MB", b >> 20));
    // Said only when on (HCCL_DETERMINISTIC): every AllReduce algorithm then gives the
    // rank-order sum, and `--algo hd` runs the kernel `auto` picks.
    let deterministic = match config(o).resolved_deterministic() {
        Ok(true) if o.ar_algo == AllReduceAlgo::Hd => {
            ", deterministic reductions in rank order (HCCL_DETERMINISTIC; --algo hd runs auto's kernel)"
        }
        Ok(true) => ", deterministic reductions in rank order (HCCL_DETERMINISTIC)",
        _ => "",
    };
    let on = match (world, &o.launch) {
        (Ranks::Process(_), Some(l)) => format!(
            "{}, one process per rank ({}){}",
            if world.twin().is_some() {
                "on the CPU twin".to_string()
            } else {
                format!("through {}", world.backend_description())
            },
            l.launcher,
            o.npus_per_node
                .map_or_else(String::new, |p| format!(", -p {p} NPUs per node"))
        ),
        (_, _) if world.twin().is_some() => "on the CPU twin, one process".to_string(),
        _ => format!("through {}", world.backend_description()),
    };
    out!(
        "# aiv-perf {} {on}: {} ranks, HCCL buffer {buffer}, exec timeout {}{}{deterministic}",
        o.coll.name,
        o.ranks,
        timeout_note(o),
        if o.register {
            ", buffers registered (-R 1)"
        } else {
            ""
        }
    );
    let step = match (o.step, o.factor) {
        (Some(s), _) => format!("{s}(bytes)"),
        (None, f) => format!("{}(factor)", f.unwrap_or(2)),
    };
    out!(
        "# minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} validation: {}",
        o.begin,
        o.end,
        o.warmup,
        o.iters,
        o.check as u8
    );
    out!("#");
    // `--checks-cost`: two more columns, the checked time and its ratio to the time (out of
    // place).
    let [cost0, cost1, cost2] = if o.checks_cost {
        [
            "  checkers on (out)".to_string(),
            format!("  {:>7}  {:>6}", "time", "on/off"),
            format!("  {:>7}  {:>6}", "(us)", ""),
        ]
    } else {
        Default::default()
    };
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place           twin DMA   NPU cores (out)   census (out, per rank and op){cost0}",
        "", "", "", "", ""
    );
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}{cost1}",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong", "dmabw", "dmabw", "cores", "GMB/core", "rdKiB", "wrKiB",
        "waits", "rounds"
    );
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}{cost2}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
        "(GB/s)", "", "(out)", "(in)", "", "(KiB/op)", "(data)", "(data)", "", ""
    );
}

fn body(m: Option<&Measure>) -> String {
    match m {
        Some(m) => format!(
            "  {}  {}  {}  {:>6}",
            fmt_cell(m.time_us, 7),
            fmt_cell(m.algbw, 6),
            fmt_cell(m.busbw, 6),
            m.wrong.map_or_else(|| "N/A".into(), |w| fmt_g(w as f64))
        ),
        None => format!("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A"),
    }
}

fn print_row(o: &Opts, r: &Row) {
    let c = &r.out;
    if !c.on_twin {
        // Not on the twin: its DMA, core and census columns have nothing to say.
        out!(
            "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}",
            r.size,
            r.count,
            o.dtype.name(),
            redop(o),
            root(o),
            body(Some(&r.out)),
            body(r.inp.as_ref()),
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A"
        );
        return;
    }
    out!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {}  {:>6}  {:>5}  {}  {}  {}  {:>5}  {:>6}{}",
        r.size,
        r.count,
        o.dtype.name(),
        redop(o),
        root(o),
        body(Some(&r.out)),
        body(r.inp.as_ref()),
        fmt_cell(r.out.dmabw, 6),
        r.inp
            .as_ref()
            .map_or_else(|| "N/A".into(), |m| fmt_cell(m.dmabw, 6)),
        r.out.cores_used,
        fmt_cell(r.out.max_core_bytes / 1024.0, 8),
        census_cell(
            c,
            || fmt_cell(c.census_max(|k| k.data_read) as f64 / 1024.0, 8),
            8
        ),
        census_cell(
            c,
            || fmt_cell(c.census_max(|k| k.data_written) as f64 / 1024.0, 8),
            8
        ),
        census_cell(c, || c.census_max(|k| k.waits).to_string(), 0),
        census_cell(c, || c.census.rounds.to_string(), 0),
        cost_cells(&r.out)
    );
}

/// A census figure of `m` as `f` formats it, or N/A (right-aligned in `width`) where the census
/// does not cover the job.
fn census_cell(m: &Measure, f: impl FnOnce() -> String, width: usize) -> String {
    if m.census_known {
        f()
    } else {
        format!("{:>width$}", "N/A")
    }
}

/// `--checks-cost`'s columns of a placement: the checked time per operation and its ratio to
/// the unchecked one (nothing in a plain run).
fn cost_cells(m: &Measure) -> String {
    m.cost.as_ref().map_or_else(String::new, |c| {
        let ratio = match c.ratio {
            r if !r.is_finite() => "-".to_string(),
            r if r < 10.0 => format!("{r:.3}x"),
            r => format!("{r:.0}x"),
        };
        format!("  {}  {ratio:>6}", fmt_cell(c.time_us, 7))
    })
}

/// A JSON number (`null` if not finite).
fn json_num(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "null".into()
    }
}

/// A JSON string.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One rank's census figures as a JSON object.
fn json_rank_census(k: &RankCensus) -> String {
    format!(
        "{{\"gm_data_read\":{},\"gm_data_written\":{},\"gm_flag_read\":{},\"gm_flag_written\":{},\"flag_loads\":{},\"flag_stores\":{},\"flag_waits\":{},\"blocking_waits\":{},\"launches\":{},\"blocks\":{},\"depth\":{}}}",
        k.data_read,
        k.data_written,
        k.flag_read,
        k.flag_written,
        k.flag_loads,
        k.flag_stores,
        k.waits,
        k.blocking_waits,
        k.launches,
        k.blocks,
        k.depth
    )
}

fn json_measure(m: Option<&Measure>) -> String {
    let Some(m) = m else {
        return "null".into();
    };
    if !m.on_twin {
        // Not on the twin: no DMA, core or census figures.
        return format!(
            "{{\"time_us\":{},\"algbw\":{},\"busbw\":{},\"wrong\":{}}}",
            json_num(m.time_us, 3),
            json_num(m.algbw, 6),
            json_num(m.busbw, 6),
            m.wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        );
    }
    let per_rank: Vec<String> = match m.census_known {
        true => m.census.ranks.iter().map(json_rank_census).collect(),
        false => Vec::new(),
    };
    format!(
        "{{\"time_us\":{},\"checked_time_us\":{},\"checks_ratio\":{},\"checks_pairs\":{},\"checked_launches\":{{\"hazards\":{},\"races\":{}}},\"algbw\":{},\"busbw\":{},\"wrong\":{},\"dma_bytes_per_op\":{},\"dmabw\":{},\"cores_used\":{},\"gm_read_per_rank\":{},\"gm_written_per_rank\":{},\"max_core_bytes\":{},\"gm_data_read_per_rank\":{},\"gm_data_written_per_rank\":{},\"gm_flag_read_per_rank\":{},\"gm_flag_written_per_rank\":{},\"flag_waits_per_rank\":{},\"blocking_waits_per_rank\":{},\"sync_rounds\":{},\"census\":[{}]}}",
        json_num(m.time_us, 3),
        m.cost
            .as_ref()
            .map_or_else(|| "null".into(), |c| json_num(c.time_us, 3)),
        m.cost
            .as_ref()
            .map_or_else(|| "null".into(), |c| json_num(c.ratio, 4)),
        m.cost.as_ref().map_or_else(
            || "null".into(),
            |c| {
                let p: Vec<String> = c
                    .pairs
                    .iter()
                    .map(|(off, on)| format!("[{},{}]", json_num(*off, 3), json_num(*on, 3)))
                    .collect();
                format!("[{}]", p.join(","))
            }
        ),
        m.checked_launches.hazards,
        m.checked_launches.races,
        json_num(m.algbw, 6),
        json_num(m.busbw, 6),
        m.wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        json_num(m.dma_per_op, 0),
        json_num(m.dmabw, 6),
        m.cores_used,
        m.rank_gm.read,
        m.rank_gm.written,
        json_num(m.max_core_bytes, 0),
        census_json(m, |m| m.census_max(|k| k.data_read)),
        census_json(m, |m| m.census_max(|k| k.data_written)),
        census_json(m, |m| m.census_max(|k| k.flag_read)),
        census_json(m, |m| m.census_max(|k| k.flag_written)),
        census_json(m, |m| m.census_max(|k| k.waits)),
        census_json(m, |m| m.census_max(|k| k.blocking_waits)),
        census_json(m, |m| m.census.rounds),
        per_rank.join(",")
    )
}

/// A census figure of `m` in JSON (`null` where the census does not cover the job).
fn census_json<T: std::fmt::Display>(m: &Measure, f: impl FnOnce(&Measure) -> T) -> String {
    if m.census_known {
        f(m).to_string()
    } else {
        "null".into()
    }
}

fn print_json(
    o: &Opts,
    sweep: &Sweep,
    avg: f64,
    failed: usize,
    wrong: Option<usize>,
    backend: &str,
) {
    let rows = &sweep.rows;
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"size\":{},\"count\":{},\"type\":{},\"redop\":{},\"root\":{},\"out_of_place\":{},\"in_place\":{}}}",
                r.size,
                r.count,
                json_str(o.dtype.name()),
                json_str(redop(o)),
                root(o),
                json_measure(Some(&r.out)),
                json_measure(r.inp.as_ref())
            )
        })
        .collect();
    let timeout = config(o)
        .resolved_timeout()
        .map_or_else(|_| "null".into(), |t| json_num(t.as_secs_f64(), 2));
    out!(
        "{{\"collective\":{},\"ranks\":{},\"type\":{},\"redop\":{},\"root\":{},\"iters\":{},\"warmup\":{},\"check\":{},\"registered\":{},\"twin_checks\":{},\"checked_batches\":{},\"exec_timeout_s\":{},\"rows\":[{}],\"avg_busbw\":{},\"out_of_bounds\":{},\"wrong\":{},\"backend\":{},\"processes\":{}}}",
        json_str(o.coll.name),
        o.ranks,
        json_str(o.dtype.name()),
        json_str(redop(o)),
        root(o),
        o.iters,
        o.warmup,
        o.check,
        o.register,
        sweep.checkers.map_or_else(
            || "null".into(),
            |c| format!("{{\"hazards\":{},\"races\":{}}}", c.hazards, c.races)
        ),
        sweep.checked.map_or_else(
            || "null".into(),
            |c| format!("{{\"hazards\":{},\"races\":{}}}", c.hazards, c.races)
        ),
        timeout,
        items.join(","),
        json_num(avg, 6),
        failed,
        wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        json_str(backend),
        o.launch.is_some()
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args, |k| std::env::var(k).ok()) {
        Ok(Parsed::Help(text)) => {
            out!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(o)) => o,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(2);
        }
    };
    let world = match make_world(&o) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(1);
        }
    };
    if !o.json && world.prints() {
        print_header(&o, &world);
    }
    let sweep = match run(&o, &world) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(1);
        }
    };
    let rows = &sweep.rows;
    let measures: Vec<&Measure> = rows
        .iter()
        .flat_map(|r| std::iter::once(&r.out).chain(r.inp.as_ref()))
        .collect();
    // As nccl-tests: the average over every result, out of place and in place; "out of
    // bounds" counts the results with a wrong element.
    let avg = measures.iter().map(|m| m.busbw).sum::<f64>() / measures.len().max(1) as f64;
    let failed = measures
        .iter()
        .filter(|m| m.wrong.is_some_and(|w| w > 0))
        .count();
    let wrong = o
        .check
        .then(|| measures.iter().filter_map(|m| m.wrong).sum::<usize>());
    if !world.prints() {
        // Rank 0 of the job prints; it has every rank's figures.
    } else if o.json {
        print_json(&o, &sweep, avg, failed, wrong, world.backend_name());
    } else {
        out!(
            "# {:<20} : {} {}",
            "Out of bounds values",
            failed,
            if failed == 0 { "OK" } else { "FAILED" }
        );
        out!("# {:<20} : {} ", "Avg bus bandwidth", fmt_g(avg));
        let on = |b: bool| if b { "on" } else { "off" };
        let cost = sweep.checked.map_or_else(String::new, |c| {
            format!(
                "; checked batches (--checks-cost): pipe hazards {}, GM races {}",
                on(c.hazards),
                on(c.races)
            )
        });
        match sweep.checkers {
            Some(c) => out!(
                "# {:<20} : pipe hazards {}, GM races {}{cost}",
                "Twin checkers",
                on(c.hazards),
                on(c.races)
            ),
            None => out!(
                "# {:<20} : N/A (the {} backend; acl-twin's come from its AIV_TWIN_* environment)",
                "Twin checkers",
                world.backend_name()
            ),
        }
        out!("#");
        out!("# Collective test concluded: {}", o.coll.name);
    }
    if failed > 0 {
        eprintln!(
            "aiv-perf: {} wrong elements in {failed} results",
            wrong.unwrap_or(0)
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn opts(s: &str) -> Opts {
        match parse(&args(s), |_| None) {
            Ok(Parsed::Run(o)) => *o,
            Ok(Parsed::Help(_)) => panic!("{s}: help"),
            Err(e) => panic!("{s}: {e}"),
        }
    }

    #[test]
    fn sizes_take_k_m_g_and_kb_mb_gb_in_any_case() {
        for (s, v) in [
            ("1000", 1000),
            ("8b", 8),
            ("8K", 8 << 10),
            ("64KB", 64 << 10),
            ("64kb", 64 << 10),
            ("1m", 1 << 20),
            ("1MB", 1 << 20),
            ("1G", 1 << 30),
            ("2gB", 2 << 30),
        ] {
            assert_eq!(parse_size(s), Ok(v), "{s}");
        }
        for s in ["", "K", "KB", "10X", "1.5M", "-1", "8KK", "1BB"] {
            assert!(parse_size(s).is_err(), "{s}");
        }
    }

    #[test]
    fn exec_timeout_reads_as_hccl_aiv_mode() {
        let s = |x: &str| parse_exec_timeout(x).map(|d| d.as_millis());
        assert_eq!(s("30"), Some(30_000));
        assert_eq!(s("0.05"), Some(50));
        assert_eq!(s(".5"), Some(500));
        assert_eq!(s("1091"), Some(1_091_000));
        assert_eq!(s("0"), Some(1_091_000));
        assert_eq!(s("0.00"), Some(1_091_000));
        assert_eq!(s("1092"), Some(1_091_000));
        assert_eq!(s("99999999999999999999999"), Some(1_091_000));
        for bad in ["", ".", "-1", "0.005", "1e3", "abc", "1.2.3"] {
            assert_eq!(s(bad), None, "{bad}");
        }
    }

    #[test]
    fn flag_overrides_the_environment() {
        let bogus = |k: &str| (k == "HCCL_EXEC_TIMEOUT").then(|| "bogus".to_string());
        let Ok(Parsed::Run(o)) = parse(&args("all_reduce -T 2.5"), bogus) else {
            panic!("-T should win over a bad HCCL_EXEC_TIMEOUT")
        };
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(o.timeout_source, TimeoutSource::Flag);
        let seven = |k: &str| (k == "HCCL_EXEC_TIMEOUT").then(|| "7".to_string());
        let Ok(Parsed::Run(o)) = parse(&args("all_reduce"), seven) else {
            panic!("HCCL_EXEC_TIMEOUT=7")
        };
        assert_eq!(o.timeout, Some(Duration::from_secs(7)));
        assert_eq!(o.timeout_source, TimeoutSource::Env);
        assert!(parse(&args("all_reduce"), bogus).is_err());
    }

    #[test]
    fn getopt_forms_and_aliases() {
        let o = opts("all_reduce_perf -b8K --maxbytes=1M -g 4 -d bfp16");
        assert_eq!(
            (o.coll.name, o.begin, o.end, o.ranks),
            ("all_reduce", 8192, 1 << 20, 4)
        );
        assert_eq!(o.dtype, DataType::Bf16);
    }

    #[test]
    fn help_anywhere() {
        for s in [
            "-h",
            "--help",
            "all_reduce -b 10X -h",
            "bogus --help",
            "-p 0 -h",
        ] {
            assert!(
                matches!(parse(&args(s), |_| None), Ok(Parsed::Help(_))),
                "{s}"
            );
        }
        let Ok(Parsed::Help(t)) = parse(&args("sendrecv --help"), |_| None) else {
            panic!()
        };
        assert!(t.starts_with("aiv-perf sendrecv:"), "{t}");
        let Ok(Parsed::Help(t)) = parse(&args("alltoallv_perf -h"), |_| None) else {
            panic!()
        };
        assert!(t.contains("counts         rank p sends rank q"), "{t}");
        assert!(t.contains("count column   elements per peer"), "{t}");
        assert!(t.lines().all(|l| l.len() <= 100), "{t}");
    }

    #[test]
    fn count_semantics_follow_nccl_tests() {
        let o = opts("all_gather -p 3 -d int8 -b 1000 -e 1000");
        assert_eq!(row_count(&o, 1000), 333);
        let o = opts("all_reduce -p 3 -b 1000 -e 1000");
        assert_eq!(row_count(&o, 1000), 250);
        // (collective, count column, size column) of a 1000-byte int8 row on 3 ranks.
        for (name, count, size) in [
            ("all_gather", 333, 999),
            ("reduce_scatter", 333, 999),
            ("alltoall", 333, 999),
            ("alltoallv", 333, 999),
            ("all_gather_v", 333, 999),
            ("reduce_scatter_v", 333, 999),
            ("broadcast", 1000, 1000),
            ("sendrecv", 1000, 1000),
        ] {
            let o = opts(&format!("{name} -p 3 -d int8 -b 1000 -e 1000"));
            let c = row_count(&o, 1000);
            assert_eq!((c, (o.coll.size_elems)(c, 3)), (count, size), "{name}");
        }
    }

    #[test]
    fn uneven_counts_are_exact_and_contiguous() {
        // T = 4000 cut at 4000 x (0, 1, 3, 6, 10) / 10.
        assert_eq!(
            weighted_split(1000, 4),
            (vec![400, 800, 1200, 1600], vec![0, 400, 1200, 2400])
        );
        // T = 6 per rank, weights ((p+q) mod 3) + 1 along each row.
        let m: Vec<Vec<usize>> = (0..3)
            .map(|p| (0..3).map(|q| a2av_count(p, q, 2, 3)).collect())
            .collect();
        assert_eq!(m, [[1, 2, 3], [2, 3, 1], [3, 1, 2]]);
        for n in 1..=32 {
            for count in [1, 2, 3, 7, 85, 1000] {
                let (c, d) = weighted_split(count, n);
                assert_eq!(c.iter().sum::<usize>(), count * n, "n {n} count {count}");
                for q in 0..n {
                    assert_eq!(d[q], c[..q].iter().sum::<usize>());
                    assert_eq!(c[q], weighted_count(q, count, n));
                }
                let mut received = 0;
                for p in 0..n {
                    let row: usize = (0..n).map(|q| a2av_count(p, q, count, n)).sum();
                    assert_eq!(row, count * n, "alltoallv row {p}, n {n} count {count}");
                    for q in 0..n {
                        assert_eq!(
                            a2av_send_displ(p, q, count, n),
                            (0..q).map(|j| a2av_count(p, j, count, n)).sum::<usize>()
                        );
                    }
                    received += a2av_recv_elems(p, count, n);
                }
                assert_eq!(received, count * n * n);
            }
        }
    }

    #[test]
    fn c_number_formats() {
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(0.601234567), "0.601235");
        assert_eq!(fmt_g(12.5), "12.5");
        assert_eq!(fmt_g(3.0), "3");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.00001234), "1.234e-05");
        assert_eq!(fmt_cell(167.7, 7), " 167.70");
        assert_eq!(fmt_cell(58684.56, 7), "58684.6");
        assert_eq!(fmt_cell(1234567.0, 7), "1234567");
        assert_eq!(fmt_cell(123456789.0, 7), "1.2e+08");
        assert_eq!(fmt_cell(0.05, 6), "  0.05");
    }

    #[test]
    fn the_registry_is_consistent() {
        let mut names: Vec<&str> = COLLECTIVES
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name or alias is used twice");
        for c in COLLECTIVES {
            let uneven = matches!(c.name, "alltoallv" | "all_gather_v" | "reduce_scatter_v");
            assert_eq!(c.counts_doc.is_some(), uneven, "{}", c.name);
            assert_eq!(find_collective(c.name).map(|f| f.name), Some(c.name));
            for a in c.aliases {
                assert_eq!(find_collective(a).map(|f| f.name), Some(c.name));
            }
            // algbw = size / time: the size is the larger of the two buffers, as in nccl-tests.
            assert!(c.min_ranks >= 1);
        }
    }

    #[test]
    fn checks_cost_takes_each_batchs_slowest_rank_and_the_median_of_the_pairs() {
        // 4 calls a side in 4 one-call batches: off, on | on, off | off, on | on, off.
        let rank = |us: [u64; 8]| RankMeasure {
            time: Duration::ZERO,
            batches: us.iter().map(|&u| Duration::from_micros(u)).collect(),
            counted_calls: 8,
            checked_launches: CheckedLaunches::default(),
            wrong: None,
            dma: 0,
            cores: Vec::new(),
            census: None,
        };
        let ranks = [
            rank([10, 12, 30, 10, 10, 11, 14, 10]),
            rank([9, 13, 12, 20, 10, 10, 14, 10]),
        ];
        let c = cost_sides(4, &ranks);
        // Per batch, the slower rank: 10 13 | 30 20 | 10 11 | 14 10.
        assert_eq!(
            c.checked.pairs,
            vec![(10.0, 13.0), (20.0, 30.0), (10.0, 11.0), (10.0, 14.0)]
        );
        assert!((c.time_us - 12.5).abs() < 1e-9 && (c.checked.time_us - 17.0).abs() < 1e-9);
        // Ratios 1.3 1.5 1.1 1.4: an even count, the mean of the middle two.
        assert!((c.checked.ratio - 1.35).abs() < 1e-9, "{}", c.checked.ratio);
        // A pair whose unchecked batch took no time has no ratio; none at all: NaN.
        let zero = [rank([0, 12, 30, 10, 10, 11, 14, 10])];
        let c = cost_sides(4, &zero);
        assert!((c.checked.ratio - 1.4).abs() < 1e-9, "{}", c.checked.ratio);
        assert!(cost_sides(1, &[rank([0, 5, 0, 0, 0, 0, 0, 0])])
            .checked
            .ratio
            .is_nan());
    }

    #[test]
    fn checks_cost_batches_alternate_in_pairs_of_equal_calls() {
        for iters in [1, 2, 7, 31, 32, 33, 100, 800] {
            let s = cost_schedule(iters);
            let b = iters.min(COST_BATCHES);
            assert_eq!(s.len(), 2 * b, "{iters}");
            for side in [false, true] {
                let calls: Vec<usize> = s.iter().filter(|x| x.0 == side).map(|x| x.1).collect();
                assert_eq!(calls.iter().sum::<usize>(), iters, "{iters}");
                assert!(calls
                    .iter()
                    .all(|&c| c == iters / b || c == iters.div_ceil(b)));
            }
            // Off, on | on, off | off, on | ...: each pair one of each side, as many calls.
            for (i, p) in s.chunks_exact(2).enumerate() {
                assert_eq!((p[0].0, p[1].0), (i % 2 == 1, i % 2 == 0), "{iters}: {s:?}");
                assert_eq!(p[0].1, p[1].1, "{iters}: {s:?}");
            }
        }
    }
}
