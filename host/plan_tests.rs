//! What the host plans, checked on the recording backend (no kernel runs): how a call is cut
//! into launches, on how many blocks, with which tags, fingerprints and byte ranges, and in
//! which order on which stream. Every rank plans the same launches, or the kernels would wait
//! on each other forever.

use crate::backend::record::{RecordedLaunch, Recording, RecordingBackend};
use crate::backend::Blocks;
use crate::ffi::AivCollArgs;
use crate::{AllReduceAlgo, Config, DataType, Event, ReduceOp, World};

/// A world of `ranks` on the recording backend with `buffer` bytes of HCCL buffer.
fn recorded(ranks: usize, buffer: usize, cores: u32) -> (World, Recording) {
    let backend = RecordingBackend::new(ranks as u32, cores);
    let rec = backend.recording();
    let cfg = Config {
        buffer_bytes: Some(buffer),
        ..Config::default()
    };
    (World::with_backend(ranks, cfg, backend).unwrap(), rec)
}

/// The argument struct a launch of a collective kernel carried.
fn coll_args(l: &RecordedLaunch) -> AivCollArgs {
    let b = l
        .arg_struct
        .as_ref()
        .expect("a collective's argument struct");
    bytemuck::pod_read_unaligned(&b[..std::mem::size_of::<AivCollArgs>()])
}

/// The launches of `rank`, in order.
fn of_rank(all: &[RecordedLaunch], rank: u32) -> Vec<RecordedLaunch> {
    all.iter().filter(|l| l.device == rank).cloned().collect()
}

/// `f` on every rank; the recorded launches once all returned.
fn run(
    w: &World,
    rec: &Recording,
    f: impl Fn(&crate::Communicator) -> crate::Result<()> + Sync,
) -> Vec<RecordedLaunch> {
    rec.clear();
    for r in w.run(|c| {
        f(c)?;
        c.synchronize()
    }) {
        r.unwrap();
    }
    rec.launches()
}

#[test]
fn an_all_reduce_is_one_launch_per_chunk_with_consecutive_tags_on_every_rank_alike() {
    let ranks = 4;
    let buffer = 64 << 10;
    let (w, rec) = recorded(ranks, buffer, 48);
    // 100 000 f32 (400 000 bytes per rank): two-shot, chunks of at most
    // (buffer - 64) / 5 * 4 bytes, rounded down to whole 32-byte blocks.
    let count = 100_000;
    let all = run(&w, &rec, |c| {
        let x = c.alloc(count * 4)?;
        let y = c.alloc(count * 4)?;
        c.all_reduce(&x, &y, count, DataType::F32, ReduceOp::Sum)
    });
    let cap = ((buffer - 64) / 5 * 4) / 32 * 32;
    let chunks = (count * 4).div_ceil(cap);
    let per_rank: Vec<Vec<RecordedLaunch>> = (0..ranks as u32).map(|r| of_rank(&all, r)).collect();
    for (r, ls) in per_rank.iter().enumerate() {
        assert_eq!(ls.len(), chunks, "rank {r}");
        let mut next = 0usize;
        for (i, l) in ls.iter().enumerate() {
            assert_eq!(l.kernel, "aiv_all_reduce");
            // Two-shot: a block per peer (one part below 1 MiB per pair).
            assert_eq!(
                l.blocks,
                Blocks::Exactly(ranks as u32),
                "rank {r} chunk {i}"
            );
            let a = coll_args(l);
            assert_eq!(a.comm.rank, r as i32);
            assert_eq!(
                a.comm.tag - coll_args(&ls[0]).comm.tag,
                i as i64,
                "one tag a chunk"
            );
            assert_eq!(a.fp[3], i as i32, "the fingerprint names the chunk");
            assert_eq!(a.fp[4], chunks as i32, "and how many there are");
            // The chunks tile the call, in order.
            let x0 = coll_args(&ls[0]).input;
            assert_eq!(a.input - x0, next as u64);
            assert_eq!(a.output - coll_args(&ls[0]).output, next as u64);
            next += a.bytes as usize;
            assert!(a.bytes as usize <= cap);
        }
        assert_eq!(next, count * 4);
        // Every rank plans the same: the same tags, fingerprints, sizes and blocks.
        for (l, m) in ls.iter().zip(&per_rank[0]) {
            let (a, b) = (coll_args(l), coll_args(m));
            assert_eq!((a.comm.tag, a.fp, a.bytes), (b.comm.tag, b.fp, b.bytes));
            assert_eq!(l.blocks, m.blocks);
        }
    }
}

#[test]
fn blocks_per_peer_grow_with_the_bytes_a_pair_moves_and_stop_at_the_flag_cells() {
    // One-shot on 2 ranks: one block per part of the chunk, 1 below 1 MiB, 2 from 1 MiB, 4
    // from 4 MiB, 8 from 16 MiB; two-shot on 8 ranks of 64 cores: a block per peer and part,
    // capped at the 48 flag cells (6 per peer).
    let (w, rec) = recorded(2, 64 << 20, 48);
    for (bytes, parts) in [(64 << 10, 1u32), (1 << 20, 2), (4 << 20, 4), (16 << 20, 8)] {
        let all = run(&w, &rec, |c| {
            let x = c.alloc(bytes)?;
            c.all_reduce_with(
                &x,
                &x,
                bytes / 4,
                DataType::F32,
                ReduceOp::Sum,
                AllReduceAlgo::OneShot,
            )
        });
        for l in &all {
            assert_eq!(l.blocks, Blocks::Exactly(parts), "{bytes} bytes");
        }
    }
    let (w, rec) = recorded(8, 256 << 20, 64);
    let all = run(&w, &rec, |c| {
        let x = c.alloc(8 * (32 << 20))?;
        c.all_reduce_with(
            &x,
            &x,
            8 * (8 << 20),
            DataType::F32,
            ReduceOp::Sum,
            AllReduceAlgo::TwoShot,
        )
    });
    // The first chunk's slices are ~30 MiB (8 parts asked for); the last chunk is smaller.
    assert_eq!(all[0].blocks, Blocks::Exactly(48), "8 ranks x 6 parts");
    for l in &all {
        assert!(
            matches!(l.blocks, Blocks::Exactly(b) if b <= 48),
            "{:?}",
            l.blocks
        );
    }
}

#[test]
fn hd_orders_its_steps_on_the_main_stream_and_two_sub_streams() {
    // 4 ranks, 2 steps: per rank, the handshake, the pre-step copies, each step's reduce on the
    // tx sub-stream between its signals, the final copy.
    let (w, rec) = recorded(4, 64 << 10, 48);
    let all = run(&w, &rec, |c| {
        let x = c.alloc(1000 * 4)?;
        let y = c.alloc(1000 * 4)?;
        c.all_reduce_hd(&x, &y, 1000, DataType::I32, ReduceOp::Sum)
    });
    for r in 0..4 {
        let ls = of_rank(&all, r);
        let main = ls[0].stream;
        let on_main: Vec<&str> = ls
            .iter()
            .filter(|l| l.stream == main)
            .map(|l| l.kernel)
            .collect();
        assert_eq!(
            on_main,
            [
                "aiv_handshake",
                "aiv_copy",
                "aiv_copy",
                "aiv_copy",
                "aiv_copy"
            ],
            "rank {r}: handshake, pre-step copies, step 2's copy, final copy"
        );
        // The sub-streams: each step acks, reduces into the partner, signals.
        let subs: Vec<&str> = ls
            .iter()
            .filter(|l| l.stream != main)
            .map(|l| l.kernel)
            .collect();
        assert_eq!(
            subs.iter().filter(|k| **k == "aiv_copy").count(),
            2,
            "rank {r}: a reduce per step"
        );
        assert_eq!(
            subs.iter().filter(|k| **k == "aiv_link_signal").count(),
            8,
            "rank {r}"
        );
    }
}

#[test]
fn events_order_streams_and_a_dropped_post_fails_its_waits_with_the_posting_streams_error() {
    let backend = RecordingBackend::new(1, 48);
    let rec = backend.recording();
    let cfg = Config {
        exec_timeout: Some(std::time::Duration::from_millis(500)),
        ..Config::default()
    };
    let w = World::with_backend(1, cfg, backend).unwrap();
    let c = &w.comms()[0];
    let (a, b) = (c.create_stream("a").unwrap(), c.create_stream("b").unwrap());
    let x = c.alloc(64).unwrap();
    let y = c.alloc(64).unwrap();
    // b's copy waits for a's post, enqueued after it: a's copy is launched first.
    let ev = Event::new("a then b");
    b.wait(&ev, "b");
    b.copy(&y, &x, 64, "b").unwrap();
    a.copy(&x, &y, 64, "a").unwrap();
    a.post(&ev, "a");
    b.synchronize().unwrap();
    a.synchronize().unwrap();
    let dst = |l: &RecordedLaunch| -> u64 {
        let s = l.arg_struct.as_ref().unwrap();
        bytemuck::pod_read_unaligned::<crate::ffi::AivCopyArgs>(
            &s[..std::mem::size_of::<crate::ffi::AivCopyArgs>()],
        )
        .dst
    };
    let ls = rec.launches();
    assert_eq!(ls.len(), 2);
    assert_eq!((dst(&ls[0]), dst(&ls[1])), (x.addr(), y.addr()));
    // a fails (a wait for a post that never comes): its next post is dropped, and b's wait for
    // it fails with a's error (b's own timeout would name the event it waited for).
    let (never, ev) = (Event::new("never"), Event::new("after a failure"));
    a.wait(&never, "a");
    a.post(&ev, "a");
    b.wait(&ev, "b");
    let ea = a.synchronize().unwrap_err();
    let eb = b.synchronize().unwrap_err();
    assert!(matches!(ea, crate::Error::EventTimeout { .. }), "{ea}");
    assert_eq!(ea, eb, "b names a's error");
}
