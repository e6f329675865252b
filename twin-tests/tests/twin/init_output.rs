//! InitOutput (kernels/init_output.cpp) against a host reference: every block fills exactly its
//! `size` elements (odd sizes, any GM offset, int32_t / float / half) and nothing around them,
//! in chunks of UB scratch past the TPipe's buffers however little of it is left; it keeps the
//! atomic mode; size 0 writes nothing. Without a TPipe, or with no UB left after the TPipe's
//! buffers, it is an error; a second InitOutput before the first's copy-out is ordered after it
//! (MTE3 -> V) is a pipe hazard on the UB scratch, and blocks filling the same GM unordered race
//! (the race checker sees each block's DMA stores).

use ascendc_twin::{args, DeviceConfig, FaultKind, KernelFault, Twin, TwinError};
use twin_tests::kernels;

/// Bytes of UB the twin's A2 AIV core has, and the end of InitOutput's scratch (the last 128
/// bytes are AscendC's message area on A2).
const UB: u32 = 192 * 1024;
const SCRATCH_END: u32 = UB - 128;
/// What GM holds where the kernel must not write.
const SENTINEL: u8 = 0x5A;
/// Elements after the blocks' slices that must stay untouched.
const GUARD: usize = 16;

#[derive(Clone, Copy, Debug)]
enum Dtype {
    I32,
    F32,
    F16,
}

impl Dtype {
    fn code(self) -> u32 {
        self as u32
    }
    fn size(self) -> usize {
        match self {
            Dtype::F16 => 2,
            _ => 4,
        }
    }
    /// The bytes of `v` as the kernel's `static_cast<T>(float)` gives them.
    fn bytes(self, v: f32) -> Vec<u8> {
        match self {
            Dtype::I32 => (v as i32).to_le_bytes().to_vec(),
            Dtype::F32 => v.to_le_bytes().to_vec(),
            Dtype::F16 => half::f16::from_f32(v).to_le_bytes().to_vec(),
        }
    }
    /// `a + b` of two elements' bytes (what an atomic add stores).
    fn add(self, a: &[u8], b: &[u8]) -> Vec<u8> {
        match self {
            Dtype::I32 => {
                let x = i32::from_le_bytes(a.try_into().unwrap());
                let y = i32::from_le_bytes(b.try_into().unwrap());
                x.wrapping_add(y).to_le_bytes().to_vec()
            }
            Dtype::F32 => {
                let x = f32::from_le_bytes(a.try_into().unwrap());
                let y = f32::from_le_bytes(b.try_into().unwrap());
                (x + y).to_le_bytes().to_vec()
            }
            Dtype::F16 => {
                let x = half::f16::from_le_bytes(a.try_into().unwrap());
                let y = half::f16::from_le_bytes(b.try_into().unwrap());
                half::f16::from_f32(x.to_f32() + y.to_f32())
                    .to_le_bytes()
                    .to_vec()
            }
        }
    }
    /// A value of the type's range that each block's `+ b` keeps exact.
    fn value(self) -> f32 {
        match self {
            Dtype::I32 => -7.0,
            Dtype::F32 => 3.25,
            Dtype::F16 => 1.5,
        }
    }
}

/// One launch of `init_output`.
#[derive(Clone, Copy, Debug)]
struct Case {
    dtype: Dtype,
    size: u32,
    mode: u32,
    reserve: u32,
    offset: u32,
    blocks: u32,
}

impl Case {
    fn new(dtype: Dtype, size: u32) -> Case {
        Case {
            dtype,
            size,
            mode: 0,
            reserve: 1024,
            offset: 0,
            blocks: 1,
        }
    }
    /// Elements of the GM buffer: the offset, every block's slice, and the guard.
    fn elems(&self) -> usize {
        self.offset as usize + self.blocks as usize * self.size as usize + GUARD
    }
}

/// Runs `c` on a GM buffer that starts as `init` (or the sentinel): the launch's result and the
/// buffer after it.
fn run(c: Case, init: Option<&[u8]>) -> (Result<(), TwinError>, Vec<u8>) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let len = c.elems() * c.dtype.size();
    let buf = dev.alloc(len).unwrap();
    match init {
        Some(bytes) => buf.write(0, bytes).unwrap(),
        None => buf.fill(0, len, SENTINEL).unwrap(),
    }
    // SAFETY: every block writes its `size` elements after `offset + b * size` elements of
    // `buf`, which holds all of them (and the guard) until the launch returns.
    let r = unsafe {
        dev.launch_kernel(
            &kernels::init_output,
            c.blocks,
            &args![
                buf.gm(0),
                c.size,
                c.dtype.code(),
                c.mode,
                c.reserve,
                c.dtype.value(),
                c.offset
            ],
        )
    };
    let mut out = vec![0u8; len];
    buf.read(0, &mut out).unwrap();
    (r, out)
}

/// What GM must hold after `c` ran on `before`, block b's slice filled with `fill(b, old)`.
fn reference(c: Case, before: &[u8], fill: impl Fn(u32, &[u8]) -> Vec<u8>) -> Vec<u8> {
    let es = c.dtype.size();
    let mut want = before.to_vec();
    for b in 0..c.blocks {
        let start = c.offset as usize + (b * c.size) as usize;
        for i in start..start + c.size as usize {
            let e = fill(b, &before[i * es..(i + 1) * es]);
            want[i * es..(i + 1) * es].copy_from_slice(&e);
        }
    }
    want
}

/// Block b's value, as the kernel makes it.
fn block_value(c: Case, b: u32) -> Vec<u8> {
    c.dtype.bytes(c.dtype.value() + b as f32)
}

/// Checks that `c` passes and fills each block's slice with its value.
fn fills(c: Case) {
    let (r, got) = run(c, None);
    r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let before = vec![SENTINEL; got.len()];
    let want = reference(c, &before, |b, _| block_value(c, b));
    first_difference(c, &got, &want);
}

/// Panics at the first element where `got` and `want` differ.
fn first_difference(c: Case, got: &[u8], want: &[u8]) {
    let es = c.dtype.size();
    if let Some(i) =
        (0..got.len() / es).find(|&i| got[i * es..(i + 1) * es] != want[i * es..(i + 1) * es])
    {
        panic!(
            "{c:?}: element {i}: got {:02x?}, want {:02x?}",
            &got[i * es..(i + 1) * es],
            &want[i * es..(i + 1) * es]
        );
    }
}

fn fault(r: Result<(), TwinError>) -> KernelFault {
    match r {
        Err(TwinError::Fault(f)) => f,
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

#[test]
fn fills_exactly_size_elements_of_odd_sizes_and_types() {
    for dtype in [Dtype::I32, Dtype::F32, Dtype::F16] {
        for size in [1, 7, 8, 1000, 100_003] {
            // Two blocks side by side, and a start that is not 32-byte aligned.
            for (blocks, offset) in [(1, 0), (2, 3)] {
                fills(Case {
                    blocks,
                    offset,
                    ..Case::new(dtype, size)
                });
            }
        }
    }
}

#[test]
fn fills_in_chunks_of_whatever_ub_the_tpipe_leaves() {
    // No buffers (the scratch is all of UB up to its end, more than one chunk of 255 blocks);
    // then 1 KB and one 32-byte block left: many chunks, and a tail.
    for reserve in [0, SCRATCH_END - 1024, SCRATCH_END - 32] {
        for dtype in [Dtype::I32, Dtype::F16] {
            for size in [7, 4099, 100_003] {
                fills(Case {
                    reserve,
                    ..Case::new(dtype, size)
                });
            }
        }
    }
}

#[test]
fn the_default_value_is_zero() {
    for dtype in [Dtype::I32, Dtype::F32, Dtype::F16] {
        let c = Case {
            mode: 3,
            blocks: 2,
            ..Case::new(dtype, 1000)
        };
        let (r, got) = run(c, None);
        r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let want = reference(c, &vec![SENTINEL; got.len()], |_, _| dtype.bytes(0.0));
        first_difference(c, &got, &want);
    }
}

#[test]
fn size_zero_writes_nothing() {
    for dtype in [Dtype::I32, Dtype::F32, Dtype::F16] {
        let (r, got) = run(Case::new(dtype, 0), None);
        r.unwrap();
        assert!(got.iter().all(|&x| x == SENTINEL), "{dtype:?}");
    }
}

#[test]
fn it_keeps_the_atomic_mode() {
    // InitOutput does not touch the atomic mode: under SetAtomicAdd its copies add the value.
    for dtype in [Dtype::I32, Dtype::F32, Dtype::F16] {
        let c = Case {
            mode: 1,
            blocks: 2,
            ..Case::new(dtype, 1001)
        };
        let before: Vec<u8> = (0..c.elems())
            .flat_map(|i| dtype.bytes((i % 50) as f32))
            .collect();
        let (r, got) = run(c, Some(&before));
        r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let want = reference(c, &before, |b, old| dtype.add(old, &block_value(c, b)));
        first_difference(c, &got, &want);
    }
}

#[test]
fn it_needs_a_tpipe() {
    let (r, got) = run(
        Case {
            mode: 2,
            ..Case::new(Dtype::I32, 8)
        },
        None,
    );
    let f = fault(r);
    assert_eq!(f.op, "InitOutput", "{f}");
    assert!(
        matches!(&f.kind, FaultKind::Misuse { reason, .. } if reason.contains("TPipe")),
        "{f}"
    );
    assert!(got.iter().all(|&x| x == SENTINEL));
}

#[test]
fn no_ub_left_after_the_tpipe_buffers_is_an_error() {
    for reserve in [SCRATCH_END, UB] {
        let (r, got) = run(
            Case {
                reserve,
                ..Case::new(Dtype::F32, 8)
            },
            None,
        );
        let f = fault(r);
        assert_eq!(f.op, "InitOutput", "{f}");
        assert!(
            matches!(&f.kind, FaultKind::Misuse { value, limit, .. }
                if *value == u64::from(reserve) && *limit == u64::from(SCRATCH_END)),
            "{f}"
        );
        assert!(got.iter().all(|&x| x == SENTINEL));
    }
}

#[test]
fn a_second_fill_before_the_first_copy_out_is_ordered_is_a_pipe_hazard() {
    let c = Case {
        mode: 4,
        ..Case::new(Dtype::I32, 100)
    };
    let f = fault(run(c, None).0);
    let FaultKind::PipeHazard { reason } = &f.kind else {
        panic!("expected a pipe hazard, got {f}");
    };
    assert!(
        reason.contains("V overwrites") && reason.contains("MTE3 may still be reading"),
        "{reason}"
    );
    // With MTE3 -> V between them, the second value lands.
    let c = Case { mode: 5, ..c };
    let (r, got) = run(c, None);
    r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let want = reference(c, &vec![SENTINEL; got.len()], |b, _| {
        Dtype::I32.bytes(Dtype::I32.value() + b as f32 + 1.0)
    });
    first_difference(c, &got, &want);
}

#[test]
fn its_copies_are_the_calling_blocks_dma_stores_for_the_race_checker() {
    // Every block fills block 0's elements: with values of their own, unordered, a race;
    // all with the same value, harmless overwrites the checker counts.
    let c = Case {
        mode: 6,
        blocks: 4,
        ..Case::new(Dtype::F32, 100)
    };
    let f = fault(run(c, None).0);
    let FaultKind::GmRace { reason } = &f.kind else {
        panic!("expected a GM race, got {f}");
    };
    assert!(reason.contains("write after write"), "{reason}");
    assert_eq!(f.op, "DataCopyPad(UB->GM)", "{f}");

    let c = Case { mode: 7, ..c };
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let buf = dev.alloc(c.elems() * 4).unwrap();
    // SAFETY: every block writes the first 100 floats of `buf`, alive until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::init_output,
            c.blocks,
            &args![
                buf.gm(0),
                c.size,
                c.dtype.code(),
                7u32,
                c.reserve,
                2.5f32,
                0u32
            ],
        )
    }
    .unwrap();
    let mut got = vec![0f32; c.elems()];
    buf.read(0, bytemuck::cast_slice_mut(&mut got)).unwrap();
    assert!(got[..100].iter().all(|&x| x == 2.5), "{got:?}");
    assert!(got[100..].iter().all(|&x| x == 0.0), "{got:?}");
    assert_eq!(twin.benign_gm_overwrites(), u64::from(c.blocks - 1));
}

#[test]
fn past_the_end_of_gm_is_an_out_of_bounds_copy() {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let buf = dev.alloc(100 * 4).unwrap();
    // SAFETY: the kernel is told to write 101 int32 into a 100-element buffer; the twin's DMA
    // checks stop it before it writes outside the allocation.
    let r = unsafe {
        dev.launch_kernel(
            &kernels::init_output,
            1,
            &args![buf.gm(0), 101u32, 0u32, 0u32, 1024u32, 1.0f32, 0u32],
        )
    };
    let f = fault(r);
    assert!(matches!(f.kind, FaultKind::GmOutOfBounds { .. }), "{f}");
    assert_eq!(f.op, "DataCopyPad(UB->GM)", "{f}");
}
