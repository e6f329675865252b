//! Where the ranks meet between the phases of a row, and why a rank stops.

use std::sync::{Condvar, Mutex};

/// Where the ranks meet between the phases of a row: threads of this process, or the processes
/// of a job (over the bootstrap's connections; a failing process exits, and its end breaks the
/// others' wait).
pub enum Meet<'a> {
    /// Ranks that are threads of this process.
    Threads(Rendezvous),
    /// Ranks that are processes: the bootstrap's barrier.
    Processes(&'a aiv_comm::bootstrap::Peers),
}

impl Meet<'_> {
    /// Waits for every rank; `Err` if a rank failed.
    pub fn wait(&self) -> Result<(), RankError> {
        match self {
            Meet::Threads(r) => r.wait(),
            Meet::Processes(p) => p.barrier().map_err(|_| RankError::PeerFailed),
        }
    }

    /// Lets the other ranks go with an error: this one failed (threads only; a process that fails
    /// exits).
    pub fn break_it(&self) {
        if let Meet::Threads(r) = self {
            r.break_it();
        }
    }
}

/// A barrier that a failing rank breaks, so that the others stop instead of waiting for it.
pub struct Rendezvous {
    ranks: usize,
    /// (arrived in this round, round, broken)
    state: Mutex<(usize, u64, bool)>,
    cv: Condvar,
}

impl Rendezvous {
    /// A barrier for `ranks` threads.
    pub fn new(ranks: usize) -> Rendezvous {
        Rendezvous {
            ranks,
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
        }
    }

    /// Waits for every rank; `Err` if a rank broke the barrier.
    pub fn wait(&self) -> Result<(), RankError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.2 {
            return Err(RankError::PeerFailed);
        }
        s.0 += 1;
        if s.0 == self.ranks {
            s.0 = 0;
            s.1 += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let round = s.1;
        while s.1 == round && !s.2 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.1 == round {
            Err(RankError::PeerFailed)
        } else {
            Ok(())
        }
    }

    /// Breaks the barrier: every wait, now or later, returns `Err`.
    pub fn break_it(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.2 = true;
        self.cv.notify_all();
    }
}

/// Why a rank stopped.
pub enum RankError {
    /// Its own call failed.
    Own(aiv_comm::Error),
    /// Another rank failed (and broke the rendezvous).
    PeerFailed,
}

impl From<aiv_comm::Error> for RankError {
    fn from(e: aiv_comm::Error) -> Self {
        RankError::Own(e)
    }
}
