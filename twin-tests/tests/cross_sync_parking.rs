//! A block waiting in IBWait parks (it burns no worker) until its flag is written, and the IBSet
//! that writes it wakes it. Alone in its test binary: it measures the process's CPU time.

use std::time::{Duration, Instant};

use ascendc_twin::{args, DeviceConfig, Twin};
use twin_tests::kernels;

/// CPU seconds this process has used (user + system).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime, fields 14 and 15 of stat, are the 12th and 13th after the command name.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn ib_wait_parks_until_its_flag_is_set_and_ib_set_wakes_the_waiter() {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    // Two blocks, eventIDs 0 and 1: four 32-byte flags, (eventID * GetBlockNum() + blockIdx) * 32.
    let sync = dev.alloc(4 * 32).unwrap();
    sync.fill(0, 4 * 32, 0).unwrap();
    let flag = |block: usize, event: usize| (event * 2 + block) * 32;
    let (cpu, wall, woke) = std::thread::scope(|s| {
        // SAFETY: the kernel touches the four flags of `sync`, alive until the launch returns.
        let h = s.spawn(|| unsafe { dev.launch_kernel(&kernels::ib_relay, 2, &args![sync.gm(0)]) });
        std::thread::sleep(Duration::from_millis(200));
        let c0 = cpu_seconds();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(400));
        let cpu = cpu_seconds() - c0;
        let wall = t0.elapsed().as_secs_f64();
        // Block 0 waits in IBWait(blockIdx 1, eventID 1), which only this store satisfies; its
        // IBSet(0, 0) then releases block 1 from IBWait(0, 0).
        let set = Instant::now();
        sync.write(flag(1, 1), &1i32.to_le_bytes()).unwrap();
        h.join().unwrap().unwrap();
        (cpu, wall, set.elapsed())
    });
    assert!(
        cpu < 0.1 * wall,
        "two blocks waiting in IBWait used {cpu:.3} s of CPU in {wall:.3} s"
    );
    assert!(
        woke < Duration::from_millis(250),
        "the launch ended {woke:?} after the flag was set"
    );
    // Each IBWait took its flag back to 0.
    for (b, e) in [(1, 1), (0, 0)] {
        let mut v = [0u8; 4];
        sync.read(flag(b, e), &mut v).unwrap();
        assert_eq!(
            i32::from_le_bytes(v),
            0,
            "flag of blockIdx {b}, eventID {e}"
        );
    }
}
