//! The multi-process twin: every rank's GM in a memory file that every process of the job maps,
//! at the same address in each.
//!
//! One process per rank is how NPU programs run (mpirun, torchrun). On an NPU a rank reaches a
//! peer's HCCL buffer through memory the runtime maps into it (IPC); a kernel holds the peer's
//! address and reads it directly. The twin does the same with a *space*: a range of address
//! space of `ranks * window` bytes, reserved at one address in every process of the job (the
//! ranks agree on it when they join, [`Space::join`]). Rank `r`'s window is
//! `[base + r * window, base + (r + 1) * window)`; it is backed by a `memfd` of rank `r`'s
//! process, which every other process maps there too. A GM address is then valid in every
//! process, and kernels, window announcements and flags work as in one process.
//!
//! What a window holds:
//! - a header ([`HEADER_BYTES`]): the owner's pid and state, its bell (a futex word peers ring
//!   to wake its parked polls; the system call is made only while an owner's worker sleeps on
//!   it), how many tasks of each process are parked on each slot of this window's 32-byte
//!   cells, the owner's published watchdog progress, the table of the owner's live
//!   allocations (a seqlock, so peers bounds-check accesses to them), and, in window 0 only,
//!   the job's atomic-store page locks;
//! - the owner's allocations, page aligned, first fit; a freed range is punched out of the file
//!   (its pages go back to the OS and read as zeros the next time).
//!
//! Nothing is named in a file system: a `memfd` has no path, so nothing can be guessed or
//! collide, and nothing outlives the job. Peers open each other's file through
//! `/proc/<pid>/fd/<fd>`, which the kernel allows only to processes that may inspect that one
//! (same user, not hardened against it): a process of another user cannot map a window. Once a
//! process has mapped a peer's window it closes that peer's file (it keeps its own open, to
//! punch freed ranges out of it); the memory goes when the last process that maps it exits,
//! however it exits (SIGKILL included).
//!
//! What runs across processes and what does not:
//! - a poll parked on a peer's window is woken by a write from any process (the writer rings
//!   the parker's bell; without the private flag a futex works between processes);
//! - atomic stores (SetAtomicAdd ...) take page locks in window 0, shared by all processes; a
//!   lock whose holder's process is gone (zombies included) is taken over, and any lock is
//!   taken once this process's twin is aborted (a pid reused by another process would hold it
//!   forever otherwise);
//! - the watchdog counts progress of every process: a process publishes its own when it checks,
//!   and a stall is one of the whole job;
//! - the GM race checker is off, and deferred staging materialises a block's snapshots before
//!   it publishes anything (see [`crate::Twin::with_space`]).

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::error::TwinError;
use crate::mem::{GmKind, GM_ALIGN};
use crate::padded::Padded;

/// Bytes at the start of every window that hold its header.
pub const HEADER_BYTES: usize = 1 << 20;
/// The most ranks (processes) one space joins.
pub const MAX_PROCS: usize = 64;
/// Default window of each rank: address space only (pages are taken as they are written).
pub const DEFAULT_WINDOW_BYTES: usize = 64 << 30;
/// Live allocations a rank may hold at once in a space (its window's table).
pub const TABLE_CAPACITY: usize = 16384;
/// Atomic-store page locks of a job (in window 0).
pub const LOCKS: usize = 1024;
/// Slots of a window's parked counts: the 32-byte cells of a window share them round-robin,
/// so that a flag write wakes the processes polling that flag, not every process polling the
/// same window (all of a rank's peers poll its sync area).
const SLOTS: usize = 128;

const MAGIC: u64 = 0x6169_762d_7477_696e; // "aiv-twin"
/// Header state: the owner runs.
const LIVE: u32 = 1;
/// Header state: the owner left the job in order ([`Space::leave`]).
const LEFT: u32 = 2;

/// The header of one window, in shared memory (every field an atomic: other processes read and
/// write it concurrently; the zeroed file is a valid header of no one).
#[repr(C)]
struct Header {
    magic: AtomicU64,
    pid: AtomicU32,
    state: AtomicU32,
    /// Rung (incremented, then futex-woken if the owner has workers asleep on it) by a process
    /// whose write may wake the owner's parked polls.
    bell: Padded<AtomicU32>,
    /// The owner's workers asleep on `bell` (a ring wakes them with a system call only then;
    /// a worker awake sees the bell change by reading it).
    sleepers: Padded<AtomicU32>,
    /// Tasks of any process parked on a range of this window, by slot (a 32-byte cell's slot
    /// is its index modulo [`SLOTS`]): a write rings only the processes parked on its slots.
    parked_total: [AtomicU32; SLOTS],
    /// Tasks of each process parked on a range of this window, by slot.
    parked_by: [[AtomicU32; MAX_PROCS]; SLOTS],
    /// The owner's watchdog progress count, published when it checks.
    progress: Padded<AtomicU64>,
    /// Seqlock of the table: odd while the owner rewrites it.
    seq: AtomicU64,
    /// Entries of the table in use.
    count: AtomicU64,
    /// Live allocations: (offset in the window, bytes, kind: 0 data, 1 flags), by offset.
    table: [[AtomicU64; 3]; TABLE_CAPACITY],
    /// Window 0 only: page locks of atomic stores (0 free, else the holder's pid).
    locks: [Padded<AtomicU32>; LOCKS],
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);

/// The owner's bookkeeping of its window (in its process only).
struct Own {
    /// Free ranges: offset -> bytes.
    free: BTreeMap<usize, usize>,
    /// Live allocations: offset -> (bytes, kind).
    live: BTreeMap<usize, (usize, GmKind)>,
}

/// A live allocation of some rank, as its window's table says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub addr: usize,
    pub len: usize,
    pub kind: GmKind,
}

/// One process's view of a job's shared GM (see the module docs).
pub struct Space {
    base: usize,
    window: usize,
    ranks: u32,
    me: u32,
    file: OwnedFd,
    own: Mutex<Own>,
    /// This process's pid (the holder mark of its page locks).
    pid: u32,
    /// This process's twin was aborted: a page lock it waits for is taken whoever holds it
    /// (the job has failed; its results are discarded).
    aborted: std::sync::atomic::AtomicBool,
}

/// Exchanges this process's bytes with every rank's: returns every rank's bytes by rank (the
/// bootstrap's all-gather). An error ends the join with its text.
pub type Exchange<'a> = &'a mut dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>, String>;

/// [`Exchange`] with its errors made the twin's.
type TwinExchange<'a> = dyn FnMut(&[u8]) -> Result<Vec<Vec<u8>>, TwinError> + 'a;

fn os_err(what: &str) -> TwinError {
    TwinError::Config(format!("{what}: {}", std::io::Error::last_os_error()))
}

impl Space {
    /// Joins the space of a job of `ranks` processes as rank `me`, each with a window of
    /// `window` bytes (rounded up to 2 MiB). `exchange` carries bytes between the processes
    /// (every rank calls `join` with the same `ranks` and `window`, and its own `me`).
    ///
    /// The ranks agree on a base address free in every process (rank 0 proposes one, each
    /// reserves the whole space there without replacing any mapping; up to 16 proposals), map
    /// their own window from a new `memfd`, then every peer's from the peer's file.
    pub fn join(
        me: u32,
        ranks: u32,
        window: usize,
        exchange: Exchange<'_>,
    ) -> Result<std::sync::Arc<Space>, TwinError> {
        if ranks == 0 || ranks as usize > MAX_PROCS || me >= ranks {
            return Err(TwinError::Config(format!(
                "a space joins 1..={MAX_PROCS} ranks: rank {me} of {ranks} cannot join"
            )));
        }
        let window = window
            .max(HEADER_BYTES + GM_ALIGN)
            .checked_next_multiple_of(2 << 20)
            .ok_or_else(|| TwinError::Config(format!("window of {window} bytes is too large")))?;
        let total = window
            .checked_mul(ranks as usize)
            .filter(|&t| t <= 1 << 46)
            .ok_or_else(|| {
                TwinError::Config(format!(
                    "{ranks} windows of {window} bytes do not fit the address space"
                ))
            })?;
        let mut ex = |b: &[u8]| exchange(b).map_err(TwinError::Config);

        // SAFETY: a NUL-terminated name and valid flags; the result is checked.
        let fd = unsafe { libc::memfd_create(c"aiv-twin-gm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create"));
        }
        // SAFETY: fd is a new descriptor this function owns.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // Owner-only, as any shared segment of a job should be (peers reach it through /proc,
        // which checks that they may inspect this process).
        // SAFETY: a valid descriptor; the result is checked.
        if unsafe { libc::fchmod(file.as_raw_fd(), 0o600) } != 0 {
            return Err(os_err("making the GM window owner-only"));
        }
        // SAFETY: a valid descriptor; the result is checked.
        if unsafe { libc::ftruncate(file.as_raw_fd(), window as libc::off_t) } != 0 {
            return Err(os_err("sizing the GM window"));
        }

        let base = agree_on_base(me, total, &mut ex)?;
        let space = Space {
            base,
            window,
            ranks,
            me,
            file,
            own: Mutex::new(Own {
                free: BTreeMap::from([(HEADER_BYTES, window - HEADER_BYTES)]),
                live: BTreeMap::new(),
            }),
            pid: std::process::id(),
            aborted: std::sync::atomic::AtomicBool::new(false),
        };
        // From here on, dropping `space` unmaps the whole reservation.
        space.map(me, space.file.as_raw_fd())?;
        let h = space.header(me);
        let pid = space.pid;
        h.pid.store(pid, Ordering::Relaxed);
        h.state.store(LIVE, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);

        let mut mine = pid.to_le_bytes().to_vec();
        mine.extend_from_slice(&(space.file.as_raw_fd() as u32).to_le_bytes());
        mine.extend_from_slice(&(window as u64).to_le_bytes());
        let all = ex(&mine)?;
        for (p, b) in all.iter().enumerate() {
            if p as u32 == me {
                continue;
            }
            let (Some(ppid), Some(pfd), Some(lo), Some(hi)) =
                (word(b, 0), word(b, 4), word(b, 8), word(b, 12))
            else {
                return Err(TwinError::Config(format!(
                    "rank {p} sent a malformed window"
                )));
            };
            let theirs = (u64::from(hi) << 32 | u64::from(lo)) as usize;
            if theirs != window {
                return Err(TwinError::Config(format!(
                    "rank {p}'s GM window is {theirs} bytes, this rank's {window}: every rank of a job needs the same HCCL buffer size"
                )));
            }
            let path = format!("/proc/{ppid}/fd/{pfd}\0");
            // SAFETY: a NUL-terminated path; the result is checked.
            let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(TwinError::Config(format!(
                    "cannot open rank {p}'s GM (process {ppid}): {} (the ranks of a job must run as one user on one host)",
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: a new descriptor this function owns.
            let f = unsafe { OwnedFd::from_raw_fd(fd) };
            space.map(p as u32, f.as_raw_fd())?;
            let h = space.header(p as u32);
            if h.magic.load(Ordering::Acquire) != MAGIC || h.pid.load(Ordering::Relaxed) != ppid {
                return Err(TwinError::Config(format!(
                    "rank {p}'s GM window is not what rank {p} announced"
                )));
            }
        }
        // Nobody leaves before every peer has opened its file.
        ex(&[])?;
        Ok(std::sync::Arc::new(space))
    }

    /// Maps rank `p`'s file `fd` over its window (inside this process's reservation).
    fn map(&self, p: u32, fd: i32) -> Result<(), TwinError> {
        let at = self.base + p as usize * self.window;
        // SAFETY: [at, at + window) lies inside this space's reservation, which only this
        // space uses; MAP_FIXED replaces that part of it. The result is checked.
        let r = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                self.window,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                0,
            )
        };
        if r == libc::MAP_FAILED || r as usize != at {
            return Err(os_err(&format!("mapping rank {p}'s GM window")));
        }
        Ok(())
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.me
    }

    /// Ranks of the job.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// The first address of rank 0's window.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Bytes of each rank's window.
    pub fn window(&self) -> usize {
        self.window
    }

    fn header(&self, p: u32) -> &Header {
        debug_assert!(p < self.ranks);
        // SAFETY: window p is mapped (join maps every window before the space is handed out)
        // for as long as the space lives, its first bytes are a Header (every field an atomic,
        // valid when zero), and it is page aligned.
        unsafe { &*((self.base + p as usize * self.window) as *const Header) }
    }

    /// The rank whose window holds `addr`, if any.
    pub(crate) fn window_of(&self, addr: usize) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        let p = off / self.window;
        (p < self.ranks as usize).then_some(p as u32)
    }

    /// The pid of rank `p`'s process.
    pub fn pid(&self, p: u32) -> u32 {
        self.header(p).pid.load(Ordering::Relaxed)
    }

    /// Whether rank `p`'s process has ended (exited, killed, or a zombie not reaped yet).
    pub fn has_ended(&self, p: u32) -> bool {
        !alive(self.pid(p))
    }

    /// Whether rank `p` left the job in order ([`Space::leave`]).
    pub fn has_left(&self, p: u32) -> bool {
        self.header(p).state.load(Ordering::SeqCst) == LEFT
    }

    /// Says to every peer that this rank leaves in order: its process ending is not a failure.
    pub fn leave(&self) {
        self.header(self.me).state.store(LEFT, Ordering::SeqCst);
    }

    // ---- allocations ----

    /// Allocates `bytes` (at least 1) of zeroed GM of `kind` in this rank's window.
    pub(crate) fn alloc(&self, bytes: usize, kind: GmKind) -> Option<*mut u8> {
        let len = bytes.max(1).checked_next_multiple_of(GM_ALIGN)?;
        let mut own = self.own.lock();
        if own.live.len() >= TABLE_CAPACITY {
            return None;
        }
        let (&off, &free) = own.free.iter().find(|(_, &n)| n >= len)?;
        own.free.remove(&off);
        if free > len {
            own.free.insert(off + len, free - len);
        }
        own.live.insert(off, (len, kind));
        self.publish(&own);
        Some((self.base + self.me as usize * self.window + off) as *mut u8)
    }

    /// Frees an allocation of [`Space::alloc`]: its pages go back to the OS (zero when reused).
    pub(crate) fn free(&self, ptr: *mut u8) {
        let off = ptr as usize - (self.base + self.me as usize * self.window);
        let mut own = self.own.lock();
        let Some((len, _)) = own.live.remove(&off) else {
            return;
        };
        self.publish(&own);
        // SAFETY: a valid descriptor and a range inside the file; failure leaves the bytes as
        // they were, which the zeroing below then covers.
        let punched = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off as libc::off_t,
                len as libc::off_t,
            )
        } == 0;
        if !punched {
            // SAFETY: the range was this allocation's, now free: nothing else uses it.
            unsafe { std::ptr::write_bytes(ptr, 0, len) };
        }
        let (mut start, mut n) = (off, len);
        if let Some((&a, &m)) = own.free.range(..off).next_back() {
            if a + m == off {
                own.free.remove(&a);
                start = a;
                n += m;
            }
        }
        if let Some(m) = own.free.remove(&(off + len)) {
            n += m;
        }
        own.free.insert(start, n);
    }

    /// Rewrites this rank's table from `own.live` (under the seqlock).
    fn publish(&self, own: &Own) {
        let h = self.header(self.me);
        let s = h.seq.load(Ordering::Relaxed);
        h.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, (&off, &(len, kind))) in own.live.iter().enumerate() {
            h.table[i][0].store(off as u64, Ordering::Relaxed);
            h.table[i][1].store(len as u64, Ordering::Relaxed);
            h.table[i][2].store(u64::from(kind == GmKind::Sync), Ordering::Relaxed);
        }
        h.count.store(own.live.len() as u64, Ordering::Relaxed);
        h.seq.store(s + 2, Ordering::Release);
    }

    /// The version of rank `p`'s table (changes with every allocation and free of `p`).
    pub(crate) fn table_version(&self, p: u32) -> u64 {
        self.header(p).seq.load(Ordering::Acquire)
    }

    /// Rank `p`'s live allocations, and the table version they are of.
    pub(crate) fn table(&self, p: u32) -> (Vec<Entry>, u64) {
        let h = self.header(p);
        let at = self.base + p as usize * self.window;
        let mut tries = 0u32;
        loop {
            let s = h.seq.load(Ordering::Acquire);
            if s % 2 == 1 {
                // The owner is rewriting it; a process killed in the middle never finishes.
                tries += 1;
                if tries.is_multiple_of(1024) && !alive(h.pid.load(Ordering::Relaxed)) {
                    return (Vec::new(), s);
                }
                std::thread::yield_now();
                continue;
            }
            let n = (h.count.load(Ordering::Relaxed) as usize).min(TABLE_CAPACITY);
            let out: Vec<Entry> = h.table[..n]
                .iter()
                .map(|e| Entry {
                    addr: at + e[0].load(Ordering::Relaxed) as usize,
                    len: e[1].load(Ordering::Relaxed) as usize,
                    kind: if e[2].load(Ordering::Relaxed) == 1 {
                        GmKind::Sync
                    } else {
                        GmKind::Data
                    },
                })
                .collect();
            fence(Ordering::Acquire);
            if h.seq.load(Ordering::Relaxed) == s {
                return (out, s);
            }
        }
    }

    // ---- parking across processes ----

    /// A task of this process parks on `[addr, addr + len)`: counts it in the header of the
    /// window holding it, on the range's slots; returns that window's rank (None: not shared
    /// memory).
    pub(crate) fn park(&self, addr: usize, len: usize) -> Option<u32> {
        let p = self.window_of(addr)?;
        let h = self.header(p);
        for slot in slots(addr, len) {
            h.parked_by[slot][self.me as usize].fetch_add(1, Ordering::SeqCst);
            h.parked_total[slot].fetch_add(1, Ordering::SeqCst);
        }
        Some(p)
    }

    /// A task counted by [`Space::park`] on `[addr, addr + len)` of window `p` is no longer
    /// parked.
    pub(crate) fn unpark(&self, p: u32, addr: usize, len: usize) {
        let h = self.header(p);
        for slot in slots(addr, len) {
            h.parked_total[slot].fetch_sub(1, Ordering::SeqCst);
            h.parked_by[slot][self.me as usize].fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// After a write to `[addr, addr + len)`: rings the bell of every other process with a
    /// task parked on a slot of the range.
    pub(crate) fn after_write(&self, addr: usize, len: usize) {
        let Some(p) = self.window_of(addr) else {
            return;
        };
        // Pairs with the parker's SeqCst counts: either it sees this write when it looks again
        // before sleeping, or this sees its count.
        fence(Ordering::SeqCst);
        let h = self.header(p);
        let mut rung = 0u64;
        for slot in slots(addr, len) {
            if h.parked_total[slot].load(Ordering::SeqCst) == 0 {
                continue;
            }
            for q in 0..self.ranks {
                let bit = 1u64 << q;
                if q != self.me
                    && rung & bit == 0
                    && h.parked_by[slot][q as usize].load(Ordering::SeqCst) > 0
                {
                    rung |= bit;
                    self.ring(q);
                }
            }
        }
    }

    fn ring(&self, q: u32) {
        let h = self.header(q);
        let bell = &h.bell.0;
        bell.fetch_add(1, Ordering::SeqCst);
        // Pairs with `wait_bell`: a worker counted after this load reads the new bell value
        // before it sleeps, and does not sleep.
        if h.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        // SAFETY: a futex wake on a word of shared memory mapped in this process.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                bell.as_ptr(),
                libc::FUTEX_WAKE,
                i32::MAX,
                std::ptr::null::<libc::timespec>(),
            )
        };
    }

    /// Rings this process's own bell (a worker asleep on it has work).
    pub(crate) fn ring_own(&self) {
        self.ring(self.me);
    }

    /// This process's bell now.
    pub(crate) fn bell(&self) -> u32 {
        self.header(self.me).bell.load(Ordering::SeqCst)
    }

    /// Sleeps until this process's bell differs from `seen` (the value the caller last
    /// served), or `timeout`.
    pub(crate) fn wait_bell(&self, seen: u32, timeout: Duration) {
        let h = self.header(self.me);
        let bell = &h.bell.0;
        h.sleepers.fetch_add(1, Ordering::SeqCst);
        let _awake = Decrement(&h.sleepers);
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a futex wait on a word of shared memory mapped in this process; it returns
        // at once if the word is no longer `seen`.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                bell.as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &ts as *const libc::timespec,
            )
        };
    }

    /// This process's twin was aborted: page locks it waits for are taken (see `aborted`).
    pub(crate) fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
    }

    // ---- the watchdog ----

    /// Publishes this process's progress count and returns the sum of every process's.
    pub(crate) fn job_progress(&self, mine: u64) -> u64 {
        self.header(self.me).progress.store(mine, Ordering::Relaxed);
        (0..self.ranks)
            .map(|p| self.header(p).progress.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }

    // ---- atomic stores ----

    /// Takes the job's page lock `i` (of [`LOCKS`]) for an atomic store. A lock held by a
    /// process that no longer exists is taken over (its store is lost with it).
    pub(crate) fn lock(&self, i: usize) -> SharedLock<'_> {
        let word = &self.header(0).locks[i % LOCKS].0;
        let me = self.pid;
        let mut spins = 0u32;
        loop {
            match word.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return SharedLock { word },
                Err(holder) => {
                    spins += 1;
                    if spins.is_multiple_of(64) {
                        std::thread::yield_now();
                        // The job has failed (say a rank died holding this lock and another
                        // process got its pid): take the lock, whoever holds it.
                        if self.aborted.load(Ordering::Relaxed) {
                            return SharedLock { word };
                        }
                    }
                    if spins.is_multiple_of(65536) && holder != 0 && holder != me && !alive(holder)
                    {
                        let _ =
                            word.compare_exchange(holder, 0, Ordering::Relaxed, Ordering::Relaxed);
                    }
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// The parked-count slots of `[addr, addr + len)` (each once).
fn slots(addr: usize, len: usize) -> impl Iterator<Item = usize> {
    let first = addr >> 5;
    let cells = ((addr + len.max(1) - 1) >> 5) - first + 1;
    (first..first + cells.min(SLOTS)).map(|c| c % SLOTS)
}

/// Decrements its counter when dropped.
struct Decrement<'a>(&'a AtomicU32);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A page lock of [`Space::lock`], released on drop.
pub(crate) struct SharedLock<'a> {
    word: &'a AtomicU32,
}

impl Drop for SharedLock<'_> {
    fn drop(&mut self) {
        self.word.store(0, Ordering::Release);
    }
}

/// Whether process `pid` runs (a zombie does not: it has ended, only its parent has not reaped
/// it yet).
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name's closing parenthesis.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X")
    })
}

fn word(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Agrees with the other ranks on a base address where every process reserved `total` bytes;
/// returns it with the reservation made (PROT_NONE, replacing nothing).
fn agree_on_base(me: u32, total: usize, ex: &mut TwinExchange<'_>) -> Result<usize, TwinError> {
    use std::hash::{BuildHasher, Hasher};
    const ALIGN: usize = 1 << 30;
    // Bases from 16 TiB to 80 TiB: far from where the loader and the heap put things, and
    // inside the 47-bit user address space of x86-64 and AArch64 with 48-bit addresses.
    const LOW: usize = 16 << 40;
    const SPAN: usize = 64 << 40;
    for _round in 0..16 {
        let proposal = if me == 0 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            let slots = (SPAN.saturating_sub(total) / ALIGN).max(1);
            LOW + (h.finish() as usize % slots) * ALIGN
        } else {
            0
        };
        let all = ex(&(proposal as u64).to_le_bytes())?;
        let base = all
            .first()
            .and_then(|b| b.get(..8))
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .ok_or_else(|| TwinError::Config("rank 0 sent no base address".into()))?;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping; the result is checked.
        let r = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        let ok = r != libc::MAP_FAILED && r as usize == base;
        if r != libc::MAP_FAILED && !ok {
            // An old kernel that took the address as a hint only.
            // SAFETY: r is the mapping just made.
            unsafe { libc::munmap(r, total) };
        }
        let votes = ex(&[u8::from(ok)])?;
        if votes.iter().all(|v| v.first() == Some(&1)) {
            return Ok(base);
        }
        if ok {
            // SAFETY: the reservation just made at `base`.
            unsafe { libc::munmap(base as *mut libc::c_void, total) };
        }
    }
    Err(TwinError::Config(format!(
        "no address range of {total} bytes is free in every process of the job (16 tries)"
    )))
}

impl Drop for Space {
    fn drop(&mut self) {
        // SAFETY: the whole reservation was made by `join` and is this space's alone; nothing
        // of the twin uses it once the space is dropped (the twin holds the space while it
        // lives).
        unsafe {
            libc::munmap(
                self.base as *mut libc::c_void,
                self.window * self.ranks as usize,
            )
        };
    }
}

impl std::fmt::Debug for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Space {{ rank: {}, ranks: {}, window: {} }}",
            self.me, self.ranks, self.window
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A space of one rank (its exchange returns its own bytes).
    fn alone(window: usize) -> std::sync::Arc<Space> {
        Space::join(0, 1, window, &mut |b| Ok(vec![b.to_vec()])).unwrap()
    }

    #[test]
    fn allocations_are_zeroed_listed_and_reused_zeroed() {
        let s = alone(64 << 20);
        assert_eq!(s.window(), 64 << 20);
        let a = s.alloc(100, GmKind::Data).unwrap();
        let b = s.alloc(5000, GmKind::Sync).unwrap();
        assert_eq!(a as usize % GM_ALIGN, 0);
        assert_eq!(s.window_of(a as usize), Some(0));
        assert_eq!(s.window_of(s.base() - 1), None);
        assert_eq!(s.window_of(s.base() + s.window()), None);
        // SAFETY: 100 bytes of a live allocation.
        unsafe { std::ptr::write_bytes(a, 0xAB, 100) };
        let (table, v1) = s.table(0);
        assert_eq!(
            table,
            vec![
                Entry {
                    addr: a as usize,
                    len: 4096,
                    kind: GmKind::Data
                },
                Entry {
                    addr: b as usize,
                    len: 8192,
                    kind: GmKind::Sync
                },
            ]
        );
        s.free(a);
        assert_ne!(s.table_version(0), v1);
        assert_eq!(s.table(0).0.len(), 1);
        // First fit: the freed range again, zeroed.
        let c = s.alloc(100, GmKind::Data).unwrap();
        assert_eq!(c, a);
        // SAFETY: 100 bytes of a live allocation.
        assert!(unsafe { std::slice::from_raw_parts(c, 100) }
            .iter()
            .all(|&x| x == 0));
        // Freed neighbours merge: room for one allocation of both.
        s.free(c);
        s.free(b);
        let d = s.alloc(4096 + 8192, GmKind::Data).unwrap();
        assert_eq!(d, a);
        // More than the window holds is refused.
        assert!(s.alloc(64 << 20, GmKind::Data).is_none());
    }

    #[test]
    fn the_window_is_owner_only_and_in_no_file_system() {
        let s = alone(8 << 20);
        // SAFETY: a zeroed stat is valid; fstat writes at most its size.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and a stat to write.
        assert_eq!(unsafe { libc::fstat(s.file.as_raw_fd(), &mut st) }, 0);
        assert_eq!(st.st_mode & 0o777, 0o600);
        assert_eq!(st.st_nlink, 0, "a memfd has no name in any file system");
    }

    #[test]
    fn a_zombie_holds_no_lock() {
        // SAFETY: the child only calls _exit, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(0) };
        }
        // Not reaped yet: a zombie, which kill(pid, 0) still finds.
        let stat = format!("/proc/{pid}/stat");
        while !std::fs::read_to_string(&stat).unwrap().contains(") Z") {
            std::thread::yield_now();
        }
        assert!(!alive(pid as u32));
        assert!(alive(std::process::id()));
        let s = alone(8 << 20);
        s.header(0).locks[5].0.store(pid as u32, Ordering::SeqCst);
        drop(s.lock(5));
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }

    #[test]
    fn slots_cover_each_cell_of_a_range_once() {
        assert_eq!(slots(64, 1).collect::<Vec<_>>(), vec![2]);
        assert_eq!(slots(64, 0).collect::<Vec<_>>(), vec![2]);
        assert_eq!(slots(60, 8).collect::<Vec<_>>(), vec![1, 2]);
        let all: Vec<usize> = slots(0, 1 << 20).collect();
        assert_eq!(all.len(), SLOTS);
        assert_eq!(
            all.iter().collect::<std::collections::BTreeSet<_>>().len(),
            SLOTS
        );
    }

    #[test]
    fn parks_count_on_their_slots_and_a_lock_of_a_gone_process_is_taken_over() {
        let s = alone(8 << 20);
        let a = s.alloc(64, GmKind::Sync).unwrap() as usize;
        assert_eq!(s.park(a, 8), Some(0));
        let h = s.header(0);
        let slot = slots(a, 8).next().unwrap();
        assert_eq!(h.parked_total[slot].load(Ordering::SeqCst), 1);
        s.unpark(0, a, 8);
        assert_eq!(h.parked_total[slot].load(Ordering::SeqCst), 0);
        assert_eq!(s.park(s.base() - 4096, 8), None);
        // A lock held by a process that is gone (a pid no process has).
        h.locks[3].0.store(i32::MAX as u32, Ordering::SeqCst);
        drop(s.lock(3));
        assert_eq!(h.locks[3].0.load(Ordering::SeqCst), 0);
    }
}
