//! The job's board: one page of shared memory per rank that says which process runs the rank
//! and whether it has left the job in order, readable by every other process of the job on
//! this host, whatever the backend.
//!
//! A rank's page is a `memfd` (owner-only, in no file system) that its process writes; the
//! peers map it read-only through `/proc/<pid>/fd/<fd>` (same user, as for any shared memory
//! of the job) after the bootstrap carried `(pid, fd)`. Nothing outlives the processes.
//! The monitor of `process.rs` reads it: a peer whose process has ended without having said
//! it left has failed.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::bootstrap::Peers;
use crate::error::{BootstrapError, Error, Result};

const PAGE: usize = 4096;
/// A page's state: the rank runs.
const LIVE: u32 = 1;
/// A page's state: the rank left in order ([`Board::leave`]).
const LEFT: u32 = 2;

/// What a page holds.
#[repr(C)]
struct Page {
    pid: AtomicU32,
    state: AtomicU32,
}

/// Every rank's page, mapped in this process (see the module docs).
pub(crate) struct Board {
    me: u32,
    /// Each rank's page (this rank's writable).
    pages: Vec<*mut Page>,
    /// This rank's page file, kept open so the peers can open it.
    _own: OwnedFd,
}

// SAFETY: the pages are shared memory of atomics only, mapped for the board's life.
unsafe impl Send for Board {}
// SAFETY: as above.
unsafe impl Sync for Board {}

fn os_err(what: &str) -> Error {
    Error::Config(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Maps `fd`'s first page, writable or not.
fn map(fd: i32, write: bool) -> Result<*mut Page> {
    let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
    // SAFETY: a shared mapping of one page of a valid descriptor, at no fixed address; checked.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), PAGE, prot, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(os_err("mapping a page of the job's board"));
    }
    Ok(p.cast())
}

impl Board {
    /// Makes this rank's page and maps every peer's (a collective call of the job).
    pub fn join(peers: &Peers) -> Result<Board> {
        // SAFETY: a NUL-terminated name and valid flags; the result is checked.
        let raw = unsafe { libc::memfd_create(c"aiv-comm-board".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(os_err("memfd_create"));
        }
        // SAFETY: a new descriptor owned from here on.
        let own = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a valid descriptor; the result is checked.
        let mode = unsafe { libc::fchmod(own.as_raw_fd(), 0o600) };
        // SAFETY: as above.
        if mode != 0 || unsafe { libc::ftruncate(own.as_raw_fd(), PAGE as libc::off_t) } != 0 {
            return Err(os_err("making the job's board"));
        }
        let mine = map(own.as_raw_fd(), true)?;
        let pid = std::process::id();
        // SAFETY: a page mapped above, zeroed by the kernel; only atomics are accessed.
        unsafe {
            (*mine).pid.store(pid, Ordering::Relaxed);
            (*mine).state.store(LIVE, Ordering::Release);
        }
        let mut board = Board {
            me: peers.rank(),
            pages: Vec::with_capacity(peers.size() as usize),
            _own: own,
        };
        let mut note = pid.to_le_bytes().to_vec();
        note.extend_from_slice(&(board._own.as_raw_fd() as u32).to_le_bytes());
        let all = peers.all_gather(&note)?;
        for (p, b) in all.iter().enumerate() {
            if p as u32 == board.me {
                board.pages.push(mine);
                continue;
            }
            let word = |at: usize| {
                b.get(at..at + 4)
                    .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
            };
            let (Some(ppid), Some(pfd)) = (word(0), word(4)) else {
                return Err(Error::Bootstrap(BootstrapError::Io(format!(
                    "rank {p} sent a malformed board entry"
                ))));
            };
            let path = format!("/proc/{ppid}/fd/{pfd}\0");
            // SAFETY: a NUL-terminated path; the result is checked.
            let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(Error::Config(format!(
                    "cannot open rank {p}'s page of the job's board (process {ppid}): {} (the ranks of a job must run as one user on one host)",
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: a new descriptor, closed once mapped.
            let f = unsafe { OwnedFd::from_raw_fd(fd) };
            let page = map(f.as_raw_fd(), false)?;
            board.pages.push(page);
            if board.pid(p as u32) != ppid {
                return Err(Error::Config(format!(
                    "rank {p}'s page of the job's board is not what rank {p} announced"
                )));
            }
        }
        // Nobody leaves before every peer has opened its page.
        peers.barrier()?;
        Ok(board)
    }

    fn page(&self, p: u32) -> &Page {
        // SAFETY: every page is mapped for the board's life, and holds atomics only.
        unsafe { &*self.pages[p as usize] }
    }

    /// The pid of rank `p`'s process.
    pub fn pid(&self, p: u32) -> u32 {
        self.page(p).pid.load(Ordering::Relaxed)
    }

    /// Whether rank `p`'s process has ended (zombies included).
    pub fn has_ended(&self, p: u32) -> bool {
        process_ended(self.pid(p))
    }

    /// Whether rank `p` left the job in order.
    pub fn has_left(&self, p: u32) -> bool {
        self.page(p).state.load(Ordering::SeqCst) == LEFT
    }

    /// Says to every peer that this rank leaves in order: its process ending is not a failure.
    pub fn leave(&self) {
        self.page(self.me).state.store(LEFT, Ordering::SeqCst);
    }
}

/// Whether process `pid` has ended: it does not exist, or is a zombie (ended, not yet reaped
/// by its parent, so `kill(pid, 0)` still finds it).
fn process_ended(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name's closing parenthesis.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X")
    })
}

impl Drop for Board {
    fn drop(&mut self) {
        for &p in &self.pages {
            // SAFETY: a page `join` mapped, unmapped once; nothing reads it after the drop.
            unsafe { libc::munmap(p.cast(), PAGE) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_has_ended_and_this_process_has_not() {
        // SAFETY: the child only calls _exit, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(0) };
        }
        let stat = format!("/proc/{pid}/stat");
        while !std::fs::read_to_string(&stat).unwrap().contains(") Z") {
            std::thread::yield_now();
        }
        assert!(process_ended(pid as u32), "a zombie");
        assert!(!process_ended(std::process::id()));
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert!(process_ended(pid as u32), "reaped");
    }
}
