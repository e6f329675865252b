//! Rust mirrors of the self-test kernels' argument structs and constants
//! (`kernels/selftest_args.h`, where each is described).
//!
//! Written by hand (once from bindgen's output). Two checks hold them to the header: the
//! numbers pinned on both sides (`pin_size!`, `pin_offset!`, `pin_value!` here, the
//! `SELFTEST_PIN_*` static_asserts there, compiled with the kernels) are the same list
//! (`pins_match_the_header`), and every constant of the header has its mirror here with the
//! same value (`every_constant_of_the_header_is_mirrored`).
// Constants and fields are described in the header, next to the C definitions.
#![allow(missing_docs)]

use aiv_comm::ffi::AivCommArgs;
use std::mem::{offset_of, size_of};

pub const AIV_PROBE_WORDS: u32 = 1100;
pub const AIV_PROBE_SLOTS: u32 = 16;
pub const AIV_API_BLOCK_BYTES: u32 = 256;
pub const AIV_API_PIECE: u32 = 64;
pub const AIV_VEC_REGION_BYTES: u32 = 32768;
pub const AIV_TT_COPY: AivTwinTestMode = 0;
pub const AIV_TT_PAD_IN: AivTwinTestMode = 1;
pub const AIV_TT_PAD_OUT: AivTwinTestMode = 2;
pub const AIV_TT_STRIDED_IN: AivTwinTestMode = 3;
pub const AIV_TT_STRIDED_OUT: AivTwinTestMode = 4;
pub const AIV_TT_ATOMIC: AivTwinTestMode = 5;
pub const AIV_TT_UB_OVERFLOW: AivTwinTestMode = 6;
pub const AIV_TT_LOCAL_INDEX: AivTwinTestMode = 7;
pub const AIV_TT_LONE_WAIT: AivTwinTestMode = 8;
pub const AIV_TT_POLL: AivTwinTestMode = 9;
pub const AIV_TT_POLL_SCALAR: AivTwinTestMode = 10;
pub const AIV_TT_POLL_DCCI: AivTwinTestMode = 11;
pub const AIV_TT_BAD_ATOMIC: AivTwinTestMode = 12;
pub const AIV_TT_HAZ_RAW_DMA: AivTwinTestMode = 13;
pub const AIV_TT_HAZ_RAW_SCALAR: AivTwinTestMode = 14;
pub const AIV_TT_HAZ_SCALAR_DMA: AivTwinTestMode = 15;
pub const AIV_TT_HAZ_WAR: AivTwinTestMode = 16;
pub const AIV_TT_RELAY: AivTwinTestMode = 17;
pub const AIV_TT_STALE_READ: AivTwinTestMode = 18;
pub const AIV_TT_SNAP_PEER: AivTwinTestMode = 19;
pub const AIV_TT_SNAP_SELF: AivTwinTestMode = 20;
pub const AIV_TT_SNAP_EDIT: AivTwinTestMode = 21;
pub const AIV_TT_STACK_OVERFLOW: AivTwinTestMode = 22;
pub const AIV_TT_DOUBLE_SET: AivTwinTestMode = 23;
pub const AIV_TT_SET_NO_WAIT: AivTwinTestMode = 24;
pub const AIV_TT_EVENT_ID_8: AivTwinTestMode = 25;
pub const AIV_TT_POLL_PAIR: AivTwinTestMode = 26;
pub const AIV_TT_SPIN: AivTwinTestMode = 27;
pub const AIV_TT_PAD_EXACT: AivTwinTestMode = 28;
pub const AIV_TT_PAD_IN_PARAMS: AivTwinTestMode = 29;
pub const AIV_TT_PAD_OUT_PARAMS: AivTwinTestMode = 30;
pub const AIV_TT_PAD_IN_SET: AivTwinTestMode = 31;
/// What `aiv_twin_selftest` does (`enum AivTwinTestMode`): one rule of the twin per mode.
pub type AivTwinTestMode = u32;
/// The argument struct of `aiv_twin_selftest` (kernels/twin_selftest.cpp).
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct AivTwinTestArgs {
    pub src: u64,
    pub dst: u64,
    pub deadline_cycles: u64,
    pub mode: u32,
    pub dtype: u32,
    pub op: u32,
    pub len: u32,
    pub ub_off: u32,
    pub dump_len: u32,
    pub block_count: u32,
    pub block_len: u32,
    pub src_stride: u32,
    pub dst_stride: u32,
    pub is_pad: u32,
    pub left_pad: u32,
    pub right_pad: u32,
    pub pad_value: u32,
    pub expected: u32,
    pub ub_bytes: u32,
}
pub const AIV_ST_PINGPONG: AivSyncTestMode = 0;
pub const AIV_ST_ONE2N: AivSyncTestMode = 1;
pub const AIV_ST_COUNT: AivSyncTestMode = 2;
pub const AIV_ST_TIMEOUT: AivSyncTestMode = 3;
pub const AIV_ST_BARRIER: AivSyncTestMode = 4;
pub const AIV_ST_PUBLISH: AivSyncTestMode = 5;
pub const AIV_ST_ONE_WAITS: AivSyncTestMode = 6;
/// What `aiv_sync_selftest` does (`enum AivSyncTestMode`).
pub type AivSyncTestMode = u32;
/// The argument struct of `aiv_sync_selftest` (kernels/sync_selftest.cpp): aiv-comm's
/// communicator part first, as `launch_with_tags` fills it.
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct AivSyncTestArgs {
    pub comm: AivCommArgs,
    pub result: u64,
    pub tag_base: i64,
    pub mode: u32,
    pub rounds: u32,
    pub wrong_tag: u32,
    pub bytes: u32,
}
/// The struct `aiv_args_probe` (kernels/args_probe.cpp) takes by value: more than 8 KB.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct AivProbeTiling {
    pub words: [u64; 1100usize],
    pub rows: u32,
    pub cols: u32,
}
impl Default for AivProbeTiling {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}
pub const AIV_API_QUEUE_VECOUT: AivApiTestMode = 0;
pub const AIV_API_TBUF_NO_SYNC: AivApiTestMode = 1;
pub const AIV_API_NO_FREE_SYNC: AivApiTestMode = 2;
pub const AIV_API_VECIN_TO_MTE3: AivApiTestMode = 3;
pub const AIV_API_BIND_COPY: AivApiTestMode = 4;
pub const AIV_API_EVENT_IDS: AivApiTestMode = 5;
pub const AIV_API_EVENT_COLLISION: AivApiTestMode = 6;
pub const AIV_API_EVENT_EXHAUST: AivApiTestMode = 7;
pub const AIV_API_TENSOR_HELPERS: AivApiTestMode = 8;
pub const AIV_API_SYS_VARS: AivApiTestMode = 9;
pub const AIV_API_SYNC_ALL_GM: AivApiTestMode = 10;
pub const AIV_API_SYNC_ALL_HW: AivApiTestMode = 11;
pub const AIV_API_SYNC_ALL_SKIP: AivApiTestMode = 12;
pub const AIV_API_CROSS_CORE: AivApiTestMode = 13;
pub const AIV_API_CROSS_MODE1: AivApiTestMode = 14;
pub const AIV_API_BYPASS: AivApiTestMode = 15;
pub const AIV_API_PRINTF: AivApiTestMode = 16;
pub const AIV_API_PRINTF_BAD: AivApiTestMode = 17;
pub const AIV_API_ASSERT: AivApiTestMode = 18;
pub const AIV_API_TRAP: AivApiTestMode = 19;
pub const AIV_API_BUILTIN_FLAGS: AivApiTestMode = 20;
pub const AIV_API_BUFPOOL_OVERFLOW: AivApiTestMode = 21;
pub const AIV_API_ENQUE_FULL: AivApiTestMode = 22;
pub const AIV_API_DEQUE_NEVER: AivApiTestMode = 23;
pub const AIV_API_FUSED_COPY: AivApiTestMode = 24;
pub const AIV_API_RESTORE: AivApiTestMode = 26;
pub const AIV_API_RELOAD_TWICE: AivApiTestMode = 27;
pub const AIV_API_LAZY_FILL: AivApiTestMode = 28;
pub const AIV_API_EVENT_FETCH: AivApiTestMode = 29;
pub const AIV_API_CROSS_WAIT_MODE1: AivApiTestMode = 30;
pub const AIV_API_SET_TAIL: AivApiTestMode = 31;
pub const AIV_API_RELOAD: AivApiTestMode = 25;
/// What `aiv_api_selftest` does (`enum AivApiTestMode`): one AscendC API behaviour per mode.
pub type AivApiTestMode = u32;
/// The argument struct of `aiv_api_selftest` (kernels/api_selftest.cpp).
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct AivApiTestArgs {
    pub out: u64,
    pub in_: u64,
    pub work: u64,
    pub mode: u32,
    pub rounds: u32,
    pub bufs: u32,
    pub param: i32,
}
pub const AIV_VEC_ADD: AivVecOp = 0;
pub const AIV_VEC_SUB: AivVecOp = 1;
pub const AIV_VEC_MUL: AivVecOp = 2;
pub const AIV_VEC_DIV: AivVecOp = 3;
pub const AIV_VEC_MAX: AivVecOp = 4;
pub const AIV_VEC_MIN: AivVecOp = 5;
pub const AIV_VEC_AND: AivVecOp = 6;
pub const AIV_VEC_OR: AivVecOp = 7;
pub const AIV_VEC_ADD_RELU: AivVecOp = 8;
pub const AIV_VEC_SUB_RELU: AivVecOp = 9;
pub const AIV_VEC_ADDS: AivVecOp = 16;
pub const AIV_VEC_MULS: AivVecOp = 17;
pub const AIV_VEC_MAXS: AivVecOp = 18;
pub const AIV_VEC_MINS: AivVecOp = 19;
pub const AIV_VEC_LEAKY_RELU: AivVecOp = 20;
pub const AIV_VEC_SHIFT_LEFT: AivVecOp = 21;
pub const AIV_VEC_SHIFT_RIGHT: AivVecOp = 22;
pub const AIV_VEC_AXPY: AivVecOp = 23;
pub const AIV_VEC_ABS: AivVecOp = 32;
pub const AIV_VEC_EXP: AivVecOp = 33;
pub const AIV_VEC_LN: AivVecOp = 34;
pub const AIV_VEC_SQRT: AivVecOp = 35;
pub const AIV_VEC_RSQRT: AivVecOp = 36;
pub const AIV_VEC_RECIPROCAL: AivVecOp = 37;
pub const AIV_VEC_RELU: AivVecOp = 38;
pub const AIV_VEC_NOT: AivVecOp = 39;
pub const AIV_VEC_DUPLICATE: AivVecOp = 48;
pub const AIV_VEC_COPY: AivVecOp = 49;
pub const AIV_VEC_BRCB: AivVecOp = 50;
pub const AIV_VEC_CREATE_VEC_INDEX: AivVecOp = 51;
pub const AIV_VEC_CAST: AivVecOp = 64;
pub const AIV_VEC_COMPARE: AivVecOp = 80;
pub const AIV_VEC_COMPARES: AivVecOp = 81;
pub const AIV_VEC_SELECT: AivVecOp = 82;
pub const AIV_VEC_SELECT_SCALAR: AivVecOp = 83;
pub const AIV_VEC_COMPARE_REG: AivVecOp = 84;
pub const AIV_VEC_REDUCE_SUM: AivVecOp = 96;
pub const AIV_VEC_REDUCE_MAX: AivVecOp = 97;
pub const AIV_VEC_REDUCE_MIN: AivVecOp = 98;
pub const AIV_VEC_WHOLE_SUM: AivVecOp = 99;
pub const AIV_VEC_WHOLE_MAX: AivVecOp = 100;
pub const AIV_VEC_WHOLE_MIN: AivVecOp = 101;
pub const AIV_VEC_BLOCK_SUM: AivVecOp = 102;
pub const AIV_VEC_BLOCK_MAX: AivVecOp = 103;
pub const AIV_VEC_BLOCK_MIN: AivVecOp = 104;
pub const AIV_VEC_PIPELINE: AivVecOp = 128;
pub const AIV_VEC_SCENARIO: AivVecOp = 129;
/// The instruction `aiv_vec_selftest` issues (`enum AivVecOp`).
pub type AivVecOp = u32;
pub const AIV_VEC_LEVEL2: AivVecForm = 0;
pub const AIV_VEC_BITS: AivVecForm = 1;
pub const AIV_VEC_CONT: AivVecForm = 2;
pub const AIV_VEC_OPERATOR: AivVecForm = 3;
pub const AIV_VEC_COUNTER: AivVecForm = 4;
pub const AIV_VEC_NORM_REG: AivVecForm = 5;
pub const AIV_VEC_COUNTER_BITS: AivVecForm = 6;
pub const AIV_VEC_COUNTER_CONT: AivVecForm = 7;
/// How `aiv_vec_selftest` issues it (`enum AivVecForm`).
pub type AivVecForm = u32;
pub const AIV_VEC_F32: AivVecType = 0;
pub const AIV_VEC_F16: AivVecType = 1;
pub const AIV_VEC_I16: AivVecType = 2;
pub const AIV_VEC_I32: AivVecType = 3;
pub const AIV_VEC_U16: AivVecType = 4;
pub const AIV_VEC_BF16: AivVecType = 5;
pub const AIV_VEC_U8: AivVecType = 6;
pub const AIV_VEC_I8: AivVecType = 7;
pub const AIV_VEC_I64: AivVecType = 8;
pub const AIV_VEC_U32: AivVecType = 9;
/// Element types of `aiv_vec_selftest` (`enum AivVecType`).
pub type AivVecType = u32;
/// The argument struct of `aiv_vec_selftest` (kernels/vec_selftest.cpp).
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct AivVecTestArgs {
    pub in0: u64,
    pub in1: u64,
    pub in2: u64,
    pub out: u64,
    pub work: u64,
    pub mask: [u64; 2usize],
    pub scalar: u64,
    pub op: u32,
    pub form: u32,
    pub dtype: u32,
    pub dtype2: u32,
    pub count: i32,
    pub repeat: u32,
    pub blk: [u32; 3usize],
    pub rep: [u32; 3usize],
    pub mode: u32,
    pub sync: u32,
    pub deq: u32,
    pub reserved: u32,
}

/// `sizeof(type) == bytes` (C: `SELFTEST_PIN_SIZE`).
macro_rules! pin_size {
    ($t:ident, $bytes:literal) => {
        const _: () = assert!(
            size_of::<$t>() == $bytes,
            concat!(
                "sizeof(",
                stringify!($t),
                ") is not the pinned ",
                stringify!($bytes),
                ": change the pin here and in kernels/selftest_args.h"
            )
        );
    };
}
/// `offsetof(type, field) == bytes` (C: `SELFTEST_PIN_OFFSET`).
macro_rules! pin_offset {
    ($t:ident, $f:ident, $bytes:literal) => {
        const _: () = assert!(
            offset_of!($t, $f) == $bytes,
            concat!(
                "offsetof(",
                stringify!($t),
                ", ",
                stringify!($f),
                ") is not the pinned ",
                stringify!($bytes),
                ": change the pin here and in kernels/selftest_args.h"
            )
        );
    };
}
/// The value of a constant (C: `SELFTEST_PIN_VALUE`).
macro_rules! pin_value {
    ($name:ident, $value:literal) => {
        const _: () = assert!(
            $name == $value,
            concat!(
                stringify!($name),
                " is not the pinned ",
                stringify!($value),
                ": change the pin here and in kernels/selftest_args.h"
            )
        );
    };
}

pin_value!(AIV_PROBE_WORDS, 1100);
pin_value!(AIV_PROBE_SLOTS, 16);
pin_value!(AIV_API_BLOCK_BYTES, 256);
pin_value!(AIV_API_PIECE, 64);
pin_value!(AIV_VEC_REGION_BYTES, 32768);
pin_size!(AivTwinTestArgs, 88);
pin_offset!(AivTwinTestArgs, deadline_cycles, 16);
pin_offset!(AivTwinTestArgs, mode, 24);
pin_offset!(AivTwinTestArgs, ub_bytes, 84);
pin_size!(AivSyncTestArgs, 584);
pin_offset!(AivSyncTestArgs, result, 552);
pin_offset!(AivSyncTestArgs, bytes, 580);
pin_size!(AivProbeTiling, 8808);
pin_offset!(AivProbeTiling, cols, 8804);
pin_size!(AivApiTestArgs, 40);
pin_offset!(AivApiTestArgs, param, 36);
pin_size!(AivVecTestArgs, 128);
pin_offset!(AivVecTestArgs, op, 64);
pin_offset!(AivVecTestArgs, deq, 120);

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: a #[repr(C)] struct of fixed-width integers (and AivCommArgs, itself Pod)
        // whose size equals the sum of its fields (pinned above), so it has no padding and
        // every bit pattern is valid.
        unsafe impl bytemuck::Zeroable for $t {}
        // SAFETY: as above.
        unsafe impl bytemuck::Pod for $t {}
    )*};
}
pod!(
    AivTwinTestArgs,
    AivSyncTestArgs,
    AivProbeTiling,
    AivApiTestArgs,
    AivVecTestArgs
);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    const HEADER: &str = include_str!("../kernels/selftest_args.h");
    const MIRROR: &str = include_str!("args.rs");

    /// The pins of `text`: the arguments of each `{prefix}KIND(...)` that starts a line, as
    /// (kind in lower case, arguments without `struct ` and blanks).
    fn pins(text: &str, prefix: &str, open: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(prefix))
            .map(|l| {
                let (kind, rest) = l.split_once(open).expect("a pin has arguments");
                let args = &rest[..rest.find(')').expect("a pin's arguments end")];
                let args: String = args.replace("struct ", "").split_whitespace().collect();
                (kind.to_ascii_lowercase(), args)
            })
            .collect()
    }

    #[test]
    fn pins_match_the_header() {
        let mut c = pins(HEADER, "SELFTEST_PIN_", "(");
        let mut rust = pins(MIRROR, "pin_", "!(");
        assert!(c.len() > 10, "{} pins in the header", c.len());
        c.sort();
        rust.sort();
        assert_eq!(
            c, rust,
            "kernels/selftest_args.h's SELFTEST_PIN_* and src/args.rs's pin_*!"
        );
    }

    /// `text` without its `/* */` and `//` comments.
    fn without_comments(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("/*") {
            out.push_str(&rest[..i]);
            rest = &rest[i + 2..];
            rest = &rest[rest.find("*/").expect("a comment ends") + 2..];
        }
        out.push_str(rest);
        out.lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// An integer literal of C (`32768u`) or Rust (`1100`).
    fn number(s: &str) -> Option<i64> {
        s.trim().trim_end_matches(['u', 'U']).parse().ok()
    }

    /// Every `AIV_*` constant of the header: its enumerators (implicit values counted) and its
    /// `#define`s of a number.
    fn header_constants() -> BTreeMap<String, i64> {
        let text = without_comments(HEADER);
        let mut out = BTreeMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() == Some("#define") {
                if let (Some(name), Some(v)) = (words.next(), words.next().and_then(number)) {
                    out.insert(name.to_string(), v);
                }
            }
        }
        let mut rest = text.as_str();
        while let Some(i) = rest.find("enum ") {
            rest = &rest[i..];
            let open = rest.find('{').expect("an enum has a body");
            let close = rest.find('}').expect("an enum's body ends");
            let mut next = 0;
            for item in rest[open + 1..close].split(',') {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let (name, value) = match item.split_once('=') {
                    Some((n, v)) => (n.trim(), number(v).expect("an enumerator's value")),
                    None => (item, next),
                };
                out.insert(name.to_string(), value);
                next = value + 1;
            }
            rest = &rest[close..];
        }
        out.retain(|name, _| name.starts_with("AIV_"));
        out
    }

    /// Every `pub const NAME: T = VALUE;` of the mirror.
    fn mirror_constants() -> BTreeMap<String, i64> {
        MIRROR
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .map(|l| {
                let (name, rest) = l.split_once(':').expect("a constant has a type");
                let value = rest.split_once('=').expect("a constant has a value").1;
                let value = number(value.trim_end_matches(';')).expect("a number");
                (name.trim().to_string(), value)
            })
            .collect()
    }

    #[test]
    fn every_constant_of_the_header_is_mirrored() {
        let (c, rust) = (header_constants(), mirror_constants());
        assert!(c.len() > 100, "{} constants in the header", c.len());
        assert_eq!(c, rust, "kernels/selftest_args.h and src/args.rs");
    }
}
