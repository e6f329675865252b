//! The C ABI the twin's AscendC headers call (asc_twin_abi.h): thin shims over the mechanisms.
//!
//! Every function returns 0 on success. On misuse it records a [`FaultKind`] for the running
//! block's launch and returns non-zero; the header then throws and the block ends. A panic in
//! the twin's Rust code is caught here (it must not unwind into C++) and becomes a
//! [`FaultKind::TwinPanic`] of the block. Every call is a preemption point (block.rs).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::atomics::{AtomicOp, AtomicType};
use crate::block::{self, BlockCtx};
use crate::error::FaultKind;
use crate::guard::{RuntimeCall, RC_STACK_OVERFLOW};
use crate::pipes::Owner;

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

/// The message of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".into())
}

/// Runs `f` with the calling block's context; records its fault under `op` and returns 1 on
/// error. Outside a kernel (no context) returns 3.
fn with_ctx(op: &str, f: impl FnOnce(&mut BlockCtx) -> Result<(), FaultKind>) -> i32 {
    let p = block::current();
    if p.is_null() {
        return 3;
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
        return 1;
    }
    let block = ctx.block;
    let r = catch_unwind(AssertUnwindSafe(|| {
        ctx.tick();
        f(ctx)
    }));
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(FaultKind::Aborted)) => 1,
        Ok(Err(kind)) => {
            launch.record(block, op, kind);
            1
        }
        Err(payload) => {
            launch.record(
                block,
                op,
                FaultKind::TwinPanic {
                    message: panic_message(payload.as_ref()),
                },
            );
            1
        }
    }
}

/// The block's coroutine returned `rc`: end-of-kernel work and checks, then the context goes.
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
        }
        if let Some(hz) = ctx.hazards.as_ref() {
            if hz.benign > 0 {
                ctx.twin
                    .benign_overwrites
                    .fetch_add(hz.benign, std::sync::atomic::Ordering::Relaxed);
            }
        }
        match rc {
            0 => flushed
                .and_then(|()| ctx.pipes.at_end())
                .map_err(|k| ("kernel end", k)),
            RC_STACK_OVERFLOW => Err(("kernel body", FaultKind::StackOverflow)),
            2 => Err(("kernel body", FaultKind::UnknownException)),
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

/// Scalar GM access (GlobalTensor::GetValue / SetValue) through the scalar data cache.
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
    let op = if is_store != 0 {
        "GlobalTensor::SetValue"
    } else {
        "GlobalTensor::GetValue"
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scalar_gm(op, gm_ptr, value, size, |ctx, addr, v| {
            crate::dcache::scalar(ctx, is_store != 0, addr, v)
        })
    }
}

/// ReadGmByPassDCache (`is_store` 0) / WriteGmByPassDCache (1) of `size` bytes at `gm_ptr`.
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
    let op = if is_store != 0 {
        "WriteGmByPassDCache"
    } else {
        "ReadGmByPassDCache"
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        scalar_gm(op, gm_ptr, value, size, |ctx, addr, v| {
            crate::dcache::bypass(ctx, is_store != 0, addr, v)
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

/// `SetAtomicAdd/Max/Min<T>` (op 1..=3, dtype code) and `SetAtomicNone` (op 0).
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
        0 => "SetAtomicNone",
        1 => "SetAtomicAdd",
        2 => "SetAtomicMax",
        _ => "SetAtomicMin",
    };
    with_ctx(name, |ctx| {
        let op = match op {
            0 => {
                ctx.atomic = None;
                return Ok(());
            }
            1 => AtomicOp::Add,
            2 => AtomicOp::Max,
            _ => AtomicOp::Min,
        };
        let ty = match dtype {
            1 => AtomicType::F32,
            2 => AtomicType::F16,
            3 => AtomicType::Bf16,
            4 => AtomicType::I32,
            5 => AtomicType::I16,
            6 => AtomicType::I8,
            7 => {
                return Err(FaultKind::UnsupportedAtomic {
                    dtype: "an integer type other than int32_t/int16_t/int8_t".into(),
                })
            }
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

/// SetFlag (op 0), WaitFlag (op 1) and PipeBarrier (op 2, `event` = pipe_t) of the kernel;
/// SetFlag (op 3) and WaitFlag (op 4) of a TQue / TQueBind's own synchronisation.
#[no_mangle]
pub extern "C" fn asc_twin_pipe(op: u32, event: u32, id: i32) -> i32 {
    let name = match op {
        0 | 3 => "SetFlag",
        1 | 4 => "WaitFlag",
        _ => "PipeBarrier",
    };
    with_ctx(name, |ctx| {
        let hz = ctx.hazards.as_deref_mut();
        match op {
            0 => ctx.pipes.set_flag(hz, Owner::Kernel, event, id),
            1 => ctx.pipes.wait_flag(hz, Owner::Kernel, event, id),
            3 => ctx.pipes.set_flag(hz, Owner::Queue, event, id),
            4 => ctx.pipes.wait_flag(hz, Owner::Queue, event, id),
            _ => {
                ctx.pipes.barrier(hz, event);
                Ok(())
            }
        }
    })
}

/// The TPipe event-id allocator: AllocEventID (op 0), ReleaseEventID (op 1), FetchEventID
/// (op 2) of the kernel; a queue taking (op 3) or giving back (op 4) an id. Returns the id
/// (ops 0, 2, 3) or 0; -1 after recording a fault.
#[no_mangle]
pub extern "C" fn asc_twin_event(op: u32, event: u32, id: i32) -> i32 {
    let name = match op {
        0 | 3 => "TPipe::AllocEventID",
        1 | 4 => "TPipe::ReleaseEventID",
        _ => "TPipe::FetchEventID",
    };
    let mut out = 0;
    let rc = with_ctx(name, |ctx| {
        out = match op {
            0 => ctx.pipes.alloc_event(Owner::Kernel, event)?,
            1 => ctx
                .pipes
                .release_event(Owner::Kernel, event, id)
                .map(|()| 0)?,
            3 => ctx.pipes.alloc_event(Owner::Queue, event)?,
            4 => ctx
                .pipes
                .release_event(Owner::Queue, event, id)
                .map(|()| 0)?,
            _ => ctx.pipes.fetch_event(event)?,
        };
        Ok(())
    });
    if rc == 0 {
        out
    } else {
        -1
    }
}

/// The block's current TPipe (what `GetTPipePtr()` returns): `set` 1 makes `pipe` current,
/// `set` 2 clears it if it is `pipe` (its destructor); returns the current one.
#[no_mangle]
pub extern "C" fn asc_twin_tpipe(set: u32, pipe: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    peek(|c| {
        match set {
            1 => c.tpipe = pipe,
            2 if c.tpipe == pipe => c.tpipe = std::ptr::null_mut(),
            _ => {}
        }
        c.tpipe
    })
    .unwrap_or(std::ptr::null_mut())
}

/// Cross-core synchronisation: `CrossCoreSetFlag<mode>(flag)` (op 0), `CrossCoreWaitFlag(flag)`
/// (op 1), hardware `SyncAll()` (op 2: a barrier over flag 14 of every block of the launch).
#[no_mangle]
pub extern "C" fn asc_twin_cross_core(op: u32, mode: u32, flag: u32) -> i32 {
    let name = match op {
        0 => "CrossCoreSetFlag",
        1 => "CrossCoreWaitFlag",
        _ => "SyncAll",
    };
    with_ctx(name, |ctx| match op {
        0 => crate::cross::set(ctx, mode, flag, name),
        1 => crate::cross::wait(ctx, mode, flag, name),
        _ => {
            let hz = ctx.hazards.as_deref_mut();
            ctx.pipes.barrier(hz, crate::pipes::PIPE_ALL);
            let f = crate::cross::SYNC_ALL_FLAG as u32;
            crate::cross::set(ctx, 0, f, "SyncAll()")?;
            crate::cross::wait(ctx, 0, f, "SyncAll()")
        }
    })
}

/// Marks `[gm, gm + len)` as flag memory for the GM race checker (the GM workspace of the
/// software SyncAll, whose cores poll each other's slots).
#[no_mangle]
pub extern "C" fn asc_twin_mark_sync(gm: *mut u8, len: u64) -> i32 {
    with_ctx("SyncAll", |ctx| {
        if ctx.twin.mem.lookup(gm as usize, len as usize).is_none() {
            return Err(FaultKind::GmOutOfBounds {
                addr: gm as u64,
                len,
            });
        }
        ctx.twin.mem.mark_sync(gm as usize, len as usize);
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
    .max(1)
}

/// A scalar or vector access to UB, for the pipe-hazard checker and deferred staging: kind 0
/// scalar read (LocalTensor::GetValue), 1 scalar write (SetValue), 2 vector write, 3 vector read.
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
    ub_access(1, ub, bytes, Some(v))
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
    ub_access(2, ub, count * elem as u64, Some(v))
}

/// `stored`: what a write stores, for the identical-bytes rule: the bytes themselves (kind 1),
/// or one element repeated over the range (kind 2).
fn ub_access(kind: u32, ub: *const u8, bytes: u64, stored: Option<&[u8]>) -> i32 {
    let name = match kind {
        0 => "LocalTensor::GetValue",
        1 => "LocalTensor::SetValue",
        _ => "vector instruction",
    };
    with_ctx(name, |ctx| {
        in_ub(ctx, kind, ub, bytes)?;
        check_ub_access(ctx, kind, ub, bytes, stored)?;
        match kind {
            1 | 2 => crate::lazy::before_ub_write(&mut ctx.lazy, ub as usize, bytes as usize),
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
                if kind == 1 || kind == 2 {
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
        0 => crate::hazard::Access::ScalarRead,
        1 => crate::hazard::Access::ScalarWrite,
        2 => crate::hazard::Access::VWrite,
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
        if kind == 2 {
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
    /// 2 vector write, 3 vector read (as in [`asc_twin_ub_access`]).
    pub kind: u32,
    /// Padding (keeps the C layout explicit).
    pub reserved: u32,
    /// First byte.
    pub ub: *const u8,
    /// Length in bytes.
    pub bytes: u64,
}

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
            let kind = if r.kind == 2 { 2 } else { 3 };
            in_ub(ctx, kind, r.ub, r.bytes)?;
            check_ub_access(ctx, kind, r.ub, r.bytes, None)?;
            if kind == 2 {
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
}

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

/// A misuse detected by the twin's C++ headers.
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
    let name = match op {
        0 => "TPipe::InitBuffer",
        1 => "LocalTensor",
        2 => "GlobalTensor",
        3 => "TQue",
        4 => "Duplicate",
        5 => "set_flag/wait_flag",
        6 => "SyncAll",
        7 => "LocalMemAllocator",
        8 => "TBufPool",
        9 => "CrossCoreSetFlag",
        10 => "printf",
        11 => "vector instruction",
        12 => "DataCopyPad(GM->UB)",
        _ => "AscendC API",
    };
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
    rc.max(1)
}

/// AscendC::Trap(): the kernel stops its core on purpose (the CPU mode of the real toolkit treats
/// it as a failed assert); the block ends with [`FaultKind::Trap`].
#[no_mangle]
pub extern "C" fn asc_twin_trap() -> i32 {
    with_ctx("Trap", |_| Err(FaultKind::Trap)).max(1)
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
}
