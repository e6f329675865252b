//! The AllGather rule every algorithm must follow: every rank's input, in rank order, in every
//! rank's output, and nothing written past it.

use aiv_comm::{AllGatherAlgo, DataType, World};

use super::{assert_guarded, guarded, pattern};

/// Runs one AllGather of `count` elements of `dtype` per rank with `algo` on every rank of `w`
/// (in place: each rank's input is its slot of the output) and checks every rank's output byte
/// for byte, and that the 64 bytes after it are untouched.
pub fn assert_all_gather(
    w: &World,
    count: usize,
    dtype: DataType,
    in_place: bool,
    algo: AllGatherAlgo,
) {
    assert_all_gather_by(w, count, dtype, in_place, |_| algo);
}

/// [`assert_all_gather`] with rank r calling `algo_of(r)`.
pub fn assert_all_gather_by(
    w: &World,
    count: usize,
    dtype: DataType,
    in_place: bool,
    algo_of: impl Fn(usize) -> AllGatherAlgo + Sync,
) {
    let n = w.size();
    let es = dtype.size();
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|r| pattern(count * es, r as u64 * 31 + count as u64 + 17))
        .collect();
    let expect = inputs.concat();
    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let r = c.rank() as usize;
        let (recv, main) = guarded(c, count * es * n)?;
        let send = if in_place {
            let s = recv.view(r * count * es, count * es)?;
            s.write(0, &inputs[r])?;
            s
        } else {
            c.alloc_from(&inputs[r])?
        };
        c.all_gather_with(&send, &main, count, dtype, algo_of(r))?;
        c.synchronize()?;
        recv.to_vec::<u8>()
    });
    for (r, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_guarded(
            &o,
            &expect,
            &format!(
                "rank {r} of {n}: {count} x {dtype} in place {in_place} {:?}",
                algo_of(r)
            ),
        );
    }
}
