//! Kernels with ordinary signatures (GM pointers, scalars of every width, a struct of more than
//! 8 KB by value) launched from Rust with typed arguments: every argument arrives intact, and
//! arguments that do not match the kernel's parameters are refused before anything runs.

use twin_tests::util as common;

use aiv_comm::ffi;
use aiv_comm::{BufferAccess, World};
use ascendc_twin::{args, ArgBlock, GmAddr, TwinError};
use twin_tests::args::{AivProbeTiling, AIV_PROBE_SLOTS, AIV_PROBE_WORDS};
use twin_tests::kernels;

fn tiling() -> AivProbeTiling {
    let mut t = AivProbeTiling {
        rows: 17,
        cols: 4099,
        ..Default::default()
    };
    for (i, w) in t.words.iter_mut().enumerate() {
        *w = (i as u64 + 1) * 0x1_0000_0001;
    }
    t
}

/// Arguments of `aiv_args_probe(GM_ADDR out, bool, uint16_t, uint32_t, int64_t, float,
/// AivProbeTiling, uint8_t, GM_ADDR)`: each block writes what it received into `out`, 128 bytes
/// a block ([`expected`]).
pub(super) fn probe_args(out: GmAddr, other: GmAddr) -> ArgBlock {
    args![
        out,
        true,
        0xBEEFu16,
        123_456u32,
        -(1i64 << 40) - 5,
        2.5f32,
        tiling(),
        0xA5u8,
        other
    ]
}

/// What each block must have written.
fn expected(blocks: u32, other: GmAddr) -> Vec<i64> {
    let t = tiling();
    let sum = t.words.iter().fold(0u64, |a, &w| a.wrapping_add(w)) as i64;
    let mut v = vec![
        1,
        0xBEEF,
        123_456,
        -(1i64 << 40) - 5,
        2500,
        sum,
        t.words[0] as i64,
        t.words[AIV_PROBE_WORDS as usize - 1] as i64,
        17,
        4099,
        0xA5,
        other.0 as i64,
        blocks as i64,
    ];
    v.resize(AIV_PROBE_SLOTS as usize, 0);
    v
}

fn read_slots(buf: &ascendc_twin::GmBuffer, block: u32) -> Vec<i64> {
    let mut bytes = vec![0u8; AIV_PROBE_SLOTS as usize * 8];
    buf.read(block as usize * bytes.len(), &mut bytes).unwrap();
    bytes
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn the_argument_block_has_the_bisheng_layout_and_matches_the_kernel() {
    let k = &kernels::aiv_args_probe;
    let sizes: Vec<u32> = k.params().iter().map(|p| p.size).collect();
    let aligns: Vec<u32> = k.params().iter().map(|p| p.align).collect();
    // As the C++ compiler sees the kernel's parameters.
    assert_eq!(sizes, [8, 1, 2, 4, 8, 4, 8808, 1, 8]);
    assert_eq!(aligns, [8, 1, 2, 4, 8, 4, 8, 1, 8]);
    // bool and uint16_t take 4-aligned slots; the struct is copied whole.
    let a = probe_args(GmAddr(64), GmAddr(128));
    assert_eq!(a.offsets(), [0, 8, 12, 16, 24, 32, 40, 8848, 8856]);
    assert_eq!(a.as_bytes().len(), 8864);
    assert_eq!(k.args_bytes(), 8864);
    k.check_args(&a).unwrap();
}

#[test]
fn every_argument_of_an_ordinary_signature_arrives_intact() {
    let dev = common::device(0);
    let blocks = 3;
    let out = dev
        .alloc(blocks as usize * AIV_PROBE_SLOTS as usize * 8)
        .unwrap();
    let other = dev.alloc(64).unwrap();
    let a = probe_args(out.gm(0), other.gm(32));
    // SAFETY: aiv_args_probe writes AIV_PROBE_SLOTS int64 per block into `out` and only
    // passes `other` through; both live until the launch returns.
    unsafe { dev.launch_kernel(&kernels::aiv_args_probe, blocks, &a) }.unwrap();
    for b in 0..blocks {
        assert_eq!(
            read_slots(&out, b),
            expected(blocks, other.gm(32)),
            "block {b}"
        );
    }
}

#[test]
fn mismatched_arguments_are_refused_before_anything_runs() {
    let dev = common::device(0);
    let out = dev.alloc(AIV_PROBE_SLOTS as usize * 8).unwrap();
    let launch = |a: &ArgBlock| {
        // SAFETY: refused before the kernel runs (or, if it ran, it writes only `out`).
        unsafe { dev.launch_kernel(&kernels::aiv_args_probe, 1, a) }
    };
    // One parameter short.
    let short = args![out.gm(0), true, 1u16, 2u32, 3i64, 1.0f32, tiling(), 7u8];
    let e = launch(&short).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, TwinError::Args { .. }), "{e:?}");
    assert!(
        msg.contains("aiv_args_probe") && msg.contains("takes 9 parameters"),
        "{msg}"
    );
    // A u32 where the kernel takes a uint16_t.
    let wrong = args![
        out.gm(0),
        true,
        1u32,
        2u32,
        3i64,
        1.0f32,
        tiling(),
        7u8,
        GmAddr::NULL
    ];
    let msg = launch(&wrong).unwrap_err().to_string();
    assert!(msg.contains("parameter 2 is 2 bytes"), "{msg}");
    // Nothing ran.
    assert!(read_slots(&out, 0).iter().all(|&v| v == 0));
    // Our own kernels take one GM address: a struct by value in its place is refused too.
    // SAFETY: refused before the kernel runs.
    let e = unsafe {
        dev.launch_kernel(
            &ffi::kernels::aiv_copy,
            1,
            &args![ffi::AivCopyArgs::default()],
        )
    }
    .unwrap_err();
    assert!(e.to_string().contains("parameter 0 is 8 bytes"), "{e}");
}

#[test]
fn a_stream_launch_with_typed_arguments_is_ordered_with_host_copies() {
    let world = World::sim(2).unwrap();
    let res = world.run(|c| -> aiv_comm::Result<Vec<i64>> {
        let out = c.alloc(2 * AIV_PROBE_SLOTS as usize * 8)?;
        let other = c.alloc(64)?;
        let a = probe_args(out.gm(0), other.gm(0));
        // A mismatched launch is an error at once, and leaves the communicator usable.
        let bad = args![out.gm(0)];
        // SAFETY: refused before anything is enqueued.
        let e = unsafe { c.stream().launch(&kernels::aiv_args_probe, 2, bad, &[]) }.unwrap_err();
        assert!(e.to_string().contains("takes 9 parameters"), "{e}");
        // SAFETY: aiv_args_probe writes 2 blocks' slots into `out` (claimed for writing).
        unsafe {
            c.stream().launch(
                &kernels::aiv_args_probe,
                2,
                a,
                &[BufferAccess::Write(&out), BufferAccess::Read(&other)],
            )?
        };
        // The host read waits for the launch (no synchronize needed).
        let v: Vec<i64> = out.to_vec::<i64>()?;
        assert_eq!(
            &v[..AIV_PROBE_SLOTS as usize],
            expected(2, other.gm(0)).as_slice()
        );
        c.synchronize()?;
        Ok(v)
    });
    for r in res {
        let v = r.unwrap();
        assert_eq!(v[AIV_PROBE_SLOTS as usize + 12], 2);
    }
}

/// What the example of `CommStream::launch`'s documentation asserted when it launched this
/// kernel (the example now launches a user's kernel it is given).
#[test]
fn the_stream_launch_example_with_the_probe_kernel() {
    let world = World::sim(1).unwrap();
    let comm = &world.comms()[0];
    let out = comm.alloc(2 * 128).unwrap();
    // aiv_args_probe(GM_ADDR out, bool, uint16_t, uint32_t, int64_t, float, AivProbeTiling,
    //                uint8_t, GM_ADDR): each block writes what it received into `out`.
    let a = args![
        out.gm(0),
        true,
        7u16,
        42u32,
        -1i64,
        0.5f32,
        AivProbeTiling::default(),
        1u8,
        out.gm(0)
    ];
    // SAFETY: aiv_args_probe writes 128 bytes per block into `out`, claimed for writing.
    unsafe {
        comm.stream()
            .launch(&kernels::aiv_args_probe, 2, a, &[BufferAccess::Write(&out)])
            .unwrap()
    };
    let v = out.to_vec::<i64>().unwrap(); // waits for the launch
    assert_eq!((v[2], v[16 + 2]), (42, 42)); // the uint32_t, as both blocks saw it
}
