//! The C ABI the twin's AscendC headers call (asc_twin_abi.h): thin shims over the mechanisms.
//!
//! Every function returns [`ASC_TWIN_OK`] on success. On misuse it records a [`FaultKind`] for
//! the running block's launch and returns [`ASC_TWIN_FAULT`]; the header then throws and the
//! block ends. A panic in the twin's Rust code is caught here (it must not unwind into C++) and
//! becomes a [`FaultKind::TwinPanic`] of the block. Every call is a preemption point (block.rs).
//!
//! Every struct, code and constant of asc_twin_abi.h has its mirror here, with the C name and
//! value. Both sides pin the structs' layouts to the same numbers (static_asserts at the end of
//! the header, `const` asserts after each struct here), and the test
//! `the_c_side_agrees_with_the_rust_mirror` compares every code and layout number as the C++
//! compiler sees it (src/abi_probe.cpp) with the values here.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::atomics::{AtomicOp, AtomicType};
use crate::block::{self, BlockCtx};
use crate::error::FaultKind;
use crate::guard::RuntimeCall;
use crate::pipes::Owner;

// Return codes (`enum AscTwinRc`, `enum AscTwinBlockRc`).

/// `ASC_TWIN_OK`: the call succeeded.
pub(crate) const ASC_TWIN_OK: i32 = 0;
/// `ASC_TWIN_FAULT`: the runtime recorded a fault for the block (or its launch was aborted).
pub(crate) const ASC_TWIN_FAULT: i32 = 1;
/// `ASC_TWIN_NO_BLOCK`: called outside a kernel block; nothing was done.
pub(crate) const ASC_TWIN_NO_BLOCK: i32 = 3;
/// `ASC_TWIN_EVENT_FAILED`: what [`asc_twin_event`] returns after recording a fault.
pub(crate) const ASC_TWIN_EVENT_FAILED: i32 = -1;
/// `ASC_TWIN_BLOCK_OK`: the block's kernel returned.
pub(crate) const ASC_TWIN_BLOCK_OK: i32 = 0;
/// `ASC_TWIN_BLOCK_ABORTED`: the kernel threw AscTwinAbort after the runtime recorded a fault.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_BLOCK_ABORTED: i32 = 1;
/// `ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION`: the kernel threw something other than AscTwinAbort.
pub(crate) const ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION: i32 = 2;
/// `ASC_TWIN_BLOCK_STACK_OVERFLOW`: what the block's coroutine returns after a stack overflow
/// (guard.rs; never asc_twin_invoke).
pub(crate) const ASC_TWIN_BLOCK_STACK_OVERFLOW: i32 = 4;

// `enum AscTwinCopyApi`, `enum AscTwinDir`: [`AscTwinCopy::api`], [`AscTwinCopy::dir`].

/// `ASC_TWIN_DATA_COPY`: DataCopy(dst, src, count).
pub(crate) const ASC_TWIN_DATA_COPY: u32 = 0;
/// `ASC_TWIN_DATA_COPY_STRIDED`: DataCopy(dst, src, DataCopyParams).
pub(crate) const ASC_TWIN_DATA_COPY_STRIDED: u32 = 1;
/// `ASC_TWIN_DATA_COPY_PAD`: DataCopyPad.
pub(crate) const ASC_TWIN_DATA_COPY_PAD: u32 = 2;
/// `ASC_TWIN_GM_TO_UB`: a load (MTE2).
pub(crate) const ASC_TWIN_GM_TO_UB: u32 = 0;
/// `ASC_TWIN_UB_TO_GM`: a store (MTE3).
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_UB_TO_GM: u32 = 1;

// `enum AscTwinDtype`: the element type of [`asc_twin_set_atomic`].

/// `ASC_TWIN_DT_UNSUPPORTED`: a non-arithmetic or 64-bit floating type.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_DT_UNSUPPORTED: u32 = 0;
/// `ASC_TWIN_DT_F32`.
pub(crate) const ASC_TWIN_DT_F32: u32 = 1;
/// `ASC_TWIN_DT_F16`.
pub(crate) const ASC_TWIN_DT_F16: u32 = 2;
/// `ASC_TWIN_DT_BF16`.
pub(crate) const ASC_TWIN_DT_BF16: u32 = 3;
/// `ASC_TWIN_DT_I32`.
pub(crate) const ASC_TWIN_DT_I32: u32 = 4;
/// `ASC_TWIN_DT_I16`.
pub(crate) const ASC_TWIN_DT_I16: u32 = 5;
/// `ASC_TWIN_DT_I8`.
pub(crate) const ASC_TWIN_DT_I8: u32 = 6;
/// `ASC_TWIN_DT_OTHER_INT`: another integer type (no atomic support).
pub(crate) const ASC_TWIN_DT_OTHER_INT: u32 = 7;

// `enum AscTwinAtomicOp`: the store mode of [`asc_twin_set_atomic`].

/// `ASC_TWIN_ATOMIC_NONE`: SetAtomicNone.
pub(crate) const ASC_TWIN_ATOMIC_NONE: u32 = 0;
/// `ASC_TWIN_ATOMIC_ADD`: SetAtomicAdd.
pub(crate) const ASC_TWIN_ATOMIC_ADD: u32 = 1;
/// `ASC_TWIN_ATOMIC_MAX`: SetAtomicMax.
pub(crate) const ASC_TWIN_ATOMIC_MAX: u32 = 2;
/// `ASC_TWIN_ATOMIC_MIN`: SetAtomicMin.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_ATOMIC_MIN: u32 = 3;

// `enum AscTwinPipeOp`: the op of [`asc_twin_pipe`].

/// `ASC_TWIN_SET_FLAG`: the kernel's SetFlag.
pub(crate) const ASC_TWIN_SET_FLAG: u32 = 0;
/// `ASC_TWIN_WAIT_FLAG`: the kernel's WaitFlag.
pub(crate) const ASC_TWIN_WAIT_FLAG: u32 = 1;
/// `ASC_TWIN_PIPE_BARRIER`: PipeBarrier (`event` is a pipe_t).
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_PIPE_BARRIER: u32 = 2;
/// `ASC_TWIN_QUEUE_SET_FLAG`: a TQue / TQueBind's own SetFlag.
pub(crate) const ASC_TWIN_QUEUE_SET_FLAG: u32 = 3;
/// `ASC_TWIN_QUEUE_WAIT_FLAG`: a TQue / TQueBind's own WaitFlag.
pub(crate) const ASC_TWIN_QUEUE_WAIT_FLAG: u32 = 4;

// `enum AscTwinEventOp`: the op of [`asc_twin_event`].

/// `ASC_TWIN_ALLOC_EVENT`: TPipe::AllocEventID.
pub(crate) const ASC_TWIN_ALLOC_EVENT: u32 = 0;
/// `ASC_TWIN_RELEASE_EVENT`: TPipe::ReleaseEventID.
pub(crate) const ASC_TWIN_RELEASE_EVENT: u32 = 1;
/// `ASC_TWIN_FETCH_EVENT`: TPipe::FetchEventID.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_FETCH_EVENT: u32 = 2;
/// `ASC_TWIN_QUEUE_ALLOC_EVENT`: a queue takes an id.
pub(crate) const ASC_TWIN_QUEUE_ALLOC_EVENT: u32 = 3;
/// `ASC_TWIN_QUEUE_RELEASE_EVENT`: a queue gives its id back.
pub(crate) const ASC_TWIN_QUEUE_RELEASE_EVENT: u32 = 4;

// `enum AscTwinScalarDir`: `is_store` of [`asc_twin_gm_scalar`] and [`asc_twin_gm_bypass`]
// (any value but ASC_TWIN_LOAD stores).

/// `ASC_TWIN_LOAD`.
pub(crate) const ASC_TWIN_LOAD: u32 = 0;
/// `ASC_TWIN_STORE`.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_STORE: u32 = 1;

// `enum AscTwinUbKind`: the kind of [`asc_twin_ub_access`] and [`AscTwinUbRange::kind`].

/// `ASC_TWIN_UB_SCALAR_READ`: LocalTensor::GetValue.
pub(crate) const ASC_TWIN_UB_SCALAR_READ: u32 = 0;
/// `ASC_TWIN_UB_SCALAR_WRITE`: LocalTensor::SetValue.
pub(crate) const ASC_TWIN_UB_SCALAR_WRITE: u32 = 1;
/// `ASC_TWIN_UB_VECTOR_WRITE`: a vector instruction's destination.
pub(crate) const ASC_TWIN_UB_VECTOR_WRITE: u32 = 2;
/// `ASC_TWIN_UB_VECTOR_READ`: a vector instruction's source.
pub(crate) const ASC_TWIN_UB_VECTOR_READ: u32 = 3;

// `enum AscTwinCrossCoreOp`: the op of [`asc_twin_cross_core`].

/// `ASC_TWIN_CROSS_SET_FLAG`: CrossCoreSetFlag.
pub(crate) const ASC_TWIN_CROSS_SET_FLAG: u32 = 0;
/// `ASC_TWIN_CROSS_WAIT_FLAG`: CrossCoreWaitFlag.
pub(crate) const ASC_TWIN_CROSS_WAIT_FLAG: u32 = 1;
/// `ASC_TWIN_CROSS_SYNC_ALL`: the hardware SyncAll().
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_CROSS_SYNC_ALL: u32 = 2;
/// `ASC_TWIN_SYNC_ALL_FLAG`: the cross-core flag of the hardware SyncAll().
pub(crate) const ASC_TWIN_SYNC_ALL_FLAG: u32 = 14;

// `enum AscTwinSyncApi`: the `api` of [`asc_twin_sync_flags`] and [`asc_twin_sync_wait`].

/// `ASC_TWIN_SYNC_NONE`: [`asc_twin_sync_wait`]: the block no longer waits.
pub(crate) const ASC_TWIN_SYNC_NONE: u32 = 0;
/// `ASC_TWIN_SYNC_ALL_GM`: SyncAll(gmWorkspace, ubWorkspace, usedCores).
pub(crate) const ASC_TWIN_SYNC_ALL_GM: u32 = 1;
/// `ASC_TWIN_SYNC_IB_SET`: IBSet.
pub(crate) const ASC_TWIN_SYNC_IB_SET: u32 = 2;
/// `ASC_TWIN_SYNC_IB_WAIT`: IBWait.
pub(crate) const ASC_TWIN_SYNC_IB_WAIT: u32 = 3;
/// `ASC_TWIN_SYNC_DETERMINE_INIT`: InitDetermineComputeWorkspace.
pub(crate) const ASC_TWIN_SYNC_DETERMINE_INIT: u32 = 4;
/// `ASC_TWIN_SYNC_WAIT_PRE_BLOCK`: WaitPreBlock.
pub(crate) const ASC_TWIN_SYNC_WAIT_PRE_BLOCK: u32 = 5;
/// `ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK`: NotifyNextBlock.
pub(crate) const ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK: u32 = 6;
/// `ASC_TWIN_SYNC_GROUP_ARRIVE`: GroupBarrier::Arrive.
pub(crate) const ASC_TWIN_SYNC_GROUP_ARRIVE: u32 = 7;
/// `ASC_TWIN_SYNC_GROUP_WAIT`: GroupBarrier::Wait.
pub(crate) const ASC_TWIN_SYNC_GROUP_WAIT: u32 = 8;

/// The AscendC API an `AscTwinSyncApi` code stands for.
pub(crate) fn sync_api_name(api: u32) -> &'static str {
    match api {
        ASC_TWIN_SYNC_ALL_GM => "SyncAll",
        ASC_TWIN_SYNC_IB_SET => "IBSet",
        ASC_TWIN_SYNC_IB_WAIT => "IBWait",
        ASC_TWIN_SYNC_DETERMINE_INIT => "InitDetermineComputeWorkspace",
        ASC_TWIN_SYNC_WAIT_PRE_BLOCK => "WaitPreBlock",
        ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK => "NotifyNextBlock",
        ASC_TWIN_SYNC_GROUP_ARRIVE => "GroupBarrier::Arrive",
        ASC_TWIN_SYNC_GROUP_WAIT => "GroupBarrier::Wait",
        _ => "a cross-core synchronisation API",
    }
}

// `enum AscTwinTPipeOp`: `set` of [`asc_twin_tpipe`].

/// `ASC_TWIN_TPIPE_GET`: change nothing.
#[allow(dead_code)] // the fallback of the Rust side's match; the C side names it
pub(crate) const ASC_TWIN_TPIPE_GET: u32 = 0;
/// `ASC_TWIN_TPIPE_SET`: make `pipe` current.
pub(crate) const ASC_TWIN_TPIPE_SET: u32 = 1;
/// `ASC_TWIN_TPIPE_CLEAR`: clear the current pipe if it is `pipe`.
pub(crate) const ASC_TWIN_TPIPE_CLEAR: u32 = 2;

// `enum AscTwinOp`: the fault op of [`asc_twin_fail`], named by [`fail_op_name`].

/// `ASC_TWIN_OP_INIT_BUFFER`.
pub(crate) const ASC_TWIN_OP_INIT_BUFFER: u32 = 0;
/// `ASC_TWIN_OP_LOCAL_INDEX`.
pub(crate) const ASC_TWIN_OP_LOCAL_INDEX: u32 = 1;
/// `ASC_TWIN_OP_GLOBAL_INDEX`.
pub(crate) const ASC_TWIN_OP_GLOBAL_INDEX: u32 = 2;
/// `ASC_TWIN_OP_QUEUE`.
pub(crate) const ASC_TWIN_OP_QUEUE: u32 = 3;
/// `ASC_TWIN_OP_DUPLICATE`.
pub(crate) const ASC_TWIN_OP_DUPLICATE: u32 = 4;
/// `ASC_TWIN_OP_FLAG`.
pub(crate) const ASC_TWIN_OP_FLAG: u32 = 5;
/// `ASC_TWIN_OP_SYNC_ALL`.
pub(crate) const ASC_TWIN_OP_SYNC_ALL: u32 = 6;
/// `ASC_TWIN_OP_ALLOCATOR`.
pub(crate) const ASC_TWIN_OP_ALLOCATOR: u32 = 7;
/// `ASC_TWIN_OP_BUF_POOL`.
pub(crate) const ASC_TWIN_OP_BUF_POOL: u32 = 8;
/// `ASC_TWIN_OP_CROSS_CORE`.
pub(crate) const ASC_TWIN_OP_CROSS_CORE: u32 = 9;
/// `ASC_TWIN_OP_DEBUG`.
pub(crate) const ASC_TWIN_OP_DEBUG: u32 = 10;
/// `ASC_TWIN_OP_VECTOR`.
pub(crate) const ASC_TWIN_OP_VECTOR: u32 = 11;
/// `ASC_TWIN_OP_DATA_COPY_PAD`.
pub(crate) const ASC_TWIN_OP_DATA_COPY_PAD: u32 = 12;
/// `ASC_TWIN_OP_IB_SYNC`.
pub(crate) const ASC_TWIN_OP_IB_SYNC: u32 = 13;
/// `ASC_TWIN_OP_DETERMINE`.
pub(crate) const ASC_TWIN_OP_DETERMINE: u32 = 14;
/// `ASC_TWIN_OP_GROUP_BARRIER`.
pub(crate) const ASC_TWIN_OP_GROUP_BARRIER: u32 = 15;
/// `ASC_TWIN_OP_DATA_COPY`: a DataCopy form the headers check (SliceInfo).
pub(crate) const ASC_TWIN_OP_DATA_COPY: u32 = 16;
/// `ASC_TWIN_OP_LIST_TENSOR`: ListTensorDesc / TensorDesc.
pub(crate) const ASC_TWIN_OP_LIST_TENSOR: u32 = 17;
/// `ASC_TWIN_OP_INIT_OUTPUT`: InitOutput.
pub(crate) const ASC_TWIN_OP_INIT_OUTPUT: u32 = 18;

/// The name a fault raised through [`asc_twin_fail`] with `op` carries.
pub(crate) fn fail_op_name(op: u32) -> &'static str {
    match op {
        ASC_TWIN_OP_INIT_BUFFER => "TPipe::InitBuffer",
        ASC_TWIN_OP_LOCAL_INDEX => "LocalTensor",
        ASC_TWIN_OP_GLOBAL_INDEX => "GlobalTensor",
        ASC_TWIN_OP_QUEUE => "TQue",
        ASC_TWIN_OP_DUPLICATE => "Duplicate",
        ASC_TWIN_OP_FLAG => "set_flag/wait_flag",
        ASC_TWIN_OP_SYNC_ALL => "SyncAll",
        ASC_TWIN_OP_ALLOCATOR => "LocalMemAllocator",
        ASC_TWIN_OP_BUF_POOL => "TBufPool",
        ASC_TWIN_OP_CROSS_CORE => "CrossCoreSetFlag",
        ASC_TWIN_OP_DEBUG => "printf",
        ASC_TWIN_OP_VECTOR => "vector instruction",
        ASC_TWIN_OP_DATA_COPY_PAD => "DataCopyPad(GM->UB)",
        ASC_TWIN_OP_IB_SYNC => "IBSet/IBWait",
        ASC_TWIN_OP_DETERMINE => "WaitPreBlock/NotifyNextBlock",
        ASC_TWIN_OP_GROUP_BARRIER => "GroupBarrier",
        ASC_TWIN_OP_DATA_COPY => "DataCopy",
        ASC_TWIN_OP_LIST_TENSOR => "ListTensorDesc",
        ASC_TWIN_OP_INIT_OUTPUT => "InitOutput",
        _ => "AscendC API",
    }
}

/// Mirror of `struct AscTwinCopy` in asc_twin_abi.h.
#[repr(C)]
pub struct AscTwinCopy {
    pub(crate) api: u32,
    pub(crate) dir: u32,
    pub(crate) ub: *mut u8,
    pub(crate) ub_cap: u64,
    pub(crate) gm: *mut u8,
    pub(crate) elem_size: u32,
    pub(crate) block_count: u32,
    pub(crate) block_len: u32,
    pub(crate) src_stride: u64,
    pub(crate) dst_stride: u64,
    pub(crate) is_pad: u32,
    pub(crate) left_pad: u32,
    pub(crate) right_pad: u32,
    pub(crate) pad_value: u64,
}

// The same numbers as the header's ASC_TWIN_PIN_* (64-bit hosts).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<AscTwinCopy>() == 88);
    assert!(offset_of!(AscTwinCopy, api) == 0);
    assert!(offset_of!(AscTwinCopy, dir) == 4);
    assert!(offset_of!(AscTwinCopy, ub) == 8);
    assert!(offset_of!(AscTwinCopy, ub_cap) == 16);
    assert!(offset_of!(AscTwinCopy, gm) == 24);
    assert!(offset_of!(AscTwinCopy, elem_size) == 32);
    assert!(offset_of!(AscTwinCopy, block_count) == 36);
    assert!(offset_of!(AscTwinCopy, block_len) == 40);
    assert!(offset_of!(AscTwinCopy, src_stride) == 48);
    assert!(offset_of!(AscTwinCopy, dst_stride) == 56);
    assert!(offset_of!(AscTwinCopy, is_pad) == 64);
    assert!(offset_of!(AscTwinCopy, left_pad) == 68);
    assert!(offset_of!(AscTwinCopy, right_pad) == 72);
    assert!(offset_of!(AscTwinCopy, pad_value) == 80);
};

/// The message of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".into())
}

/// Runs `f` with the calling block's context; records its fault under `op` and returns
/// [`ASC_TWIN_FAULT`] on error. Outside a kernel (no context) returns [`ASC_TWIN_NO_BLOCK`].
fn with_ctx(op: &str, f: impl FnOnce(&mut BlockCtx) -> Result<(), FaultKind>) -> i32 {
    let p = block::current();
    if p.is_null() {
        return ASC_TWIN_NO_BLOCK;
    }
    // SAFETY: the scheduler points the current context at the running block's own BlockCtx and
    // never dereferences it while the block lives (block.rs); this call is the only user of it
    // until it returns, suspensions inside `f` included.
    let ctx = unsafe { &mut *p };
    // Raw pointers, not Arc clones: the launch's count is shared by every block of the launch,
    // and touching it on every twin call would bounce its cache line between the workers.
    // Both stay alive for the whole call: the context holds them and is not dropped before
    // the block ends.
    let depth: *const std::sync::atomic::AtomicU32 = &ctx.status.depth;
    let launch: *const crate::launch::LaunchShared = &*ctx.launch;
    // SAFETY: see above.
    let (depth, launch) = unsafe { (&*depth, &*launch) };
    let _runtime = RuntimeCall::enter(depth);
    if launch.is_aborted() {
        return ASC_TWIN_FAULT;
    }
    let block = ctx.block;
    let r = catch_unwind(AssertUnwindSafe(|| {
        ctx.tick();
        f(ctx)
    }));
    match r {
        Ok(Ok(())) => ASC_TWIN_OK,
        Ok(Err(FaultKind::Aborted)) => ASC_TWIN_FAULT,
        Ok(Err(kind)) => {
            launch.record(block, op, kind);
            ASC_TWIN_FAULT
        }
        Err(payload) => {
            launch.record(
                block,
                op,
                FaultKind::TwinPanic {
                    message: panic_message(payload.as_ref()),
                },
            );
            ASC_TWIN_FAULT
        }
    }
}

/// The block's coroutine returned `rc` (an `AscTwinBlockRc`): end-of-kernel work and checks,
/// then the context goes.
pub(crate) fn end_block(mut ctx: Box<BlockCtx>, rc: i32) {
    let block = ctx.block;
    let launch = ctx.launch.clone();
    let r = catch_unwind(AssertUnwindSafe(|| {
        // Dirty scalar-cache lines reach GM when the kernel ends; deferred UB copies die with it.
        let flushed = crate::dcache::flush(&mut ctx, None);
        if let Some(cross) = ctx.launch.block_ended(ctx.block) {
            cross.block_end(&ctx);
        }
        crate::lazy::finish(&ctx.twin.lazy, &mut ctx.lazy);
        if let Some(mut r) = ctx.race.take() {
            r.finish(&ctx.twin.race);
            if r.benign > 0 {
                ctx.twin
                    .benign_gm_overwrites
                    .fetch_add(r.benign, std::sync::atomic::Ordering::Relaxed);
            }
        }
        if let Some(hz) = ctx.hazards.as_ref() {
            if hz.benign > 0 {
                ctx.twin
                    .benign_overwrites
                    .fetch_add(hz.benign, std::sync::atomic::Ordering::Relaxed);
            }
        }
        match rc {
            ASC_TWIN_BLOCK_OK => flushed
                .and_then(|()| ctx.pipes.at_end())
                .map_err(|k| ("kernel end", k)),
            ASC_TWIN_BLOCK_STACK_OVERFLOW => Err(("kernel body", FaultKind::StackOverflow)),
            ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION => Err(("kernel body", FaultKind::UnknownException)),
            // ASC_TWIN_BLOCK_ABORTED: the fault is recorded already.
            _ => Ok(()),
        }
    }));
    match r {
        Ok(Err((op, kind))) => launch.record(block, op, kind),
        Err(payload) => launch.record(
            block,
            "kernel end",
            FaultKind::TwinPanic {
                message: panic_message(payload.as_ref()),
            },
        ),
        _ => {}
    }
}

/// Copy request from DataCopy / DataCopyPad.
///
/// # Safety
/// `req` must point to a valid `AscTwinCopy`.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_copy(req: *const AscTwinCopy) -> i32 {
    // SAFETY: the caller passes a valid descriptor.
    let r = unsafe { &*req };
    with_ctx(crate::dma::op_name(r.api, r.dir), |ctx| {
        crate::dma::copy(ctx, r)
    })
}

/// Scalar GM access (GlobalTensor::GetValue: `is_store` [`ASC_TWIN_LOAD`] / SetValue:
/// [`ASC_TWIN_STORE`]) through the scalar data cache.
///
/// # Safety
/// `value` must point to `size` writable/readable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_gm_scalar(
    is_store: u32,
    gm_ptr: *mut u8,
    value: *mut u8,
    size: u32,
) -> i32 {
    let store = is_store != ASC_TWIN_LOAD;
    let op = if store {
        "GlobalTensor::SetValue"
    } else {
        "GlobalTensor::GetValue"
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scalar_gm(op, gm_ptr, value, size, |ctx, addr, v| {
            crate::dcache::scalar(ctx, store, addr, v)
        })
    }
}

/// ReadGmByPassDCache (`is_store` [`ASC_TWIN_LOAD`]) / WriteGmByPassDCache ([`ASC_TWIN_STORE`])
/// of `size` bytes at `gm_ptr`.
///
/// # Safety
/// `value` must point to `size` readable/writable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_gm_bypass(
    is_store: u32,
    gm_ptr: *mut u8,
    value: *mut u8,
    size: u32,
) -> i32 {
    let store = is_store != ASC_TWIN_LOAD;
    let op = if store {
        "WriteGmByPassDCache"
    } else {
        "ReadGmByPassDCache"
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scalar_gm(op, gm_ptr, value, size, |ctx, addr, v| {
            crate::dcache::bypass(ctx, store, addr, v)
        })
    }
}

/// A scalar GM access of `size` bytes (at most 8, else misaligned) at `gm_ptr`, served by `f`.
///
/// # Safety
/// `value` must point to `size` readable/writable bytes.
unsafe fn scalar_gm(
    op: &str,
    gm_ptr: *mut u8,
    value: *mut u8,
    size: u32,
    f: impl FnOnce(&mut BlockCtx, usize, &mut [u8]) -> Result<(), FaultKind>,
) -> i32 {
    with_ctx(op, |ctx| {
        if size > 8 {
            return Err(FaultKind::MisalignedGm {
                addr: gm_ptr as u64,
                align: size,
            });
        }
        // SAFETY: the caller passes `size` (<= 8) valid bytes.
        let v = unsafe { std::slice::from_raw_parts_mut(value, size as usize) };
        f(ctx, gm_ptr as usize, v)
    })
}

/// DataCacheCleanAndInvalid on the line holding `gm_ptr`: writes it back if dirty, drops it.
#[no_mangle]
pub extern "C" fn asc_twin_dcci(gm_ptr: *mut u8) -> i32 {
    with_ctx("DataCacheCleanAndInvalid", |ctx| {
        crate::dcache::flush(ctx, Some(gm_ptr as usize))
    })
}

/// `SetAtomicAdd/Max/Min<T>` (`op` an `ASC_TWIN_ATOMIC_*`, `dtype` an `ASC_TWIN_DT_*`) and
/// `SetAtomicNone` ([`ASC_TWIN_ATOMIC_NONE`]).
///
/// The mode is taken by each DataCopy to GM when it is issued. The AscendC docs (in-core sync,
/// "synchronisation guaranteed by hardware") say these calls run on PIPE_S and that on Atlas
/// A2/A3 the hardware orders them against the other pipes, so a store issued before a switch
/// uses the old mode even while it is still in flight: switching without draining MTE3 is not a
/// hazard, and the twin does not report it. (The docs' examples still put PipeBarrier<PIPE_MTE3>
/// between stores that write overlapping GM, a different rule.)
#[no_mangle]
pub extern "C" fn asc_twin_set_atomic(op: u32, dtype: u32) -> i32 {
    let name = match op {
        ASC_TWIN_ATOMIC_NONE => "SetAtomicNone",
        ASC_TWIN_ATOMIC_ADD => "SetAtomicAdd",
        ASC_TWIN_ATOMIC_MAX => "SetAtomicMax",
        _ => "SetAtomicMin",
    };
    with_ctx(name, |ctx| {
        let op = match op {
            ASC_TWIN_ATOMIC_NONE => {
                ctx.atomic = None;
                return Ok(());
            }
            ASC_TWIN_ATOMIC_ADD => AtomicOp::Add,
            ASC_TWIN_ATOMIC_MAX => AtomicOp::Max,
            _ => AtomicOp::Min,
        };
        let ty = match dtype {
            ASC_TWIN_DT_F32 => AtomicType::F32,
            ASC_TWIN_DT_F16 => AtomicType::F16,
            ASC_TWIN_DT_BF16 => AtomicType::Bf16,
            ASC_TWIN_DT_I32 => AtomicType::I32,
            ASC_TWIN_DT_I16 => AtomicType::I16,
            ASC_TWIN_DT_I8 => AtomicType::I8,
            ASC_TWIN_DT_OTHER_INT => {
                return Err(FaultKind::UnsupportedAtomic {
                    dtype: "an integer type other than int32_t/int16_t/int8_t".into(),
                })
            }
            // ASC_TWIN_DT_UNSUPPORTED
            _ => {
                return Err(FaultKind::UnsupportedAtomic {
                    dtype: "a non-arithmetic or 64-bit floating type".into(),
                })
            }
        };
        ctx.atomic = Some((op, ty));
        Ok(())
    })
}

/// SetFlag ([`ASC_TWIN_SET_FLAG`]), WaitFlag ([`ASC_TWIN_WAIT_FLAG`]) and PipeBarrier
/// ([`ASC_TWIN_PIPE_BARRIER`], `event` = pipe_t) of the kernel; SetFlag
/// ([`ASC_TWIN_QUEUE_SET_FLAG`]) and WaitFlag ([`ASC_TWIN_QUEUE_WAIT_FLAG`]) of a TQue /
/// TQueBind's own synchronisation.
#[no_mangle]
pub extern "C" fn asc_twin_pipe(op: u32, event: u32, id: i32) -> i32 {
    let name = match op {
        ASC_TWIN_SET_FLAG | ASC_TWIN_QUEUE_SET_FLAG => "SetFlag",
        ASC_TWIN_WAIT_FLAG | ASC_TWIN_QUEUE_WAIT_FLAG => "WaitFlag",
        _ => "PipeBarrier",
    };
    with_ctx(name, |ctx| {
        let hz = ctx.hazards.as_deref_mut();
        match op {
            ASC_TWIN_SET_FLAG => ctx.pipes.set_flag(hz, Owner::Kernel, event, id),
            ASC_TWIN_WAIT_FLAG => ctx.pipes.wait_flag(hz, Owner::Kernel, event, id),
            ASC_TWIN_QUEUE_SET_FLAG => ctx.pipes.set_flag(hz, Owner::Queue, event, id),
            ASC_TWIN_QUEUE_WAIT_FLAG => ctx.pipes.wait_flag(hz, Owner::Queue, event, id),
            // ASC_TWIN_PIPE_BARRIER
            _ => {
                ctx.pipes.barrier(hz, event);
                Ok(())
            }
        }
    })
}

/// The TPipe event-id allocator: AllocEventID ([`ASC_TWIN_ALLOC_EVENT`]), ReleaseEventID
/// ([`ASC_TWIN_RELEASE_EVENT`]), FetchEventID ([`ASC_TWIN_FETCH_EVENT`]) of the kernel; a queue
/// taking ([`ASC_TWIN_QUEUE_ALLOC_EVENT`]) or giving back ([`ASC_TWIN_QUEUE_RELEASE_EVENT`]) an
/// id. Returns the id (alloc, fetch) or 0 (release); [`ASC_TWIN_EVENT_FAILED`] after recording a
/// fault.
#[no_mangle]
pub extern "C" fn asc_twin_event(op: u32, event: u32, id: i32) -> i32 {
    let name = match op {
        ASC_TWIN_ALLOC_EVENT | ASC_TWIN_QUEUE_ALLOC_EVENT => "TPipe::AllocEventID",
        ASC_TWIN_RELEASE_EVENT | ASC_TWIN_QUEUE_RELEASE_EVENT => "TPipe::ReleaseEventID",
        _ => "TPipe::FetchEventID",
    };
    let mut out = 0;
    let rc = with_ctx(name, |ctx| {
        out = match op {
            ASC_TWIN_ALLOC_EVENT => ctx.pipes.alloc_event(Owner::Kernel, event)?,
            ASC_TWIN_RELEASE_EVENT => ctx
                .pipes
                .release_event(Owner::Kernel, event, id)
                .map(|()| 0)?,
            ASC_TWIN_QUEUE_ALLOC_EVENT => ctx.pipes.alloc_event(Owner::Queue, event)?,
            ASC_TWIN_QUEUE_RELEASE_EVENT => ctx
                .pipes
                .release_event(Owner::Queue, event, id)
                .map(|()| 0)?,
            // ASC_TWIN_FETCH_EVENT
            _ => ctx.pipes.fetch_event(event)?,
        };
        Ok(())
    });
    if rc == ASC_TWIN_OK {
        out
    } else {
        ASC_TWIN_EVENT_FAILED
    }
}

/// The block's current TPipe (what `GetTPipePtr()` returns): `set` [`ASC_TWIN_TPIPE_SET`] makes
/// `pipe` current, [`ASC_TWIN_TPIPE_CLEAR`] clears it if it is `pipe`, [`ASC_TWIN_TPIPE_GET`]
/// changes nothing; returns the current one (after the change).
#[no_mangle]
pub extern "C" fn asc_twin_tpipe(set: u32, pipe: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    peek(|c| {
        match set {
            ASC_TWIN_TPIPE_SET => c.tpipe = pipe,
            ASC_TWIN_TPIPE_CLEAR if c.tpipe == pipe => c.tpipe = std::ptr::null_mut(),
            _ => {}
        }
        c.tpipe
    })
    .unwrap_or(std::ptr::null_mut())
}

/// Whether the running kernel was built with the compiler's automatic synchronisation
/// (`--cce-auto-sync`): the launch trampoline says so as each block starts (`on` 1) or not
/// (0); the pipe-hazard checker then orders the scalar unit's UB accesses as the compiler does
/// (hazard.rs).
#[no_mangle]
pub extern "C" fn asc_twin_auto_sync(on: u32) {
    peek(|c| {
        if let Some(h) = c.hazards.as_deref_mut() {
            h.auto_sync = on != 0;
        }
    });
}

/// Cross-core synchronisation: `CrossCoreSetFlag<mode>(flag)` ([`ASC_TWIN_CROSS_SET_FLAG`]),
/// `CrossCoreWaitFlag(flag)` ([`ASC_TWIN_CROSS_WAIT_FLAG`]), hardware `SyncAll()`
/// ([`ASC_TWIN_CROSS_SYNC_ALL`]: a barrier over flag [`ASC_TWIN_SYNC_ALL_FLAG`] of every block
/// of the launch).
#[no_mangle]
pub extern "C" fn asc_twin_cross_core(op: u32, mode: u32, flag: u32) -> i32 {
    let name = match op {
        ASC_TWIN_CROSS_SET_FLAG => "CrossCoreSetFlag",
        ASC_TWIN_CROSS_WAIT_FLAG => "CrossCoreWaitFlag",
        _ => "SyncAll",
    };
    with_ctx(name, |ctx| match op {
        ASC_TWIN_CROSS_SET_FLAG => crate::cross::set(ctx, mode, flag, name),
        ASC_TWIN_CROSS_WAIT_FLAG => crate::cross::wait(ctx, mode, flag, name),
        // ASC_TWIN_CROSS_SYNC_ALL
        _ => {
            let hz = ctx.hazards.as_deref_mut();
            ctx.pipes.barrier(hz, crate::pipes::PIPE_ALL);
            crate::cross::set(ctx, 0, ASC_TWIN_SYNC_ALL_FLAG, "SyncAll()")?;
            crate::cross::wait(ctx, 0, ASC_TWIN_SYNC_ALL_FLAG, "SyncAll()")
        }
    })
}

/// Marks `[gm, gm + len)` as flag memory for the GM race checker: the flag words of a
/// synchronisation API the headers build from DataCopy polls (`api`, an `ASC_TWIN_SYNC_*`:
/// SyncAll's GM workspace, IBSet/IBWait's slot, the WaitPreBlock/NotifyNextBlock workspace,
/// GroupBarrier's counters). Its stores then release and its loads acquire (race.rs). A range
/// outside every live allocation is a fault of that API.
#[no_mangle]
pub extern "C" fn asc_twin_sync_flags(api: u32, gm: *mut u8, len: u64) -> i32 {
    with_ctx(sync_api_name(api), |ctx| {
        let (addr, len) = (gm as usize, len as usize);
        match ctx.twin.mem.lookup(addr, len) {
            None => Err(FaultKind::GmOutOfBounds {
                addr: addr as u64,
                len: len as u64,
            }),
            Some(found) if found.sync => Ok(()),
            Some(_) => {
                ctx.twin.mem.mark_sync(addr, len);
                Ok(())
            }
        }
    })
}

/// The block starts (`api` an `ASC_TWIN_SYNC_*`) or ends ([`ASC_TWIN_SYNC_NONE`]) a wait in a
/// synchronisation API the headers build from DataCopy polls of the flags at `[gm, gm + len)`;
/// `arg0`, `arg1` are the API's arguments (see [`crate::cross::wait_text`]). The poll parks as
/// every unchanged GM poll does (poll.rs); this names the wait in the watchdog's report.
#[no_mangle]
pub extern "C" fn asc_twin_sync_wait(api: u32, gm: *mut u8, len: u64, arg0: i64, arg1: i64) -> i32 {
    with_ctx(sync_api_name(api), |ctx| {
        let text = (api != ASC_TWIN_SYNC_NONE)
            .then(|| crate::cross::wait_text(ctx, api, gm as usize, len as usize, arg0, arg1));
        *ctx.status.waits_for.lock() = text;
        Ok(())
    })
}

/// Console output of the block (AscendC::printf, DumpTensor): `len` bytes of text.
///
/// # Safety
/// `text` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_print(text: *const u8, len: u64) -> i32 {
    // SAFETY: the caller passes `len` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(text, len as usize) };
    let text = String::from_utf8_lossy(bytes);
    with_ctx("printf", |ctx| {
        ctx.twin
            .console
            .print(ctx.launch.rank, ctx.block, ctx.launch.block_dim, &text);
        Ok(())
    })
}

/// A failed `assert` / `ascendc_assert`: prints `message` as the NPU does (`[ASSERT] ...`) and
/// ends the block with [`FaultKind::AssertFailed`].
///
/// # Safety
/// `message` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_assert_fail(message: *const std::ffi::c_char) -> i32 {
    // SAFETY: the caller passes a NUL-terminated string.
    let message = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    with_ctx("assert", |ctx| {
        ctx.twin.console.print(
            ctx.launch.rank,
            ctx.block,
            ctx.launch.block_dim,
            &format!("[ASSERT] {message}"),
        );
        Err(FaultKind::AssertFailed { message })
    })
    .max(ASC_TWIN_FAULT)
}

/// A scalar or vector access to UB, for the pipe-hazard checker and deferred staging: `kind` an
/// `ASC_TWIN_UB_*` (scalar read: LocalTensor::GetValue, scalar write: SetValue, vector write,
/// vector read).
#[no_mangle]
pub extern "C" fn asc_twin_ub_access(kind: u32, ub: *const u8, bytes: u64) -> i32 {
    ub_access(kind, ub, bytes, None)
}

/// LocalTensor::SetValue of the `bytes` bytes at `value` into UB at `ub`: as a scalar write of
/// [`asc_twin_ub_access`], where storing exactly the bytes already there is no hazard.
///
/// # Safety
/// `value` must point to `bytes` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_ub_store(ub: *const u8, value: *const u8, bytes: u64) -> i32 {
    // SAFETY: the caller passes `bytes` readable bytes.
    let v = unsafe { std::slice::from_raw_parts(value, bytes as usize) };
    ub_access(ASC_TWIN_UB_SCALAR_WRITE, ub, bytes, Some(v))
}

/// A vector fill (Duplicate) of `count` elements of `elem` bytes, each the `elem` bytes at
/// `value`, into UB at `ub`: a vector write of [`asc_twin_ub_access`], where storing exactly
/// the bytes already there is no hazard.
///
/// # Safety
/// `value` must point to `elem` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_ub_fill(
    ub: *const u8,
    value: *const u8,
    elem: u32,
    count: u64,
) -> i32 {
    // SAFETY: the caller passes `elem` readable bytes.
    let v = unsafe { std::slice::from_raw_parts(value, elem as usize) };
    ub_access(ASC_TWIN_UB_VECTOR_WRITE, ub, count * elem as u64, Some(v))
}

/// `stored`: what a write stores, for the identical-bytes rule: the bytes themselves
/// ([`ASC_TWIN_UB_SCALAR_WRITE`]), or one element repeated over the range
/// ([`ASC_TWIN_UB_VECTOR_WRITE`]).
fn ub_access(kind: u32, ub: *const u8, bytes: u64, stored: Option<&[u8]>) -> i32 {
    let name = match kind {
        ASC_TWIN_UB_SCALAR_READ => "LocalTensor::GetValue",
        ASC_TWIN_UB_SCALAR_WRITE => "LocalTensor::SetValue",
        _ => "vector instruction",
    };
    with_ctx(name, |ctx| {
        in_ub(ctx, kind, ub, bytes)?;
        check_ub_access(ctx, kind, ub, bytes, stored)?;
        match kind {
            ASC_TWIN_UB_SCALAR_WRITE | ASC_TWIN_UB_VECTOR_WRITE => {
                crate::lazy::before_ub_write(&mut ctx.lazy, ub as usize, bytes as usize)
            }
            _ => crate::lazy::before_ub_read(&mut ctx.lazy, ub as usize, bytes as usize),
        }
        Ok(())
    })
}

/// Every UB access the C++ side reports is bounded here, whatever its tensor claims
/// (`LocalTensor::SetSize` is unchecked, as in AscendC): the access itself happens only after
/// the report returns, so nothing outside the block's Unified Buffer is ever touched.
fn in_ub(ctx: &BlockCtx, kind: u32, ub: *const u8, bytes: u64) -> Result<(), FaultKind> {
    let (a, base) = (ub as usize, ctx.ub as usize);
    let end = a.checked_add(bytes as usize);
    if a < base || end.is_none_or(|e| e > base + ctx.ub_len) {
        return Err(FaultKind::Misuse {
            reason: format!(
                "{} UB bytes outside the {}-byte Unified Buffer",
                if kind == ASC_TWIN_UB_SCALAR_WRITE || kind == ASC_TWIN_UB_VECTOR_WRITE {
                    "writes"
                } else {
                    "reads"
                },
                ctx.ub_len
            ),
            value: (a.wrapping_sub(base) as u64).wrapping_add(bytes),
            limit: ctx.ub_len as u64,
        });
    }
    Ok(())
}

/// The pipe-hazard check of a UB access (before deferred staging is updated for it, so that
/// the identical-bytes rule compares against the bytes UB really holds).
fn check_ub_access(
    ctx: &mut BlockCtx,
    kind: u32,
    ub: *const u8,
    bytes: u64,
    stored: Option<&[u8]>,
) -> Result<(), FaultKind> {
    let Some(hz) = ctx.hazards.as_mut() else {
        return Ok(());
    };
    let lazy = &mut ctx.lazy;
    let base = ctx.ub as usize;
    let a = ub as usize;
    if a < base || a + bytes as usize > base + ctx.ub_len {
        return Ok(()); // bounds are the tensor's job
    }
    let access = match kind {
        ASC_TWIN_UB_SCALAR_READ => crate::hazard::Access::ScalarRead,
        ASC_TWIN_UB_SCALAR_WRITE => crate::hazard::Access::ScalarWrite,
        ASC_TWIN_UB_VECTOR_WRITE => crate::hazard::Access::VWrite,
        _ => crate::hazard::Access::VRead,
    };
    let off = a - base;
    // A store of the bytes UB already holds changes nothing in any order.
    let mut identical = |s: usize, e: usize| {
        let Some(v) = stored else {
            return false;
        };
        if s < off || e > off + bytes as usize || v.is_empty() {
            return false;
        }
        // A deferred load of these bytes is what UB holds: materialise it to compare.
        crate::lazy::before_ub_read(lazy, base + s, e - s);
        // SAFETY: [s, e) lies inside [off, off + bytes), inside the UB (checked above); only
        // this block touches its UB.
        let now = unsafe { std::slice::from_raw_parts((base + s) as *const u8, e - s) };
        if kind == ASC_TWIN_UB_VECTOR_WRITE {
            // Byte i of the range holds byte (i - off) % elem of the element.
            now.iter()
                .enumerate()
                .all(|(i, &b)| b == v[(s + i - off) % v.len()])
        } else {
            now == &v[s - off..e - off]
        }
    };
    hz.access(access, off, off + bytes as usize, &mut identical)
        .map_err(|reason| FaultKind::PipeHazard { reason })
}

/// Mirror of `struct AscTwinUbRange` in asc_twin_abi.h: one UB byte range a vector instruction
/// reads or writes.
#[repr(C)]
pub struct AscTwinUbRange {
    /// [`ASC_TWIN_UB_VECTOR_WRITE`] or [`ASC_TWIN_UB_VECTOR_READ`] (any other value reads).
    pub kind: u32,
    /// Padding (keeps the C layout explicit).
    pub reserved: u32,
    /// First byte.
    pub ub: *const u8,
    /// Length in bytes.
    pub bytes: u64,
}

// The same numbers as the header's ASC_TWIN_PIN_* (64-bit hosts).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<AscTwinUbRange>() == 24);
    assert!(offset_of!(AscTwinUbRange, kind) == 0);
    assert!(offset_of!(AscTwinUbRange, reserved) == 4);
    assert!(offset_of!(AscTwinUbRange, ub) == 8);
    assert!(offset_of!(AscTwinUbRange, bytes) == 16);
};

/// The UB footprint of one vector instruction, `n` ranges: reads are listed before writes, as
/// the vector unit reads its sources before it writes its destination. One runtime call for
/// the whole list.
///
/// # Safety
/// `list` must point to `n` valid ranges.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_ub_accesses(list: *const AscTwinUbRange, n: u64) -> i32 {
    if n == 0 {
        return 0;
    }
    // SAFETY: the caller passes `n` valid ranges (non-null: n > 0).
    let list = unsafe { std::slice::from_raw_parts(list, n as usize) };
    with_ctx("vector instruction", |ctx| {
        for r in list {
            let kind = if r.kind == ASC_TWIN_UB_VECTOR_WRITE {
                ASC_TWIN_UB_VECTOR_WRITE
            } else {
                ASC_TWIN_UB_VECTOR_READ
            };
            in_ub(ctx, kind, r.ub, r.bytes)?;
            check_ub_access(ctx, kind, r.ub, r.bytes, None)?;
            if kind == ASC_TWIN_UB_VECTOR_WRITE {
                crate::lazy::before_ub_write(&mut ctx.lazy, r.ub as usize, r.bytes as usize);
            } else {
                crate::lazy::before_ub_read(&mut ctx.lazy, r.ub as usize, r.bytes as usize);
            }
        }
        Ok(())
    })
}

/// Mirror of `struct AscTwinVecRegs` in asc_twin_abi.h: the registers of one core that AscendC
/// kernels program (the vector mask, its mode, the compare mask, and DataCopyPad's pad value).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AscTwinVecRegs {
    /// The vector mask register: `[low, high]` (normal mode: lane bits; counter mode: the
    /// element count in the low word).
    pub mask: [u64; 2],
    /// 1 in counter mode (SetMaskCount), 0 in normal mode (SetMaskNorm).
    pub counter: u32,
    /// 1 when an API left the mask register in a state the docs do not define (the next
    /// instruction that uses it without setting it first is an error).
    pub mask_undefined: u32,
    /// The compare-mask register (Compare to register, Select in VSEL_CMPMASK_SPR mode).
    pub cmp: [u64; 2],
    /// DEQSCALE as set by `SetDeqScale(half)` (used by Cast int32 -> half).
    pub deq: f32,
    /// 1 once `SetDeqScale` has been called in this kernel (its reset value is not documented).
    pub deq_set: u32,
    /// Raw bits of the last count-form ReduceSum's result (`GetReduceRepeatSumSpr`).
    pub acc: u64,
    /// The pad-value register DataCopyPad GM -> UB pads from (`SetPadValue`, or a DataCopyPad
    /// with `isPad`): raw bits of one element.
    pub pad_value: u64,
    /// `sizeof(T)` of the value the pad register was set with; 0 until it is set in this kernel
    /// (its reset value is not documented: padding from it is then unspecified).
    pub pad_size: u32,
    /// Keeps the struct a whole number of 8-byte words, as in C.
    pub pad_reserved: u32,
    /// VMS4_SR: how many elements of each of its four lists the last `MrgSort` consumed, 16
    /// bits per list, list 1 lowest (`GetMrgSortResult`).
    pub vms4_sr: u64,
    /// 1 when the last `MrgSort` ran in exhausted-suspension mode, the only mode after which
    /// the docs let a kernel read VMS4_SR; 0 before any, or after one without it.
    pub vms4_set: u32,
    /// Keeps the struct a whole number of 8-byte words, as in C.
    pub vms4_reserved: u32,
}

// The same numbers as the header's ASC_TWIN_PIN_*.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<AscTwinVecRegs>() == 88);
    assert!(offset_of!(AscTwinVecRegs, mask) == 0);
    assert!(offset_of!(AscTwinVecRegs, counter) == 16);
    assert!(offset_of!(AscTwinVecRegs, mask_undefined) == 20);
    assert!(offset_of!(AscTwinVecRegs, cmp) == 24);
    assert!(offset_of!(AscTwinVecRegs, deq) == 40);
    assert!(offset_of!(AscTwinVecRegs, deq_set) == 44);
    assert!(offset_of!(AscTwinVecRegs, acc) == 48);
    assert!(offset_of!(AscTwinVecRegs, pad_value) == 56);
    assert!(offset_of!(AscTwinVecRegs, pad_size) == 64);
    assert!(offset_of!(AscTwinVecRegs, pad_reserved) == 68);
    assert!(offset_of!(AscTwinVecRegs, vms4_sr) == 72);
    assert!(offset_of!(AscTwinVecRegs, vms4_set) == 80);
    assert!(offset_of!(AscTwinVecRegs, vms4_reserved) == 84);
};

impl AscTwinVecRegs {
    /// A kernel starts in normal mode with every lane enabled (what AscendC's kernel entry
    /// leaves, and what `ResetMask` restores) and a cleared compare mask.
    pub const AT_KERNEL_START: AscTwinVecRegs = AscTwinVecRegs {
        mask: [u64::MAX, u64::MAX],
        counter: 0,
        mask_undefined: 0,
        cmp: [0, 0],
        deq: 0.0,
        deq_set: 0,
        acc: 0,
        pad_value: 0,
        pad_size: 0,
        pad_reserved: 0,
        vms4_sr: 0,
        vms4_set: 0,
        vms4_reserved: 0,
    };
}

/// The running block's vector registers; null outside a block.
#[no_mangle]
pub extern "C" fn asc_twin_vec_regs() -> *mut AscTwinVecRegs {
    let p = block::current();
    if p.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the context of the running block is live for the whole block (see with_ctx);
    // only this block's code, on this thread, touches its registers. A raw pointer, not a
    // reference: with_ctx later borrows the whole context while the C++ side keeps this.
    unsafe { std::ptr::addr_of_mut!((*p).vec_regs) }
}

/// Base address and size of the running block's Unified Buffer.
///
/// # Safety
/// `base` and `size` must be writable.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_ub_arena(base: *mut *mut u8, size: *mut u64) -> i32 {
    with_ctx("TPipe", |ctx| {
        // SAFETY: the caller passes writable out-pointers.
        unsafe {
            *base = ctx.ub;
            *size = ctx.ub_len as u64;
        }
        Ok(())
    })
}

/// A misuse detected by the twin's C++ headers: `op` an `ASC_TWIN_OP_*` ([`fail_op_name`]).
///
/// # Safety
/// `message` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_fail(
    op: u32,
    message: *const std::ffi::c_char,
    value: u64,
    limit: u64,
) -> i32 {
    let name = fail_op_name(op);
    // SAFETY: the caller passes a NUL-terminated string (copied here).
    let reason = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    let rc = with_ctx(name, |_| {
        Err(FaultKind::Misuse {
            reason,
            value,
            limit,
        })
    });
    rc.max(ASC_TWIN_FAULT)
}

/// AscendC::Trap(): the kernel stops its core on purpose (the CPU mode of the real toolkit treats
/// it as a failed assert); the block ends with [`FaultKind::Trap`].
#[no_mangle]
pub extern "C" fn asc_twin_trap() -> i32 {
    with_ctx("Trap", |_| Err(FaultKind::Trap)).max(ASC_TWIN_FAULT)
}

/// Runs `f` with the running block's context if there is one (for calls that cannot fail).
fn peek<R>(f: impl FnOnce(&mut BlockCtx) -> R) -> Option<R> {
    let p = block::current();
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `with_ctx`.
    let ctx = unsafe { &mut *p };
    let depth: *const std::sync::atomic::AtomicU32 = &ctx.status.depth;
    // SAFETY: the context holds its status for the whole call (see `with_ctx`).
    let _runtime = RuntimeCall::enter(unsafe { &*depth });
    catch_unwind(AssertUnwindSafe(|| f(ctx))).ok()
}

/// GetBlockIdx.
#[no_mangle]
pub extern "C" fn asc_twin_block_idx() -> i64 {
    peek(|c| c.block as i64).unwrap_or(0)
}

/// GetBlockNum.
#[no_mangle]
pub extern "C" fn asc_twin_block_num() -> i64 {
    peek(|c| c.launch.block_dim as i64).unwrap_or(0)
}

/// GetSystemCycle: a monotonic 50 MHz counter ([`crate::SYSTEM_CYCLE_HZ`]) since the twin was
/// created, as on Atlas A2. A preemption point: a kernel spinning on the clock gives way.
#[no_mangle]
pub extern "C" fn asc_twin_system_cycle() -> i64 {
    peek(|c| {
        c.tick();
        let ns = c.twin.epoch.elapsed().as_nanos() as u64;
        (ns / (1_000_000_000 / crate::SYSTEM_CYCLE_HZ)) as i64
    })
    .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceConfig, Twin, TwinError};

    /// A kernel whose twin call panics inside the twin's Rust code.
    unsafe extern "C" fn panicking_kernel(_args: *mut u8) {
        with_ctx("TestCall", |_| panic!("injected twin bug"));
    }

    /// A kernel that only asks for its block index (a call that cannot fail).
    unsafe extern "C" fn quiet_kernel(_args: *mut u8) {
        asc_twin_block_idx();
    }

    #[test]
    fn a_panic_inside_a_twin_call_is_a_named_fault_not_an_abort() {
        let twin = Twin::new();
        let dev = twin.device(2, DeviceConfig::default()).unwrap();
        // SAFETY: the kernels take no arguments and touch no memory.
        let r = unsafe { dev.launch("panicky", panicking_kernel, 3, std::ptr::null_mut()) };
        match r {
            Err(TwinError::Fault(f)) => {
                assert_eq!(
                    (f.kernel.as_str(), f.rank, f.op.as_str()),
                    ("panicky", 2, "TestCall")
                );
                assert!(f.block < 3);
                match &f.kind {
                    FaultKind::TwinPanic { message } => {
                        assert!(message.contains("injected twin bug"), "{message}")
                    }
                    k => panic!("{k:?}"),
                }
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        // SAFETY: as above.
        unsafe { dev.launch("quiet", quiet_kernel, 3, std::ptr::null_mut()) }.unwrap();
    }

    /// One entry of `asc_twin_abi_facts` (src/abi_probe.cpp): a C expression and its value.
    #[repr(C)]
    struct AbiFact {
        name: *const std::ffi::c_char,
        value: i64,
    }

    // src/abi_probe.cpp, built by build.rs into a library only this test links.
    #[link(name = "ascendc_twin_abi_probe", kind = "static")]
    extern "C" {
        /// The first of `asc_twin_abi_fact_count` facts.
        static asc_twin_abi_facts: AbiFact;
        static asc_twin_abi_fact_count: u64;
        /// Reports ASC_TWIN_OP_DATA_COPY_PAD through asc_twin_fail, as the headers do.
        fn asc_twin_probe_fail(args: *mut u8);
        /// Throws an `int`.
        fn asc_twin_probe_throw(args: *mut u8);
    }

    /// Every code, constant and layout number of the C ABI, as the C++ compiler sees it.
    fn c_facts() -> Vec<(String, i64)> {
        // SAFETY: abi_probe.cpp defines `asc_twin_abi_fact_count` entries from
        // `asc_twin_abi_facts` on, static data whose names are NUL-terminated literals.
        unsafe {
            let first = std::ptr::addr_of!(asc_twin_abi_facts);
            std::slice::from_raw_parts(first, asc_twin_abi_fact_count as usize)
                .iter()
                .map(|f| {
                    let name = std::ffi::CStr::from_ptr(f.name).to_string_lossy();
                    (name.into_owned(), f.value)
                })
                .collect()
        }
    }

    /// The same facts, by the same names, as the Rust mirror has them.
    fn rust_facts() -> Vec<(String, i64)> {
        use std::mem::{offset_of, size_of};
        let mut facts = Vec::new();
        macro_rules! codes {
            ($($c:ident),* $(,)?) => {
                $(facts.push((stringify!($c).to_string(), $c as i64));)*
            };
        }
        macro_rules! layout {
            ($c:literal, $t:ty: $($f:ident),* $(,)?) => {
                facts.push((format!("sizeof({})", $c), size_of::<$t>() as i64));
                $(facts.push((
                    format!("offsetof({}, {})", $c, stringify!($f)),
                    offset_of!($t, $f) as i64,
                ));)*
            };
        }
        codes!(
            ASC_TWIN_OK,
            ASC_TWIN_FAULT,
            ASC_TWIN_NO_BLOCK,
            ASC_TWIN_EVENT_FAILED,
            ASC_TWIN_BLOCK_OK,
            ASC_TWIN_BLOCK_ABORTED,
            ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION,
            ASC_TWIN_BLOCK_STACK_OVERFLOW,
            ASC_TWIN_DATA_COPY,
            ASC_TWIN_DATA_COPY_STRIDED,
            ASC_TWIN_DATA_COPY_PAD,
            ASC_TWIN_GM_TO_UB,
            ASC_TWIN_UB_TO_GM,
            ASC_TWIN_DT_UNSUPPORTED,
            ASC_TWIN_DT_F32,
            ASC_TWIN_DT_F16,
            ASC_TWIN_DT_BF16,
            ASC_TWIN_DT_I32,
            ASC_TWIN_DT_I16,
            ASC_TWIN_DT_I8,
            ASC_TWIN_DT_OTHER_INT,
            ASC_TWIN_ATOMIC_NONE,
            ASC_TWIN_ATOMIC_ADD,
            ASC_TWIN_ATOMIC_MAX,
            ASC_TWIN_ATOMIC_MIN,
            ASC_TWIN_SET_FLAG,
            ASC_TWIN_WAIT_FLAG,
            ASC_TWIN_PIPE_BARRIER,
            ASC_TWIN_QUEUE_SET_FLAG,
            ASC_TWIN_QUEUE_WAIT_FLAG,
            ASC_TWIN_ALLOC_EVENT,
            ASC_TWIN_RELEASE_EVENT,
            ASC_TWIN_FETCH_EVENT,
            ASC_TWIN_QUEUE_ALLOC_EVENT,
            ASC_TWIN_QUEUE_RELEASE_EVENT,
            ASC_TWIN_LOAD,
            ASC_TWIN_STORE,
            ASC_TWIN_UB_SCALAR_READ,
            ASC_TWIN_UB_SCALAR_WRITE,
            ASC_TWIN_UB_VECTOR_WRITE,
            ASC_TWIN_UB_VECTOR_READ,
            ASC_TWIN_CROSS_SET_FLAG,
            ASC_TWIN_CROSS_WAIT_FLAG,
            ASC_TWIN_CROSS_SYNC_ALL,
            ASC_TWIN_SYNC_ALL_FLAG,
            ASC_TWIN_SYNC_NONE,
            ASC_TWIN_SYNC_ALL_GM,
            ASC_TWIN_SYNC_IB_SET,
            ASC_TWIN_SYNC_IB_WAIT,
            ASC_TWIN_SYNC_DETERMINE_INIT,
            ASC_TWIN_SYNC_WAIT_PRE_BLOCK,
            ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK,
            ASC_TWIN_SYNC_GROUP_ARRIVE,
            ASC_TWIN_SYNC_GROUP_WAIT,
            ASC_TWIN_TPIPE_GET,
            ASC_TWIN_TPIPE_SET,
            ASC_TWIN_TPIPE_CLEAR,
            ASC_TWIN_OP_INIT_BUFFER,
            ASC_TWIN_OP_LOCAL_INDEX,
            ASC_TWIN_OP_GLOBAL_INDEX,
            ASC_TWIN_OP_QUEUE,
            ASC_TWIN_OP_DUPLICATE,
            ASC_TWIN_OP_FLAG,
            ASC_TWIN_OP_SYNC_ALL,
            ASC_TWIN_OP_ALLOCATOR,
            ASC_TWIN_OP_BUF_POOL,
            ASC_TWIN_OP_CROSS_CORE,
            ASC_TWIN_OP_DEBUG,
            ASC_TWIN_OP_VECTOR,
            ASC_TWIN_OP_DATA_COPY_PAD,
            ASC_TWIN_OP_IB_SYNC,
            ASC_TWIN_OP_DETERMINE,
            ASC_TWIN_OP_GROUP_BARRIER,
            ASC_TWIN_OP_DATA_COPY,
            ASC_TWIN_OP_LIST_TENSOR,
            ASC_TWIN_OP_INIT_OUTPUT,
        );
        layout!("AscTwinCopy", AscTwinCopy: api, dir, ub, ub_cap, gm, elem_size, block_count,
            block_len, src_stride, dst_stride, is_pad, left_pad, right_pad, pad_value);
        layout!("AscTwinUbRange", AscTwinUbRange: kind, reserved, ub, bytes);
        layout!("AscTwinVecRegs", AscTwinVecRegs: mask, counter, mask_undefined, cmp, deq,
            deq_set, acc, pad_value, pad_size, pad_reserved, vms4_sr, vms4_set, vms4_reserved);
        layout!("asc_twin::ParamInfo", crate::ParamInfo: size, align);
        facts.push(("PIPE_ALL".into(), crate::pipes::PIPE_ALL as i64));
        facts.push((
            "AscendC::QUE_MAX_EVENT".into(),
            crate::pipes::EVENT_IDS as i64,
        ));
        for e in 0..crate::pipes::HARD_EVENTS {
            facts.push((
                format!("HardEvent::{}", crate::pipes::event_name(e)),
                e as i64,
            ));
        }
        facts.push(("HardEvent::MAX".into(), crate::pipes::HARD_EVENTS as i64));
        facts
    }

    #[test]
    fn the_c_side_agrees_with_the_rust_mirror() {
        let (c, rust) = (c_facts(), rust_facts());
        assert!(c.len() > 100, "{} facts from abi_probe.cpp", c.len());
        let c_map: std::collections::BTreeMap<_, _> = c.iter().cloned().collect();
        let rust_map: std::collections::BTreeMap<_, _> = rust.iter().cloned().collect();
        assert_eq!(c_map.len(), c.len(), "a name twice in abi_probe.cpp");
        assert_eq!(rust_map.len(), rust.len(), "a name twice in rust_facts");
        let differ: Vec<String> = c_map
            .keys()
            .chain(rust_map.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| c_map.get(*k) != rust_map.get(*k))
            .map(|k| format!("{k}: C {:?}, Rust {:?}", c_map.get(k), rust_map.get(k)))
            .collect();
        assert!(
            differ.is_empty(),
            "asc_twin_abi.h and abi.rs disagree:\n{}",
            differ.join("\n")
        );
    }

    #[test]
    fn a_fault_op_and_the_block_codes_cross_the_c_boundary() {
        // The C++ trampoline's codes, outside any twin (asc_twin_fail then finds no block and
        // returns ASC_TWIN_NO_BLOCK, which the headers treat as a fault too).
        // SAFETY: the kernels take no arguments and touch no memory.
        unsafe {
            let invoke = crate::sched::asc_twin_invoke;
            assert_eq!(
                invoke(quiet_kernel, std::ptr::null_mut()),
                ASC_TWIN_BLOCK_OK
            );
            let fail = invoke(asc_twin_probe_fail, std::ptr::null_mut());
            assert_eq!(fail, ASC_TWIN_BLOCK_ABORTED);
            let throw = invoke(asc_twin_probe_throw, std::ptr::null_mut());
            assert_eq!(throw, ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION);
        }
        // On a twin, the fault-op code the C++ side passed names the fault.
        let twin = Twin::new();
        let dev = twin.device(1, DeviceConfig::default()).unwrap();
        // SAFETY: as above.
        let r = unsafe { dev.launch("probe", asc_twin_probe_fail, 2, std::ptr::null_mut()) };
        match r {
            Err(TwinError::Fault(f)) => {
                assert_eq!(f.op, fail_op_name(ASC_TWIN_OP_DATA_COPY_PAD));
                assert_eq!(f.op, "DataCopyPad(GM->UB)");
                match &f.kind {
                    FaultKind::Misuse {
                        reason,
                        value: 7,
                        limit: 3,
                    } => assert!(reason.starts_with("probe:"), "{reason}"),
                    k => panic!("{k:?}"),
                }
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        // SAFETY: as above.
        let r = unsafe { dev.launch("thrower", asc_twin_probe_throw, 1, std::ptr::null_mut()) };
        match r {
            Err(TwinError::Fault(f)) => {
                assert_eq!(f.op, "kernel body");
                assert!(
                    matches!(f.kind, FaultKind::UnknownException),
                    "{:?}",
                    f.kind
                );
            }
            other => panic!("expected a fault, got {other:?}"),
        }
    }
}
