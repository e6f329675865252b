//! The table of collectives: one [`Collective`] per subcommand, in [`COLLECTIVES`]. To add
//! one: write its `run` and `reference` functions and add an entry; parsing, help, buffers,
//! timing, checking and output follow from the entry.

use aiv_comm::{
    AllGatherAlgo, AllReduceAlgo, CommStream, Communicator, DataType, DeviceBuffer, ReduceOp,
};

/// One rank's call of one row: what a collective's `run` function gets.
pub struct Call<'a> {
    /// The rank's communicator.
    pub comm: &'a Communicator,
    /// The rank's sub-stream, for collectives with [`Collective::side_stream`].
    pub side: Option<&'a CommStream>,
    /// Input: [`Collective::send_elems`] elements (in place: inside `recv`'s allocation).
    pub send: &'a DeviceBuffer,
    /// Output: [`Collective::recv_elems`] elements.
    pub recv: &'a DeviceBuffer,
    /// Per-rank element count (nccl-tests' `count` column; the mean for the v-collectives).
    pub count: usize,
    /// Element type.
    pub dtype: DataType,
    /// Reduce op (collectives with [`Collective::reduces`]).
    pub op: ReduceOp,
    /// Root rank (collectives with [`Collective::rooted`]).
    pub root: u32,
    /// AllReduce kernel (`--algo` of all_reduce).
    pub ar_algo: AllReduceAlgo,
    /// AllGather kernel (`--algo` of all_gather).
    pub ag_algo: AllGatherAlgo,
}

/// Every rank's input: `input(rank, i)` is element `i` of `rank`'s send buffer.
pub type Inputs<'a> = &'a dyn Fn(usize, usize) -> f64;

/// The values one rank's output must hold, in order (produced as the check compares them, so
/// that checking a row of gigabytes needs no copy of it).
pub type Reference<'a> = Box<dyn Iterator<Item = f64> + 'a>;

/// What a reference function needs to know about one rank's call.
pub struct RefCase {
    /// Ranks in the world.
    pub ranks: usize,
    /// The rank whose output is wanted.
    pub rank: usize,
    /// Per-rank element count.
    pub count: usize,
    /// Reduce op.
    pub op: ReduceOp,
    /// Root rank.
    pub root: usize,
}

/// A function of (rank, count, ranks) giving elements: buffer lengths and in-place offsets.
pub type RankElems = fn(usize, usize, usize) -> usize;

/// Where a collective's in-place buffers sit, as nccl-tests lays them out: one buffer (the
/// out-of-place recv buffer), the input at `send_offset` elements, the output at `recv_offset`.
pub struct InPlace {
    /// Input offset in elements for (rank, count, ranks).
    pub send_offset: RankElems,
    /// Output offset in elements for (rank, count, ranks).
    pub recv_offset: RankElems,
    /// The layout in words, for `--help`.
    pub doc: &'static str,
}

/// A collective aiv-perf can sweep: one entry of [`COLLECTIVES`].
pub struct Collective {
    /// Subcommand name (nccl-tests' spelling without `_perf`).
    pub name: &'static str,
    /// Other accepted names (nccl-tests' and hccl_test's binary names, ...).
    pub aliases: &'static [&'static str],
    /// One line for `--help`.
    pub about: &'static str,
    /// What the size argument means, for `--help`.
    pub size_doc: &'static str,
    /// What the count column counts, for `--help`.
    pub count_doc: &'static str,
    /// How the ranks' counts differ (v-collectives), for `--help`.
    pub counts_doc: Option<&'static str>,
    /// Per-rank element count of a row of `size` bytes, for (size, element size, ranks);
    /// 0 skips the row.
    pub count: fn(usize, usize, usize) -> usize,
    /// The row's size column in elements for (count, ranks): nccl-tests' larger of the send
    /// and receive buffers (what algbw divides).
    pub size_elems: fn(usize, usize) -> usize,
    /// Input elements of a rank for (rank, count, ranks).
    pub send_elems: RankElems,
    /// Output elements of a rank for (rank, count, ranks).
    pub recv_elems: RankElems,
    /// busbw / algbw for a number of ranks (nccl-tests' factors).
    pub busbw_factor: fn(usize) -> f64,
    /// The factor in words, for `--help`.
    pub busbw_doc: &'static str,
    /// Has a root (`-r` is used and printed; others print -1).
    pub rooted: bool,
    /// Reduces (`-o` applies; others print `none` and refuse `-o`).
    pub reduces: bool,
    /// The kernels `--algo` chooses among (`auto` first), if the collective takes it.
    pub algos: Option<&'static str>,
    /// Fewest ranks it runs on.
    pub min_ranks: usize,
    /// Needs a sub-stream per rank (passed as [`Call::side`]).
    pub side_stream: bool,
    /// In-place layout, if the collective runs in place; `None` prints N/A in the in-place
    /// columns.
    pub in_place: Option<InPlace>,
    /// Enqueues one call (the harness synchronizes).
    pub run: fn(&Call) -> aiv_comm::Result<()>,
    /// The values one rank's output must hold, given every rank's input.
    pub reference: for<'a> fn(&RefCase, Inputs<'a>) -> Reference<'a>,
}

/// The uneven counts of all_gather_v and reduce_scatter_v, for `--help`.
pub const RANK_WEIGHTED: &str =
    "rank q's share is proportional to q+1: the T = count x n elements \
     are cut at floor(T x q(q+1)/2 / (n(n+1)/2)) for q = 0..n, so rank 0 has the least, rank \
     n-1 about 2 count, and the total is exactly T (count column = the mean, size = T)";

/// The counts matrix of alltoallv, for `--help`.
pub const PAIR_WEIGHTED: &str = "rank p sends rank q a share of its T = count x n elements \
     proportional to ((p+q) mod n) + 1: p's row is cut at floor(T x S(p,q) / (n(n+1)/2)), \
     S(p,q) = sum of those weights for peers 0..q-1, in peer order; every rank sends exactly T \
     and receives about T (count column = the mean per peer, size = T)";

/// Every collective aiv-perf runs (what `--help` lists).
pub const COLLECTIVES: &[Collective] = &[
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
pub fn size_whole(size: usize, es: usize, _n: usize) -> usize {
    size / es
}

/// Count = the size in elements / ranks (all_gather, reduce_scatter, alltoall, the v ones).
pub fn size_per_rank(size: usize, es: usize, n: usize) -> usize {
    size / (es * n)
}

/// Size in elements = the count (all_reduce, broadcast, sendrecv).
pub fn count_alone(count: usize, _n: usize) -> usize {
    count
}

/// Size in elements = count x ranks (the gathered or scattered collectives).
pub fn count_times_ranks(count: usize, n: usize) -> usize {
    count * n
}

/// `count` elements on every rank.
pub fn count_once(_rank: usize, count: usize, _n: usize) -> usize {
    count
}

/// `count` x ranks elements on every rank.
pub fn count_per_rank_times_ranks(_rank: usize, count: usize, n: usize) -> usize {
    count * n
}

/// Offset 0: the buffer's start.
pub fn at_start(_rank: usize, _count: usize, _n: usize) -> usize {
    0
}

/// Rank `rank`'s slot of `count` elements.
pub fn rank_slot(rank: usize, count: usize, _n: usize) -> usize {
    rank * count
}

/// Where the cut before part `k` of `total` elements falls, when the parts have weights
/// whose sum before `k` is `before` and whose sum in all is `sum`: floor(total x before / sum).
pub fn cut(total: usize, before: usize, sum: usize) -> usize {
    (total as u128 * before as u128 / sum as u128) as usize
}

/// The all_gather_v / reduce_scatter_v split ([`RANK_WEIGHTED`]): where rank `q`'s segment
/// starts.
pub fn weighted_displ(q: usize, count: usize, n: usize) -> usize {
    cut(count * n, q * (q + 1) / 2, n * (n + 1) / 2)
}

/// Rank `q`'s count in the [`RANK_WEIGHTED`] split.
pub fn weighted_count(q: usize, count: usize, n: usize) -> usize {
    weighted_displ(q + 1, count, n) - weighted_displ(q, count, n)
}

/// Every rank's (count, displacement) in the [`RANK_WEIGHTED`] split.
pub fn weighted_split(count: usize, n: usize) -> (Vec<usize>, Vec<usize>) {
    (0..n)
        .map(|q| (weighted_count(q, count, n), weighted_displ(q, count, n)))
        .unzip()
}

/// Where rank `p`'s piece for rank `q` starts in p's send buffer ([`PAIR_WEIGHTED`]).
pub fn a2av_send_displ(p: usize, q: usize, count: usize, n: usize) -> usize {
    let before: usize = (0..q).map(|j| (p + j) % n + 1).sum();
    cut(count * n, before, n * (n + 1) / 2)
}

/// Elements rank `p` sends rank `q` ([`PAIR_WEIGHTED`]).
pub fn a2av_count(p: usize, q: usize, count: usize, n: usize) -> usize {
    a2av_send_displ(p, q + 1, count, n) - a2av_send_displ(p, q, count, n)
}

/// Where rank `p`'s piece lands in rank `q`'s recv buffer: after those of ranks 0..p.
pub fn a2av_recv_displ(q: usize, p: usize, count: usize, n: usize) -> usize {
    (0..p).map(|j| a2av_count(j, q, count, n)).sum()
}

/// Elements rank `q` receives in all ([`PAIR_WEIGHTED`]).
pub fn a2av_recv_elems(q: usize, count: usize, n: usize) -> usize {
    a2av_recv_displ(q, n, count, n)
}

/// busbw factor 1 (broadcast, sendrecv).
pub fn one(_n: usize) -> f64 {
    1.0
}

/// busbw factor (n-1)/n.
pub fn n_minus_1_over_n(n: usize) -> f64 {
    (n as f64 - 1.0) / n as f64
}

/// busbw factor 2(n-1)/n (all_reduce).
pub fn two_n_minus_1_over_n(n: usize) -> f64 {
    2.0 * (n as f64 - 1.0) / n as f64
}

/// all_gather with the `--algo` kernel.
pub fn run_all_gather(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .all_gather_with(c.send, c.recv, c.count, c.dtype, c.ag_algo)
}

/// all_reduce with the `--algo` kernel.
pub fn run_all_reduce(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .all_reduce_with(c.send, c.recv, c.count, c.dtype, c.op, c.ar_algo)
}

/// reduce_scatter.
pub fn run_reduce_scatter(c: &Call) -> aiv_comm::Result<()> {
    c.comm
        .reduce_scatter(c.send, c.recv, c.count, c.dtype, c.op)
}

/// Out of place `broadcast`; in place (the same range) HCCL's `broadcast_in_place`.
pub fn run_broadcast(c: &Call) -> aiv_comm::Result<()> {
    if c.send.addr() == c.recv.addr() && c.send.len() == c.recv.len() {
        c.comm.broadcast_in_place(c.recv, c.count, c.dtype, c.root)
    } else {
        c.comm.broadcast(c.send, c.recv, c.count, c.dtype, c.root)
    }
}

/// alltoall.
pub fn run_alltoall(c: &Call) -> aiv_comm::Result<()> {
    c.comm.all_to_all(c.send, c.recv, c.count, c.dtype)
}

/// alltoallv with the [`PAIR_WEIGHTED`] counts matrix.
pub fn run_alltoallv(c: &Call) -> aiv_comm::Result<()> {
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

/// all_gather_v with the [`RANK_WEIGHTED`] counts.
pub fn run_all_gather_v(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size() as usize;
    let me = c.comm.rank() as usize;
    let (counts, displs) = weighted_split(c.count, n);
    c.comm
        .all_gather_v(c.send, counts[me], c.recv, &counts, &displs, c.dtype)
}

/// reduce_scatter_v with the [`RANK_WEIGHTED`] counts.
pub fn run_reduce_scatter_v(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size() as usize;
    let me = c.comm.rank() as usize;
    let (counts, displs) = weighted_split(c.count, n);
    c.comm
        .reduce_scatter_v(c.send, &counts, &displs, c.recv, counts[me], c.dtype, c.op)
}

/// nccl-tests' sendrecv_perf pattern; the send goes on the sub-stream, the recv on the main
/// stream (on one stream each rank's send would wait for its own recv, a ring deadlock).
pub fn run_sendrecv(c: &Call) -> aiv_comm::Result<()> {
    let n = c.comm.size();
    let r = c.comm.rank();
    let side = c.side.expect("sendrecv runs with a sub-stream");
    side.send(c.send, c.count, c.dtype, (r + 1) % n)?;
    c.comm
        .stream()
        .recv(c.recv, c.count, c.dtype, (r + n - 1) % n)
}

/// all_gather's output: every rank's input, in rank order.
pub fn ref_all_gather<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let count = c.count;
    Box::new((0..c.ranks).flat_map(move |j| (0..count).map(move |i| input(j, i))))
}

/// all_reduce's output: the inputs reduced element by element.
pub fn ref_all_reduce<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (op, ranks) = (c.op, c.ranks);
    Box::new((0..c.count).map(move |i| reduce(op, (0..ranks).map(|r| input(r, i)))))
}

/// reduce_scatter's output: block `rank` of the inputs, reduced.
pub fn ref_reduce_scatter<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (op, ranks, base) = (c.op, c.ranks, c.rank * c.count);
    Box::new((0..c.count).map(move |i| reduce(op, (0..ranks).map(|r| input(r, base + i)))))
}

/// broadcast's output: the root's input.
pub fn ref_broadcast<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let root = c.root;
    Box::new((0..c.count).map(move |i| input(root, i)))
}

/// alltoall's output: block `rank` of every rank's input, in rank order.
pub fn ref_alltoall<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (count, base) = (c.count, c.rank * c.count);
    Box::new((0..c.ranks).flat_map(move |p| (0..count).map(move |i| input(p, base + i))))
}

/// alltoallv's output: every rank's piece for `rank`, in rank order.
pub fn ref_alltoallv<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (q, m, n) = (c.rank, c.count, c.ranks);
    Box::new((0..n).flat_map(move |p| {
        let from = a2av_send_displ(p, q, m, n);
        (0..a2av_count(p, q, m, n)).map(move |i| input(p, from + i))
    }))
}

/// all_gather_v's output: every rank's segment, in rank order.
pub fn ref_all_gather_v<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (m, n) = (c.count, c.ranks);
    Box::new((0..n).flat_map(move |q| (0..weighted_count(q, m, n)).map(move |i| input(q, i))))
}

/// reduce_scatter_v's output: segment `rank` of the inputs, reduced.
pub fn ref_reduce_scatter_v<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let (m, n, op) = (c.count, c.ranks, c.op);
    let base = weighted_displ(c.rank, m, n);
    Box::new(
        (0..weighted_count(c.rank, m, n))
            .map(move |i| reduce(op, (0..n).map(|r| input(r, base + i)))),
    )
}

/// sendrecv's output: the previous rank's input.
pub fn ref_sendrecv<'a>(c: &RefCase, input: Inputs<'a>) -> Reference<'a> {
    let from = (c.rank + c.ranks - 1) % c.ranks;
    Box::new((0..c.count).map(move |i| input(from, i)))
}

/// `op` over `vals` (exact: the check values are small integers).
pub fn reduce(op: ReduceOp, vals: impl Iterator<Item = f64>) -> f64 {
    match op {
        ReduceOp::Sum => vals.sum(),
        ReduceOp::Max => vals.fold(f64::MIN, f64::max),
        ReduceOp::Min => vals.fold(f64::MAX, f64::min),
        ReduceOp::Prod => vals.product(),
        // `-o` parses to the four above only.
        other => unreachable!("aiv-perf has no reference for {other}"),
    }
}

/// The collective named `name` or one of its aliases, in any case.
pub fn find_collective(name: &str) -> Option<&'static Collective> {
    let name = name.to_ascii_lowercase();
    COLLECTIVES
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name.as_str()))
}

/// Every collective's name, for errors.
pub fn collective_names() -> String {
    COLLECTIVES
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
