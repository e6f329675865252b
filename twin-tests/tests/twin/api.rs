//! The AscendC API surface of the twin, pinned mode by mode with `aiv_api_selftest`
//! (kernels/api_selftest.cpp): queue synchronisation by position (a pipeline that is right
//! passes, one that is wrong without it is caught), the TPipe event allocator (a collision is
//! reported), tensor and buffer helpers, system variables, SyncAll and cross-core flags, the
//! data-cache bypass, and the debugging APIs.

use common::fault;
use twin_tests::util as common;

use ascendc_twin::{args, Device, FaultKind, GmBuffer, TwinError};
use twin_tests::args::{
    AivApiTestArgs, AIV_API_ASSERT, AIV_API_BIND_COPY, AIV_API_BLOCK_BYTES,
    AIV_API_BUFPOOL_OVERFLOW, AIV_API_BUILTIN_FLAGS, AIV_API_BYPASS, AIV_API_CROSS_CORE,
    AIV_API_CROSS_MODE1, AIV_API_CROSS_WAIT_MODE1, AIV_API_DEQUE_NEVER, AIV_API_ENQUE_FULL,
    AIV_API_EVENT_COLLISION, AIV_API_EVENT_EXHAUST, AIV_API_EVENT_FETCH, AIV_API_EVENT_IDS,
    AIV_API_FUSED_COPY, AIV_API_LAZY_FILL, AIV_API_NO_FREE_SYNC, AIV_API_PIECE, AIV_API_PRINTF,
    AIV_API_PRINTF_BAD, AIV_API_QUEUE_VECOUT, AIV_API_RELOAD, AIV_API_RELOAD_TWICE,
    AIV_API_RESTORE, AIV_API_SET_TAIL, AIV_API_SYNC_ALL_GM, AIV_API_SYNC_ALL_HW,
    AIV_API_SYNC_ALL_SKIP, AIV_API_SYS_VARS, AIV_API_TBUF_NO_SYNC, AIV_API_TENSOR_HELPERS,
    AIV_API_TRAP, AIV_API_VECIN_TO_MTE3,
};
use twin_tests::kernels;

const PIECE_BYTES: usize = AIV_API_PIECE as usize * 4;

struct Run {
    dev: Device,
    out: GmBuffer,
    input: GmBuffer,
    work: GmBuffer,
}

impl Run {
    fn new(out_bytes: usize, input: &[u8]) -> Run {
        let dev = common::device(0);
        let out = dev.alloc(out_bytes.max(64)).unwrap();
        let inp = dev.alloc(input.len().max(64)).unwrap();
        inp.write(0, input).unwrap();
        let work = dev.alloc(64 * 32).unwrap();
        Run {
            dev,
            out,
            input: inp,
            work,
        }
    }

    fn launch(
        &self,
        mode: u32,
        blocks: u32,
        rounds: u32,
        bufs: u32,
        param: i32,
    ) -> Result<(), TwinError> {
        let a = AivApiTestArgs {
            out: self.out.addr() as u64,
            in_: self.input.addr() as u64,
            work: self.work.addr() as u64,
            mode,
            rounds,
            bufs,
            param,
        };
        let slot = self
            .dev
            .alloc(std::mem::size_of::<AivApiTestArgs>())
            .unwrap();
        slot.write(0, &common::pod_bytes(&a)).unwrap();
        // SAFETY: aiv_api_selftest takes the GM address of an AivApiTestArgs (held by `slot`),
        // whose buffers (`out`, `input`, `work`) live as long as `self`.
        unsafe {
            self.dev
                .launch_kernel(&kernels::aiv_api_selftest, blocks, &args![slot.gm(0)])
        }
    }

    fn slots(&self, block: usize) -> Vec<i64> {
        let mut b = vec![0u8; AIV_API_BLOCK_BYTES as usize];
        self.out.read(block * b.len(), &mut b).unwrap();
        b.chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn words(&self) -> Vec<i32> {
        common::read_all(&self.out)
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

fn hazard(r: Result<(), TwinError>) -> String {
    let f = fault(r);
    match f.kind {
        FaultKind::PipeHazard { reason } => reason,
        k => panic!("expected a pipe hazard, got {k:?} ({})", f.op),
    }
}

fn pipe_sync(r: Result<(), TwinError>) -> String {
    let f = fault(r);
    match f.kind {
        FaultKind::PipeSync { reason } => reason,
        k => panic!("expected a pipe-sync fault, got {k:?} ({})", f.op),
    }
}

#[test]
fn a_vecout_queue_pipeline_is_ordered_by_the_queue_alone() {
    // One buffer: every round's Duplicate must wait for the previous DataCopy's read (the
    // FreeTensor -> AllocTensor event); two buffers: the events of each buffer.
    for bufs in [1, 2] {
        let rounds = 4;
        let blocks = 2;
        let run = Run::new(blocks * rounds * PIECE_BYTES, &[]);
        run.launch(AIV_API_QUEUE_VECOUT, blocks as u32, rounds as u32, bufs, 0)
            .unwrap();
        let w = run.words();
        for b in 0..blocks {
            for r in 0..rounds {
                let piece = (b * rounds + r) * AIV_API_PIECE as usize;
                assert!(
                    w[piece..piece + AIV_API_PIECE as usize]
                        .iter()
                        .all(|&v| v == r as i32 + 1),
                    "bufs {bufs} block {b} round {r}"
                );
            }
        }
    }
}

#[test]
fn the_same_pipeline_without_the_queue_syncs_is_a_hazard() {
    // No flag between the vector write and the MTE3 read.
    let run = Run::new(4 * PIECE_BYTES, &[]);
    let why = hazard(run.launch(AIV_API_TBUF_NO_SYNC, 1, 2, 1, 0));
    assert!(why.contains("MTE3") && why.contains("V"), "{why}");
    // V -> MTE3 flags, but the next Duplicate overwrites what MTE3 may still be reading.
    let why = hazard(run.launch(AIV_API_NO_FREE_SYNC, 1, 2, 1, 0));
    assert!(why.contains("V") && why.contains("MTE3"), "{why}");
}

#[test]
fn a_vecin_queue_orders_the_vector_unit_not_mte3() {
    let input = common::pattern(PIECE_BYTES, 3);
    let run = Run::new(PIECE_BYTES, &input);
    let why = hazard(run.launch(AIV_API_VECIN_TO_MTE3, 1, 1, 1, 0));
    assert!(why.contains("MTE2") && why.contains("MTE3"), "{why}");
}

#[test]
fn a_vecin_vecout_bind_queue_orders_mte2_and_mte3() {
    let rounds = 5;
    for bufs in [1, 2] {
        let input = common::pattern(2 * rounds * PIECE_BYTES, bufs as u64);
        let run = Run::new(input.len(), &input);
        run.launch(AIV_API_BIND_COPY, 2, rounds as u32, bufs, 0)
            .unwrap();
        assert_eq!(common::read_all(&run.out), input, "bufs {bufs}");
    }
}

#[test]
fn the_tpipe_event_allocator_hands_out_and_takes_back_ids() {
    let run = Run::new(256, &[]);
    run.launch(AIV_API_EVENT_IDS, 1, 0, 0, 0).unwrap();
    // Alloc 0, 1, 2; release 1; Fetch finds 1 (not reserving it); Alloc takes 1; GetTPipePtr is
    // the kernel's pipe.
    assert_eq!(&run.slots(0)[..6], &[0, 1, 2, 1, 1, 1]);
}

#[test]
fn a_hand_set_flag_on_an_id_a_queue_holds_is_a_collision() {
    let input = vec![0u8; PIECE_BYTES];
    let run = Run::new(PIECE_BYTES, &input);
    // The queue took id 0 of MTE2_V at EnQue.
    let why = pipe_sync(run.launch(AIV_API_EVENT_COLLISION, 1, 0, 0, 0));
    assert!(
        why.contains("TQue") && why.contains("MTE2_V") && why.contains("AllocEventID"),
        "{why}"
    );
    // Id 1 is free: no collision.
    run.launch(AIV_API_EVENT_COLLISION, 1, 0, 0, 1).unwrap();
    // FetchEventID skips the id the queue holds; releasing or waiting on it by hand collides.
    run.launch(AIV_API_EVENT_FETCH, 1, 0, 0, 0).unwrap();
    assert_eq!(run.slots(0)[0], 1);
    for param in [1, 2] {
        let why = pipe_sync(run.launch(AIV_API_EVENT_FETCH, 1, 0, 0, param));
        assert!(why.contains("TQue/TQueBind holds"), "param {param}: {why}");
    }
    // All 8 ids reserved.
    let why = pipe_sync(run.launch(AIV_API_EVENT_EXHAUST, 1, 0, 0, 0));
    assert!(why.contains("all 8 event ids"), "{why}");
}

#[test]
fn tensor_and_buffer_helpers_follow_the_docs() {
    let run = Run::new(256, &[]);
    run.launch(AIV_API_TENSOR_HELPERS, 1, 0, 0, 0).unwrap();
    let s = run.slots(0);
    // GetWithOffset(16, 64): 64 bytes in, 16 elements; SetSize(8) -> 8 elements, 32 bytes;
    // GetPhyAddr(3) is 12 bytes on; as int16 the 32 bytes are 16 elements.
    assert_eq!(&s[..6], &[64, 16, 8, 32, 12, 16]);
    // The user tag travels with the queue buffer; GetTPipePtr is the kernel's pipe.
    assert_eq!(&s[6..8], &[77, 1]);
    // LocalMemAllocator: 10 int32 from 0 -> next at 40, no rounding.
    assert_eq!(&s[8..10], &[40, 40]);
    // TBufPool after 1024 + 256 bytes of the pipe: its buffers are rounded to 32 bytes.
    assert_eq!(&s[10..12], &[128, 1280]);
    // GetTPipePtr: an inner scope's pipe, then the outer pipe again once the inner one is gone.
    assert_eq!(&s[12..14], &[1, 1]);
    let f = fault(run.launch(AIV_API_BUFPOOL_OVERFLOW, 1, 0, 0, 0));
    assert!(f.to_string().contains("bufIDSize"), "{f}");
}

#[test]
fn queue_misuse_is_named() {
    let run = Run::new(PIECE_BYTES, &[]);
    let f = fault(run.launch(AIV_API_ENQUE_FULL, 1, 0, 0, 0));
    assert!(f.to_string().contains("EnQue on a full queue"), "{f}");
    let why = pipe_sync(run.launch(AIV_API_DEQUE_NEVER, 1, 0, 0, 0));
    assert!(why.contains("EnQue'd and never DeQue'd"), "{why}");
}

#[test]
fn system_variables_of_an_aiv_only_launch() {
    let run = Run::new(3 * AIV_API_BLOCK_BYTES as usize, &[]);
    run.launch(AIV_API_SYS_VARS, 3, 0, 0, 0).unwrap();
    for b in 0..3 {
        // block_idx, block_num, GetSubBlockIdx, GetSubBlockNum, GetTaskRation, GetBlockIdx
        assert_eq!(&run.slots(b)[..6], &[b as i64, 3, 0, 1, 1, b as i64]);
    }
}

fn exchange_sum(blocks: usize, rounds: usize) -> i64 {
    let per_round: i64 = (1..=blocks as i64).sum();
    (1..=rounds as i64).map(|r| r * per_round).sum()
}

#[test]
fn sync_all_and_cross_core_flags_order_the_blocks() {
    let blocks = 6;
    let rounds = 3;
    for mode in [AIV_API_SYNC_ALL_GM, AIV_API_SYNC_ALL_HW, AIV_API_CROSS_CORE] {
        let run = Run::new(
            blocks * AIV_API_BLOCK_BYTES as usize,
            &vec![0u8; blocks * 32],
        );
        run.launch(mode, blocks as u32, rounds as u32, 0, 0)
            .unwrap_or_else(|e| panic!("mode {mode}: {e}"));
        for b in 0..blocks {
            assert_eq!(
                run.slots(b)[0],
                exchange_sum(blocks, rounds),
                "mode {mode} block {b}"
            );
        }
    }
}

#[test]
fn a_missing_barrier_is_a_race_and_a_skipped_sync_all_is_named() {
    // Without the second barrier, a block's next write races with the others' reads of the
    // previous round. With the hardware barrier (a wait returns when its round completes) the
    // race checker sees it whatever the timing.
    for mode in [AIV_API_SYNC_ALL_HW, AIV_API_CROSS_CORE] {
        for _ in 0..5 {
            let run = Run::new(4 * AIV_API_BLOCK_BYTES as usize, &[0u8; 4 * 32]);
            let f = fault(run.launch(mode, 4, 3, 0, 1));
            assert!(
                matches!(f.kind, FaultKind::GmRace { .. }),
                "mode {mode}: {f}"
            );
        }
    }
    // The GM-workspace SyncAll synchronises through values: a block that sees a faster
    // block's next-round slot is ordered after everything that block did, including its next
    // write, and then reads the newer value. Either the race checker reports the race, or the
    // sum is wrong: the missing barrier never goes unnoticed.
    for _ in 0..5 {
        let run = Run::new(4 * AIV_API_BLOCK_BYTES as usize, &[0u8; 4 * 32]);
        match run.launch(AIV_API_SYNC_ALL_GM, 4, 3, 0, 1) {
            Err(TwinError::Fault(f)) => {
                assert!(matches!(f.kind, FaultKind::GmRace { .. }), "{f}")
            }
            Err(e) => panic!("{e}"),
            Ok(()) => assert!(
                (0..4).any(|b| run.slots(b)[0] != exchange_sum(4, 3)),
                "no race reported and every sum right"
            ),
        }
    }
    // A block that never reaches SyncAll(): the others would wait forever, and are told so at
    // once (not by the watchdog) whether that block ends before or after the others arrive.
    let run = Run::new(256, &[]);
    for skip in [0, 2, 3, 0, 0] {
        let f = fault(run.launch(AIV_API_SYNC_ALL_SKIP, 4, 0, 0, skip));
        let msg = f.to_string();
        assert!(
            msg.contains("would wait forever") && msg.contains(&format!("block(s) {skip}")),
            "{f}"
        );
    }
    // Modes that pair cores inside one AI Core are refused by name, on both sides.
    for mode in [AIV_API_CROSS_MODE1, AIV_API_CROSS_WAIT_MODE1] {
        let why = pipe_sync(run.launch(mode, 2, 0, 0, 0));
        assert!(
            why.contains("mode 1") && why.contains("mix kernel"),
            "{why}"
        );
    }
}

#[test]
fn the_data_cache_bypass_reaches_gm_and_leaves_cached_lines_alone() {
    let run = Run::new(256, &5i32.to_le_bytes());
    run.launch(AIV_API_BYPASS, 1, 0, 0, 0).unwrap();
    assert_eq!(&run.slots(0)[..3], &[5, 9, 5]);
    let mut v = [0u8; 4];
    run.input.read(0, &mut v).unwrap();
    assert_eq!(i32::from_le_bytes(v), 9);
}

/// A scalar store into the last bytes of a buffer whose cache line runs past its end reaches
/// GM, by DataCacheCleanAndInvalid or at the kernel's end, and leaves the rest of the line's
/// bytes in the buffer as they were; a scalar load of another of them reads them.
#[test]
fn a_scalar_store_in_a_buffers_last_cache_line_reaches_gm() {
    let input: Vec<u8> = (1..=100).collect();
    for dcci in [0, 1] {
        let run = Run::new(256, &input);
        assert_eq!(run.input.len(), 100);
        run.launch(AIV_API_SET_TAIL, 1, dcci, 0, -7).unwrap();
        let first = i32::from_le_bytes(input[64..68].try_into().unwrap());
        assert_eq!(run.slots(0)[0], first as i64, "dcci {dcci}");
        let mut now = vec![0u8; 100];
        run.input.read(0, &mut now).unwrap();
        assert_eq!(&now[..96], &input[..96], "dcci {dcci}");
        assert_eq!(&now[96..], &(-7i32).to_le_bytes(), "dcci {dcci}");
    }
}

#[test]
fn printf_and_dump_tensor_lines_name_rank_and_block() {
    let run = Run::new(256, &[]);
    let twin = run.dev.twin();
    twin.capture_output(true);
    run.launch(AIV_API_PRINTF, 2, 0, 0, 0).unwrap();
    let mut lines = twin.take_output();
    lines.sort();
    for b in 0..2 {
        let p = format!("[rank 0] [AIV Block {b}/2] ");
        let mine: Vec<&String> = lines.iter().filter(|l| l.starts_with(&p)).collect();
        let text: Vec<&str> = mine.iter().map(|l| &l[p.len()..]).collect();
        // %x of -1 is 64-bit on the NPU.
        assert!(
            text.contains(&format!("d=-3 i={b} u=7 x=ffffffffffffffff f=1.50 s=ok").as_str()),
            "{text:?}"
        );
        assert!(
            text.contains(&"two") && text.contains(&"lines 100%"),
            "{text:?}"
        );
        assert!(
            text.contains(&"DumpTensor: desc=5, addr=0, data_type=int32, position=UB, dump_size=4"),
            "{text:?}"
        );
        assert!(text.contains(&"[0, 10, 20, 30]"), "{text:?}");
    }
    let f = fault(run.launch(AIV_API_PRINTF_BAD, 1, 0, 0, 0));
    assert!(f.to_string().contains("does not support"), "{f}");
}

#[test]
fn a_failed_assert_is_a_named_fault_with_its_message() {
    let run = Run::new(256, &[]);
    let twin = run.dev.twin();
    twin.capture_output(true);
    run.launch(AIV_API_ASSERT, 1, 0, 0, 0).unwrap();
    let f = fault(run.launch(AIV_API_ASSERT, 1, 0, 0, 7));
    match &f.kind {
        FaultKind::AssertFailed { message } => {
            assert!(message.contains("api_selftest.cpp:"), "{message}");
            assert!(
                message.contains("Assertion `a->param == 0' failed. param=7"),
                "{message}"
            );
        }
        k => panic!("{k:?}"),
    }
    assert!(twin.take_output().iter().any(|l| l.contains("[ASSERT]")));
    let f = fault(run.launch(AIV_API_TRAP, 1, 0, 0, 0));
    assert_eq!(f.kind, FaultKind::Trap);
}

#[test]
fn the_cce_flag_builtins_are_checked_like_set_flag() {
    let input = common::pattern(PIECE_BYTES, 9);
    let run = Run::new(PIECE_BYTES, &input);
    run.launch(AIV_API_BUILTIN_FLAGS, 1, 0, 0, 0).unwrap();
    assert_eq!(common::read_all(&run.out), input);
    let why = pipe_sync(run.launch(AIV_API_BUILTIN_FLAGS, 1, 0, 0, 1));
    assert!(why.contains("no matching SetFlag"), "{why}");
}

#[test]
fn our_copy_engine_takes_event_ids_a_fused_kernels_queue_does_not_hold() {
    // The fused kernel's queue holds id 0 of MTE2_MTE3 while CpGM2GM runs (which once
    // hard-coded ids 0 and 1): no collision, both copies right.
    let bytes = 3 * 1000 + 17;
    let input = common::pattern(PIECE_BYTES + bytes, 11);
    let run = Run::new(input.len(), &input);
    run.launch(AIV_API_FUSED_COPY, 1, 0, 0, bytes as i32)
        .unwrap();
    assert_eq!(common::read_all(&run.out)[..input.len()], input[..]);
}

#[test]
fn reloading_identical_bytes_under_a_pending_store_is_counted_not_reported() {
    // Pieces 0 and 2 hold the same bytes, piece 1 different ones.
    let a = common::pattern(PIECE_BYTES, 21);
    let b = common::pattern(PIECE_BYTES, 22);
    let input = [a.clone(), b, a.clone()].concat();
    let run = Run::new(2 * PIECE_BYTES, &input);
    let twin = run.dev.twin();
    // The same GM bytes again, or other GM holding the same bytes: no order can change a result.
    for piece in [0, 2] {
        let before = twin.benign_overwrites();
        run.launch(AIV_API_RELOAD, 1, 0, 0, piece).unwrap();
        assert_eq!(common::read_all(&run.out), [a.clone(), a.clone()].concat());
        assert!(twin.benign_overwrites() > before, "piece {piece}");
    }
    // Different bytes: the store may read the old or the new ones on the NPU.
    let why = hazard(run.launch(AIV_API_RELOAD, 1, 0, 0, 1));
    assert!(
        why.contains("MTE2 overwrites") && why.contains("MTE3 may still be reading"),
        "{why}"
    );
}

#[test]
fn rewriting_a_scalar_with_the_same_value_under_a_pending_store_is_harmless() {
    // HCCL stores a flag from UB to several peers in a row, rewriting the same value each time.
    let run = Run::new(64, &[]);
    let twin = run.dev.twin();
    let before = twin.benign_overwrites();
    run.launch(AIV_API_RESTORE, 1, 0, 0, 0).unwrap();
    assert!(run.words()[..16].iter().all(|&v| v == 5));
    assert!(twin.benign_overwrites() > before);
    let why = hazard(run.launch(AIV_API_RESTORE, 1, 0, 0, 1));
    assert!(
        why.contains("S (scalar store) overwrites") && why.contains("MTE3"),
        "{why}"
    );
}

#[test]
fn an_identical_overwrite_keeps_the_pending_reader_for_the_next_write() {
    let input = [
        common::pattern(PIECE_BYTES, 31),
        common::pattern(PIECE_BYTES, 32),
    ]
    .concat();
    let run = Run::new(PIECE_BYTES, &input);
    let why = hazard(run.launch(AIV_API_RELOAD_TWICE, 1, 0, 0, 0));
    assert!(
        why.contains("MTE2 overwrites") && why.contains("MTE3 may still be reading"),
        "{why}"
    );
}

#[test]
fn a_fill_over_a_deferred_load_compares_with_what_the_load_brings() {
    // The 32 KiB load is deferred by the twin; the fill of zeros is identical to what UB held
    // before the load, not to what the load brings (nonzero): a hazard, staging on or off.
    let input: Vec<u8> = (0..32 * 1024).map(|i| (i % 251 + 1) as u8).collect();
    let run = Run::new(input.len(), &input);
    let why = hazard(run.launch(AIV_API_LAZY_FILL, 1, 0, 0, 0));
    assert!(
        why.contains("V overwrites") && why.contains("MTE2 wrote"),
        "{why}"
    );
}
