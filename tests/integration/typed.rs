//! The typed API (host/typed.rs): the element types are exactly `DataType::ALL`; every typed
//! collective gives what the runtime-typed API and a host reference give (f16 and bf16
//! included); length mismatches are errors that write nothing and leave the ranks in step;
//! in-place variants, views, batches and untyped conversions work.

use crate::common;

use std::ops::Bound;
use std::time::Duration;

use aiv_comm::typed::P2p;
use aiv_comm::{
    AllReduceAlgo, Config, DataType, DeviceBuffer, DeviceElement, DeviceSlice, Error, ReduceOp,
    Reducible, SendRecvItem, SendRecvKind, Typed, World,
};
use half::{bf16, f16};

fn world(ranks: usize) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(64 << 10),
            exec_timeout: Some(Duration::from_secs(30)),
            ..Config::default()
        },
    )
    .unwrap()
}

/// Element types with a host value conversion, for references.
trait Val: DeviceElement + PartialEq + std::fmt::Debug {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! val_prim {
    ($($t:ty),*) => {$(
        impl Val for $t {
            fn from_f64(x: f64) -> Self { x as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
val_prim!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

impl Val for f16 {
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

impl Val for bf16 {
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}

/// Small integers (so that every sum of 4 ranks is exact in every type), signed where `T` is.
fn small<T: Val>(rank: u32, i: usize) -> T {
    let v = ((rank as usize * 7 + i * 3) % 17) as f64;
    let signed = T::from_f64(-1.0).to_f64() < 0.0;
    T::from_f64(if signed { v - 8.0 } else { v })
}

/// Arbitrary bit patterns (NaNs and all) of `n` elements.
fn bits<T: DeviceElement>(n: usize, seed: u64) -> Vec<T> {
    let mut v = vec![T::default(); n];
    bytemuck::cast_slice_mut::<T, u8>(&mut v)
        .copy_from_slice(&common::pattern(n * std::mem::size_of::<T>(), seed));
    v
}

fn bytes<T: DeviceElement>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// `op` over every rank's `small(rank, i)`.
fn reduced<T: Val>(ranks: u32, i: usize, op: ReduceOp) -> T {
    let vals = (0..ranks).map(|r| small::<T>(r, i).to_f64());
    T::from_f64(match op {
        ReduceOp::Sum => vals.sum(),
        ReduceOp::Max => vals.fold(f64::MIN, f64::max),
        ReduceOp::Min => vals.fold(f64::MAX, f64::min),
        other => unreachable!("{other:?} is not reduced here"),
    })
}

fn reference<T: Val>(ranks: u32, n: usize, op: ReduceOp) -> Vec<T> {
    (0..n).map(|i| reduced(ranks, i, op)).collect()
}

#[test]
fn element_types_are_exactly_datatype_all() {
    fn e<T: DeviceElement>() -> (DataType, usize) {
        (T::DTYPE, std::mem::size_of::<T>())
    }
    fn r<T: Reducible>() -> DataType {
        T::DTYPE
    }
    let all = [
        e::<f32>(),
        e::<f16>(),
        e::<bf16>(),
        e::<i32>(),
        e::<i16>(),
        e::<i8>(),
        e::<u8>(),
        e::<i64>(),
        e::<u64>(),
        e::<f64>(),
        e::<u16>(),
        e::<u32>(),
    ];
    assert_eq!(all.map(|(dt, _)| dt), DataType::ALL);
    for (dt, size) in all {
        assert_eq!(dt.size(), size, "{dt}");
    }
    let reducible = [
        r::<f32>(),
        r::<f16>(),
        r::<bf16>(),
        r::<i32>(),
        r::<i16>(),
        r::<i8>(),
    ];
    let device: Vec<_> = DataType::ALL
        .into_iter()
        .filter(|d| d.reduce_code().is_some())
        .collect();
    assert_eq!(reducible.to_vec(), device);
}

/// Typed AllGather of `n` arbitrary elements per rank vs the runtime-typed one and the host.
fn check_all_gather<T: DeviceElement>(w: &World, n: usize) {
    let size = w.size() as u32;
    let got = w.run(|c| -> aiv_comm::Result<(Vec<T>, Vec<T>)> {
        let t = c.typed();
        let send = t.htod_copy(bits::<T>(n, c.rank() as u64 + 1))?;
        let mut recv = t.alloc_zeros::<T>(n * size as usize)?;
        t.all_gather(&send, &mut recv)?;
        let untyped = c.alloc(recv.as_buffer().len())?;
        c.all_gather(send.as_buffer(), &untyped, n, T::DTYPE)?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec()?))
    });
    let want: Vec<u8> = (0..size)
        .flat_map(|r| bytes(&bits::<T>(n, r as u64 + 1)))
        .collect();
    for (r, g) in got.into_iter().enumerate() {
        let (typed, untyped) = g.unwrap();
        assert_eq!(bytes(&typed), want, "{} rank {r}", T::DTYPE);
        assert_eq!(
            bytes(&untyped),
            want,
            "{} rank {r} (runtime-typed)",
            T::DTYPE
        );
    }
}

#[test]
fn all_gather_of_every_type_matches_runtime_api_and_host() {
    let w = world(3);
    check_all_gather::<f32>(&w, 5);
    check_all_gather::<f16>(&w, 5);
    check_all_gather::<bf16>(&w, 7);
    check_all_gather::<i32>(&w, 3);
    check_all_gather::<i16>(&w, 5);
    check_all_gather::<i8>(&w, 33);
    check_all_gather::<u8>(&w, 1);
    check_all_gather::<i64>(&w, 5);
    check_all_gather::<u64>(&w, 2);
    check_all_gather::<f64>(&w, 5);
    check_all_gather::<u16>(&w, 9);
    check_all_gather::<u32>(&w, 5);
}

/// Typed AllReduce vs the runtime-typed one (same bits) and the host reference.
fn check_all_reduce<T: Val + Reducible>(w: &World, n: usize, op: ReduceOp, algo: AllReduceAlgo) {
    let got = w.run(|c| -> aiv_comm::Result<(Vec<T>, Vec<T>)> {
        let t = c.typed();
        let x: Vec<T> = (0..n).map(|i| small(c.rank(), i)).collect();
        let send = t.htod_copy(&x)?;
        let mut recv = t.alloc_zeros::<T>(n)?;
        t.all_reduce_with(&send, &mut recv, op, algo)?;
        let untyped = c.alloc(n * std::mem::size_of::<T>())?;
        c.all_reduce_with(send.as_buffer(), &untyped, n, T::DTYPE, op, algo)?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec()?))
    });
    let want = reference::<T>(w.size() as u32, n, op);
    for (r, g) in got.into_iter().enumerate() {
        let (typed, untyped) = g.unwrap();
        let what = format!("{} {op} {algo:?} rank {r}", T::DTYPE);
        assert_eq!(
            bytes(&typed),
            bytes(&untyped),
            "{what}: typed vs runtime-typed"
        );
        assert_eq!(typed, want, "{what}: vs host");
    }
}

#[test]
fn all_reduce_of_every_reducible_type_matches_runtime_api_and_host() {
    let w = world(4);
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        check_all_reduce::<f32>(&w, 33, op, AllReduceAlgo::Auto);
        check_all_reduce::<f16>(&w, 33, op, AllReduceAlgo::Auto);
        check_all_reduce::<bf16>(&w, 33, op, AllReduceAlgo::Auto);
        check_all_reduce::<i32>(&w, 33, op, AllReduceAlgo::Auto);
        check_all_reduce::<i16>(&w, 33, op, AllReduceAlgo::Auto);
        check_all_reduce::<i8>(&w, 33, op, AllReduceAlgo::Auto);
    }
    check_all_reduce::<bf16>(&w, 100, ReduceOp::Sum, AllReduceAlgo::OneShot);
    check_all_reduce::<f16>(&w, 100, ReduceOp::Sum, AllReduceAlgo::TwoShot);
    check_all_reduce::<f32>(&w, 100, ReduceOp::Sum, AllReduceAlgo::Hd);
}

#[test]
fn in_place_variants() {
    let w = world(3);
    let n = 6;
    let got = w.run(|c| -> aiv_comm::Result<(Vec<bf16>, Vec<f16>, Vec<i16>)> {
        let t = c.typed();
        let r = c.rank() as usize;
        // AllGather in place: only this rank's slot is written beforehand.
        let mut g = t.alloc_zeros::<bf16>(n * 3)?;
        let mine: Vec<bf16> = (0..n).map(|i| small(c.rank(), i)).collect();
        t.htod_copy_into(&mine, &mut g.slice_mut(r * n..(r + 1) * n)?)?;
        t.all_gather_in_place(&mut g)?;
        // AllReduce in place, on a whole slice and on a view.
        let mut a = t.htod_copy(
            (0..n)
                .map(|i| small::<f16>(c.rank(), i))
                .collect::<Vec<_>>(),
        )?;
        t.all_reduce_in_place(&mut a, ReduceOp::Sum)?;
        let mut b = t.htod_copy([-1i16; 10])?;
        let x: Vec<i16> = (0..n).map(|i| small(c.rank(), i)).collect();
        t.htod_copy_into(&x, &mut b.slice_mut(2..2 + n)?)?;
        t.all_reduce_in_place(&mut b.slice_mut(2..2 + n)?, ReduceOp::Max)?;
        Ok((t.dtoh_sync_copy(&g)?, a.to_vec()?, b.to_vec()?))
    });
    let gathered: Vec<bf16> = (0..3)
        .flat_map(|r| (0..n).map(move |i| small(r, i)))
        .collect();
    let mut max = vec![-1i16; 10];
    max[2..2 + n].copy_from_slice(&reference::<i16>(3, n, ReduceOp::Max));
    for g in got {
        let (g, a, b) = g.unwrap();
        assert_eq!(g, gathered);
        assert_eq!(a, reference::<f16>(3, n, ReduceOp::Sum));
        assert_eq!(b, max);
    }
}

fn is_length(r: aiv_comm::Result<()>) -> bool {
    matches!(r, Err(Error::Length(_)))
}

#[test]
fn length_mismatches_are_errors_that_write_nothing() {
    let w = world(2);
    let got = w.run(|c| -> aiv_comm::Result<()> {
        let t = c.typed();
        let send = t.htod_copy([1.5f32; 4])?;
        let sentinel = vec![-7.0f32; 12];
        let mut recv = t.htod_copy(&sentinel)?;
        // AllGather: recv must hold exactly size() * send.len() = 8.
        assert!(is_length(t.all_gather(&send, &mut recv.slice_mut(..7)?)));
        assert!(is_length(t.all_gather(&send, &mut recv.slice_mut(..9)?)));
        assert!(is_length(t.all_gather(&send, &mut recv)));
        // In place: a multiple of size().
        assert!(is_length(t.all_gather_in_place(&mut recv.slice_mut(..5)?)));
        // AllReduce: equal lengths.
        assert!(is_length(t.all_reduce(
            &send,
            &mut recv.slice_mut(..3)?,
            ReduceOp::Sum
        )));
        assert!(is_length(t.all_reduce_with(
            &send,
            &mut recv.slice_mut(..5)?,
            ReduceOp::Sum,
            AllReduceAlgo::TwoShot
        )));
        // Host copies.
        assert!(is_length(t.htod_copy_into(&[1.0; 3], &mut recv)));
        // Prod is refused by the runtime check underneath, also before anything is enqueued.
        assert!(matches!(
            t.all_reduce(&send, &mut recv.slice_mut(..4)?, ReduceOp::Prod),
            Err(Error::Unsupported { .. })
        ));
        t.synchronize()?;
        assert_eq!(recv.to_vec()?, sentinel, "rank {}: recv touched", c.rank());
        // Nothing was half-enqueued: the ranks are still in step for a good call.
        t.all_gather(&send, &mut recv.slice_mut(2..10)?)?;
        let mut want = sentinel.clone();
        want[2..10].fill(1.5);
        assert_eq!(t.dtoh_sync_copy(&recv)?, want);
        Ok(())
    });
    for g in got {
        g.unwrap();
    }
}

#[test]
fn views_as_inputs_and_outputs() {
    let w = world(3);
    let got = w.run(|c| -> aiv_comm::Result<(Vec<i32>, Vec<u16>)> {
        let t = c.typed();
        let r = c.rank() as i32;
        // AllReduce from a view into a view of a larger slice: the rest is untouched.
        let x = t.htod_copy((0..12).map(|i| i * 10 + r).collect::<Vec<i32>>())?;
        let mut y = t.htod_copy([-1i32; 12])?;
        t.all_reduce(&x.slice(2..6)?, &mut y.slice_mut(4..8)?, ReduceOp::Sum)?;
        // AllGather from a nested view into a view.
        let g = t.htod_copy((0..8).map(|i| (r * 100 + i) as u16).collect::<Vec<u16>>())?;
        let mut h = t.alloc_zeros::<u16>(8)?;
        let part = g.slice(1..)?.slice(..=1)?; // elements 1 and 2
        t.all_gather(&part, &mut h.slice_mut(1..7)?)?;
        // The two halves of one slice as send and recv.
        let mut s = t.htod_copy([r as i8 + 1, 2 * r as i8, 0, 0])?;
        let (a, mut b) = s.split_at_mut(2)?;
        t.all_reduce(&a, &mut b, ReduceOp::Sum)?;
        drop((a, b));
        // Out of range views are errors.
        assert!(matches!(x.slice(5..13), Err(Error::Length(_))));
        let inverted = (Bound::Included(6), Bound::Excluded(5));
        assert!(matches!(x.slice(inverted), Err(Error::Length(_))));
        let open = (Bound::Excluded(10), Bound::Unbounded);
        assert_eq!(x.slice(open)?.to_vec()?, [110 + r]);
        assert!(matches!(y.split_at_mut(13), Err(Error::Length(_))));
        assert!(x.slice(12..)?.is_empty());
        assert_eq!(s.to_vec()?, [r as i8 + 1, 2 * r as i8, 6, 6]);
        Ok((y.to_vec()?, t.dtoh_sync_copy(&h)?))
    });
    let sum = |i: i32| 3 * i * 10 + 3; // elements i of ranks 0, 1, 2
    for g in got {
        let (y, h) = g.unwrap();
        assert_eq!(
            y,
            [
                -1,
                -1,
                -1,
                -1,
                sum(2),
                sum(3),
                sum(4),
                sum(5),
                -1,
                -1,
                -1,
                -1
            ]
        );
        assert_eq!(h, [0, 1, 2, 101, 102, 201, 202, 0]);
    }
}

#[test]
fn empty_slices() {
    let w = world(2);
    let got = w.run(|c| -> aiv_comm::Result<()> {
        let t = c.typed();
        let e = t.alloc_zeros::<f16>(0)?;
        let mut out = t.alloc_zeros::<f16>(0)?;
        t.all_gather(&e, &mut out)?;
        t.all_reduce(&e, &mut out, ReduceOp::Sum)?;
        t.all_reduce_in_place(&mut out, ReduceOp::Min)?;
        t.reduce_scatter(&e, &mut out, ReduceOp::Sum)?;
        t.reduce_scatter_in_place(&mut out, ReduceOp::Max)?;
        t.reduce_scatter_v(&e, &[0; 2], &[0; 2], &mut out, ReduceOp::Sum)?;
        t.all_gather_v(&e, &mut out, &[0; 2], &[0; 2])?;
        t.all_to_all(&e, &mut out)?;
        t.all_to_all_v(&e, &[0; 2], &[0; 2], &mut out, &[0; 2], &[0; 2])?;
        t.broadcast(Some(&e), &mut out, 0)?;
        t.broadcast_in_place(&mut out, 1)?;
        t.batch_send_recv(&[])?;
        let peer = 1 - c.rank();
        t.batch_send_recv(&[P2p::send(&e, peer), P2p::recv(&mut out, peer)])?;
        assert!(t.dtoh_sync_copy(&out)?.is_empty());
        Ok(())
    });
    for g in got {
        g.unwrap();
    }
}

#[test]
fn send_and_recv() {
    let w = world(2);
    let data: Vec<bf16> = (0..37).map(|i| bf16::from_f32(i as f32 * 0.25)).collect();
    let got = w.run(|c| -> aiv_comm::Result<Option<(Vec<bf16>, Vec<u8>)>> {
        let t = c.typed();
        if c.rank() == 0 {
            let x = t.htod_copy(&data)?;
            t.send(&x, 1)?;
            t.send(&x.slice(..2)?, 1)?;
            t.synchronize()?;
            return Ok(None);
        }
        // Into a view, and as bytes: a message is its bytes, whatever the element types.
        let mut y = t.htod_copy(vec![bf16::NAN; 40])?;
        t.recv(&mut y.slice_mut(3..)?, 0)?;
        let mut z = t.alloc_zeros::<u8>(4)?;
        t.recv(&mut z, 0)?;
        Ok(Some((t.dtoh_sync_copy(&y)?, z.to_vec()?)))
    });
    let (y, z) = got[1].as_ref().unwrap().as_ref().unwrap();
    assert!(y[..3].iter().all(|v| v.is_nan()));
    assert_eq!(&y[3..], &data[..]);
    assert_eq!(z, &bytes(&data[..2]));
}

#[test]
fn typed_send_and_recv_on_any_stream_overlap_both_directions() {
    // A ring on 3 ranks: every rank sends right on one sub-stream while it receives from the
    // left on another (on one stream, each send would wait for its own receive: a deadlock).
    let w = world(3);
    let got = w.run(|c| -> aiv_comm::Result<Vec<i16>> {
        let (r, n) = (c.rank(), c.size());
        let t = c.typed();
        let (tx, rx) = (c.create_stream("tx")?, c.create_stream("rx")?);
        let mine = t.htod_copy(vec![r as i16 * 10; 1000])?;
        let mut from_left = t.alloc_zeros::<i16>(1000)?;
        tx.typed().send(&mine, (r + 1) % n)?;
        rx.typed().recv(&mut from_left, (r + n - 1) % n)?;
        tx.typed().synchronize()?;
        rx.typed().synchronize()?;
        from_left.to_vec()
    });
    for (r, g) in got.into_iter().enumerate() {
        let left = (r + 2) % 3;
        assert_eq!(g.unwrap(), vec![left as i16 * 10; 1000], "rank {r}");
    }
}

#[test]
fn untyped_buffer_conversions() {
    let w = world(1);
    let c = &w.comms()[0];
    let t: Typed<'_> = c.typed();
    let b = c.alloc_from(&[1u32, 2, 3, 4]).unwrap();
    let x = DeviceSlice::<u32>::try_from(b.clone()).unwrap();
    assert_eq!((x.len(), x.rank()), (4, 0));
    assert_eq!(x.as_buffer().addr(), b.addr());
    // Reinterpreted: the same memory as another element type.
    let h = DeviceSlice::<u16>::try_from(b.view(4, 8).unwrap()).unwrap();
    assert_eq!(h.to_vec().unwrap(), [2, 0, 3, 0]);
    assert!(matches!(
        DeviceSlice::<u64>::try_from(b.view(0, 12).unwrap()),
        Err(Error::Length(_))
    ));
    assert!(matches!(
        DeviceSlice::<u32>::try_from(b.view(2, 8).unwrap()),
        Err(Error::Misaligned { align: 4, .. })
    ));
    let back: DeviceBuffer = x.into();
    assert_eq!(back.len(), 16);
    assert!(format!("{:?}", t.htod_copy([1i8; 3]).unwrap()).contains("len: 3"));
    assert!(matches!(
        t.alloc_zeros::<u64>(usize::MAX / 4),
        Err(Error::Length(_))
    ));
}

fn deterministic_world(ranks: usize) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(64 << 10),
            exec_timeout: Some(Duration::from_secs(30)),
            deterministic: Some(true),
            ..Config::default()
        },
    )
    .unwrap()
}

/// `small` values at indices `0..n` of `rank`.
fn smalls<T: Val>(rank: u32, n: usize) -> Vec<T> {
    (0..n).map(|i| small(rank, i)).collect()
}

/// Unwraps every rank's result.
fn all<R>(got: Vec<aiv_comm::Result<R>>) -> Vec<R> {
    got.into_iter()
        .enumerate()
        .map(|(r, g)| g.unwrap_or_else(|e| panic!("rank {r}: {e}")))
        .collect()
}

/// Typed ReduceScatter (and in place) of `n` elements per rank vs the runtime-typed one and
/// the host.
fn check_reduce_scatter<T: Val + Reducible>(w: &World, n: usize, op: ReduceOp) {
    let size = w.size() as u32;
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let x = smalls::<T>(c.rank(), n * size as usize);
        let send = t.htod_copy(&x)?;
        let mut recv = t.alloc_zeros::<T>(n)?;
        t.reduce_scatter(&send, &mut recv, op)?;
        let untyped = c.alloc(n * std::mem::size_of::<T>())?;
        c.reduce_scatter(send.as_buffer(), &untyped, n, T::DTYPE, op)?;
        let mut buf = t.htod_copy(&x)?;
        t.reduce_scatter_in_place(&mut buf, op)?;
        Ok((
            t.dtoh_sync_copy(&recv)?,
            untyped.to_vec::<T>()?,
            buf.to_vec()?,
        ))
    }));
    for (r, (typed, untyped, in_place)) in got.into_iter().enumerate() {
        let what = format!("{} {op} rank {r}", T::DTYPE);
        let want: Vec<T> = (r * n..(r + 1) * n).map(|i| reduced(size, i, op)).collect();
        assert_eq!(bytes(&typed), bytes(&untyped), "{what}: vs runtime-typed");
        assert_eq!(typed, want, "{what}: vs host");
        // In place: block r is the result, the other blocks still this rank's input.
        let mut want_buf = smalls::<T>(r as u32, n * size as usize);
        want_buf[r * n..(r + 1) * n].copy_from_slice(&want);
        assert_eq!(in_place, want_buf, "{what}: in place");
    }
}

#[test]
fn reduce_scatter_matches_runtime_api_and_host() {
    let w = world(4);
    check_reduce_scatter::<f32>(&w, 5, ReduceOp::Sum);
    check_reduce_scatter::<f16>(&w, 7, ReduceOp::Sum);
    check_reduce_scatter::<bf16>(&w, 3, ReduceOp::Max);
    check_reduce_scatter::<i16>(&w, 9, ReduceOp::Min);
    check_reduce_scatter::<i8>(&w, 33, ReduceOp::Sum);
    let d = deterministic_world(3);
    assert!(d.comms()[0].deterministic());
    check_reduce_scatter::<bf16>(&d, 6, ReduceOp::Sum);
    check_reduce_scatter::<i32>(&d, 4, ReduceOp::Max);
}

/// Typed ReduceScatterV vs the runtime-typed one and the host: `counts` per rank, each rank's
/// blocks in reverse rank order with a gap of 1 element before each.
fn check_reduce_scatter_v<T: Val + Reducible>(w: &World, counts: &[usize], op: ReduceOp) {
    let size = w.size();
    // Rank-independent layout of the blocks: block q at displs[q], data index = block start.
    let mut displs = vec![0; size];
    let mut at = 0;
    for q in (0..size).rev() {
        at += 1;
        displs[q] = at;
        at += counts[q];
    }
    let len = at;
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let me = c.rank() as usize;
        let send = t.htod_copy(smalls::<T>(c.rank(), len))?;
        let mut recv = t.alloc_zeros::<T>(counts[me])?;
        t.reduce_scatter_v(&send, counts, &displs, &mut recv, op)?;
        let untyped = c.alloc(counts[me] * std::mem::size_of::<T>())?;
        c.reduce_scatter_v(
            send.as_buffer(),
            counts,
            &displs,
            &untyped,
            counts[me],
            T::DTYPE,
            op,
        )?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec::<T>()?))
    }));
    for (r, (typed, untyped)) in got.into_iter().enumerate() {
        let what = format!("{} {op} rank {r}", T::DTYPE);
        let want: Vec<T> = (displs[r]..displs[r] + counts[r])
            .map(|i| reduced(size as u32, i, op))
            .collect();
        assert_eq!(bytes(&typed), bytes(&untyped), "{what}: vs runtime-typed");
        assert_eq!(typed, want, "{what}: vs host");
    }
}

#[test]
fn reduce_scatter_v_matches_runtime_api_and_host() {
    let w = world(3);
    check_reduce_scatter_v::<f16>(&w, &[2, 0, 5], ReduceOp::Sum);
    check_reduce_scatter_v::<bf16>(&w, &[3, 1, 1], ReduceOp::Min);
    check_reduce_scatter_v::<i32>(&w, &[4, 4, 0], ReduceOp::Max);
}

/// Typed AllGatherV of arbitrary bits vs the runtime-typed one and the host: rank `q`'s
/// segment at `displs[q]` of a sentinel-filled recv of `len` elements.
fn check_all_gather_v<T: DeviceElement>(w: &World, counts: &[usize], displs: &[usize], len: usize) {
    let sentinel = bits::<T>(len, 99);
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let me = c.rank() as usize;
        let send = t.htod_copy(bits::<T>(counts[me], me as u64 + 1))?;
        let mut recv = t.htod_copy(&sentinel)?;
        t.all_gather_v(&send, &mut recv, counts, displs)?;
        let untyped = c.alloc_from(&sentinel)?;
        c.all_gather_v(
            send.as_buffer(),
            counts[me],
            &untyped,
            counts,
            displs,
            T::DTYPE,
        )?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec::<T>()?))
    }));
    let mut want = sentinel.clone();
    for (q, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        if c > 0 {
            want[d..d + c].copy_from_slice(&bits::<T>(c, q as u64 + 1));
        }
    }
    for (r, (typed, untyped)) in got.into_iter().enumerate() {
        assert_eq!(bytes(&typed), bytes(&want), "{} rank {r}", T::DTYPE);
        assert_eq!(
            bytes(&untyped),
            bytes(&want),
            "{} rank {r} (runtime)",
            T::DTYPE
        );
    }
}

#[test]
fn all_gather_v_matches_runtime_api_and_host() {
    let w = world(4);
    // Out of rank order, with gaps and an empty segment.
    check_all_gather_v::<bf16>(&w, &[3, 1, 0, 2], &[6, 0, 100, 2], 10);
    check_all_gather_v::<f16>(&w, &[1, 1, 1, 1], &[3, 2, 1, 0], 4);
    check_all_gather_v::<u64>(&w, &[0, 5, 2, 1], &[0, 3, 0, 9], 12);
}

/// Typed AlltoAll of arbitrary bits, `n` elements per peer, vs the runtime-typed one and the
/// host.
fn check_all_to_all<T: DeviceElement>(w: &World, n: usize) {
    let size = w.size();
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let send = t.htod_copy(bits::<T>(n * size, c.rank() as u64 + 1))?;
        let mut recv = t.alloc_zeros::<T>(n * size)?;
        t.all_to_all(&send, &mut recv)?;
        let untyped = c.alloc(recv.as_buffer().len())?;
        c.all_to_all(send.as_buffer(), &untyped, n, T::DTYPE)?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec::<T>()?))
    }));
    for (r, (typed, untyped)) in got.into_iter().enumerate() {
        // Block q of rank r's recv: block r of rank q's send.
        let want: Vec<u8> = (0..size)
            .flat_map(|q| bytes(&bits::<T>(n * size, q as u64 + 1)[r * n..(r + 1) * n]))
            .collect();
        assert_eq!(bytes(&typed), want, "{} rank {r}", T::DTYPE);
        assert_eq!(bytes(&untyped), want, "{} rank {r} (runtime)", T::DTYPE);
    }
}

#[test]
fn all_to_all_matches_runtime_api_and_host() {
    let w = world(4);
    check_all_to_all::<f16>(&w, 5);
    check_all_to_all::<bf16>(&w, 1);
    check_all_to_all::<u8>(&w, 33);
    check_all_to_all::<f64>(&w, 3);
}

/// Typed AlltoAllV vs the runtime-typed one and the host: rank `p` sends `m[p][q]` elements to
/// `q`; sends packed in rank order, receives in reverse rank order after a gap of 1.
fn check_all_to_all_v<T: DeviceElement>(w: &World, m: &[Vec<usize>]) {
    let size = w.size();
    let send_layout = |p: usize| -> (Vec<usize>, Vec<usize>, usize) {
        let counts = m[p].clone();
        let displs = (0..size).map(|q| counts[..q].iter().sum()).collect();
        (counts, displs, m[p].iter().sum())
    };
    let recv_layout = |q: usize| -> (Vec<usize>, Vec<usize>, usize) {
        let counts: Vec<usize> = (0..size).map(|p| m[p][q]).collect();
        let mut displs = vec![0; size];
        let mut at = 0;
        for p in (0..size).rev() {
            at += 1;
            displs[p] = at;
            at += counts[p];
        }
        (counts, displs, at)
    };
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let me = c.rank() as usize;
        let (sc, sd, sl) = send_layout(me);
        let (rc, rd, rl) = recv_layout(me);
        let send = t.htod_copy(bits::<T>(sl, me as u64 + 1))?;
        let mut recv = t.alloc_zeros::<T>(rl)?;
        t.all_to_all_v(&send, &sc, &sd, &mut recv, &rc, &rd)?;
        let untyped = c.alloc(recv.as_buffer().len())?;
        c.all_to_all_v(send.as_buffer(), &sc, &sd, &untyped, &rc, &rd, T::DTYPE)?;
        Ok((t.dtoh_sync_copy(&recv)?, untyped.to_vec::<T>()?))
    }));
    for (q, (typed, untyped)) in got.into_iter().enumerate() {
        let (rc, rd, rl) = recv_layout(q);
        let mut want = vec![T::default(); rl];
        for p in 0..size {
            let (_, sd, sl) = send_layout(p);
            let from = &bits::<T>(sl, p as u64 + 1)[sd[q]..sd[q] + rc[p]];
            want[rd[p]..rd[p] + rc[p]].copy_from_slice(from);
        }
        assert_eq!(bytes(&typed), bytes(&want), "{} rank {q}", T::DTYPE);
        assert_eq!(
            bytes(&untyped),
            bytes(&want),
            "{} rank {q} (runtime)",
            T::DTYPE
        );
    }
}

#[test]
fn all_to_all_v_matches_runtime_api_and_host() {
    let w = world(3);
    let m = vec![vec![1, 0, 4], vec![2, 3, 0], vec![0, 5, 1]];
    check_all_to_all_v::<bf16>(&w, &m);
    check_all_to_all_v::<i32>(&w, &m);
    check_all_to_all_v::<f16>(&w, &[vec![2; 3], vec![2; 3], vec![2; 3]]);
}

#[test]
fn broadcast_both_forms_match_runtime_api() {
    let w = world(4);
    let root = 2;
    let data: Vec<f16> = (0..13).map(|i| f16::from_f32(i as f32 - 6.5)).collect();
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let is_root = c.rank() == root;
        // cudarc's form: Some(send) on the root, None elsewhere; into a view.
        let send = t.htod_copy(&data)?;
        let mut recv = t.htod_copy(vec![f16::NAN; 15])?;
        let from = if is_root { Some(&send) } else { None };
        t.broadcast(
            if is_root { Some(&send) } else { None },
            &mut recv.slice_mut(1..14)?,
            root,
        )?;
        // An Option bound beforehand needs its reference turned into a trait object.
        let mut again = t.alloc_zeros::<f16>(13)?;
        t.broadcast(from.map(|s| s as _), &mut again, root)?;
        // A Some off the root is ignored.
        let mut ignored = t.alloc_zeros::<f16>(13)?;
        let junk = t.htod_copy(vec![f16::ONE; 13])?;
        t.broadcast(
            Some(if is_root { &send } else { &junk }),
            &mut ignored,
            root,
        )?;
        // In place, of another type, from rank 0.
        let mut buf = t.htod_copy([c.rank() * 10 + 1; 6])?;
        t.broadcast_in_place(&mut buf, 0)?;
        let untyped = c.alloc_from(&[c.rank() * 10 + 1; 6])?;
        c.broadcast_in_place(&untyped, 6, DataType::U32, 0)?;
        Ok((
            t.dtoh_sync_copy(&recv)?,
            again.to_vec()?,
            ignored.to_vec()?,
            buf.to_vec()?,
            untyped.to_vec::<u32>()?,
        ))
    }));
    for (r, (recv, again, ignored, buf, untyped)) in got.into_iter().enumerate() {
        assert!(recv[0].is_nan() && recv[14].is_nan(), "rank {r}");
        assert_eq!(&recv[1..14], &data[..], "rank {r}");
        assert_eq!(again, data, "rank {r}");
        assert_eq!(ignored, data, "rank {r}");
        assert_eq!(buf, [1; 6], "rank {r}");
        assert_eq!(untyped, buf, "rank {r} (runtime)");
    }
}

#[test]
fn barrier_keeps_the_ranks_in_step() {
    let w = world(3);
    all(w.run(|c| -> aiv_comm::Result<()> {
        let t = c.typed();
        t.barrier()?;
        let mut x = t.htod_copy([c.rank() as i32; 3])?;
        t.all_reduce_in_place(&mut x, ReduceOp::Sum)?;
        t.barrier()?;
        t.barrier()?;
        assert_eq!(t.dtoh_sync_copy(&x)?, [3; 3]);
        Ok(())
    }));
}

#[test]
fn batch_send_recv_of_mixed_types_and_views() {
    let w = world(3);
    let got = all(w.run(|c| -> aiv_comm::Result<_> {
        let t = c.typed();
        let (r, n) = (c.rank(), c.size());
        let (right, left) = ((r + 1) % n, (r + n - 1) % n);
        let ints = t.htod_copy([r as i32 * 100; 5])?;
        let halves = t.htod_copy(smalls::<bf16>(r, 7))?;
        let mut from_left = t.htod_copy([-1i32; 8])?;
        let mut from_right = t.alloc_zeros::<bf16>(7)?;
        // A message is bytes: 2 f32 received as 8 u8.
        let floats = t.htod_copy([r as f32 + 0.5; 2])?;
        let mut raw = t.alloc_zeros::<u8>(8)?;
        // Receives first: as separate calls this order would deadlock.
        t.batch_send_recv(&[
            P2p::recv(&mut from_left.slice_mut(2..7)?, left),
            P2p::recv(&mut from_right, right),
            P2p::recv(&mut raw, left),
            P2p::send(&halves, left),
            P2p::send(&ints, right),
            P2p::send(&floats.as_view(), right),
        ])?;
        // The same exchange through the runtime-typed API, for comparison.
        let (ul, ur) = (c.alloc_from(&[-1i32; 8])?, c.alloc(14)?);
        let ul_view = ul.view(8, 20)?;
        c.batch_send_recv(&[
            SendRecvItem::recv(&ul_view, 5, DataType::I32, left),
            SendRecvItem::recv(&ur, 7, DataType::Bf16, right),
            SendRecvItem::send(halves.as_buffer(), 7, DataType::Bf16, left),
            SendRecvItem::send(ints.as_buffer(), 5, DataType::I32, right),
        ])?;
        Ok((
            t.dtoh_sync_copy(&from_left)?,
            from_right.to_vec()?,
            raw.to_vec()?,
            ul.to_vec::<i32>()?,
            ur.to_vec::<bf16>()?,
        ))
    }));
    for (r, (from_left, from_right, raw, ul, ur)) in got.into_iter().enumerate() {
        let (left, right) = ((r + 2) % 3, (r + 1) % 3);
        let mut want = vec![-1i32; 8];
        want[2..7].fill(left as i32 * 100);
        assert_eq!(from_left, want, "rank {r}");
        assert_eq!(from_right, smalls::<bf16>(right as u32, 7), "rank {r}");
        assert_eq!(raw, bytes(&[left as f32 + 0.5; 2]), "rank {r}");
        assert_eq!(ul, want, "rank {r} (runtime)");
        assert_eq!(ur, from_right, "rank {r} (runtime)");
    }
    // The items say what they are.
    let c = &w.comms()[0];
    let t = c.typed();
    let mut y = t.alloc_zeros::<i16>(3).unwrap();
    let item = P2p::recv(&mut y, 2);
    assert_eq!(
        (item.kind(), item.len(), item.dtype(), item.peer()),
        (SendRecvKind::Recv, 3, DataType::I16, 2)
    );
    assert!(!item.is_empty());
    assert!(format!("{item:?}").contains("Recv 3 x"));
}

#[test]
fn new_collectives_refuse_length_mismatches_and_write_nothing() {
    let w = world(3);
    all(w.run(|c| -> aiv_comm::Result<()> {
        let t = c.typed();
        let me = c.rank() as usize;
        let send = t.htod_copy([2i16; 9])?;
        let sentinel = vec![-7i16; 12];
        let mut recv = t.htod_copy(&sentinel)?;
        let sum = ReduceOp::Sum;
        // ReduceScatter: send.len() == size() * recv.len().
        assert!(is_length(t.reduce_scatter(
            &send,
            &mut recv.slice_mut(..2)?,
            sum
        )));
        assert!(is_length(t.reduce_scatter(
            &send,
            &mut recv.slice_mut(..4)?,
            sum
        )));
        assert!(is_length(
            t.reduce_scatter_in_place(&mut recv.slice_mut(..10)?, sum)
        ));
        // ReduceScatterV: size() counts and displacements, blocks within send, own count.
        let (c3, d3) = ([3, 3, 3], [0, 3, 6]);
        let mut r3 = recv.slice_mut(..3)?;
        assert!(is_length(t.reduce_scatter_v(
            &send,
            &c3[..2],
            &d3[..2],
            &mut r3,
            sum
        )));
        assert!(is_length(t.reduce_scatter_v(
            &send,
            &c3,
            &d3[..2],
            &mut r3,
            sum
        )));
        assert!(is_length(t.reduce_scatter_v(
            &send,
            &c3,
            &[0, 3, 7],
            &mut r3,
            sum
        )));
        let huge = [0, usize::MAX, 6];
        assert!(is_length(
            t.reduce_scatter_v(&send, &c3, &huge, &mut r3, sum)
        ));
        let mut r2 = recv.slice_mut(..2)?;
        assert!(is_length(t.reduce_scatter_v(&send, &c3, &d3, &mut r2, sum)));
        // AllGatherV: size() counts and displacements, segments within recv, own count.
        let part = send.slice(..3)?;
        assert!(is_length(t.all_gather_v(&part, &mut recv, &c3, &[0, 3])));
        assert!(is_length(t.all_gather_v(
            &part,
            &mut recv,
            &c3,
            &[0, 3, 10]
        )));
        assert!(is_length(t.all_gather_v(&send, &mut recv, &c3, &d3)));
        let mut own = [3, 3, 3];
        own[me] = 4;
        assert!(is_length(t.all_gather_v(&part, &mut recv, &own, &d3)));
        // AlltoAll: equal lengths, a multiple of size().
        assert!(is_length(t.all_to_all(&send, &mut recv.slice_mut(..6)?)));
        assert!(is_length(
            t.all_to_all(&send.slice(..8)?, &mut recv.slice_mut(..8)?)
        ));
        // AlltoAllV: four slices of size() entries, segments within their buffers.
        assert!(is_length(t.all_to_all_v(
            &send,
            &c3,
            &d3,
            &mut recv,
            &c3[..1],
            &d3
        )));
        assert!(is_length(t.all_to_all_v(
            &send,
            &c3,
            &[0, 3, 7],
            &mut recv,
            &c3,
            &d3
        )));
        assert!(is_length(t.all_to_all_v(
            &send,
            &c3,
            &d3,
            &mut recv,
            &c3,
            &[0, 3, 10]
        )));
        // Broadcast from this rank (only the root checks send).
        let root = c.rank();
        assert!(is_length(t.broadcast(Some(&send), &mut recv, root)));
        assert!(matches!(
            t.broadcast(None, &mut recv, root),
            Err(Error::InvalidArgument(_))
        ));
        t.synchronize()?;
        assert_eq!(recv.to_vec()?, sentinel, "rank {me}: recv touched");
        // Nothing was half-enqueued: the ranks are still in step for good calls.
        t.reduce_scatter(&send, &mut recv.slice_mut(..3)?, sum)?;
        t.all_to_all(&send, &mut recv.slice_mut(3..)?)?;
        let mut want = vec![6i16; 3];
        want.extend([2; 9]);
        assert_eq!(t.dtoh_sync_copy(&recv)?, want);
        Ok(())
    }));
}

/// The README's "Using it" example and the doctest in host/typed.rs's module docs are the same
/// text, so the README's cannot rot.
#[test]
fn readme_example_is_the_doctest() {
    let readme = include_str!("../../README.md");
    let using = readme
        .split("\n## Using it\n")
        .nth(1)
        .expect("README: ## Using it");
    let block = using
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .expect("README: a rust block under Using it")
        .0;
    let src = include_str!("../../host/typed.rs");
    let docs: Vec<&str> = src
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let example = docs
        .iter()
        .position(|l| *l == "# Example")
        .expect("typed.rs: # Example");
    let start = example + docs[example..].iter().position(|l| *l == "```").unwrap() + 1;
    let end = start + docs[start..].iter().position(|l| *l == "```").unwrap();
    let doctest: Vec<&str> = docs[start..end]
        .iter()
        .copied()
        .filter(|l| *l != "#" && !l.starts_with("# "))
        .collect();
    assert_eq!(block.lines().collect::<Vec<_>>(), doctest);
}
