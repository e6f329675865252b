//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod gather;
pub mod mismatch;
pub mod reduce;

use ascendc_twin::{Device, DeviceConfig, GmBuffer, Twin};

/// How many times a repeated test runs: the environment variable `var` if set (a count; any
/// other value stops the test, rather than quietly running the default), else `default`.
pub fn reps(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{var}={v:?} is not a repetition count")),
        Err(std::env::VarError::NotPresent) => default,
        Err(e) => panic!("{var}: {e}"),
    }
}

/// The byte the tests fill a buffer's guard bytes (and the rest of it) with before a collective.
pub const SENTINEL: u8 = 0xEE;

/// A buffer of `len` bytes plus 64 bytes of guard, all filled with [`SENTINEL`]; returns the
/// whole allocation and the view of its first `len` bytes (what the collective may write).
pub fn guarded(
    c: &aiv_comm::Communicator,
    len: usize,
) -> aiv_comm::Result<(aiv_comm::DeviceBuffer, aiv_comm::DeviceBuffer)> {
    let all = c.alloc(len + 64)?;
    all.fill(SENTINEL)?;
    let main = all.view(0, len)?;
    Ok((all, main))
}

/// What a [`guarded`] allocation held after the call: `want` at its start and [`SENTINEL`] in
/// every byte after it. `what` names the rank and call in the failure message.
pub fn assert_guarded(got: &[u8], want: &[u8], what: &str) {
    assert!(got[..want.len()] == want[..], "{what}");
    assert!(
        got[want.len()..].iter().all(|&b| b == SENTINEL),
        "{what}: wrote past recv"
    );
}

/// The devices a test suite (`tests/integration/suites/*.rs`) runs on: each suite is included
/// once per backend (by `tests/integration/twin.rs` and `tests/integration/acl.rs`), whose module
/// names it as `super::BACKEND`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU twin, directly.
    Twin,
    /// aiv-comm's ACL backend over acl-twin (the `libascendcl.so` Cargo builds next to the
    /// test binaries): the path an NPU takes, on the twin.
    AclTwin,
}

/// acl-twin's ACL runtime, from the `deps/` directory of this test binary (where Cargo builds
/// it: aiv-comm's tests depend on acl-twin).
pub fn acl_twin() -> ascendc_sys::Acl {
    acl_twin_hiding(&[])
}

/// [`acl_twin`], with the functions named in `hidden` treated as absent.
pub fn acl_twin_hiding(hidden: &[&str]) -> ascendc_sys::Acl {
    let exe = std::env::current_exe().expect("test binary path");
    let lib = exe.parent().expect("deps/").join("libascendcl.so");
    ascendc_sys::Acl::open(lib.to_str().expect("a UTF-8 path"), hidden)
        .unwrap_or_else(|e| panic!("{e} (build acl-twin: cargo build -p acl-twin --tests)"))
}

/// The version acl-twin reports as the runtime's (`aclsysGetVersionStr`): its crate version,
/// read from its manifest (aiv-comm's tests do not link acl-twin's crate).
pub fn acl_twin_version() -> String {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/acl-twin/Cargo.toml");
    let text = std::fs::read_to_string(manifest).expect("acl-twin's Cargo.toml");
    let v = text
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("acl-twin's [package] version");
    format!("acl-twin {v}")
}

/// A world of `ranks` with `config` on `backend`.
pub fn make_world(
    backend: Backend,
    ranks: usize,
    config: aiv_comm::Config,
) -> aiv_comm::Result<aiv_comm::World> {
    match backend {
        Backend::Twin => aiv_comm::World::sim_with(ranks, config),
        Backend::AclTwin => {
            let b = aiv_comm::backend::acl::AclBackend::with_runtime(acl_twin(), ranks as u32)?;
            aiv_comm::World::with_backend(ranks, config, b)
        }
    }
}

/// Random delays of up to `us` microseconds before the GM accesses of `w`'s blocks, where the
/// backend is the twin (through ACL the twin's knobs are acl-twin's: its `AIV_TWIN_*`
/// environment at start).
pub fn jitter(w: &aiv_comm::World, us: u32) {
    if let Some(t) = w.twin() {
        t.set_jitter_us(us);
    }
}

/// A world of `ranks` with `buffer` bytes of HCCL buffer, `parts` blocks per peer forced (None:
/// by size) and `deterministic` reductions as given (None: the environment's).
pub fn split_world(
    ranks: usize,
    buffer: usize,
    parts: Option<u32>,
    deterministic: Option<bool>,
) -> aiv_comm::World {
    split_world_on(Backend::Twin, ranks, buffer, parts, deterministic)
}

/// [`split_world`] on `backend`.
pub fn split_world_on(
    backend: Backend,
    ranks: usize,
    buffer: usize,
    parts: Option<u32>,
    deterministic: Option<bool>,
) -> aiv_comm::World {
    make_world(
        backend,
        ranks,
        aiv_comm::Config {
            buffer_bytes: Some(buffer),
            blocks_per_peer: parts,
            deterministic,
            ..aiv_comm::Config::default()
        },
    )
    .unwrap()
}

/// A fresh simulated device of a twin of its own.
pub fn device(rank: u32) -> Device {
    Twin::new()
        .device(rank, DeviceConfig::default())
        .expect("device")
}

/// `n` fresh simulated devices (ranks 0..n) of one new twin, so kernels of one reach the others'
/// memory.
pub fn devices(n: u32) -> Vec<Device> {
    let twin = Twin::new();
    (0..n)
        .map(|r| twin.device(r, DeviceConfig::default()).expect("device"))
        .collect()
}

/// Bytes of a plain-old-data value.
pub fn pod_bytes<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: T is a plain C struct of integers (no padding bytes are read uninitialised:
    // every args struct here is fully packed with fixed-width fields).
    unsafe {
        std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()).to_vec()
    }
}

/// GM address of `buf` plus `off`, as kernels take it.
pub fn gm(buf: &GmBuffer, off: usize) -> u64 {
    buf.addr() as u64 + off as u64
}

/// Deterministic pseudo-random bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Reads a whole buffer.
pub fn read_all(buf: &GmBuffer) -> Vec<u8> {
    let mut v = vec![0u8; buf.len()];
    buf.read(0, &mut v).unwrap();
    v
}

/// The `RESULT` lines a process started by a test printed (a rank process's answers to its
/// parent), in the order printed, each without the marker.
pub fn results(out: &std::process::Output) -> Vec<String> {
    result_lines(&String::from_utf8_lossy(&out.stdout))
}

/// The `RESULT` lines of `text` (a process's output), each without the marker.
pub fn result_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r.trim().to_string()))
        .collect()
}
