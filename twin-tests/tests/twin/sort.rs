//! Sort32, MrgSort (+ GetMrgSortResult) and ReducePairElem on the twin (kernels/sort.cpp),
//! against host references written here from the AscendC docs, independently of the twin's C++:
//!
//! - Sort32: each group of 32 scores, with its uint32 indexes, becomes 32 8-byte (score, index)
//!   structures in descending score order; equal scores keep their input order.
//! - MrgSort: the valid lists (validBit 3, 7, 15), each sorted, become one list in descending
//!   order; equal scores come in list order, then position order (so the result is the stable
//!   descending sort of the lists' concatenation); with exhausted suspension it stops when a list
//!   runs out, and GetMrgSortResult says how many structures of each list it took.
//! - ReducePairElem<SUM>: result p of repeat r is lane 2p + lane 2p+1 of the repeat, a
//!   disabled lane counting as +0 and a wholly disabled pair leaving the destination alone.
//!
//! Misuse the docs name is a fault; a source loaded by MTE2 without a flag is a pipe hazard.
//! Where the docs are silent, the tests pin the twin's documented assumptions (vec_sort.h): NaN
//! sorts above +inf, half structures have zeroed reserved bytes, +0 stands in for a disabled lane.

use ascendc_twin::{args, Device, FaultKind, Kernel, Twin, TwinError};
use half::f16;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::cmp::Ordering;
use twin_tests::kernels;

// ---------------------------------------------------------------- element types

/// A score type of the sort instructions (half or float).
trait Score: Copy + std::fmt::Debug {
    const SIZE: usize;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
    /// Sum as the vector unit computes it (IEEE, rounded once to the type).
    fn add(self, other: Self) -> Self;
}
impl Score for f32 {
    const SIZE: usize = 4;
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f32::from_le_bytes(b[..4].try_into().unwrap())
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
}
impl Score for f16 {
    const SIZE: usize = 2;
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f16::from_le_bytes(b[..2].try_into().unwrap())
    }
    fn add(self, other: Self) -> Self {
        // Exact in f32 (f32 holds any sum of two halves), then rounded once to half.
        f16::from_f32(f16::to_f32(self) + f16::to_f32(other))
    }
}

/// Descending score order; NaN above everything (the twin's assumption), equal scores equal.
fn desc<T: Score>(a: T, b: T) -> Ordering {
    let (x, y) = (a.to_f32(), b.to_f32());
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => y.partial_cmp(&x).unwrap(),
    }
}

/// Random scores with many ties, some signed zeros and infinities.
fn scores<T: Score>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| {
            let v = match rng.gen_range(0..20) {
                0 => 0.0,
                1 => -0.0,
                2 => f32::INFINITY,
                3 => f32::NEG_INFINITY,
                4..=9 => rng.gen_range(-4..4) as f32 * 0.5,
                _ => rng.gen_range(-1000.0f32..1000.0),
            };
            T::from_f32(v)
        })
        .collect()
}

/// One (score, index) structure: the score's bytes, zeros up to byte 4, the index.
fn structure<T: Score>(score: T, index: u32) -> Vec<u8> {
    let mut s = Vec::with_capacity(8);
    score.put(&mut s);
    s.resize(4, 0);
    s.extend_from_slice(&index.to_le_bytes());
    s
}

/// The stable descending sort of (score, index) pairs, as structures.
fn sorted<T: Score>(items: &[(T, u32)]) -> Vec<(T, u32)> {
    let mut v = items.to_vec();
    v.sort_by(|a, b| desc(a.0, b.0));
    v
}

fn to_bytes<T: Score>(items: &[(T, u32)]) -> Vec<u8> {
    items.iter().flat_map(|&(s, i)| structure(s, i)).collect()
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn up32(n: usize) -> usize {
    n.div_ceil(32) * 32
}

// ---------------------------------------------------------------- launching

fn device() -> (Twin, Device) {
    let twin = Twin::new();
    let dev = twin.device(0, Default::default()).unwrap();
    (twin, dev)
}

/// Launches `k` on one block with one GM buffer per entry of `bufs` (each at least 32 bytes),
/// in that order, and returns the buffers afterwards.
fn launch(k: &Kernel, bufs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TwinError> {
    let (_twin, dev) = device();
    let gm: Vec<_> = bufs
        .iter()
        .map(|b| {
            let g = dev.alloc(b.len().max(32)).unwrap();
            g.write(0, b).unwrap();
            g
        })
        .collect();
    let a = match gm.len() {
        3 => args![gm[0].gm(0), gm[1].gm(0), gm[2].gm(0)],
        4 => args![gm[0].gm(0), gm[1].gm(0), gm[2].gm(0), gm[3].gm(0)],
        n => panic!("no kernel here takes {n} buffers"),
    };
    // SAFETY: every kernel of kernels/sort.cpp takes only GM addresses, one per buffer, and
    // touches no more of each than the test sized it for (the parameter block says how much);
    // the buffers live until the launch returns.
    unsafe { dev.launch_kernel(k, 1, &a) }?;
    Ok(gm
        .iter()
        .zip(bufs)
        .map(|(g, b)| {
            let mut out = vec![0u8; b.len()];
            g.read(0, &mut out).unwrap();
            out
        })
        .collect())
}

/// The fault's text, or a panic naming what came back instead.
fn fault(r: Result<Vec<Vec<u8>>, TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => f.to_string(),
        Err(e) => panic!("expected a kernel fault, got {e}"),
        Ok(_) => panic!("expected a kernel fault, the kernel ran"),
    }
}

/// A vector instruction reading UB bytes MTE2 loaded with no flag between: a pipe hazard.
fn assert_v_reads_unordered_mte2_data(r: Result<Vec<Vec<u8>>, TwinError>, api: &str) {
    match r {
        Err(TwinError::Fault(f)) => assert!(
            matches!(&f.kind, FaultKind::PipeHazard { reason }
                if reason.contains("V reads UB bytes") && reason.contains("that MTE2 wrote")),
            "{api} reading what MTE2 may still be loading: {f}"
        ),
        other => panic!("{api}: expected a pipe hazard, got {:?}", other.map(|_| ())),
    }
}

fn assert_fault(r: Result<Vec<Vec<u8>>, TwinError>, api: &str, words: &str) {
    let f = fault(r);
    assert!(f.contains(api) && f.contains(words), "{f}");
}

// ---------------------------------------------------------------- Sort32

fn sort32_kernel<T: Score>() -> &'static Kernel {
    if T::SIZE == 4 {
        &kernels::sort32_f32
    } else {
        &kernels::sort32_f16
    }
}

/// Runs Sort32 of `rep` groups of `items` in kernel case `case`; the output buffer starts as
/// `before`. Returns the output buffer.
fn sort32<T: Score>(
    items: &[(T, u32)],
    rep: u32,
    case: u32,
    before: &[u8],
) -> Result<Vec<u8>, TwinError> {
    let mut s0 = Vec::new();
    for &(s, _) in items {
        s.put(&mut s0);
    }
    let s1 = u32s(&items.iter().map(|&(_, i)| i).collect::<Vec<_>>());
    let p = u32s(&[rep, case, 0, 0, 0, 0, 0, 0]);
    let mut out = launch(sort32_kernel::<T>(), &[s0, s1, before.to_vec(), p])?;
    Ok(out.swap_remove(2))
}

fn random_items<T: Score>(rng: &mut StdRng, n: usize) -> Vec<(T, u32)> {
    scores::<T>(rng, n)
        .into_iter()
        .map(|s| (s, rng.gen()))
        .collect()
}

fn check_sort32<T: Score>(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    for rep in [1u32, 2, 3, 8, 33] {
        let items = random_items::<T>(&mut rng, 32 * rep as usize);
        let before: Vec<u8> = (0..256 * rep as usize).map(|_| rng.gen()).collect();
        let got = sort32::<T>(&items, rep, 0, &before).unwrap();
        let want: Vec<u8> = items
            .chunks(32)
            .flat_map(|g| to_bytes(&sorted(g)))
            .collect();
        assert_eq!(
            got,
            want,
            "Sort32 of {rep} groups of {}-byte scores",
            T::SIZE
        );
    }
}

#[test]
fn sort32_sorts_each_group_of_32_descending_and_keeps_equal_scores_in_input_order() {
    check_sort32::<f32>(1);
    check_sort32::<f16>(2);
}

#[test]
fn sort32_puts_nan_first() {
    // Docs silent: the twin sorts NaN above +inf (vec_sort.h).
    let mut rng = StdRng::seed_from_u64(3);
    let mut items = random_items::<f32>(&mut rng, 32);
    items[5].0 = f32::NAN;
    items[20].0 = f32::NAN;
    let got = sort32::<f32>(&items, 1, 0, &[0u8; 256]).unwrap();
    assert_eq!(got, to_bytes(&sorted(&items)));
    assert_eq!(&got[4..8], &items[5].1.to_le_bytes(), "the first NaN first");
}

#[test]
fn sort32_with_repeat_0_is_a_no_op() {
    let mut rng = StdRng::seed_from_u64(4);
    let items = random_items::<f16>(&mut rng, 32);
    let before: Vec<u8> = (0..256).map(|_| rng.gen()).collect();
    assert_eq!(sort32::<f16>(&items, 0, 0, &before).unwrap(), before);
}

#[test]
fn sort32_misuse_is_reported() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut run = |rep: u32, case| {
        let items = random_items::<f32>(&mut rng, 32 * rep as usize);
        sort32::<f32>(&items, rep, case, &vec![0u8; 256 * rep as usize]).map(|v| vec![v])
    };
    assert_fault(run(256, 0), "Sort32", "repeatTime out of range [0, 255]");
    assert_fault(run(2, 1), "Sort32", "src0 is not 32-byte aligned");
    assert_fault(run(2, 2), "Sort32", "overlaps the destination");
    assert_fault(
        run(2, 3),
        "Sort32",
        "dst runs past the end of its LocalTensor",
    );
    assert_v_reads_unordered_mte2_data(run(2, 4), "Sort32");
}

// ---------------------------------------------------------------- MrgSort

fn mrgsort_kernel<T: Score>() -> &'static Kernel {
    if T::SIZE == 4 {
        &kernels::mrgsort_f32
    } else {
        &kernels::mrgsort_f16
    }
}

/// One MrgSort call as the kernel takes it.
#[derive(Clone, Debug)]
struct Mrg {
    lens: [u32; 4],
    valid_bit: u32,
    suspend: bool,
    repeat: u32,
    /// Byte offsets of the four lists in the UB buffer.
    at: [u32; 4],
    /// Byte offset of the destination in the UB buffer.
    dst: u32,
    /// Bytes of the input image (at UB 0) and of the destination to load and copy back.
    in_bytes: u32,
    out_bytes: u32,
    get_result: bool,
    /// Leave out the MTE2 -> V flag (and the destination load).
    no_flag: bool,
    /// Call the high-level API's overload (sortedNum), lists placed with GetSortOffset.
    high_level: bool,
}

impl Mrg {
    fn params(&self) -> Vec<u8> {
        let buf = (self.in_bytes.max(self.dst + self.out_bytes)).div_ceil(32) * 32 + 64;
        u32s(&[
            self.lens[0],
            self.lens[1],
            self.lens[2],
            self.lens[3],
            self.valid_bit,
            self.suspend as u32,
            self.repeat,
            self.at[0],
            self.at[1],
            self.at[2],
            self.at[3],
            self.dst,
            self.in_bytes,
            self.out_bytes,
            self.get_result as u32,
            buf,
            self.no_flag as u32,
            self.high_level as u32,
        ])
    }
}

/// Runs `m` with UB image `image` and destination contents `before`: (destination, counts):
/// GetMrgSortResult's, then the high-level overload's sortedNum (0 where not called).
fn mrgsort<T: Score>(
    m: &Mrg,
    image: &[u8],
    before: &[u8],
) -> Result<(Vec<u8>, [u32; 8]), TwinError> {
    assert_eq!(image.len(), m.in_bytes as usize);
    assert_eq!(before.len(), m.out_bytes as usize);
    let out = launch(
        mrgsort_kernel::<T>(),
        &[image.to_vec(), before.to_vec(), vec![0u8; 32], m.params()],
    )?;
    let mut c = [0u32; 8];
    for (i, b) in out[2].chunks(4).take(8).enumerate() {
        c[i] = u32::from_le_bytes(b.try_into().unwrap());
    }
    Ok((out[1].clone(), c))
}

/// The docs' merge of `lists` (each sorted): the stable descending sort of their
/// concatenation; with `suspend`, cut after the element that empties a list (before any
/// element if a list is empty). Returns the output and how many of each list it took.
fn merge_ref<T: Score>(lists: &[Vec<(T, u32)>], suspend: bool) -> (Vec<(T, u32)>, Vec<u32>) {
    let mut tagged: Vec<(T, u32, usize)> = Vec::new();
    for (l, list) in lists.iter().enumerate() {
        tagged.extend(list.iter().map(|&(s, i)| (s, i, l)));
    }
    tagged.sort_by(|a, b| desc(a.0, b.0));
    let mut taken = vec![0u32; lists.len()];
    let mut out = Vec::new();
    let exhausted = |taken: &[u32]| taken.iter().zip(lists).any(|(&t, l)| t as usize == l.len());
    for (s, i, l) in tagged {
        if suspend && exhausted(&taken) {
            break;
        }
        out.push((s, i));
        taken[l] += 1;
    }
    (out, taken)
}

fn sorted_list<T: Score>(rng: &mut StdRng, n: usize) -> Vec<(T, u32)> {
    sorted(&random_items::<T>(rng, n))
}

/// Lays `lists` out in a UB image, `gap` bytes (a multiple of 8) after each: (image, offsets).
fn layout<T: Score>(lists: &[Vec<(T, u32)>], gaps: &[usize]) -> (Vec<u8>, Vec<u32>) {
    let mut image = Vec::new();
    let mut at = Vec::new();
    for (l, list) in lists.iter().enumerate() {
        at.push(image.len() as u32);
        image.extend(to_bytes(list));
        image.resize(image.len() + gaps[l], 0xEE);
    }
    image.resize(up32(image.len()).max(32), 0xEE);
    (image, at)
}

fn one_merge<T: Score>(rng: &mut StdRng, nlists: usize, suspend: bool, high_level: bool) {
    let lens: Vec<usize> = (0..nlists)
        .map(|_| match rng.gen_range(0..6) {
            0 => 0,
            1 => 1,
            _ => rng.gen_range(2..70),
        })
        .collect();
    let lists: Vec<_> = lens.iter().map(|&n| sorted_list::<T>(rng, n)).collect();
    let gaps: Vec<usize> = (0..nlists).map(|_| 8 * rng.gen_range(0..4)).collect();
    let (image, at) = layout(&lists, &gaps);
    let total: usize = lens.iter().sum();
    let out_bytes = up32(total * 8).max(32) as u32;
    let mut lens4 = [0u32; 4];
    let mut at4 = [0u32; 4];
    for (l, &n) in lens.iter().enumerate() {
        lens4[l] = n as u32;
        at4[l] = at[l];
    }
    let m = Mrg {
        lens: lens4,
        valid_bit: (1 << nlists) - 1,
        suspend,
        repeat: 1,
        at: at4,
        dst: up32(image.len()) as u32 + 32 * rng.gen_range(0..3),
        in_bytes: image.len() as u32,
        out_bytes,
        get_result: suspend && !high_level,
        no_flag: false,
        high_level,
    };
    let before: Vec<u8> = (0..out_bytes).map(|_| rng.gen()).collect();
    let (got, counts) = mrgsort::<T>(&m, &image, &before).unwrap();
    let (want, taken) = merge_ref(&lists, suspend);
    let mut want_bytes = to_bytes(&want);
    want_bytes.extend_from_slice(&before[want_bytes.len()..]);
    assert_eq!(got, want_bytes, "{m:?}");
    for l in 0..4 {
        let t = if suspend && l < nlists { taken[l] } else { 0 };
        let (c, what) = if high_level {
            (counts[4 + l], "sortedNum")
        } else {
            (counts[l], "GetMrgSortResult")
        };
        assert_eq!(c, t, "{what} list {}: {m:?}", l + 1);
    }
}

#[test]
fn mrgsort_merges_2_3_and_4_lists_of_any_length_descending_earlier_list_first_on_ties() {
    let mut rng = StdRng::seed_from_u64(10);
    for _ in 0..12 {
        for n in 2..=4 {
            one_merge::<f32>(&mut rng, n, false, false);
            one_merge::<f16>(&mut rng, n, false, false);
        }
    }
}

#[test]
fn mrgsort_with_exhausted_suspension_stops_when_a_list_runs_out_and_reports_what_it_took() {
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..12 {
        for n in 2..=4 {
            one_merge::<f32>(&mut rng, n, true, false);
            one_merge::<f16>(&mut rng, n, true, false);
        }
    }
}

/// Sorted lists of (score, index).
type Lists<T> = Vec<Vec<(T, u32)>>;

/// `repeat` merges of four contiguous lists of `len` each.
fn repeated<T: Score>(rng: &mut StdRng, len: usize, repeat: usize) -> (Mrg, Vec<u8>, Lists<T>) {
    let lists: Vec<_> = (0..4 * repeat)
        .map(|_| sorted_list::<T>(rng, len))
        .collect();
    let (image, _) = layout(&lists, &vec![0; 4 * repeat]);
    let m = Mrg {
        lens: [len as u32; 4],
        valid_bit: 15,
        suspend: false,
        repeat: repeat as u32,
        at: [0, 1, 2, 3].map(|l| (l * len * 8) as u32),
        dst: up32(image.len()) as u32,
        in_bytes: image.len() as u32,
        out_bytes: up32(4 * len * 8 * repeat) as u32,
        get_result: false,
        no_flag: false,
        high_level: false,
    };
    (m, image, lists)
}

fn check_repeats<T: Score>(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    for (len, repeat) in [(32, 2), (5, 3), (1, 7), (16, 4)] {
        let (m, image, lists) = repeated::<T>(&mut rng, len, repeat);
        let before = vec![0x5Au8; m.out_bytes as usize];
        let (got, _) = mrgsort::<T>(&m, &image, &before).unwrap();
        let mut want: Vec<u8> = lists
            .chunks(4)
            .flat_map(|q| to_bytes(&merge_ref(q, false).0))
            .collect();
        want.extend_from_slice(&before[want.len()..]);
        assert_eq!(got, want, "{m:?}");
    }
}

#[test]
fn mrgsort_repeats_merge_each_group_of_four_contiguous_lists_on_its_own() {
    check_repeats::<f32>(12);
    check_repeats::<f16>(13);
}

#[test]
fn the_high_level_mrgsort_overload_merges_alike_and_fills_sorted_num_when_suspending() {
    let mut rng = StdRng::seed_from_u64(16);
    for _ in 0..6 {
        for n in 2..=4 {
            for suspend in [false, true] {
                one_merge::<f32>(&mut rng, n, suspend, true);
                one_merge::<f16>(&mut rng, n, suspend, true);
            }
        }
    }
    let (mut m, image, _) = repeated::<f16>(&mut rng, 4, 2);
    m.high_level = true;
    m.repeat = 0;
    let r = mrgsort::<f16>(&m, &image, &vec![0u8; m.out_bytes as usize]);
    assert_fault(
        r.map(|(d, _)| vec![d]),
        "MrgSort",
        "repeatTime out of range [1, 255]",
    );
}

#[test]
fn mrgsort_with_repeat_0_is_a_no_op() {
    let mut rng = StdRng::seed_from_u64(14);
    let (mut m, image, _) = repeated::<f32>(&mut rng, 8, 1);
    m.repeat = 0;
    let before: Vec<u8> = (0..m.out_bytes).map(|_| rng.gen()).collect();
    assert_eq!(mrgsort::<f32>(&m, &image, &before).unwrap().0, before);
}

#[test]
fn sort32_then_mrgsort_sorts_128_scores_as_the_mrg_sort_sample_does() {
    for seed in [20u64, 21] {
        let mut rng = StdRng::seed_from_u64(seed);
        let items = random_items::<f32>(&mut rng, 128);
        let groups = sort32::<f32>(&items, 4, 0, &[0u8; 1024]).unwrap();
        let (m, _, _) = repeated::<f32>(&mut rng, 32, 1);
        let (got, _) = mrgsort::<f32>(&m, &groups, &[0u8; 1024]).unwrap();
        // Equal scores: earlier group first, then earlier position: the stable sort of all.
        assert_eq!(got, to_bytes(&sorted(&items)));
    }
}

#[test]
fn mrgsort_misuse_is_reported() {
    let mut rng = StdRng::seed_from_u64(15);
    let (base, image, _) = repeated::<f32>(&mut rng, 8, 2);
    let before = vec![0u8; base.out_bytes as usize];
    let run = |f: &dyn Fn(&mut Mrg)| {
        let mut m = base.clone();
        f(&mut m);
        mrgsort::<f32>(&m, &image, &before).map(|(d, _)| vec![d])
    };
    assert!(run(&|_| {}).is_ok(), "the unaltered call is fine");
    assert_fault(
        run(&|m| m.valid_bit = 5),
        "MrgSort",
        "validBit must be 3, 7 or 15",
    );
    assert_fault(
        run(&|m| m.lens[3] = 4096),
        "MrgSort",
        "out of range [0, 4095]",
    );
    assert_fault(
        run(&|m| m.suspend = true),
        "MrgSort",
        "repeatTimes > 1 needs validBit = 15 and ifExhaustedSuspension = false",
    );
    assert_fault(
        run(&|m| m.valid_bit = 7),
        "MrgSort",
        "repeatTimes > 1 needs validBit = 15",
    );
    assert_fault(
        run(&|m| {
            m.lens[1] = 7;
            m.at[2] -= 8;
            m.at[3] -= 8
        }),
        "MrgSort",
        "four lists of the same length",
    );
    assert_fault(
        run(&|m| m.at[3] += 8),
        "MrgSort",
        "stored one after another",
    );
    assert_fault(
        run(&|m| m.dst += 8),
        "MrgSort",
        "dst is not 32-byte aligned",
    );
    assert_fault(
        run(&|m| {
            m.repeat = 1;
            m.at[1] += 4
        }),
        "MrgSort",
        "src.src2 is not 8-byte aligned",
    );
    assert_fault(
        run(&|m| m.dst = 128),
        "MrgSort",
        "a source overlaps the destination",
    );
    // A list that runs past its LocalTensor: list 4 starts 8 structures before the buffer's end.
    assert_fault(
        run(&|m| {
            m.repeat = 1;
            m.at[3] = (m.dst + m.out_bytes).div_ceil(32) * 32 + 64 - 64;
            m.lens[3] = 9
        }),
        "MrgSort",
        "list 4 (src.src4) runs past the end of its LocalTensor",
    );
    assert_fault(
        run(&|m| m.get_result = true),
        "GetMrgSortResult",
        "no MrgSort with ifExhaustedSuspension = true",
    );
    assert_v_reads_unordered_mte2_data(run(&|m| m.no_flag = true), "MrgSort");
}

// ---------------------------------------------------------------- ReducePairElem

fn pair_kernel<T: Score>() -> &'static Kernel {
    if T::SIZE == 4 {
        &kernels::pair_f32
    } else {
        &kernels::pair_f16
    }
}

/// One ReducePairElem call as the kernel takes it.
#[derive(Clone, Debug)]
struct Pair {
    /// 0 bit mask, 1 continuous mask, 2 counter mode, 3 PairReduceSum, 4 mask in the register.
    form: u64,
    mask: [u64; 2],
    repeat: u64,
    dst_rep: u64,
    src_blk: u64,
    src_rep: u64,
    dst: u64,
    in_bytes: u64,
    out_bytes: u64,
    /// Leave out the MTE2 -> V flag (and the destination load).
    no_flag: bool,
}

impl Pair {
    /// (repeat, lane) of every enabled source lane, as the docs define masks and repeats.
    fn lanes(&self, per: usize) -> Vec<(usize, usize)> {
        let bit = |l: usize| (self.mask[l / 64] >> (l % 64)) & 1 == 1;
        match self.form {
            1 => (0..self.repeat as usize)
                .flat_map(|r| (0..(self.mask[0] as usize).min(per)).map(move |l| (r, l)))
                .collect(),
            2 => (0..self.mask[0] as usize)
                .map(|i| (i / per, i % per))
                .collect(),
            _ => (0..self.repeat as usize)
                .flat_map(|r| (0..per).filter(move |&l| bit(l)).map(move |l| (r, l)))
                .collect(),
        }
    }
}

/// The docs' ReducePairElem<SUM> on a UB image: `src` at 0, `dst` bytes at `p.dst`.
fn pair_ref<T: Score>(p: &Pair, src: &[u8], dst: &[u8]) -> Vec<u8> {
    let es = T::SIZE;
    let per = 256 / es;
    let epb = 32 / es;
    let lanes = p.lanes(per);
    let repeats = lanes.iter().map(|&(r, _)| r + 1).max().unwrap_or(0);
    let mut out = dst.to_vec();
    for r in 0..repeats {
        let on: Vec<bool> = (0..per).map(|l| lanes.contains(&(r, l))).collect();
        let lane = |l: usize| -> T {
            if !on[l] {
                return T::from_f32(0.0);
            }
            let a =
                r * p.src_rep as usize * 32 + (l / epb) * p.src_blk as usize * 32 + (l % epb) * es;
            T::get(&src[a..])
        };
        for q in 0..per / 2 {
            if on[2 * q] || on[2 * q + 1] {
                let o = r * p.dst_rep as usize * 128 + q * es;
                let mut v = Vec::new();
                lane(2 * q).add(lane(2 * q + 1)).put(&mut v);
                out[o..o + es].copy_from_slice(&v);
            }
        }
    }
    out
}

fn pair<T: Score>(p: &Pair, src: &[u8], before: &[u8]) -> Result<Vec<u8>, TwinError> {
    let buf = up32((p.in_bytes).max(p.dst + p.out_bytes) as usize) as u64;
    let prm: Vec<u8> = [
        p.form,
        p.mask[0],
        p.mask[1],
        p.repeat,
        p.dst_rep,
        p.src_blk,
        p.src_rep,
        p.dst,
        p.in_bytes,
        p.out_bytes,
        buf,
        p.no_flag as u64,
    ]
    .iter()
    .flat_map(|x| x.to_le_bytes())
    .collect();
    let mut out = launch(pair_kernel::<T>(), &[src.to_vec(), before.to_vec(), prm])?;
    Ok(out.swap_remove(1))
}

fn random_pair<T: Score>(rng: &mut StdRng) -> Pair {
    let per = 256 / T::SIZE as u64;
    let form = rng.gen_range(0..5u64);
    let mut mask = [0u64; 2];
    let bits = |rng: &mut StdRng| match rng.gen_range(0..4) {
        0 => u64::MAX,
        1 => 0x5555_5555_5555_5555, // first lane of every pair
        _ => rng.gen(),
    };
    mask[0] = bits(rng);
    mask[1] = if per == 128 { bits(rng) } else { 0 };
    let mut repeat = rng.gen_range(0..5u64);
    if form == 1 {
        mask[0] = rng.gen_range(1..=per + 3);
        mask[1] = 0;
    }
    if form == 2 {
        mask[0] = rng.gen_range(0..per * 4);
        mask[1] = 0;
        repeat = mask[0].div_ceil(per);
    }
    let src_blk = rng.gen_range(1..3u64);
    let src_rep = [0u64, 8, 16, 20][rng.gen_range(0..4)];
    let dst_rep = rng.gen_range(0..3u64);
    // The source extent: the last block of the last repeat.
    let in_bytes =
        up32(((repeat.max(1) - 1) * src_rep * 32 + 7 * src_blk * 32 + 32) as usize) as u64;
    let dst = in_bytes + 32 * rng.gen_range(0..2u64);
    let out_bytes = up32(((repeat.max(1) - 1) * dst_rep * 128 + 128) as usize) as u64;
    Pair {
        form,
        mask,
        repeat,
        dst_rep,
        src_blk,
        src_rep,
        dst,
        in_bytes,
        out_bytes,
        no_flag: false,
    }
}

fn check_pairs<T: Score>(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..60 {
        let p = random_pair::<T>(&mut rng);
        // Finite values: a NaN's payload bits are not the docs' business.
        let mut src = Vec::new();
        for _ in 0..p.in_bytes as usize / T::SIZE {
            T::from_f32(rng.gen_range(-1000.0f32..1000.0)).put(&mut src);
        }
        let before: Vec<u8> = (0..p.out_bytes).map(|_| rng.gen()).collect();
        let got = pair::<T>(&p, &src, &before).unwrap();
        assert_eq!(got, pair_ref::<T>(&p, &src, &before), "{p:?}");
    }
}

#[test]
fn reduce_pair_elem_sums_adjacent_lanes_in_every_mask_form_repeat_and_stride() {
    check_pairs::<f32>(30);
    check_pairs::<f16>(31);
}

#[test]
fn reduce_pair_elem_as_the_reduce_pair_elem_sample_calls_it() {
    // 128 halves, one repeat, every lane on, strides (1, 1, 8): 64 sums.
    let mut rng = StdRng::seed_from_u64(32);
    let x: Vec<f16> = (0..128)
        .map(|_| f16::from_f32(rng.gen_range(-1000.0..1000.0)))
        .collect();
    let src: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let p = Pair {
        form: 0,
        mask: [u64::MAX, u64::MAX],
        repeat: 1,
        dst_rep: 1,
        src_blk: 1,
        src_rep: 8,
        dst: 256,
        in_bytes: 256,
        out_bytes: 128,
        no_flag: false,
    };
    let got = pair::<f16>(&p, &src, &[0u8; 128]).unwrap();
    let want: Vec<u8> = x
        .chunks(2)
        .flat_map(|c| f16::from_f32(c[0].to_f32() + c[1].to_f32()).to_le_bytes())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn reduce_pair_elem_misuse_is_reported() {
    let base = Pair {
        form: 0,
        mask: [u64::MAX, 0],
        repeat: 2,
        dst_rep: 1,
        src_blk: 1,
        src_rep: 8,
        dst: 512,
        in_bytes: 512,
        out_bytes: 256,
        no_flag: false,
    };
    let src = vec![0u8; 512];
    let run = |f: &dyn Fn(&mut Pair)| {
        let mut p = base.clone();
        f(&mut p);
        pair::<f32>(&p, &src, &vec![0u8; p.out_bytes as usize]).map(|d| vec![d])
    };
    assert!(run(&|_| {}).is_ok(), "the unaltered call is fine");
    // In place: repeat 0's results land on its own sources (partial overlap).
    assert_fault(
        run(&|p| {
            p.dst = 0;
            p.out_bytes = 512
        }),
        "ReducePairElem",
        "the destination overlaps a source",
    );
    // Repeat 0 writes the sources of repeat 1.
    assert_fault(
        run(&|p| {
            p.dst = 256;
            p.out_bytes = 256
        }),
        "ReducePairElem",
        "the destination overlaps a source",
    );
    assert_fault(
        run(&|p| p.dst = 512 + 16),
        "ReducePairElem",
        "dst is not 32-byte aligned",
    );
    assert_fault(
        run(&|p| p.repeat = 256),
        "ReducePairElem",
        "repeatTimes out of range [0, 255]",
    );
    assert_fault(
        run(&|p| p.src_rep = u32::MAX as u64),
        "ReducePairElem",
        "strides must be in [0, 65535]",
    );
    assert_fault(
        run(&|p| p.mask[1] = 1),
        "ReducePairElem",
        "mask[1] must be 0",
    );
    assert_fault(
        run(&|p| p.dst_rep = 2),
        "ReducePairElem",
        "writes past the end",
    );
    assert_v_reads_unordered_mte2_data(run(&|p| p.no_flag = true), "ReducePairElem");
}
