//! Helpers the tests share: fresh devices, GM addresses, patterns, and the twin self-test's
//! launch.

use ascendc_twin::{Device, DeviceConfig, GmBuffer, KernelFault, Twin, TwinError};

use crate::args::AivTwinTestArgs;
use crate::kernels;

/// A fresh simulated device of a twin of its own.
pub fn device(rank: u32) -> Device {
    Twin::new()
        .device(rank, DeviceConfig::default())
        .expect("device")
}

/// Bytes of a plain-old-data value (an argument struct).
pub fn pod_bytes<T: bytemuck::Pod>(v: &T) -> Vec<u8> {
    bytemuck::bytes_of(v).to_vec()
}

/// Runs the twin self-test kernel on `block_dim` blocks of `dev`.
pub fn selftest(dev: &Device, args: AivTwinTestArgs, block_dim: u32) -> Result<(), TwinError> {
    let a = dev.alloc(std::mem::size_of::<AivTwinTestArgs>()).unwrap();
    a.write(0, &pod_bytes(&args)).unwrap();
    // SAFETY: aiv_twin_selftest takes the GM address of an AivTwinTestArgs, which `a` holds for
    // the whole (synchronous) launch.
    unsafe {
        dev.launch_kernel(
            &kernels::aiv_twin_selftest,
            block_dim,
            &ascendc_twin::args![a.gm(0)],
        )
    }
}

/// The kernel fault of a launch that must have faulted.
pub fn fault(r: Result<(), TwinError>) -> KernelFault {
    match r {
        Err(TwinError::Fault(f)) => f,
        other => panic!("expected a kernel fault, got {other:?}"),
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

/// CPU time (user + system) this process has used, in seconds.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields 14 and 15 of stat (utime, stime) are at 11 and 12 after the command name
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// A vector mask (`mask[0]`, `mask[1]`: 128 lane bits) as the four 32-bit words of a kernel
/// argument struct, low word first.
pub fn mask_words(m: [u64; 2]) -> [u32; 4] {
    [
        m[0] as u32,
        (m[0] >> 32) as u32,
        m[1] as u32,
        (m[1] >> 32) as u32,
    ]
}
