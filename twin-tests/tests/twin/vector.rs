//! The twin's vector unit (AscendC's vector compute API), pinned instruction by instruction with
//! `aiv_vec_selftest` (kernels/vec_selftest.cpp) against a host reference written here from the
//! AscendC docs, independently of the twin's C++: which lanes a mask and repeat select, where
//! strides put them, what each operation computes for every supported type (NaN, inf, -0 and
//! denormal inputs included), Cast in every Atlas A2 pair and round mode, compare bits,
//! Select, and where reductions put their results. Misuse is an error; a vector instruction
//! reading UB that MTE2 may still be filling is a pipe hazard.

use twin_tests::util as common;

use ascendc_twin::{args, Device, FaultKind, GmBuffer, TwinError};
use half::{bf16, f16};
use rand::{rngs::StdRng, Rng, SeedableRng};
use twin_tests::args::*;
use twin_tests::kernels;

const R: usize = AIV_VEC_REGION_BYTES as usize;

// ---------------------------------------------------------------- element types

trait El: Copy + std::fmt::Debug + bytemuck::Pod {
    const CODE: u32;
    const FLOAT: bool;
    fn f(self) -> f64;
}
macro_rules! el {
    ($t:ty, $code:expr, $float:expr, $conv:expr) => {
        impl El for $t {
            const CODE: u32 = $code;
            const FLOAT: bool = $float;
            fn f(self) -> f64 {
                $conv(self)
            }
        }
    };
}
el!(f32, AIV_VEC_F32, true, |v: f32| v as f64);
el!(f16, AIV_VEC_F16, true, |v: f16| v.to_f64());
el!(bf16, AIV_VEC_BF16, true, |v: bf16| v.to_f64());
el!(i16, AIV_VEC_I16, false, |v: i16| v as f64);
el!(i32, AIV_VEC_I32, false, |v: i32| v as f64);
el!(u16, AIV_VEC_U16, false, |v: u16| v as f64);
el!(u32, AIV_VEC_U32, false, |v: u32| v as f64);
el!(i8, AIV_VEC_I8, false, |v: i8| v as f64);
el!(u8, AIV_VEC_U8, false, |v: u8| v as f64);
el!(i64, AIV_VEC_I64, false, |v: i64| v as f64);

fn rd<T: El>(b: &[u8], off: usize) -> T {
    bytemuck::pod_read_unaligned(&b[off..off + std::mem::size_of::<T>()])
}
fn wr<T: El>(b: &mut [u8], off: usize, v: T) {
    b[off..off + std::mem::size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&v));
}
fn sz<T>() -> usize {
    std::mem::size_of::<T>()
}

/// Random values of T, a tenth of them special (NaN, ±inf, ±0, denormals, extremes).
fn values<T: El>(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n * sz::<T>()];
    for i in 0..n {
        let special = rng.gen_range(0..10) == 0;
        let bytes: Vec<u8> = match T::CODE {
            AIV_VEC_F32 => {
                let v: f32 = if special {
                    [
                        f32::NAN,
                        f32::INFINITY,
                        f32::NEG_INFINITY,
                        0.0,
                        -0.0,
                        1e-40,
                        -3e-39,
                        f32::MAX,
                    ][rng.gen_range(0..8)]
                } else {
                    rng.gen_range(-100.0f32..100.0)
                };
                v.to_le_bytes().to_vec()
            }
            AIV_VEC_F16 => {
                let v = if special {
                    [
                        f16::NAN,
                        f16::INFINITY,
                        f16::NEG_INFINITY,
                        f16::ZERO,
                        f16::NEG_ZERO,
                        f16::from_bits(3),
                        f16::from_bits(0x8201),
                        f16::MAX,
                    ][rng.gen_range(0..8)]
                } else {
                    f16::from_f32(rng.gen_range(-60.0f32..60.0))
                };
                v.to_le_bytes().to_vec()
            }
            AIV_VEC_BF16 => bf16::from_f32(rng.gen_range(-1000.0f32..1000.0))
                .to_le_bytes()
                .to_vec(),
            _ => {
                let mut b = vec![0u8; sz::<T>()];
                rng.fill(&mut b[..]);
                b
            }
        };
        out[i * sz::<T>()..(i + 1) * sz::<T>()].copy_from_slice(&bytes);
    }
    out
}

/// Whether two float results agree: the same bits (every NaN alike), or within `ulps`.
fn close<T: El>(a: T, b: T, ulps: u64) -> bool {
    let (x, y) = (a.f(), b.f());
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if bytemuck::bytes_of(&a) == bytemuck::bytes_of(&b) {
        return true;
    }
    if ulps == 0 || x.is_infinite() != y.is_infinite() {
        return false;
    }
    let ord = |v: T| -> i64 {
        let mut w = [0u8; 8];
        w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&v));
        let bits = u64::from_le_bytes(w) as i64;
        let sign = 1i64 << (8 * sz::<T>() - 1);
        if bits & sign != 0 {
            -(bits & (sign - 1))
        } else {
            bits
        }
    };
    (ord(a) - ord(b)).unsigned_abs() <= ulps
}

// ---------------------------------------------------------------- running the kernel

struct Rig {
    dev: Device,
    ins: [GmBuffer; 3],
    out: GmBuffer,
    work: GmBuffer,
    slot: GmBuffer,
}

/// What one launch is given.
#[derive(Clone)]
struct Call {
    op: u32,
    form: u32,
    dtype: u32,
    dtype2: u32,
    count: i32,
    repeat: u32,
    mask: [u64; 2],
    blk: [u32; 3],
    rep: [u32; 3],
    mode: u32,
    scalar: u64,
    deq: u32,
}

impl Call {
    fn new(op: u32, form: u32, dtype: u32) -> Call {
        Call {
            op,
            form,
            dtype,
            dtype2: dtype,
            count: 0,
            repeat: 0,
            mask: [0, 0],
            blk: [1, 1, 1],
            rep: [8, 8, 8],
            mode: 0,
            scalar: 0,
            deq: 0,
        }
    }
}

impl Rig {
    fn new() -> Rig {
        let dev = common::device(0);
        let b = || dev.alloc(R).unwrap();
        Rig {
            ins: [b(), b(), b()],
            out: b(),
            work: b(),
            slot: dev.alloc(std::mem::size_of::<AivVecTestArgs>()).unwrap(),
            dev,
        }
    }

    /// Runs `c` on inputs and initial destination / work bytes; returns (dst, work) after.
    fn run(
        &self,
        c: &Call,
        ins: [&[u8]; 3],
        dst: &[u8],
        work: &[u8],
    ) -> Result<(Vec<u8>, Vec<u8>), TwinError> {
        let pad = |b: &[u8]| {
            let mut v = b.to_vec();
            v.resize(R, 0);
            v
        };
        for (buf, data) in self.ins.iter().zip(ins) {
            buf.write(0, &pad(data)).unwrap();
        }
        self.out.write(0, &pad(dst)).unwrap();
        self.work.write(0, &pad(work)).unwrap();
        let a = AivVecTestArgs {
            in0: self.ins[0].addr() as u64,
            in1: self.ins[1].addr() as u64,
            in2: self.ins[2].addr() as u64,
            out: self.out.addr() as u64,
            work: self.work.addr() as u64,
            mask: c.mask,
            scalar: c.scalar,
            op: c.op,
            form: c.form,
            dtype: c.dtype,
            dtype2: c.dtype2,
            count: c.count,
            repeat: c.repeat,
            blk: c.blk,
            rep: c.rep,
            mode: c.mode,
            sync: 0,
            deq: c.deq,
            reserved: 0,
        };
        self.slot.write(0, &common::pod_bytes(&a)).unwrap();
        // SAFETY: aiv_vec_selftest takes the GM address of an AivVecTestArgs (held by `slot`)
        // whose buffers (`ins`, `out`, `work`, R bytes each) live as long as `self`.
        unsafe {
            self.dev
                .launch_kernel(&kernels::aiv_vec_selftest, 1, &args![self.slot.gm(0)])?;
        }
        let mut d = vec![0u8; R];
        let mut w = vec![0u8; R];
        self.out.read(0, &mut d).unwrap();
        self.work.read(0, &mut w).unwrap();
        Ok((d, w))
    }
}

/// Byte-exact comparison of two regions, naming the first difference.
fn same(got: &[u8], want: &[u8], what: &str) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at byte {i}: got {:02x?}, want {:02x?}",
            &got[i..(i + 8).min(got.len())],
            &want[i..(i + 8).min(want.len())]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: lengths");
}

fn misuse(r: Result<(Vec<u8>, Vec<u8>), TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => f.to_string(),
        other => panic!("expected a kernel fault, got {:?}", other.map(|_| ())),
    }
}

// ---------------------------------------------------------------- the lane model (docs)

/// The (repeat, lane) pairs an instruction processes, in order, and the lanes of one repeat.
fn lanes(c: &Call, per: usize) -> Vec<(usize, usize)> {
    let bit = |l: usize| (c.mask[l / 64] >> (l % 64)) & 1 == 1;
    match c.form {
        AIV_VEC_LEVEL2 | AIV_VEC_OPERATOR | AIV_VEC_COUNTER => {
            (0..c.count as usize).map(|i| (i / per, i % per)).collect()
        }
        AIV_VEC_COUNTER_BITS => (0..c.mask[0] as usize)
            .map(|i| (i / per, i % per))
            .collect(),
        AIV_VEC_BITS | AIV_VEC_NORM_REG => (0..c.repeat as usize)
            .flat_map(|r| (0..per).filter(move |&l| bit(l)).map(move |l| (r, l)))
            .collect(),
        _ => {
            let m = (c.mask[0] as usize).min(per);
            (0..c.repeat as usize)
                .flat_map(|r| (0..m).map(move |l| (r, l)))
                .collect()
        }
    }
}

/// Byte offset of lane `l` of repeat `r` of an operand of element size `es`.
fn at(es: usize, blk: u32, rep: u32, r: usize, l: usize) -> usize {
    let epb = 32 / es;
    r * rep as usize * 32 + (l / epb) * blk as usize * 32 + (l % epb) * es
}

/// Strides in effect: the level-2 forms and operators use dense ones.
fn strides(c: &Call, es_dst: usize, es_src: usize, per: usize) -> ([u32; 3], [u32; 3]) {
    match c.form {
        AIV_VEC_LEVEL2 | AIV_VEC_OPERATOR => (
            [1, 1, 1],
            [
                (per * es_dst / 32) as u32,
                (per * es_src / 32) as u32,
                (per * es_src / 32) as u32,
            ],
        ),
        _ => (c.blk, c.rep),
    }
}

/// The expected destination of an element-wise instruction `f` over sources 0 and 1.
fn expect_elementwise<S: El, D: El>(
    c: &Call,
    ins: [&[u8]; 3],
    dst: &[u8],
    f: &dyn Fn(S, S) -> D,
) -> Vec<u8> {
    let per = 256 / sz::<S>().max(sz::<D>());
    let (blk, rep) = strides(c, sz::<D>(), sz::<S>(), per);
    let mut out = dst.to_vec();
    out.resize(R, 0);
    for (r, l) in lanes(c, per) {
        let a: S = rd(ins[0], at(sz::<S>(), blk[1], rep[1], r, l));
        let b: S = rd(ins[1], at(sz::<S>(), blk[2], rep[2], r, l));
        wr(&mut out, at(sz::<D>(), blk[0], rep[0], r, l), f(a, b));
    }
    out
}

/// Compares the destinations lane by lane (so a failure names the lane).
fn check_lanes<D: El>(c: &Call, got: &[u8], want: &[u8], ulps: u64) {
    for i in 0..R / sz::<D>() {
        let (g, w): (D, D) = (rd(got, i * sz::<D>()), rd(want, i * sz::<D>()));
        let ok = if D::FLOAT {
            close(g, w, ulps)
        } else {
            bytemuck::bytes_of(&g) == bytemuck::bytes_of(&w)
        };
        assert!(
            ok,
            "op {} form {} type {} -> {} mode {}: element {i}: got {g:?}, want {w:?}",
            c.op, c.form, c.dtype, c.dtype2, c.mode
        );
    }
}

// ---------------------------------------------------------------- reference arithmetic

/// IEEE max/min with the twin's documented assumption: NaN in gives NaN, +0 above -0.
fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    if x == y {
        return if x.is_sign_negative() { y } else { x };
    }
    x.max(y)
}
fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    if x == y {
        return if x.is_sign_negative() { x } else { y };
    }
    x.min(y)
}

trait Ref: El {
    fn of(v: f64) -> Self;
    fn int(op: u32, a: Self, b: Self) -> Self;
}
impl Ref for f32 {
    fn of(v: f64) -> f32 {
        v as f32
    }
    fn int(_: u32, _: f32, _: f32) -> f32 {
        unreachable!()
    }
}
impl Ref for f16 {
    fn of(v: f64) -> f16 {
        f16::from_f64(v)
    }
    fn int(_: u32, _: f16, _: f16) -> f16 {
        unreachable!()
    }
}
macro_rules! int_ref {
    ($t:ty) => {
        impl Ref for $t {
            fn of(v: f64) -> $t {
                v as $t
            }
            fn int(op: u32, a: $t, b: $t) -> $t {
                match op {
                    AIV_VEC_ADD | AIV_VEC_ADDS => a.wrapping_add(b),
                    AIV_VEC_SUB => a.wrapping_sub(b),
                    AIV_VEC_MUL | AIV_VEC_MULS => a.wrapping_mul(b),
                    AIV_VEC_MAX | AIV_VEC_MAXS => a.max(b),
                    AIV_VEC_MIN | AIV_VEC_MINS => a.min(b),
                    AIV_VEC_AND => a & b,
                    AIV_VEC_OR => a | b,
                    AIV_VEC_NOT => !a,
                    AIV_VEC_RELU => a.max(0),
                    AIV_VEC_ADD_RELU => a.wrapping_add(b).max(0),
                    AIV_VEC_SUB_RELU => a.wrapping_sub(b).max(0),
                    AIV_VEC_SHIFT_LEFT => {
                        // Unsigned: logical; signed: the sign bit stays, the bits below shift.
                        let w = <$t>::BITS;
                        let k = b as u32;
                        let x = a as u64 & ((1u64 << w) - 1);
                        let m = (1u64 << w) - 1;
                        let r = if <$t>::MIN == 0 {
                            if k >= w {
                                0
                            } else {
                                (x << k) & m
                            }
                        } else {
                            let body = if k >= w { 0 } else { (x << k) & (m >> 1) };
                            (x & (1u64 << (w - 1))) | body
                        };
                        r as $t
                    }
                    AIV_VEC_SHIFT_RIGHT => {
                        let w = <$t>::BITS;
                        let k = b as u32;
                        if <$t>::MIN == 0 {
                            if k >= w {
                                0
                            } else {
                                ((a as u64 & ((1u64 << w) - 1)) >> k) as $t
                            }
                        } else {
                            let x = a as i64;
                            (if k >= w {
                                if x < 0 {
                                    -1
                                } else {
                                    0
                                }
                            } else {
                                x >> k
                            }) as $t
                        }
                    }
                    _ => unreachable!("integer op {op}"),
                }
            }
        }
    };
}
int_ref!(i16);
int_ref!(i32);
int_ref!(u16);
int_ref!(u32);

/// The reference result of element-wise `op` on (a, b); b is the scalar for scalar ops.
/// Float ops are computed in f64 and rounded once to T (for + - * / sqrt on half and float
/// that is exactly the correctly rounded result).
fn reference<T: Ref>(op: u32, a: T, b: T) -> T {
    if !T::FLOAT {
        return T::int(op, a, b);
    }
    let (x, y) = (a.f(), b.f());
    let v = match op {
        // Relu of the rounded sum; NaN stays NaN, as Relu's (the twin's assumption).
        AIV_VEC_ADD_RELU | AIV_VEC_SUB_RELU => {
            let v = T::of(if op == AIV_VEC_ADD_RELU { x + y } else { x - y }).f();
            if v > 0.0 || v.is_nan() {
                v
            } else {
                0.0
            }
        }
        AIV_VEC_ADD | AIV_VEC_ADDS => x + y,
        AIV_VEC_SUB => x - y,
        AIV_VEC_MUL | AIV_VEC_MULS => x * y,
        AIV_VEC_DIV => x / y,
        AIV_VEC_MAX | AIV_VEC_MAXS => fmax(x, y),
        AIV_VEC_MIN | AIV_VEC_MINS => fmin(x, y),
        AIV_VEC_LEAKY_RELU => {
            if x >= 0.0 || x.is_nan() {
                x
            } else {
                T::of(x).f() * y
            }
        }
        AIV_VEC_ABS => x.abs(),
        AIV_VEC_EXP => x.exp(),
        AIV_VEC_LN => x.ln(),
        AIV_VEC_SQRT => x.sqrt(),
        AIV_VEC_RSQRT => 1.0 / x.sqrt(),
        AIV_VEC_RECIPROCAL => 1.0 / x,
        AIV_VEC_RELU => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        _ => unreachable!("float op {op}"),
    };
    T::of(v)
}

/// Operations whose host results may differ from the NPU's (and the twin's) in the last bit.
fn ulps_of(op: u32) -> u64 {
    match op {
        AIV_VEC_EXP | AIV_VEC_LN | AIV_VEC_RSQRT | AIV_VEC_LEAKY_RELU => 1,
        // half(1 / float) may round twice: one ulp.
        AIV_VEC_RECIPROCAL => 1,
        _ => 0,
    }
}

// ---------------------------------------------------------------- element-wise

/// The issue variants every element-wise op is run in: level 2 with an odd count; level 0
/// with a random bit mask, a continuous mask, counter mode and the mask register; strides that
/// overlap (repeat stride 4 on the sources) and that skip (block stride 2, repeat stride 20).
fn variants(rng: &mut StdRng, per: usize, op_form_ok: &dyn Fn(u32) -> bool) -> Vec<Call> {
    let mut v = Vec::new();
    let mut push = |c: Call| {
        if op_form_ok(c.form) {
            v.push(c);
        }
    };
    let bits = |rng: &mut StdRng| -> [u64; 2] {
        let lo = rng.gen::<u64>() | 1;
        if per > 64 {
            [lo, rng.gen::<u64>()]
        } else {
            [lo, 0]
        }
    };
    let mut c = Call::new(0, AIV_VEC_LEVEL2, 0);
    c.count = 3 * per as i32 + 7;
    push(c.clone());
    c.form = AIV_VEC_OPERATOR;
    c.count = 2 * per as i32;
    push(c.clone());
    let mut c = Call::new(0, AIV_VEC_BITS, 0);
    c.mask = bits(rng);
    c.repeat = 3;
    push(c.clone());
    c.rep = [8, 4, 4]; // sources overlap from repeat to repeat
    push(c.clone());
    c.blk = [2, 2, 1];
    c.rep = [20, 20, 9]; // skipping blocks and repeats
    push(c.clone());
    c.form = AIV_VEC_NORM_REG;
    c.mask = bits(rng);
    c.blk = [1, 1, 1];
    c.rep = [8, 8, 8];
    push(c.clone());
    let mut c = Call::new(0, AIV_VEC_CONT, 0);
    c.mask = [(per as u64 / 2) + 3, 0];
    c.repeat = 4;
    push(c.clone());
    c.mask = [1000, 0]; // clamped to one repeat, as the docs say
    c.repeat = 2;
    push(c.clone());
    let mut c = Call::new(0, AIV_VEC_COUNTER, 0);
    c.count = per as i32 * 2 + 5;
    c.blk = [1, 2, 2];
    c.rep = [8, 16, 16];
    push(c.clone());
    c.form = AIV_VEC_COUNTER_BITS;
    c.mask = [per as u64 + 3, 0];
    push(c.clone());
    v
}

fn elementwise<T: Ref>(rig: &Rig, rng: &mut StdRng, op: u32, scalar: Option<T>) {
    let per = 256 / sz::<T>();
    let unary = (AIV_VEC_ABS..=AIV_VEC_NOT).contains(&op);
    let has_operator = matches!(
        op,
        AIV_VEC_ADD | AIV_VEC_SUB | AIV_VEC_MUL | AIV_VEC_DIV | AIV_VEC_AND | AIV_VEC_OR
    );
    let ok = |f: u32| f != AIV_VEC_OPERATOR || has_operator;
    for mut c in variants(rng, per, &ok) {
        c.op = op;
        c.dtype = T::CODE;
        let n = R / sz::<T>();
        let (a, b) = (values::<T>(rng, n), values::<T>(rng, n));
        let dst = common::pattern(R, c.form as u64 + 7);
        let s = scalar.unwrap_or_else(|| rd(&values::<T>(rng, 1), 0));
        let mut w = [0u8; 8];
        w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&s));
        c.scalar = u64::from_le_bytes(w);
        let (got, _) = rig.run(&c, [&a, &b, &[]], &dst, &[]).unwrap();
        let f = |x: T, y: T| {
            if unary {
                reference(op, x, x)
            } else if scalar.is_some() || (AIV_VEC_ADDS..=AIV_VEC_SHIFT_RIGHT).contains(&op) {
                reference(op, x, s)
            } else {
                reference(op, x, y)
            }
        };
        let want = expect_elementwise::<T, T>(&c, [&a, &b, &[]], &dst, &f);
        check_lanes::<T>(&c, &got, &want, ulps_of(op));
    }
}

#[test]
fn binary_ops_match_the_reference_in_every_form_and_type() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(1);
    for op in [
        AIV_VEC_ADD,
        AIV_VEC_SUB,
        AIV_VEC_MUL,
        AIV_VEC_MAX,
        AIV_VEC_MIN,
    ] {
        elementwise::<f32>(&rig, &mut rng, op, None);
        elementwise::<f16>(&rig, &mut rng, op, None);
        elementwise::<i16>(&rig, &mut rng, op, None);
        elementwise::<i32>(&rig, &mut rng, op, None);
    }
    elementwise::<f32>(&rig, &mut rng, AIV_VEC_DIV, None);
    elementwise::<f16>(&rig, &mut rng, AIV_VEC_DIV, None);
    for op in [AIV_VEC_AND, AIV_VEC_OR] {
        elementwise::<i16>(&rig, &mut rng, op, None);
        elementwise::<u16>(&rig, &mut rng, op, None);
    }
}

#[test]
fn scalar_ops_match_the_reference_in_every_form_and_type() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(2);
    for op in [AIV_VEC_ADDS, AIV_VEC_MULS, AIV_VEC_MAXS, AIV_VEC_MINS] {
        elementwise::<f32>(&rig, &mut rng, op, Some(1.5));
        elementwise::<f16>(&rig, &mut rng, op, Some(f16::from_f32(-2.25)));
        elementwise::<i16>(&rig, &mut rng, op, Some(-300));
        elementwise::<i32>(&rig, &mut rng, op, Some(70000));
    }
    elementwise::<f32>(&rig, &mut rng, AIV_VEC_LEAKY_RELU, Some(0.125));
    elementwise::<f16>(&rig, &mut rng, AIV_VEC_LEAKY_RELU, Some(f16::from_f32(0.3)));
}

#[test]
fn unary_ops_match_the_reference_in_every_form_and_type() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(3);
    for op in [
        AIV_VEC_ABS,
        AIV_VEC_EXP,
        AIV_VEC_LN,
        AIV_VEC_SQRT,
        AIV_VEC_RSQRT,
        AIV_VEC_RECIPROCAL,
        AIV_VEC_RELU,
    ] {
        elementwise::<f32>(&rig, &mut rng, op, None);
        elementwise::<f16>(&rig, &mut rng, op, None);
    }
    elementwise::<i32>(&rig, &mut rng, AIV_VEC_RELU, None);
    elementwise::<i16>(&rig, &mut rng, AIV_VEC_NOT, None);
    elementwise::<u16>(&rig, &mut rng, AIV_VEC_NOT, None);
}

#[test]
fn integer_arithmetic_wraps_and_float_overflow_is_inf() {
    let rig = Rig::new();
    let mut c = Call::new(AIV_VEC_ADD, AIV_VEC_LEVEL2, AIV_VEC_I16);
    c.count = 16;
    let a: Vec<u8> = bytemuck::cast_slice(&[i16::MAX; 16]).to_vec();
    let b: Vec<u8> = bytemuck::cast_slice(&[1i16; 16]).to_vec();
    let (got, _) = rig.run(&c, [&a, &b, &[]], &[], &[]).unwrap();
    assert_eq!(rd::<i16>(&got, 0), i16::MIN);
    let mut c = Call::new(AIV_VEC_MUL, AIV_VEC_LEVEL2, AIV_VEC_F16);
    c.count = 16;
    let a: Vec<u8> = bytemuck::cast_slice(&[f16::from_f32(300.0); 16]).to_vec();
    let (got, _) = rig.run(&c, [&a, &a, &[]], &[], &[]).unwrap();
    assert_eq!(rd::<f16>(&got, 0), f16::INFINITY);
}

// ---------------------------------------------------------------- Duplicate, Copy

#[test]
fn duplicate_fills_only_the_selected_lanes() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(4);
    fn one<T: Ref>(rig: &Rig, rng: &mut StdRng, v: T) {
        let per = 256 / sz::<T>();
        let ok = |f: u32| matches!(f, AIV_VEC_LEVEL2 | AIV_VEC_BITS | AIV_VEC_CONT);
        for mut c in variants(rng, per, &ok) {
            c.op = AIV_VEC_DUPLICATE;
            c.dtype = T::CODE;
            let mut w = [0u8; 8];
            w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&v));
            c.scalar = u64::from_le_bytes(w);
            let dst = common::pattern(R, 11);
            let (got, _) = rig.run(&c, [&[], &[], &[]], &dst, &[]).unwrap();
            let want = expect_elementwise::<T, T>(&c, [&[0; R], &[0; R], &[]], &dst, &|_, _| v);
            check_lanes::<T>(&c, &got, &want, 0);
        }
    }
    one::<f32>(&rig, &mut rng, -7.5);
    one::<f16>(&rig, &mut rng, f16::from_f32(3.0));
    one::<i16>(&rig, &mut rng, -5);
    one::<i32>(&rig, &mut rng, 123_456);
    one::<u16>(&rig, &mut rng, 0xbeef);
}

#[test]
fn copy_moves_masked_lanes_with_block_and_repeat_strides() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(5);
    for (dtype, es) in [(AIV_VEC_F32, 4usize), (AIV_VEC_F16, 2)] {
        let per = 256 / es;
        // The docs' example: an [18, 8] tile out of [18, 64] int32 (mask 8, 18 repeats).
        let mut c = Call::new(AIV_VEC_COPY, AIV_VEC_CONT, dtype);
        c.mask = [8, 0];
        c.repeat = 18;
        c.blk = [1, 1, 0];
        c.rep = [1, 8, 0];
        let src = common::pattern(R, 3);
        let dst = common::pattern(R, 4);
        let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &[]).unwrap();
        let mut want = dst.clone();
        for (r, l) in lanes(&c, per) {
            let s = at(es, c.blk[1], c.rep[1], r, l);
            let d = at(es, c.blk[0], c.rep[0], r, l);
            want[d..d + es].copy_from_slice(&src[s..s + es]);
        }
        same(&got, &want, &format!("Copy {dtype}"));
        // A random bit mask with skipping strides.
        let mut c = Call::new(AIV_VEC_COPY, AIV_VEC_BITS, dtype);
        c.mask = [rng.gen(), if per > 64 { rng.gen() } else { 0 }];
        c.repeat = 5;
        c.blk = [2, 1, 0];
        c.rep = [16, 4, 0];
        let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &[]).unwrap();
        let mut want = dst.clone();
        for (r, l) in lanes(&c, per) {
            let s = at(es, c.blk[1], c.rep[1], r, l);
            let d = at(es, c.blk[0], c.rep[0], r, l);
            want[d..d + es].copy_from_slice(&src[s..s + es]);
        }
        same(&got, &want, &format!("Copy bits {dtype}"));
    }
}

// ---------------------------------------------------------------- Cast

/// Round modes, as RoundMode's values.
const NONE: u32 = 0;
const RINT: u32 = 1;
const FLOOR: u32 = 2;
const CEIL: u32 = 3;
const ROUND: u32 = 4;
const TRUNC: u32 = 5;
const ODD: u32 = 6;
const ROUNDING: [u32; 5] = [RINT, FLOOR, CEIL, ROUND, TRUNC];

/// `x` rounded to an integer value by `mode` (NONE = RINT).
fn round_int(x: f64, mode: u32) -> f64 {
    match mode {
        FLOOR => x.floor(),
        CEIL => x.ceil(),
        ROUND => x.round(),
        TRUNC => x.trunc(),
        _ => x.round_ties_even(),
    }
}

/// `x` rounded to the float grid given by its neighbours `lo <= x <= hi` (`odd`: whether lo's
/// last bit is 1).
fn pick(x: f64, lo: f64, hi: f64, nearest_even: f64, lo_odd: bool, mode: u32) -> f64 {
    if lo == x {
        return lo;
    }
    if hi == x {
        return hi;
    }
    match mode {
        FLOOR => lo,
        CEIL => hi,
        TRUNC => {
            if x > 0.0 {
                lo
            } else {
                hi
            }
        }
        ROUND => {
            let (a, b) = (x - lo, hi - x);
            if a == b {
                if x > 0.0 {
                    hi
                } else {
                    lo
                }
            } else if a < b {
                lo
            } else {
                hi
            }
        }
        ODD => {
            if lo_odd {
                lo
            } else {
                hi
            }
        }
        _ => nearest_even,
    }
}

/// f64 `x` (exactly a float value) to half by `mode`.
fn to_f16(x: f64, mode: u32) -> f16 {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return f16::from_f64(x);
    }
    // Neighbours on the half grid, by walking the bit patterns of the magnitude.
    let mag = x.abs();
    let mut lo = 0u16;
    // The largest magnitude pattern <= mag (0x7c00 is inf, above every finite value).
    let (mut a, mut b) = (0u16, 0x7c00u16);
    while a < b {
        let m = (a + b).div_ceil(2);
        if f16::from_bits(m).to_f64() <= mag {
            a = m;
        } else {
            b = m - 1;
        }
    }
    lo = lo.max(a);
    let below = f16::from_bits(lo).to_f64();
    // Past the largest finite half the grid goes on at 65536 (where nearest rounding
    // overflows to inf).
    let above = if lo == 0x7bff {
        65536.0
    } else {
        f16::from_bits(lo + 1).to_f64()
    };
    let ne = f16::from_f64(mag).to_f64();
    let (lo_v, hi_v, lo_odd) = if x >= 0.0 {
        (below, above, lo & 1 == 1)
    } else {
        (-above, -below, (lo + 1) & 1 == 1)
    };
    let ne = if x >= 0.0 { ne } else { -ne };
    let v = pick(x, lo_v, hi_v, ne, lo_odd, mode);
    if v == 0.0 && x < 0.0 {
        f16::NEG_ZERO
    } else if v.abs() == 65536.0 {
        f16::from_f64(v.signum() * f64::INFINITY)
    } else {
        f16::from_f64(v)
    }
}

/// f64 `x` (exact) to f32 by `mode`.
fn to_f32(x: f64, mode: u32) -> f32 {
    let ne = x as f32;
    if x.is_nan() || ne as f64 == x {
        return ne;
    }
    let (lo, hi) = if (ne as f64) < x {
        (
            ne,
            f32::from_bits(if ne >= 0.0 {
                ne.to_bits() + 1
            } else {
                ne.to_bits() - 1
            }),
        )
    } else {
        (
            f32::from_bits(if ne > 0.0 {
                ne.to_bits() - 1
            } else {
                ne.to_bits() + 1
            }),
            ne,
        )
    };
    pick(
        x,
        lo as f64,
        hi as f64,
        ne as f64,
        lo.to_bits() & 1 == 1,
        mode,
    ) as f32
}

/// f64 `x` to bf16 by `mode` (x is a float value). (half 2's bf16::from_f64 does not round
/// to nearest-even from every f64, e.g. 20.562502 gives 20.5: go through f32, which is exact.)
fn to_bf16(x: f64, mode: u32) -> bf16 {
    let ne = bf16::from_f32(x as f32);
    if x.is_nan() || ne.to_f64() == x {
        return ne;
    }
    let up = |b: bf16| {
        let v = b.to_bits();
        bf16::from_bits(if b.to_f64() >= 0.0 && v != 0x8000 {
            v + 1
        } else if v == 0x8000 {
            1
        } else {
            v - 1
        })
    };
    let down = |b: bf16| {
        let v = b.to_bits();
        bf16::from_bits(if v == 0 {
            0x8001
        } else if b.to_f64() > 0.0 {
            v - 1
        } else {
            v + 1
        })
    };
    let (lo, hi) = if ne.to_f64() < x {
        (ne, up(ne))
    } else {
        (down(ne), ne)
    };
    // Past the largest finite value the grid goes on one ulp further (2^128), where nearest
    // rounding overflows to inf.
    let grid = |b: bf16, other: bf16| {
        let o = other.to_f64();
        if b.to_f64().is_infinite() && !o.is_infinite() {
            2.0 * o - if o > 0.0 { down(other) } else { up(other) }.to_f64()
        } else {
            b.to_f64()
        }
    };
    let v = pick(
        x,
        grid(lo, hi),
        grid(hi, lo),
        ne.to_f64(),
        lo.to_bits() & 1 == 1,
        mode,
    );
    if v == grid(lo, hi) {
        lo
    } else {
        hi
    }
}

/// Saturating conversion of a rounded value to an integer type (NaN: 0, the twin's
/// assumption).
fn sat<T: TryFrom<i128> + Copy>(v: f64, min: i128, max: i128) -> T {
    let i = if v.is_nan() {
        0
    } else if v <= min as f64 {
        min
    } else if v >= max as f64 {
        max
    } else {
        v as i128
    };
    T::try_from(i).ok().unwrap()
}

/// Cast of every Atlas A2 pair the twin models, in every mode the pair accepts, level 2 and
/// level 0.
fn cast_pair<S: El, D: El>(rig: &Rig, rng: &mut StdRng, modes: &[u32], f: &dyn Fn(S, u32) -> D) {
    let n = R / sz::<S>().max(sz::<D>());
    let mut src = values::<S>(rng, R / sz::<S>());
    // Ties and near-ties for the rounding modes (floats), magnitudes to saturate.
    if S::CODE == AIV_VEC_F32 {
        let extra = [
            0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, 1e10, -1e10, 65519.0, 65520.0, 70000.0,
        ];
        for (i, v) in extra.iter().enumerate() {
            wr(&mut src, i * 4, *v);
        }
    }
    if S::CODE == AIV_VEC_F16 {
        for (i, v) in [0.5f32, 1.5, 2.5, -2.5, 300.0, -300.0, 1000.5]
            .iter()
            .enumerate()
        {
            wr(&mut src, i * 2, f16::from_f32(*v));
        }
    }
    for &mode in modes {
        for form in [AIV_VEC_LEVEL2, AIV_VEC_BITS] {
            let mut c = Call::new(AIV_VEC_CAST, form, S::CODE);
            c.dtype2 = D::CODE;
            c.mode = mode;
            c.count = (n / 2 + 3) as i32;
            c.repeat = 3;
            let per = 256 / sz::<S>().max(sz::<D>());
            c.mask = [rng.gen(), if per > 64 { rng.gen() } else { 0 }];
            c.rep = [
                (per * sz::<D>() / 32) as u32,
                (per * sz::<S>() / 32) as u32,
                8,
            ];
            c.deq = f16::from_f32(0.5).to_bits() as u32;
            let dst = common::pattern(R, 5);
            let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &[]).unwrap();
            let want =
                expect_elementwise::<S, D>(&c, [&src, &[0; R], &[]], &dst, &|a, _| f(a, mode));
            check_lanes::<D>(&c, &got, &want, 0);
        }
    }
}

#[test]
fn cast_follows_every_a2_pair_and_round_mode() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(6);
    let all = [NONE, RINT, FLOOR, CEIL, ROUND, TRUNC];
    cast_pair::<f32, f16>(
        &rig,
        &mut rng,
        &[NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD],
        &|a, m| to_f16(a as f64, m),
    );
    cast_pair::<f32, bf16>(&rig, &mut rng, &ROUNDING, &|a, m| to_bf16(a as f64, m));
    cast_pair::<f32, f32>(&rig, &mut rng, &ROUNDING, &|a, m| {
        if a.is_nan() || a.is_infinite() {
            a
        } else {
            round_int(a as f64, m) as f32
        }
    });
    cast_pair::<f32, i32>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a as f64, m), i32::MIN as i128, i32::MAX as i128)
    });
    cast_pair::<f32, i16>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a as f64, m), i16::MIN as i128, i16::MAX as i128)
    });
    cast_pair::<f32, i64>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a as f64, m), i64::MIN as i128, i64::MAX as i128)
    });
    cast_pair::<f16, f32>(&rig, &mut rng, &[NONE], &|a, _| a.to_f32());
    cast_pair::<f16, i32>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a.to_f64(), m), i32::MIN as i128, i32::MAX as i128)
    });
    cast_pair::<f16, i16>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a.to_f64(), m), i16::MIN as i128, i16::MAX as i128)
    });
    cast_pair::<f16, i8>(&rig, &mut rng, &all, &|a, m| {
        sat(round_int(a.to_f64(), m), -128, 127)
    });
    cast_pair::<f16, u8>(&rig, &mut rng, &all, &|a, m| {
        sat(round_int(a.to_f64(), m), 0, 255)
    });
    cast_pair::<bf16, f32>(&rig, &mut rng, &[NONE], &|a, _| a.to_f32());
    cast_pair::<bf16, i32>(&rig, &mut rng, &ROUNDING, &|a, m| {
        sat(round_int(a.to_f64(), m), i32::MIN as i128, i32::MAX as i128)
    });
    cast_pair::<i32, f32>(&rig, &mut rng, &all, &|a, m| to_f32(a as f64, m));
    cast_pair::<i32, i16>(&rig, &mut rng, &[NONE], &|a, _| {
        sat(a as f64, i16::MIN as i128, i16::MAX as i128)
    });
    cast_pair::<i32, i64>(&rig, &mut rng, &[NONE], &|a, _| a as i64);
    // int32 -> half scales by DEQSCALE (0.5 here) and ignores the round mode.
    cast_pair::<i32, f16>(&rig, &mut rng, &[NONE, FLOOR], &|a, _| {
        f16::from_f32(a as f32 * 0.5)
    });
    cast_pair::<i16, f16>(&rig, &mut rng, &all, &|a, m| to_f16(a as f64, m));
    cast_pair::<i16, f32>(&rig, &mut rng, &[NONE], &|a, _| a as f32);
    cast_pair::<i8, f16>(&rig, &mut rng, &[NONE], &|a, _| f16::from_f32(a as f32));
    cast_pair::<u8, f16>(&rig, &mut rng, &[NONE], &|a, _| f16::from_f32(a as f32));
    cast_pair::<i64, i32>(&rig, &mut rng, &[NONE], &|a, _| {
        sat(a as f64, i32::MIN as i128, i32::MAX as i128)
    });
    cast_pair::<i64, f32>(&rig, &mut rng, &ROUNDING, &|a, m| {
        // i64 values are not all exact in f64: round through i128 arithmetic on the grid.
        let ne = a as f32;
        let exact = |f: f32| f as i128 == a as i128;
        if exact(ne) {
            return ne;
        }
        let (lo, hi) = if (ne as i128) < a as i128 {
            (
                ne,
                f32::from_bits(if ne >= 0.0 {
                    ne.to_bits() + 1
                } else {
                    ne.to_bits() - 1
                }),
            )
        } else {
            (
                f32::from_bits(if ne > 0.0 {
                    ne.to_bits() - 1
                } else {
                    ne.to_bits() + 1
                }),
                ne,
            )
        };
        let (dl, dh) = (a as i128 - lo as i128, hi as i128 - a as i128);
        match m {
            FLOOR => lo,
            CEIL => hi,
            TRUNC => {
                if a > 0 {
                    lo
                } else {
                    hi
                }
            }
            ROUND if dl == dh => {
                if a > 0 {
                    hi
                } else {
                    lo
                }
            }
            _ if dl == dh => ne,
            _ => {
                if dl < dh {
                    lo
                } else {
                    hi
                }
            }
        }
    });
}

#[test]
fn cast_rejects_a_round_mode_the_pair_lacks() {
    let rig = Rig::new();
    // half -> int32 has no CAST_NONE on A2 (the docs' example says otherwise; the A2 table and
    // implementation reject it).
    let mut c = Call::new(AIV_VEC_CAST, AIV_VEC_LEVEL2, AIV_VEC_F16);
    c.dtype2 = AIV_VEC_I32;
    c.mode = NONE;
    c.count = 64;
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("round mode is not supported"), "{why}");
    c.dtype = AIV_VEC_F32;
    c.dtype2 = AIV_VEC_F32;
    c.mode = ODD;
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("round mode is not supported"), "{why}");
}

// ---------------------------------------------------------------- Compare, Select

fn cmp(x: f64, y: f64, mode: u32) -> bool {
    match mode {
        0 => x < y,
        1 => x > y,
        2 => x == y,
        3 => x <= y,
        4 => x >= y,
        _ => x != y,
    }
}

fn compare_type<T: El>(rig: &Rig, rng: &mut StdRng, modes: &[u32]) {
    let per = 256 / sz::<T>();
    let n = R / sz::<T>();
    let a = values::<T>(rng, n);
    let mut b = values::<T>(rng, n);
    // Some equal pairs, so EQ / LE / GE see both outcomes.
    for i in (0..n).step_by(3) {
        let v: T = rd(&a, i * sz::<T>());
        wr(&mut b, i * sz::<T>(), v);
    }
    for &mode in modes {
        for (op, form) in [
            (AIV_VEC_COMPARE, AIV_VEC_LEVEL2),
            (AIV_VEC_COMPARE, AIV_VEC_BITS),
            (AIV_VEC_COMPARE, AIV_VEC_OPERATOR),
            (AIV_VEC_COMPARES, AIV_VEC_LEVEL2),
            (AIV_VEC_COMPARES, AIV_VEC_BITS),
        ] {
            if form == AIV_VEC_OPERATOR && T::CODE == AIV_VEC_I32 {
                continue;
            }
            let mut c = Call::new(op, form, T::CODE);
            c.mode = mode;
            c.count = 3 * per as i32;
            c.repeat = 2;
            c.mask = [0, 0]; // a reserved parameter on A2: whole repeats are compared anyway
            c.blk = [1, 2, 1];
            c.rep = [8, 16, 8];
            let s: T = rd(&b, 5 * sz::<T>());
            let mut w = [0u8; 8];
            w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&s));
            c.scalar = u64::from_le_bytes(w);
            let dst = common::pattern(R, 9);
            let (got, _) = rig.run(&c, [&a, &b, &[]], &dst, &[]).unwrap();
            let mut want = dst.clone();
            let (reps, blk, rep) = if form == AIV_VEC_BITS {
                (2, c.blk, c.rep)
            } else {
                (3, [1, 1, 1], [8, 8, 8])
            };
            for i in 0..reps * per {
                want[i / 8] &= !(1 << (i % 8));
            }
            for r in 0..reps {
                for l in 0..per {
                    let x: T = rd(&a, at(sz::<T>(), blk[1], rep[1], r, l));
                    let y: T = if op == AIV_VEC_COMPARES {
                        s
                    } else {
                        rd(&b, at(sz::<T>(), blk[2], rep[2], r, l))
                    };
                    if cmp(x.f(), y.f(), mode) {
                        let i = r * per + l;
                        want[i / 8] |= 1 << (i % 8);
                    }
                }
            }
            assert_eq!(
                &got[..reps * per / 8],
                &want[..reps * per / 8],
                "{op} form {form} type {} mode {mode}",
                T::CODE
            );
            same(
                &got[reps * per / 8..],
                &want[reps * per / 8..],
                "bytes after the result",
            );
        }
    }
}

#[test]
fn compare_writes_one_bit_per_element_lowest_first() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(7);
    compare_type::<f32>(&rig, &mut rng, &[0, 1, 2, 3, 4, 5]);
    compare_type::<f16>(&rig, &mut rng, &[0, 1, 2, 3, 4, 5]);
    compare_type::<i32>(&rig, &mut rng, &[2]);
}

#[test]
fn compare_count_must_fill_whole_repeats_and_int32_only_compares_equal() {
    let rig = Rig::new();
    let mut c = Call::new(AIV_VEC_COMPARE, AIV_VEC_LEVEL2, AIV_VEC_F32);
    c.count = 100; // 400 bytes: not a multiple of 256
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("multiple of 256 bytes"), "{why}");
    let mut c = Call::new(AIV_VEC_COMPARE, AIV_VEC_LEVEL2, AIV_VEC_I32);
    c.count = 64;
    c.mode = 0;
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("EQ"), "{why}");
}

fn select_type<T: El>(rig: &Rig, rng: &mut StdRng) {
    let per = 256 / sz::<T>();
    let n = R / sz::<T>();
    let a = values::<T>(rng, n);
    let b = values::<T>(rng, n);
    let mut bits = vec![0u8; R];
    rng.fill(&mut bits[..]);
    let s: T = rd(&b, 0);
    for (op, mode) in [
        (AIV_VEC_SELECT, 0u32),
        (AIV_VEC_SELECT, 2),
        (AIV_VEC_SELECT_SCALAR, 1),
    ] {
        for form in [AIV_VEC_LEVEL2, AIV_VEC_BITS] {
            let mut c = Call::new(op, form, T::CODE);
            c.mode = mode;
            c.count = 2 * per as i32 + 9;
            c.repeat = 3;
            c.mask = [rng.gen(), if per > 64 { rng.gen() } else { 0 }];
            c.blk = [1, 1, 2];
            c.rep = [8, 8, 16];
            let mut w = [0u8; 8];
            w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&s));
            c.scalar = u64::from_le_bytes(w);
            let dst = common::pattern(R, 13);
            let (got, w) = rig.run(&c, [&a, &b, &bits], &dst, &[]).unwrap();
            let (blk, rep) = strides(&c, sz::<T>(), sz::<T>(), per);
            let mut want = dst.clone();
            for (r, l) in lanes(&c, per) {
                // Mode 0 reuses the first repeat's bits; modes 1 and 2 move on each repeat.
                let i = if mode == 0 { l } else { r * per + l };
                let take0 = (bits[i / 8] >> (i % 8)) & 1 == 1;
                let v: T = if take0 {
                    rd(&a, at(sz::<T>(), blk[1], rep[1], r, l))
                } else if op == AIV_VEC_SELECT_SCALAR {
                    s
                } else {
                    rd(&b, at(sz::<T>(), blk[2], rep[2], r, l))
                };
                wr(&mut want, at(sz::<T>(), blk[0], rep[0], r, l), v);
            }
            same(
                &got,
                &want,
                &format!("Select op {op} mode {mode} form {form} type {}", T::CODE),
            );
            // What A2's Select leaves in CMPMASK (GetCmpMask to the work region): mode 0 the
            // first 128 bits of selMask; modes 1 and 2 a 32-byte block it writes to the
            // reserved UB, the scalar or selMask's UB address (region 2: 64 KiB) repeated.
            let cmp: Vec<u8> = match mode {
                0 => bits[..16].to_vec(),
                1 => bytemuck::bytes_of(&s).repeat(16 / sz::<T>()),
                _ => (2 * R as u32).to_le_bytes().repeat(4),
            };
            // (A2 writes 32 elements at UB 184 KiB first; the test regions end at 160 KiB.)
            same(&w[..16], &cmp, "CMPMASK after Select");
        }
    }
}

#[test]
fn select_takes_src0_where_the_bit_is_set_in_every_mode() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(8);
    select_type::<f32>(&rig, &mut rng);
    select_type::<f16>(&rig, &mut rng);
}

#[test]
fn compare_to_the_register_feeds_get_cmp_mask_and_a_register_select() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(9);
    let n = R / 4;
    let a = values::<f32>(&mut rng, n);
    let b = values::<f32>(&mut rng, n);
    let mut c = Call::new(AIV_VEC_COMPARE_REG, AIV_VEC_BITS, AIV_VEC_F32);
    c.mode = 1; // GT
    c.mask = [0x00ff_ff00_f0f0_ffff, 0];
    c.repeat = 2;
    let dst = common::pattern(R, 21);
    let work = common::pattern(R, 22);
    let (got, w) = rig.run(&c, [&a, &b, &[]], &dst, &work).unwrap();
    let mut reg = [0u64; 2];
    for l in 0..64 {
        let (x, y): (f32, f32) = (rd(&a, l * 4), rd(&b, l * 4));
        if (c.mask[0] >> l) & 1 == 1 && x > y {
            reg[0] |= 1 << l;
        }
    }
    assert_eq!(u64::from_le_bytes(w[..8].try_into().unwrap()), reg[0]);
    assert_eq!(u64::from_le_bytes(w[8..16].try_into().unwrap()), reg[1]);
    same(&w[16..], &work[16..], "work after the mask");
    // Select under the same mask, both repeats reusing the register's bits.
    let mut want = dst.clone();
    for r in 0..2 {
        for l in 0..64 {
            if (c.mask[0] >> l) & 1 == 1 {
                let src = if (reg[0] >> l) & 1 == 1 { &a } else { &b };
                let v: f32 = rd(src, r * 256 + l * 4);
                wr(&mut want, r * 256 + l * 4, v);
            }
        }
    }
    same(&got, &want, "register Select");
}

// ---------------------------------------------------------------- reductions

/// Pairwise tree sum (each addition rounded to T), as the docs describe the vector unit's.
fn tree<T: Ref>(v: &[T]) -> T {
    let mut v = v.to_vec();
    let mut n = v.len().next_power_of_two();
    v.resize(n, T::of(0.0));
    while n > 1 {
        for i in 0..n / 2 {
            v[i] = T::of(v[2 * i].f() + v[2 * i + 1].f());
        }
        n /= 2;
    }
    v[0]
}

fn better(kind: u32, x: f64, best: f64) -> bool {
    if best.is_nan() {
        return false;
    }
    if x.is_nan() {
        return true;
    }
    if kind == 1 {
        x > best
    } else {
        x < best
    }
}

/// (value, index) of the enabled lanes `ls` of a max (1) / min (2) / sum (0) reduction.
fn reduce_lanes<T: Ref>(kind: u32, ls: &[(usize, T)]) -> Option<(T, usize)> {
    if kind == 0 {
        return None;
    }
    let mut best: Option<(T, usize)> = None;
    for &(i, v) in ls {
        if best.is_none_or(|(b, _)| better(kind, v.f(), b.f())) {
            best = Some((v, i));
        }
    }
    best
}

fn index_bytes<T: El>(i: usize) -> Vec<u8> {
    if sz::<T>() == 2 {
        (i as u16).to_le_bytes().to_vec()
    } else {
        (i as u32).to_le_bytes().to_vec()
    }
}

fn reductions_of<T: Ref>(rig: &Rig, rng: &mut StdRng) {
    let per = 256 / sz::<T>();
    let epb = 32 / sz::<T>();
    let n = R / sz::<T>();
    // Finite inputs (a NaN would decide every result: see reductions_with_nan), with ties
    // planted for max and min: the smallest index must win.
    let mut src = vec![0u8; n * sz::<T>()];
    for i in 0..n {
        // Magnitudes over ten binades, so the order of additions shows in the last bits.
        let v = rng.gen_range(-1.0f64..1.0) * (1u32 << rng.gen_range(0..10)) as f64;
        wr(&mut src, i * sz::<T>(), T::of(v));
    }
    for (i, v) in [
        (10, 999.0),
        (per + 3, 999.0),
        (2 * per + 1, 999.0),
        (20, -999.0),
        (per + 9, -999.0),
    ] {
        wr(&mut src, i * sz::<T>(), T::of(v));
    }
    let work = vec![0u8; R];
    let el =
        |r: usize, l: usize, rep: u32, blk: u32| -> T { rd(&src, at(sz::<T>(), blk, rep, r, l)) };

    // ReduceSum / Max / Min, level 2: repeat sums added in order; value (and index) at dst[0..].
    for (op, kind) in [
        (AIV_VEC_REDUCE_SUM, 0),
        (AIV_VEC_REDUCE_MAX, 1),
        (AIV_VEC_REDUCE_MIN, 2),
    ] {
        for idx in [0u32, 1] {
            let mut c = Call::new(op, AIV_VEC_LEVEL2, T::CODE);
            c.count = (40 * per + 17) as i32;
            c.mode = idx;
            let dst = common::pattern(R, 31);
            let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &work).unwrap();
            let mut want = dst.clone();
            if kind == 0 {
                let mut acc: Option<T> = None;
                for r in 0..c.count as usize / per + 1 {
                    let ls: Vec<T> = (0..per)
                        .map(|l| {
                            let i = r * per + l;
                            if i < c.count as usize {
                                el(r, l, 8, 1)
                            } else {
                                T::of(0.0)
                            }
                        })
                        .collect();
                    let s = tree(&ls);
                    acc = Some(acc.map_or(s, |a| T::of(a.f() + s.f())));
                }
                // The test can tell the documented order from a tree over everything.
                let all: Vec<T> = (0..c.count as usize)
                    .map(|i| el(i / per, i % per, 8, 1))
                    .collect();
                assert_ne!(
                    bytemuck::bytes_of(&tree(&all)),
                    bytemuck::bytes_of(&acc.unwrap()),
                    "inputs too tame to tell summation orders apart"
                );
                wr(&mut want, 0, acc.unwrap());
                if idx == 1 {
                    // GetReduceRepeatSumSpr, stored by the kernel in dst[1].
                    wr(&mut want, sz::<T>(), acc.unwrap());
                }
            } else {
                let ls: Vec<(usize, T)> = (0..c.count as usize)
                    .map(|i| (i, el(i / per, i % per, 8, 1)))
                    .collect();
                let (v, i) = reduce_lanes(kind, &ls).unwrap();
                wr(&mut want, 0, v);
                if idx == 1 {
                    want[sz::<T>()..2 * sz::<T>()].copy_from_slice(&index_bytes::<T>(i));
                }
            }
            check_lanes::<T>(&c, &got, &want, 0);
        }
    }

    // ReduceSum level 0: repeat sums tree-reduced too; ReduceMax level 0 with a repeat stride.
    let mut c = Call::new(AIV_VEC_REDUCE_SUM, AIV_VEC_BITS, T::CODE);
    c.mask = [rng.gen(), if per > 64 { rng.gen() } else { 0 }];
    c.repeat = 5;
    c.rep = [8, 12, 8];
    let dst = common::pattern(R, 32);
    let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &work).unwrap();
    let on = |l: usize| (c.mask[l / 64] >> (l % 64)) & 1 == 1;
    let sums: Vec<T> = (0..5)
        .map(|r| {
            let ls: Vec<T> = (0..per)
                .map(|l| if on(l) { el(r, l, 12, 1) } else { T::of(0.0) })
                .collect();
            tree(&ls)
        })
        .collect();
    let mut want = dst.clone();
    wr(&mut want, 0, tree(&sums));
    check_lanes::<T>(&c, &got, &want, 0);

    let mut c = Call::new(AIV_VEC_REDUCE_MAX, AIV_VEC_CONT, T::CODE);
    c.mask = [per as u64 - 5, 0];
    c.repeat = 6;
    c.rep = [8, 16, 8];
    c.mode = 1;
    let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &work).unwrap();
    let ls: Vec<(usize, T)> = (0..6)
        .flat_map(|r| (0..per - 5).map(move |l| (r, l)))
        .map(|(r, l)| (r * 16 * epb + l, el(r, l, 16, 1)))
        .collect();
    let (v, i) = reduce_lanes(1, &ls).unwrap();
    let mut want = dst.clone();
    wr(&mut want, 0, v);
    want[sz::<T>()..2 * sz::<T>()].copy_from_slice(&index_bytes::<T>(i));
    check_lanes::<T>(&c, &got, &want, 0);

    // WholeReduce: one result per repeat, in each ReduceOrder.
    for (op, kind) in [
        (AIV_VEC_WHOLE_SUM, 0),
        (AIV_VEC_WHOLE_MAX, 1),
        (AIV_VEC_WHOLE_MIN, 2),
    ] {
        for order in 0..4u32 {
            if kind == 0 && order > 0 {
                continue;
            }
            let mut c = Call::new(op, AIV_VEC_BITS, T::CODE);
            c.mask = [rng.gen::<u64>() | 1, if per > 64 { rng.gen() } else { 0 }];
            c.repeat = 4;
            c.mode = order;
            c.rep = [2, 8, 0];
            c.blk = [0, 2, 0];
            c.rep[1] = 16;
            let dst = common::pattern(R, 33);
            let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &work).unwrap();
            let on = |l: usize| (c.mask[l / 64] >> (l % 64)) & 1 == 1;
            let unit = match (kind, order) {
                (0, _) | (_, 2) => sz::<T>(),
                (_, 3) => 4,
                _ => 2 * sz::<T>(),
            };
            let mut want = dst.clone();
            for r in 0..4 {
                let p = r * 2 * unit;
                if kind == 0 {
                    let ls: Vec<T> = (0..per)
                        .map(|l| if on(l) { el(r, l, 16, 2) } else { T::of(0.0) })
                        .collect();
                    wr(&mut want, p, tree(&ls));
                    continue;
                }
                let ls: Vec<(usize, T)> = (0..per)
                    .filter(|&l| on(l))
                    .map(|l| (l, el(r, l, 16, 2)))
                    .collect();
                let (v, i) = reduce_lanes(kind, &ls).unwrap();
                let vb = bytemuck::bytes_of(&v).to_vec();
                let ib = index_bytes::<T>(i);
                let bytes = match order {
                    0 => [vb, ib].concat(),
                    1 => [ib, vb].concat(),
                    2 => vb,
                    _ => (i as u32).to_le_bytes().to_vec(),
                };
                want[p..p + bytes.len()].copy_from_slice(&bytes);
            }
            check_lanes::<T>(&c, &got, &want, 0);
        }
    }

    // BlockReduce: one result per 32-byte block; a block with no enabled lane is not written.
    for (op, kind) in [
        (AIV_VEC_BLOCK_SUM, 0),
        (AIV_VEC_BLOCK_MAX, 1),
        (AIV_VEC_BLOCK_MIN, 2),
    ] {
        let mut c = Call::new(op, AIV_VEC_BITS, T::CODE);
        // Blocks 2 and 5 have no lane enabled.
        let mut m: u128 = rng.gen::<u128>() | 1;
        for b in [2usize, 5] {
            for l in b * epb..(b + 1) * epb {
                m &= !(1u128 << l);
            }
        }
        if per == 64 {
            m &= u64::MAX as u128;
        }
        c.mask = [m as u64, (m >> 64) as u64];
        c.repeat = 3;
        c.rep = [2, 8, 0];
        let dst = common::pattern(R, 34);
        let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &work).unwrap();
        let on = |l: usize| (m >> l) & 1 == 1;
        let mut want = dst.clone();
        for r in 0..3 {
            for b in 0..8 {
                let lanes: Vec<usize> = (b * epb..(b + 1) * epb).filter(|&l| on(l)).collect();
                if lanes.is_empty() {
                    continue;
                }
                let v = if kind == 0 {
                    let ls: Vec<T> = (b * epb..(b + 1) * epb)
                        .map(|l| if on(l) { el(r, l, 8, 1) } else { T::of(0.0) })
                        .collect();
                    tree(&ls)
                } else {
                    let ls: Vec<(usize, T)> = lanes.iter().map(|&l| (l, el(r, l, 8, 1))).collect();
                    reduce_lanes(kind, &ls).unwrap().0
                };
                wr(&mut want, r * 2 * 8 * sz::<T>() + b * sz::<T>(), v);
            }
        }
        check_lanes::<T>(&c, &got, &want, 0);
    }
}

#[test]
fn reductions_with_nan_and_a_no_op_mask() {
    let rig = Rig::new();
    // Assumed (docs silent): the first NaN wins a max/min, with its index.
    let mut src: Vec<f32> = (0..R / 4).map(|i| (i % 17) as f32).collect();
    src[77] = f32::NAN;
    src[90] = f32::NAN;
    let mut c = Call::new(AIV_VEC_REDUCE_MAX, AIV_VEC_LEVEL2, AIV_VEC_F32);
    c.count = 200;
    c.mode = 1;
    let (got, _) = rig
        .run(&c, [bytemuck::cast_slice(&src), &[], &[]], &[], &[])
        .unwrap();
    assert!(rd::<f32>(&got, 0).is_nan());
    assert_eq!(rd::<u32>(&got, 4), 77);
    // mask 0 is a no-op (docs): the destination, loaded by a large (deferred) DataCopy, keeps
    // its bytes.
    let mut c = Call::new(AIV_VEC_WHOLE_SUM, AIV_VEC_BITS, AIV_VEC_F32);
    c.mask = [0, 0];
    c.repeat = 3;
    c.rep = [1, 8, 0];
    let dst = common::pattern(R, 77);
    let (got, _) = rig
        .run(&c, [bytemuck::cast_slice(&src), &[], &[]], &dst, &[])
        .unwrap();
    same(&got, &dst, "WholeReduceSum with mask 0");
}

#[test]
fn reductions_put_results_where_the_docs_say() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(10);
    reductions_of::<f32>(&rig, &mut rng);
    reductions_of::<f16>(&rig, &mut rng);
}

// ---------------------------------------------------------------- misuse

#[test]
fn vector_misuse_is_an_error_naming_the_call() {
    let rig = Rig::new();
    let none: [&[u8]; 3] = [&[], &[], &[]];
    // mask[1] must be 0 for 32-bit types.
    let mut c = Call::new(AIV_VEC_ADD, AIV_VEC_BITS, AIV_VEC_F32);
    c.mask = [1, 1];
    c.repeat = 1;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(
        why.contains("Add") && why.contains("mask[1] must be 0"),
        "{why}"
    );
    // A count past the tensor.
    let mut c = Call::new(AIV_VEC_EXP, AIV_VEC_LEVEL2, AIV_VEC_F32);
    c.count = (R / 4 + 1) as i32;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(
        why.contains("Exp") && why.contains("calCount exceeds"),
        "{why}"
    );
    // Strides that walk past the destination.
    let mut c = Call::new(AIV_VEC_MUL, AIV_VEC_BITS, AIV_VEC_F16);
    c.mask = [u64::MAX, u64::MAX];
    c.repeat = 255;
    c.rep = [255, 1, 1];
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("past the end of its destination"), "{why}");
    // ReduceMax with a work buffer smaller than the documented size (9000 repeats of half
    // with the index need 18000 + ... elements; the work region holds 16384).
    let mut c = Call::new(AIV_VEC_REDUCE_MAX, AIV_VEC_CONT, AIV_VEC_F16);
    c.mask = [128, 0];
    c.repeat = 9000;
    c.mode = 1;
    c.rep = [8, 0, 8];
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("sharedTmpBuffer is smaller"), "{why}");
    c.repeat = 255; // 544 elements: fits
    rig.run(&c, none, &[], &[]).unwrap();
}

#[test]
fn the_continuous_mask_form_in_counter_mode_is_refused() {
    // AscendC converts the continuous mask to a lane pattern before it writes the register; in
    // counter mode that pattern becomes the count. The twin names the mistake; the bit-mask
    // form {count, 0} (the docs' in-call example) runs (elementwise tests pin its lanes).
    let rig = Rig::new();
    let mut c = Call::new(AIV_VEC_ADD, AIV_VEC_COUNTER_CONT, AIV_VEC_F32);
    c.mask = [100, 0];
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(
        why.contains("counter mode") && why.contains("{count, 0}"),
        "{why}"
    );
    c.form = AIV_VEC_COUNTER_BITS;
    rig.run(&c, [&[], &[], &[]], &[], &[]).unwrap();
}

// ---------------------------------------------------------------- Brcb, CreateVecIndex, Axpy

/// Brcb (docs): repeat r reads source elements 8r..8r+7 and fills destination block j of the
/// repeat (at r * dstRepStride + j * dstBlkStride blocks) with element 8r + j; the rest of the
/// destination keeps its bytes; repeatTime 0 writes nothing.
#[test]
fn brcb_broadcasts_each_source_element_over_a_block() {
    let rig = Rig::new();
    for (dtype, es) in [
        (AIV_VEC_F16, 2usize),
        (AIV_VEC_F32, 4),
        (AIV_VEC_I16, 2),
        (AIV_VEC_U32, 4),
        (AIV_VEC_BF16, 2),
    ] {
        for (repeat, blk, rep) in [(2u32, 1u32, 8u32), (5, 2, 16), (3, 1, 9), (0, 1, 8)] {
            let mut c = Call::new(AIV_VEC_BRCB, AIV_VEC_BITS, dtype);
            c.repeat = repeat;
            c.blk = [blk, 1, 1];
            c.rep = [rep, 8, 8];
            let src = common::pattern(R, 21);
            let dst = common::pattern(R, 22);
            let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &[]).unwrap();
            let mut want = dst.clone();
            for r in 0..repeat as usize {
                for j in 0..8 {
                    let e = &src[(r * 8 + j) * es..(r * 8 + j + 1) * es];
                    let b = (r * rep as usize + j * blk as usize) * 32;
                    for k in 0..32 / es {
                        want[b + k * es..b + (k + 1) * es].copy_from_slice(e);
                    }
                }
            }
            same(
                &got,
                &want,
                &format!("Brcb type {dtype} repeat {repeat} strides {blk}/{rep}"),
            );
        }
    }
}

#[test]
fn brcb_misuse_is_refused() {
    let rig = Rig::new();
    let none: [&[u8]; 3] = [&[], &[], &[]];
    // dstBlkStride 0 is undefined behaviour (docs).
    let mut c = Call::new(AIV_VEC_BRCB, AIV_VEC_BITS, AIV_VEC_F16);
    c.repeat = 1;
    c.blk = [0, 1, 1];
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(
        why.contains("Brcb") && why.contains("dstBlkStride 0"),
        "{why}"
    );
    // A source of 8 elements read by 2 repeats (16 elements).
    let mut c = Call::new(AIV_VEC_BRCB, AIV_VEC_BITS, AIV_VEC_F32);
    c.repeat = 2;
    c.count = 8;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("reads past the end of a source"), "{why}");
    c.repeat = 1; // 8 elements: fits
    rig.run(&c, none, &[], &[]).unwrap();
    // Repeat strides that walk out of the destination tensor (into the next UB region).
    let mut c = Call::new(AIV_VEC_BRCB, AIV_VEC_BITS, AIV_VEC_F32);
    c.repeat = 5;
    c.rep = [255, 8, 8];
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("past the end of its destination"), "{why}");
}

/// CreateVecIndex (docs): the count form writes firstValue, firstValue + 1, ... to the first
/// `count` elements; the mask forms write firstValue + r * (lanes of a repeat) + l to lane l of
/// repeat r where the mask enables it, at the strided positions; other bytes keep theirs.
#[test]
fn create_vec_index_counts_up_from_the_first_value() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(31);
    fn one<T: El>(rig: &Rig, rng: &mut StdRng, first: T, from: &dyn Fn(f64) -> T) {
        let per = 256 / sz::<T>();
        let bits = |rng: &mut StdRng| -> [u64; 2] {
            [
                rng.gen::<u64>() | 1,
                if per > 64 { rng.gen::<u64>() } else { 0 },
            ]
        };
        let mut calls = Vec::new();
        let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_LEVEL2, T::CODE);
        c.count = 3 * per as i32 + 7;
        calls.push(c.clone());
        c.count = 5; // less than a block
        calls.push(c.clone());
        let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_BITS, T::CODE);
        c.mask = bits(rng);
        c.repeat = 3;
        calls.push(c.clone());
        c.blk = [2, 1, 1];
        c.rep = [20, 8, 8];
        calls.push(c.clone());
        let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_CONT, T::CODE);
        c.mask = [per as u64 / 2 + 3, 0];
        c.repeat = 4;
        calls.push(c.clone());
        c.mask = [1000, 0]; // a whole repeat
        c.repeat = 2;
        c.blk = [1, 1, 1];
        c.rep = [16, 8, 8];
        calls.push(c.clone());
        for mut c in calls {
            let mut w = [0u8; 8];
            w[..sz::<T>()].copy_from_slice(bytemuck::bytes_of(&first));
            c.scalar = u64::from_le_bytes(w);
            let dst = common::pattern(R, 41);
            let (got, _) = rig.run(&c, [&[], &[], &[]], &dst, &[]).unwrap();
            let mut want = dst.clone();
            let (blk, rep) = strides(&c, sz::<T>(), sz::<T>(), per);
            for (r, l) in lanes(&c, per) {
                let v = from(first.f() + (r * per + l) as f64);
                wr(&mut want, at(sz::<T>(), blk[0], rep[0], r, l), v);
            }
            same(
                &got,
                &want,
                &format!("CreateVecIndex type {} form {}", T::CODE, c.form),
            );
        }
    }
    one::<f32>(&rig, &mut rng, -100.5, &|x| x as f32);
    one::<f16>(&rig, &mut rng, f16::from_f32(-300.0), &f16::from_f64);
    one::<i16>(&rig, &mut rng, -7, &|x| x as i16);
    one::<i32>(&rig, &mut rng, 1_000_000, &|x| x as i32);
}

#[test]
fn create_vec_index_misuse_is_refused() {
    let rig = Rig::new();
    let none: [&[u8]; 3] = [&[], &[], &[]];
    // A count past the destination tensor.
    let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_LEVEL2, AIV_VEC_F32);
    c.count = (R / 4 + 1) as i32;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(
        why.contains("CreateVecIndex") && why.contains("count exceeds"),
        "{why}"
    );
    // A destination one element into its buffer: not 32-byte aligned.
    let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_CONT, AIV_VEC_I16);
    c.mask = [128, 0];
    c.repeat = 1;
    c.mode = 1;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("not 32-byte aligned"), "{why}");
    // Counter mode (its implementation's level-0 lane masks would be read as counts).
    let mut c = Call::new(AIV_VEC_CREATE_VEC_INDEX, AIV_VEC_COUNTER, AIV_VEC_F32);
    c.count = 64;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("counter mode"), "{why}");
}

/// Axpy (docs): dst = scalar * src + dst over the lanes of each form, for the Atlas A2 pairs
/// half/half, float/float and half sources into float (64 lanes a repeat, the source read 4
/// blocks a repeat in the count form). The reference rounds the product and then the sum to the
/// destination type; 1 ulp is allowed for a fused implementation.
#[test]
fn axpy_adds_the_scaled_source_into_the_destination() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(37);
    fn pair<S: El, D: El>(
        rig: &Rig,
        rng: &mut StdRng,
        from: &dyn Fn(f64) -> D,
        round_s: &dyn Fn(f64) -> D,
    ) {
        let per = 256 / sz::<S>().max(sz::<D>());
        let ok = |f: u32| {
            matches!(
                f,
                AIV_VEC_LEVEL2 | AIV_VEC_BITS | AIV_VEC_CONT | AIV_VEC_COUNTER | AIV_VEC_NORM_REG
            )
        };
        for mut c in variants(rng, per, &ok) {
            c.op = AIV_VEC_AXPY;
            c.dtype = S::CODE;
            c.dtype2 = D::CODE;
            let k: S = rd(&values::<S>(rng, 1), 0);
            let mut w = [0u8; 8];
            w[..sz::<S>()].copy_from_slice(bytemuck::bytes_of(&k));
            c.scalar = u64::from_le_bytes(w);
            let src = values::<S>(rng, R / sz::<S>());
            let dst = values::<D>(rng, R / sz::<D>());
            let (got, _) = rig.run(&c, [&src, &[], &[]], &dst, &[]).unwrap();
            let (blk, rep) = strides(&c, sz::<D>(), sz::<S>(), per);
            let mut want = dst.clone();
            for (r, l) in lanes(&c, per) {
                let x: S = rd(&src, at(sz::<S>(), blk[1], rep[1], r, l));
                let o = at(sz::<D>(), blk[0], rep[0], r, l);
                let d: D = rd(&dst, o);
                let prod = round_s(x.f() * k.f());
                wr(&mut want, o, from(prod.f() + d.f()));
            }
            check_lanes::<D>(&c, &got, &want, 1);
        }
    }
    pair::<f16, f16>(&rig, &mut rng, &f16::from_f64, &f16::from_f64);
    pair::<f32, f32>(&rig, &mut rng, &|x| x as f32, &|x| x as f32);
    pair::<f16, f32>(&rig, &mut rng, &|x| x as f32, &|x| x as f32);
}

#[test]
fn axpy_misuse_is_refused() {
    let rig = Rig::new();
    let none: [&[u8]; 3] = [&[], &[], &[]];
    // half sources into a float destination may not overlap it (docs).
    let mut c = Call::new(AIV_VEC_AXPY, AIV_VEC_LEVEL2, AIV_VEC_F16);
    c.dtype2 = AIV_VEC_F32;
    c.count = 64;
    c.mode = 1;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("Axpy") && why.contains("overlaps"), "{why}");
    // A count past the source.
    let mut c = Call::new(AIV_VEC_AXPY, AIV_VEC_LEVEL2, AIV_VEC_F16);
    c.count = (R / 2 + 1) as i32;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("calCount exceeds"), "{why}");
    // A repeat of the half -> float pair has 64 lanes: mask[1] must be 0.
    let mut c = Call::new(AIV_VEC_AXPY, AIV_VEC_BITS, AIV_VEC_F16);
    c.dtype2 = AIV_VEC_F32;
    c.mask = [u64::MAX, 1];
    c.repeat = 1;
    let why = misuse(rig.run(&c, none, &[], &[]));
    assert!(why.contains("mask[1] must be 0"), "{why}");
}

// ---------------------------------------------------------------- hazards

fn pipeline(rig: &Rig, sync: u32) -> Result<Vec<f32>, TwinError> {
    let n = 1024usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    rig.ins[0].write(0, bytemuck::cast_slice(&input)).unwrap();
    let a = AivVecTestArgs {
        in0: rig.ins[0].addr() as u64,
        in1: 0,
        in2: 0,
        out: rig.out.addr() as u64,
        work: 0,
        mask: [0, 0],
        scalar: 2.0f32.to_bits() as u64,
        op: AIV_VEC_PIPELINE,
        form: 0,
        dtype: AIV_VEC_F32,
        dtype2: AIV_VEC_F32,
        count: n as i32,
        repeat: 0,
        blk: [1; 3],
        rep: [8; 3],
        mode: 0,
        sync,
        deq: 0,
        reserved: 0,
    };
    rig.slot.write(0, &common::pod_bytes(&a)).unwrap();
    // SAFETY: aiv_vec_selftest takes the GM address of an AivVecTestArgs (held by `slot`) whose
    // buffers live as long as `rig`.
    unsafe {
        rig.dev
            .launch_kernel(&kernels::aiv_vec_selftest, 1, &args![rig.slot.gm(0)])?;
    }
    let mut out = vec![0f32; n];
    rig.out.read(0, bytemuck::cast_slice_mut(&mut out)).unwrap();
    Ok(out)
}

fn hazard(r: Result<Vec<f32>, TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => match f.kind {
            FaultKind::PipeHazard { reason } => reason,
            k => panic!("expected a pipe hazard, got {k:?}"),
        },
        other => panic!("expected a pipe hazard, got {other:?}"),
    }
}

#[test]
fn a_vector_read_of_ub_mte2_may_still_fill_is_a_hazard() {
    let rig = Rig::new();
    let out = pipeline(&rig, 0).unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as f32 + 2.0));
    let why = hazard(pipeline(&rig, 1));
    assert!(why.contains("V reads UB") && why.contains("MTE2"), "{why}");
    let why = hazard(pipeline(&rig, 2));
    assert!(
        why.contains("MTE3 reads UB") && why.contains("V wrote"),
        "{why}"
    );
}

#[test]
fn a_scalar_read_of_a_vector_result_needs_v_s() {
    let rig = Rig::new();
    let out = pipeline(&rig, 8).unwrap();
    assert_eq!((out[0], out[1], out[2]), (2.0, 20.0, 4.0));
    let why = hazard(pipeline(&rig, 4));
    assert!(
        why.contains("S reads UB") && why.contains("V wrote"),
        "{why}"
    );
}

// ---------------------------------------------------------------- half conversions

#[test]
fn half_conversions_are_exact_for_every_half_and_nearest_even_from_float() {
    // Every one of the 65536 halves to float (Cast half -> float), and float -> half (CAST_RINT)
    // over a sweep of the exponent range plus random bit patterns, against the half crate.
    let rig = Rig::new();
    let per = R / 4; // floats per region
    let mut c = Call::new(AIV_VEC_CAST, AIV_VEC_LEVEL2, AIV_VEC_F16);
    c.dtype2 = AIV_VEC_F32;
    c.count = per as i32;
    for base in (0..65536usize).step_by(per) {
        let src: Vec<u8> = (base..base + per)
            .flat_map(|h| (h as u16).to_le_bytes())
            .collect();
        let (got, _) = rig.run(&c, [&src, &[], &[]], &[], &[]).unwrap();
        for i in 0..per {
            let (g, w) = (
                rd::<f32>(&got, i * 4),
                f16::from_bits((base + i) as u16).to_f32(),
            );
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "half {:#06x}: {g} vs {w}",
                base + i
            );
        }
    }
    let mut rng = StdRng::seed_from_u64(12);
    let mut c = Call::new(AIV_VEC_CAST, AIV_VEC_LEVEL2, AIV_VEC_F32);
    c.dtype2 = AIV_VEC_F16;
    c.mode = RINT;
    c.count = per as i32;
    for round in 0..24u32 {
        let src: Vec<u32> = (0..per as u32)
            .map(|i| {
                if round < 8 {
                    // Exponents 96..=159 (subnormal halves to overflow), all rounding bits.
                    ((96 + (round * per as u32 + i) / 4096 % 64) << 23) | (i * 2053 % (1 << 23))
                } else {
                    rng.gen()
                }
            })
            .collect();
        let (got, _) = rig
            .run(&c, [bytemuck::cast_slice(&src), &[], &[]], &[], &[])
            .unwrap();
        for (i, &x) in src.iter().enumerate() {
            let v = f32::from_bits(x);
            let (g, w) = (rd::<f16>(&got, i * 2), f16::from_f32(v));
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "float {x:#010x} ({v}): {g} vs {w}"
            );
        }
    }
}

// ---------------------------------------------------------------- state across calls

/// Runs scenario `mode` of AIV_VEC_SCENARIO on float inputs 0, 1 (element i: i, 2i).
fn scenario(rig: &Rig, mode: u32) -> Result<(Vec<u8>, Vec<u8>), TwinError> {
    let mut c = Call::new(AIV_VEC_SCENARIO, 0, AIV_VEC_F32);
    c.mode = mode;
    let a: Vec<f32> = (0..R / 4).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..R / 4).map(|i| 2.0 * i as f32).collect();
    rig.run(
        &c,
        [bytemuck::cast_slice(&a), bytemuck::cast_slice(&b), &[]],
        &vec![0xee; R],
        &[],
    )
}

#[test]
fn the_mask_register_survives_or_is_reset_as_on_a2() {
    let rig = Rig::new();
    let lanes_written = |d: &[u8]| {
        (0..64)
            .filter(|&i| d[i * 4..i * 4 + 4] != [0xee; 4])
            .count()
    };
    // Compare leaves the mask alone: the next isSetMask = false instruction uses 0xF.
    let (d, _) = scenario(&rig, 0).unwrap();
    assert_eq!(lanes_written(&d), 4);
    // SetVectorMask<T>(len) beyond one repeat means one full repeat (docs), not an error.
    let (d, _) = scenario(&rig, 6).unwrap();
    assert_eq!(lanes_written(&d), 64);
    // ReduceMax leaves the mask undocumented: using it without setting it is an error.
    let why = misuse(scenario(&rig, 1));
    assert!(why.contains("call SetVectorMask first"), "{why}");
    // In counter mode SetVectorMask<T>(len) writes a lane pattern: an error, not a count.
    let why = misuse(scenario(&rig, 5));
    assert!(why.contains("MaskMode::COUNTER"), "{why}");
}

#[test]
fn a_scalar_read_right_after_reduce_sum_is_ordered_by_reduce_sum_itself() {
    // A2's ReduceSum (count form) stores the result with the scalar unit between its own V_S
    // and S_V / S_MTE3 flags: reading it at once is correct, and no hazard is reported.
    let rig = Rig::new();
    let (d, _) = scenario(&rig, 2).unwrap();
    let want: f32 = (0..100).map(|i| i as f32).sum();
    assert_eq!((rd::<f32>(&d, 0), rd::<f32>(&d, 4)), (want, want));
}

#[test]
fn vector_writes_past_the_unified_buffer_and_partial_overlaps_are_refused() {
    let rig = Rig::new();
    let why = misuse(scenario(&rig, 3));
    assert!(
        why.contains("outside the") && why.contains("Unified Buffer"),
        "{why}"
    );
    let why = misuse(scenario(&rig, 4));
    assert!(why.contains("partially overlaps"), "{why}");
    // A counter-mode count beyond the UB (it would overflow the arithmetic) is named.
    let mut c = Call::new(AIV_VEC_ADDS, AIV_VEC_COUNTER_BITS, AIV_VEC_F32);
    c.mask = [(1 << 62) + 64, 0];
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("exceeds the Unified Buffer"), "{why}");
}

#[test]
fn copy_in_counter_mode_moves_count_elements_per_repeat() {
    // The docs' Copy counter mode: the mask is the elements of each repeat (144 int32 = 18
    // blocks here), repeatTime counts; strides {1, 2, 18, 40}.
    let rig = Rig::new();
    let (d, _) = scenario(&rig, 7).unwrap();
    let mut want = vec![0xeeu8; R];
    for r in 0..2usize {
        for e in 0..144usize {
            let s = r * 40 * 32 + (e / 8) * 2 * 32 + (e % 8) * 4;
            let o = r * 18 * 32 + (e / 8) * 32 + (e % 8) * 4;
            wr(&mut want, o, (s / 4) as f32);
        }
    }
    same(&d, &want, "Copy counter mode");
}

#[test]
fn interleaved_strided_operands_are_not_an_overlap() {
    // The docs forbid partial overlap of the bytes an instruction touches, not of its spans.
    let rig = Rig::new();
    let x = |i: usize| i as f32;
    let (d, _) = scenario(&rig, 8).unwrap();
    for r in 0..4 {
        for l in 0..64 {
            let i = r * 128 + l;
            assert_eq!(rd::<f32>(&d, i * 4), x(i) + x(i + 64), "row {r} lane {l}");
        }
    }
    let (d, _) = scenario(&rig, 9).unwrap();
    for b in 0..8 {
        for k in 0..8 {
            let i = 16 * b + k; // even blocks: dst; odd blocks: src (8 floats on)
            assert_eq!(rd::<f32>(&d, i * 4), x(i + 8) + 1.0, "block {b} lane {k}");
        }
    }
    let why = misuse(scenario(&rig, 10));
    assert!(why.contains("counter mode"), "{why}");
}

#[test]
fn add_relu_sub_relu_and_shifts_match_the_reference() {
    let rig = Rig::new();
    let mut rng = StdRng::seed_from_u64(13);
    for op in [AIV_VEC_ADD_RELU, AIV_VEC_SUB_RELU] {
        elementwise::<f32>(&rig, &mut rng, op, None);
        elementwise::<f16>(&rig, &mut rng, op, None);
        elementwise::<i16>(&rig, &mut rng, op, None);
    }
    for op in [AIV_VEC_SHIFT_LEFT, AIV_VEC_SHIFT_RIGHT] {
        for k in [0u32, 1, 5, 15, 16] {
            elementwise::<i16>(&rig, &mut rng, op, Some(k as i16));
            elementwise::<u16>(&rig, &mut rng, op, Some(k as u16));
        }
        for k in [0u32, 3, 31, 32] {
            elementwise::<i32>(&rig, &mut rng, op, Some(k as i32));
            elementwise::<u32>(&rig, &mut rng, op, Some(k));
        }
    }
    // The docs' examples: 0b1010101010101010 as int16 << 1 = 0b1101010101010100, and << 3 =
    // 0b1101010101010000; >> 1 = 0b1101010101010101; roundEn: 17 >> 5 = 0 + 1.
    let run = |op: u32, k: i16, v: i16, round: bool| -> i16 {
        let mut c = Call::new(op, AIV_VEC_BITS, AIV_VEC_I16);
        c.mask = [1, 0];
        c.repeat = 1;
        c.scalar = k as u16 as u64;
        c.mode = round as u32;
        let src: Vec<u8> = bytemuck::cast_slice(&[v; 128]).to_vec();
        rd(&rig.run(&c, [&src, &[], &[]], &[], &[]).unwrap().0, 0)
    };
    let x = 0b1010_1010_1010_1010u16 as i16;
    assert_eq!(
        run(AIV_VEC_SHIFT_LEFT, 1, x, false) as u16,
        0b1101_0101_0101_0100
    );
    assert_eq!(
        run(AIV_VEC_SHIFT_LEFT, 3, x, false) as u16,
        0b1101_0101_0101_0000
    );
    assert_eq!(
        run(AIV_VEC_SHIFT_RIGHT, 1, x, false) as u16,
        0b1101_0101_0101_0101
    );
    assert_eq!(run(AIV_VEC_SHIFT_RIGHT, 5, 17, true), 1);
    assert_eq!(run(AIV_VEC_SHIFT_RIGHT, 5, 17, false), 0);
    // A shift beyond the type's width is refused.
    let mut c = Call::new(AIV_VEC_SHIFT_LEFT, AIV_VEC_LEVEL2, AIV_VEC_I16);
    c.count = 16;
    c.scalar = 17;
    let why = misuse(rig.run(&c, [&[], &[], &[]], &[], &[]));
    assert!(why.contains("shift amount out of range"), "{why}");
}
