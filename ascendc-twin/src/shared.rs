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
//!
//! A space is made one of two ways:
//! - [`Space::join`]: the ranks of a job agree on a base and map every window at once (aiv-comm's
//!   processes on the twin);
//! - [`Space::open`]: a process with no job, such as one of an ACL host program on acl-twin,
//!   takes a free *slot* of this user's node space (a fixed range of address space, the same in
//!   every process; a slot is claimed with an abstract socket, so it is freed when the process
//!   ends however it ends) and maps only its own window. It maps a peer's window when it
//!   imports a range the peer granted ([`Space::grant`], [`Space::attach`]: what an IPC export
//!   and import are on an NPU); the peer maps the importer's window in turn when it must wake
//!   the importer's parked polls or count its progress (the importer leaves its window's file in
//!   the peer's header). So a window sits at the same address in every process that maps it.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
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
/// Atomic-store page locks of each window (an atomic store takes the lock of its page in the
/// header of the window it writes).
pub const LOCKS: usize = 1024;
/// Ranges a window's owner may grant at once ([`Space::grant`]).
pub const GRANTS: usize = 256;
/// Processes one grant may name ([`Space::grant_pids`]).
pub const GRANT_PIDS: usize = 64;
/// The window of each slot of an open space ([`Space::open`]).
pub const NODE_WINDOW_BYTES: usize = 64 << 30;
/// Where every process puts the node space of [`Space::open`]: 96 TiB, above the bases
/// [`Space::join`] proposes, inside the 47-bit user address space.
const NODE_BASE: usize = 96 << 40;
/// Places tried for a node space, from [`NODE_BASE`] up (4 TiB each).
const NODE_BASES: usize = 4;
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
    /// Page locks of atomic stores to this window (0 free, else the holder's pid).
    locks: [Padded<AtomicU32>; LOCKS],
    /// Open spaces: the processes that mapped this window, by slot: (pid, descriptor of their
    /// own window's file), so that the owner can map theirs to ring their bells.
    visitors: [[AtomicU32; 2]; MAX_PROCS],
    /// Ranges of this window the owner granted to other processes ([`Space::grant`]).
    grants: [GrantCell; GRANTS],
}

/// One grant in a window's header. The owner writes it (under its `own` lock) and publishes
/// it with `nonce`; a reader checks `nonce` before and after reading (a seqlock of one word:
/// a revoked or reused cell has another nonce).
#[repr(C)]
struct GrantCell {
    /// 0: free.
    nonce: AtomicU64,
    off: AtomicU64,
    len: AtomicU64,
    /// 1: any process may import it.
    any_pid: AtomicU32,
    npids: AtomicU32,
    pids: [AtomicU32; GRANT_PIDS],
}

/// A granted range, as [`Space::read_grant`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// First byte.
    pub addr: usize,
    /// Bytes.
    pub len: usize,
    /// Any process may import it.
    pub any_pid: bool,
    /// The processes that may import it (unless `any_pid`).
    pub pids: Vec<u32>,
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);

/// The owner's bookkeeping of its window (in its process only).
struct Own {
    /// Free ranges: offset -> bytes.
    free: BTreeMap<usize, usize>,
    /// Live allocations: offset -> (bytes, kind, rank).
    live: BTreeMap<usize, (usize, GmKind, u32)>,
    /// Grants made so far (makes nonces unique).
    grants_made: u64,
}

/// A live allocation of some rank, as its window's table says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub addr: usize,
    pub len: usize,
    pub kind: GmKind,
    /// The device (rank) it was allocated for.
    pub rank: u32,
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
    aborted: AtomicBool,
    /// Which windows this process has mapped (all of a joined space; its own and those it
    /// attached in an open one).
    mapped: Box<[AtomicBool]>,
    /// An open space: the socket whose abstract name claims this process's slot.
    claim: Option<OwnedFd>,
    /// Serialises [`Space::attach`].
    attaching: Mutex<()>,
    /// An open space that granted a range or attached a window: other processes may write
    /// its memory or it theirs.
    shared: AtomicBool,
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
        let file = window_file(window)?;
        let base = agree_on_base(me, total, &mut ex)?;
        let space = Space::new(base, window, ranks, me, file, None);
        // From here on, dropping `space` unmaps the whole reservation.
        space.map(me, space.file.as_raw_fd())?;
        space.init_own_header();
        let pid = space.pid;

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
            let f = open_window(ppid, pfd).map_err(|e| {
                TwinError::Config(format!(
                    "cannot open rank {p}'s GM (process {ppid}): {e} (the ranks of a job must run as one user on one host)"
                ))
            })?;
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

    /// Takes a free slot of this user's node space and maps this process's window there (see
    /// the module docs): a space for a process that belongs to no job it knows of, whose memory
    /// other processes import range by range ([`Space::grant`], [`Space::attach`]). Every
    /// window is [`NODE_WINDOW_BYTES`]; at most [`MAX_PROCS`] open spaces of one user exist
    /// at once. A window is at the same address in every process that maps it, unless a
    /// process holds more than one open space (then the later ones are elsewhere).
    pub fn open() -> Result<std::sync::Arc<Space>, TwinError> {
        let window = NODE_WINDOW_BYTES;
        let total = window * MAX_PROCS;
        let (claim, slot) = claim_slot()?;
        // Another open space of this process (a second copy of a library that opens one)
        // holds the usual place: the next one. Windows are then at other addresses than in
        // other processes, which only a program that passes addresses between processes
        // would notice.
        let Some(base) = (0..NODE_BASES)
            .map(|k| NODE_BASE + k * total)
            .find(|&b| reserve(b, total))
        else {
            return Err(TwinError::Config(format!(
                "no place for a node space ({total} bytes from {NODE_BASE:#x}) is free in this process"
            )));
        };
        let file = match window_file(window) {
            Ok(f) => f,
            Err(e) => {
                // SAFETY: the reservation just made, used by nothing else.
                unsafe { libc::munmap(base as *mut libc::c_void, total) };
                return Err(e);
            }
        };
        let space = Space::new(base, window, MAX_PROCS as u32, slot, file, Some(claim));
        space.map(slot, space.file.as_raw_fd())?;
        space.init_own_header();
        Ok(std::sync::Arc::new(space))
    }

    fn new(
        base: usize,
        window: usize,
        ranks: u32,
        me: u32,
        file: OwnedFd,
        claim: Option<OwnedFd>,
    ) -> Space {
        Space {
            base,
            window,
            ranks,
            me,
            file,
            own: Mutex::new(Own {
                free: BTreeMap::from([(HEADER_BYTES, window - HEADER_BYTES)]),
                live: BTreeMap::new(),
                grants_made: 0,
            }),
            pid: std::process::id(),
            aborted: AtomicBool::new(false),
            mapped: (0..ranks).map(|_| AtomicBool::new(false)).collect(),
            claim,
            attaching: Mutex::new(()),
            shared: AtomicBool::new(false),
        }
    }

    /// Marks this process's freshly mapped window as its own and live.
    fn init_own_header(&self) {
        let h = self.header(self.me);
        h.pid.store(self.pid, Ordering::Relaxed);
        h.state.store(LIVE, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
    }

    /// Whether this is an open space ([`Space::open`]) rather than a job's ([`Space::join`]).
    pub fn is_open(&self) -> bool {
        self.claim.is_some()
    }

    /// Whether other processes may reach this process's memory or it theirs: always in a
    /// joined space; in an open one, once it granted a range or attached a window.
    pub fn is_shared(&self) -> bool {
        !self.is_open() || self.shared.load(Ordering::Relaxed)
    }

    /// The descriptor of this process's window file (with [`Space::rank`] and this process's
    /// pid, what another process of this user needs to [`Space::attach`] it).
    pub fn file_descriptor(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Maps the window of slot `p`, which process `pid` owns and holds open as its descriptor
    /// `fd` (an open space's import; see the module docs). Mapping it again is a no-op.
    /// Fails if the process is gone or of another user, if its window is not what it should
    /// be, or if this process maps another process's window in that slot (that process ended
    /// and `pid` took its slot: the old window is kept for the imports of it this process
    /// holds).
    pub fn attach(&self, p: u32, pid: u32, fd: i32) -> Result<(), TwinError> {
        if p >= self.ranks {
            return Err(TwinError::Config(format!("there is no slot {p}")));
        }
        let _one = self.attaching.lock();
        if self.mapped[p as usize].load(Ordering::Acquire) {
            let theirs = self.header(p).pid.load(Ordering::Relaxed);
            return if theirs == pid {
                Ok(())
            } else {
                Err(TwinError::Config(format!(
                    "slot {p} of this process holds the window of process {theirs}, not {pid}'s"
                )))
            };
        }
        let f = open_window(pid, fd as u32).map_err(|e| {
            TwinError::Config(format!(
                "cannot open the device memory of process {pid}: {e} (it must run as this user on this host, and still run)"
            ))
        })?;
        // SAFETY: a zeroed stat is valid; fstat writes at most its size.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and a stat to write.
        let sized = unsafe { libc::fstat(f.as_raw_fd(), &mut st) } == 0
            && st.st_size as usize == self.window;
        if !sized {
            return Err(TwinError::Config(format!(
                "descriptor {fd} of process {pid} is not a device memory window"
            )));
        }
        self.map(p, f.as_raw_fd())?;
        let h = self.header(p);
        if h.magic.load(Ordering::Acquire) != MAGIC || h.pid.load(Ordering::Relaxed) != pid {
            self.unmap(p);
            return Err(TwinError::Config(format!(
                "descriptor {fd} of process {pid} is not that process's device memory window"
            )));
        }
        // Leave this process's window in the peer's header: it maps it to ring this process.
        let v = &h.visitors[self.me as usize];
        v[1].store(self.file.as_raw_fd() as u32, Ordering::Relaxed);
        v[0].store(self.pid, Ordering::Release);
        self.shared.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Maps the window of a process that mapped this one (its visitor entry), if not yet.
    fn attach_visitor(&self, q: u32) -> bool {
        if self.mapped[q as usize].load(Ordering::Acquire) {
            return true;
        }
        let v = &self.header(self.me).visitors[q as usize];
        let pid = v[0].load(Ordering::Acquire);
        if pid == 0 {
            return false;
        }
        if self
            .attach(q, pid, v[1].load(Ordering::Relaxed) as i32)
            .is_ok()
        {
            return true;
        }
        // Gone, or its slot holds another window here: not tried again.
        let _ = v[0].compare_exchange(pid, 0, Ordering::Relaxed, Ordering::Relaxed);
        false
    }

    /// Puts the reservation back over window `p` (a mapping [`Space::attach`] refused).
    fn unmap(&self, p: u32) {
        let at = self.base + p as usize * self.window;
        self.mapped[p as usize].store(false, Ordering::Release);
        // SAFETY: [at, at + window) is this space's window p, which nothing uses (the attach
        // that mapped it failed); MAP_FIXED replaces it with an inaccessible reservation.
        unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                self.window,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
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
        self.mapped[p as usize].store(true, Ordering::Release);
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
        assert!(self.mapped[p as usize].load(Ordering::Acquire));
        // SAFETY: window p is mapped (checked above; a window once mapped stays mapped for as
        // long as the space lives), its first bytes are a Header (every field an atomic, valid
        // when zero), and it is page aligned.
        unsafe { &*((self.base + p as usize * self.window) as *const Header) }
    }

    /// The window (rank or slot) that holds `addr`, if this process maps it.
    pub(crate) fn window_of(&self, addr: usize) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        let p = off / self.window;
        (p < self.ranks as usize && self.mapped[p].load(Ordering::Acquire)).then_some(p as u32)
    }

    /// The pid of rank `p`'s process (0 if this process does not map its window).
    pub fn pid(&self, p: u32) -> u32 {
        if !self
            .mapped
            .get(p as usize)
            .is_some_and(|m| m.load(Ordering::Acquire))
        {
            return 0;
        }
        self.header(p).pid.load(Ordering::Relaxed)
    }

    /// Whether rank `p`'s process has ended (exited, killed, or a zombie not reaped yet).
    pub fn has_ended(&self, p: u32) -> bool {
        !alive(self.pid(p))
    }

    /// Whether rank `p` left the job in order ([`Space::leave`]).
    pub fn has_left(&self, p: u32) -> bool {
        self.pid(p) != 0 && self.header(p).state.load(Ordering::SeqCst) == LEFT
    }

    /// Says to every peer that this rank leaves in order: its process ending is not a failure.
    pub fn leave(&self) {
        self.header(self.me).state.store(LEFT, Ordering::SeqCst);
    }

    // ---- allocations ----

    /// Allocates `bytes` (at least 1) of zeroed GM of `kind` for device `rank` in this
    /// process's window.
    pub(crate) fn alloc(&self, bytes: usize, kind: GmKind, rank: u32) -> Option<*mut u8> {
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
        own.live.insert(off, (len, kind, rank));
        self.publish(&own);
        Some((self.base + self.me as usize * self.window + off) as *mut u8)
    }

    /// Frees an allocation of [`Space::alloc`]: its pages go back to the OS (zero when reused).
    pub(crate) fn free(&self, ptr: *mut u8) {
        let off = ptr as usize - (self.base + self.me as usize * self.window);
        let mut own = self.own.lock();
        let Some((len, _, _)) = own.live.remove(&off) else {
            return;
        };
        self.publish(&own);
        // Its grants go with it: an import would reach freed memory.
        self.revoke_in(&mut own, off, len);
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
        for (i, (&off, &(len, kind, rank))) in own.live.iter().enumerate() {
            h.table[i][0].store(off as u64, Ordering::Relaxed);
            h.table[i][1].store(len as u64, Ordering::Relaxed);
            let word = u64::from(kind == GmKind::Sync) | u64::from(rank) << 1;
            h.table[i][2].store(word, Ordering::Relaxed);
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
                .map(|e| {
                    let word = e[2].load(Ordering::Relaxed);
                    Entry {
                        addr: at + e[0].load(Ordering::Relaxed) as usize,
                        len: e[1].load(Ordering::Relaxed) as usize,
                        kind: if word & 1 == 1 {
                            GmKind::Sync
                        } else {
                            GmKind::Data
                        },
                        rank: (word >> 1) as u32,
                    }
                })
                .collect();
            fence(Ordering::Acquire);
            if h.seq.load(Ordering::Relaxed) == s {
                return (out, s);
            }
        }
    }

    // ---- grants (IPC exports) ----

    /// Grants `[addr, addr + len)` of this process's window to other processes (to any of them
    /// if `any_pid`, else to those [`Space::grant_pids`] names): returns the grant's cell and
    /// nonce, which with [`Space::rank`], the pid and [`Space::file_descriptor`] are what an
    /// importer needs. None if the range is not inside one live allocation of this window or
    /// [`GRANTS`] grants are live.
    pub fn grant(&self, addr: usize, len: usize, any_pid: bool) -> Option<(u32, u64)> {
        let lo = self.base + self.me as usize * self.window;
        let off = addr.checked_sub(lo)?;
        let mut own = self.own.lock();
        let (&start, &(n, _, _)) = own.live.range(..=off).next_back()?;
        if off.checked_add(len)? > start + n || len == 0 {
            return None;
        }
        let h = self.header(self.me);
        let i = h
            .grants
            .iter()
            .position(|g| g.nonce.load(Ordering::Relaxed) == 0)?;
        own.grants_made += 1;
        let nonce = {
            use std::hash::{BuildHasher, Hasher};
            let mut x = std::collections::hash_map::RandomState::new().build_hasher();
            x.write_u64(own.grants_made);
            x.finish() | 1
        };
        let g = &h.grants[i];
        g.off.store(off as u64, Ordering::Relaxed);
        g.len.store(len as u64, Ordering::Relaxed);
        g.any_pid.store(u32::from(any_pid), Ordering::Relaxed);
        g.npids.store(0, Ordering::Relaxed);
        g.nonce.store(nonce, Ordering::Release);
        self.shared.store(true, Ordering::Relaxed);
        Some((i as u32, nonce))
    }

    /// Adds `pids` to the processes that may import grant `(index, nonce)` of this process.
    pub fn grant_pids(&self, index: u32, nonce: u64, pids: &[u32]) -> Result<(), String> {
        let _own = self.own.lock();
        let g = self
            .header(self.me)
            .grants
            .get(index as usize)
            .filter(|g| nonce != 0 && g.nonce.load(Ordering::Relaxed) == nonce)
            .ok_or("no such grant (revoked, or its memory was freed)")?;
        let n = g.npids.load(Ordering::Relaxed) as usize;
        let mut fresh: Vec<u32> = Vec::new();
        for &p in pids {
            if !fresh.contains(&p) && !g.pids[..n].iter().any(|q| q.load(Ordering::Relaxed) == p) {
                fresh.push(p);
            }
        }
        if n + fresh.len() > GRANT_PIDS {
            return Err(format!(
                "a grant names at most {GRANT_PIDS} processes ({n} named, {} more asked)",
                fresh.len()
            ));
        }
        for (k, p) in fresh.iter().enumerate() {
            g.pids[n + k].store(*p, Ordering::Relaxed);
        }
        g.npids.store((n + fresh.len()) as u32, Ordering::Release);
        Ok(())
    }

    /// Revokes grant `(index, nonce)` of this process; false if there is no such grant.
    pub fn revoke(&self, index: u32, nonce: u64) -> bool {
        let _own = self.own.lock();
        self.header(self.me)
            .grants
            .get(index as usize)
            .is_some_and(|g| {
                nonce != 0
                    && g.nonce
                        .compare_exchange(nonce, 0, Ordering::Release, Ordering::Relaxed)
                        .is_ok()
            })
    }

    /// Revokes every grant inside `[off, off + len)` of this window (its memory is freed).
    fn revoke_in(&self, _own: &mut Own, off: usize, len: usize) {
        for g in &self.header(self.me).grants {
            let o = g.off.load(Ordering::Relaxed) as usize;
            if g.nonce.load(Ordering::Relaxed) != 0 && o >= off && o < off + len {
                g.nonce.store(0, Ordering::Release);
            }
        }
    }

    /// Grant `(index, nonce)` of the window of slot `p` (which this process maps), as it is
    /// now; None if there is no such grant.
    pub fn read_grant(&self, p: u32, index: u32, nonce: u64) -> Option<Grant> {
        if nonce == 0 || self.window_of(self.base + p as usize * self.window) != Some(p) {
            return None;
        }
        let g = self.header(p).grants.get(index as usize)?;
        if g.nonce.load(Ordering::Acquire) != nonce {
            return None;
        }
        let off = g.off.load(Ordering::Relaxed) as usize;
        let len = g.len.load(Ordering::Relaxed) as usize;
        let any_pid = g.any_pid.load(Ordering::Relaxed) == 1;
        let n = (g.npids.load(Ordering::Acquire) as usize).min(GRANT_PIDS);
        let pids = g.pids[..n]
            .iter()
            .map(|q| q.load(Ordering::Relaxed))
            .collect();
        fence(Ordering::Acquire);
        if g.nonce.load(Ordering::Relaxed) != nonce || off.checked_add(len)? > self.window {
            return None;
        }
        Some(Grant {
            addr: self.base + p as usize * self.window + off,
            len,
            any_pid,
            pids,
        })
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
                    && self.attach_visitor(q)
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
    /// In an open space: of every process whose window this one maps or that maps this
    /// one's.
    pub(crate) fn job_progress(&self, mine: u64) -> u64 {
        self.header(self.me).progress.store(mine, Ordering::Relaxed);
        (0..self.ranks)
            .filter(|&p| self.attach_visitor(p))
            .map(|p| self.header(p).progress.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }

    // ---- atomic stores ----

    /// Takes the page lock of `addr` for an atomic store: one of [`LOCKS`] in the header of
    /// the window holding it, so every process that writes there takes the same one. A lock
    /// held by a process that no longer exists is taken over (its store is lost with it).
    pub(crate) fn lock(&self, addr: usize) -> SharedLock<'_> {
        let p = self.window_of(addr).unwrap_or(self.me);
        let word = &self.header(p).locks[(addr >> 12) % LOCKS].0;
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

/// Opens descriptor `fd` of process `pid` (its window file) for this process, through `/proc`.
fn open_window(pid: u32, fd: u32) -> std::io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fd}\0");
    // SAFETY: a NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor this function owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// A new window file of `window` bytes: a `memfd`, owner-only.
fn window_file(window: usize) -> Result<OwnedFd, TwinError> {
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
    Ok(file)
}

/// Reserves `[base, base + total)` (inaccessible, no memory committed) without replacing any
/// mapping; false if any of it is taken.
fn reserve(base: usize, total: usize) -> bool {
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
    ok
}

/// Claims a free slot of this user's node space: binds a Unix socket to an abstract name of
/// the slot (the kernel frees it when the process ends, however it ends). Slots are tried from
/// one the pid picks.
fn claim_slot() -> Result<(OwnedFd, u32), TwinError> {
    // SAFETY: plain arguments; the result is checked.
    let uid = unsafe { libc::getuid() };
    let first = std::process::id() as usize % MAX_PROCS;
    for k in 0..MAX_PROCS {
        let slot = ((first + k) % MAX_PROCS) as u32;
        // SAFETY: plain arguments; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(os_err("socket"));
        }
        // SAFETY: a new descriptor owned from here on.
        let sock = unsafe { OwnedFd::from_raw_fd(raw) };
        let name = format!("aiv-twin-node-{uid}-{slot}");
        // SAFETY: a zeroed sockaddr_un is valid.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        // An abstract name: a leading NUL, then the name (no file anywhere).
        for (d, b) in addr.sun_path[1..].iter_mut().zip(name.bytes()) {
            *d = b as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
        // SAFETY: a valid socket and an address of `len` bytes.
        let r = unsafe {
            libc::bind(
                sock.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len as libc::socklen_t,
            )
        };
        if r == 0 {
            return Ok((sock, slot));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EADDRINUSE) {
            return Err(os_err("claiming a slot of the node space"));
        }
    }
    Err(TwinError::Config(format!(
        "all {MAX_PROCS} slots of this user's node space are taken: at most {MAX_PROCS} processes of one user open one at once"
    )))
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
        let ok = reserve(base, total);
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
        // SAFETY: the whole reservation was made by `join` or `open` and is this space's alone; nothing
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
        let a = s.alloc(100, GmKind::Data, 0).unwrap();
        let b = s.alloc(5000, GmKind::Sync, 0).unwrap();
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
                    kind: GmKind::Data,
                    rank: 0,
                },
                Entry {
                    addr: b as usize,
                    len: 8192,
                    kind: GmKind::Sync,
                    rank: 0,
                },
            ]
        );
        s.free(a);
        assert_ne!(s.table_version(0), v1);
        assert_eq!(s.table(0).0.len(), 1);
        // First fit: the freed range again, zeroed.
        let c = s.alloc(100, GmKind::Data, 0).unwrap();
        assert_eq!(c, a);
        // SAFETY: 100 bytes of a live allocation.
        assert!(unsafe { std::slice::from_raw_parts(c, 100) }
            .iter()
            .all(|&x| x == 0));
        // Freed neighbours merge: room for one allocation of both.
        s.free(c);
        s.free(b);
        let d = s.alloc(4096 + 8192, GmKind::Data, 0).unwrap();
        assert_eq!(d, a);
        // More than the window holds is refused.
        assert!(s.alloc(64 << 20, GmKind::Data, 0).is_none());
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
        let page = s.base() + 5 * 4096;
        s.header(0).locks[5].0.store(pid as u32, Ordering::SeqCst);
        drop(s.lock(page));
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
        let a = s.alloc(64, GmKind::Sync, 0).unwrap() as usize;
        assert_eq!(s.park(a, 8), Some(0));
        let h = s.header(0);
        let slot = slots(a, 8).next().unwrap();
        assert_eq!(h.parked_total[slot].load(Ordering::SeqCst), 1);
        s.unpark(0, a, 8);
        assert_eq!(h.parked_total[slot].load(Ordering::SeqCst), 0);
        assert_eq!(s.park(s.base() - 4096, 8), None);
        // A lock held by a process that is gone (a pid no process has).
        h.locks[3].0.store(i32::MAX as u32, Ordering::SeqCst);
        drop(s.lock(s.base() + 3 * 4096));
        assert_eq!(h.locks[3].0.load(Ordering::SeqCst), 0);
    }

    /// The only test here that opens a node space: a process holds one at a time.
    #[test]
    fn an_open_space_grants_ranges_of_live_allocations_only() {
        let s = Space::open().unwrap();
        assert!(s.is_open() && !s.is_shared());
        assert_eq!(s.pid(s.rank()), std::process::id());
        // Another slot is not mapped here: no header is read, no pid known.
        let other = (s.rank() + 1) % MAX_PROCS as u32;
        assert_eq!(s.pid(other), 0);
        assert_eq!(s.window_of(s.base() + other as usize * s.window()), None);
        // Every device of the process allocates here, and the table says which.
        let a = s.alloc(10_000, GmKind::Data, 3).unwrap() as usize;
        assert_eq!(s.table(s.rank()).0[0].rank, 3);
        assert!(
            s.grant(a + 8192, 8192, false).is_none(),
            "past the allocation's end"
        );
        assert!(
            s.grant(a - 4096, 10, false).is_none(),
            "outside any allocation"
        );
        let (i, n) = s.grant(a, 10_000, false).unwrap();
        assert!(s.is_shared());
        s.grant_pids(i, n, &[7, 8, 7]).unwrap();
        let g = s.read_grant(s.rank(), i, n).unwrap();
        assert_eq!(
            (g.addr, g.len, g.any_pid, g.pids),
            (a, 10_000, false, vec![7, 8])
        );
        assert!(s.read_grant(s.rank(), i, n ^ 2).is_none(), "a wrong nonce");
        assert!(s.read_grant(other, i, n).is_none(), "an unmapped slot");
        let too_many: Vec<u32> = (100..100 + GRANT_PIDS as u32).collect();
        assert!(s.grant_pids(i, n, &too_many).is_err());
        // Attaching one's own window again is a no-op; another pid there is refused.
        s.attach(s.rank(), std::process::id(), s.file_descriptor())
            .unwrap();
        assert!(s.attach(s.rank(), 1, s.file_descriptor()).is_err());
        // Freeing the allocation revokes its grants.
        s.free(a as *mut u8);
        assert!(s.read_grant(s.rank(), i, n).is_none());
        assert!(!s.revoke(i, n));
        let b = s.alloc(4096, GmKind::Sync, 0).unwrap() as usize;
        let (j, m) = s.grant(b, 4096, true).unwrap();
        assert!(s.revoke(j, m));
        assert!(s.read_grant(s.rank(), j, m).is_none());
    }
}
