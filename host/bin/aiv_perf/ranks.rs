//! The ranks this process runs (every rank as a thread of one process, or this process's rank
//! of a job), and the gathering of every rank's figures to the rank that prints.

use std::time::Duration;

use aiv_comm::{Communicator, World};
use ascendc_twin::{CheckedLaunches, GmTraffic, Twin};

use crate::cli::{config, Opts};
use crate::measure::RankMeasure;
use crate::meet::RankError;

/// The ranks of the sweep this process runs: all of them in one process, or (started by a
/// launcher) its own.
pub enum Ranks {
    /// Every rank, as threads of this process.
    World(World),
    /// This process's rank of a job whose ranks are processes.
    Process(Communicator),
}

impl Ranks {
    /// The ranks this process runs.
    pub fn comms(&self) -> &[Communicator] {
        match self {
            Ranks::World(w) => w.comms(),
            Ranks::Process(c) => std::slice::from_ref(c),
        }
    }

    /// Runs `f` on every rank of this process (each on a thread of its own in a World).
    pub fn run<R: Send>(&self, f: impl Fn(&Communicator) -> R + Sync) -> Vec<R> {
        match self {
            Ranks::World(w) => w.run(f),
            Ranks::Process(c) => vec![f(c)],
        }
    }

    /// The twin whose counters and knobs this process reads: the world's, or the process's
    /// share of the job's.
    pub fn twin(&self) -> Option<&Twin> {
        match self {
            Ranks::World(w) => w.twin(),
            Ranks::Process(c) => c.twin(),
        }
    }

    /// The backend's name (`twin`, `acl`).
    pub fn backend_name(&self) -> &'static str {
        match self {
            Ranks::World(w) => w.backend_name(),
            Ranks::Process(c) => c.backend_name(),
        }
    }

    /// The backend as the header names it.
    pub fn backend_description(&self) -> String {
        match self {
            Ranks::World(w) => w.backend_description(),
            Ranks::Process(c) => c.backend_description(),
        }
    }

    /// This process prints the results (rank 0 of a job of processes).
    pub fn prints(&self) -> bool {
        match self {
            Ranks::World(_) => true,
            Ranks::Process(c) => c.rank() == 0,
        }
    }

    /// The bootstrap's connections to the other processes of the job.
    pub fn peers(&self) -> Option<&aiv_comm::bootstrap::Peers> {
        match self {
            Ranks::World(_) => None,
            Ranks::Process(c) => c.peers(),
        }
    }
}

/// The ranks of the sweep, on the backend `o` asks for.
pub fn make_world(o: &Opts) -> Result<Ranks, String> {
    let made = match &o.launch {
        None => World::new(o.ranks, config(o)).map(Ranks::World),
        Some(l) => Communicator::from_rank(l.rank, l.world_size, l.unique_id(), config(o))
            .map(Ranks::Process),
    };
    made.map_err(|e| match o.buffsize_mb {
        Some(mb) => format!("--buffsize {mb}: {e}"),
        None => e.to_string(),
    })
}

/// One rank's measurements of a row: out of place, and in place if the collective has it.
pub type RankResult = Result<(RankMeasure, Option<RankMeasure>), RankError>;

/// Every rank's measurements of a row, in rank order: this process's, and in a job of
/// processes the others' too (over the bootstrap). A process whose own call failed says why
/// and exits at once: the others then stop at their next meeting (its end breaks it), or
/// sooner (a peer that ends without leaving stops every rank's launches).
pub fn gather_results(world: &Ranks, mine: Vec<RankResult>) -> Result<Vec<RankResult>, String> {
    let Some(peers) = world.peers() else {
        return Ok(mine);
    };
    let rank = peers.rank();
    let own = mine.into_iter().next().expect("one rank per process");
    let (out, inp) = match own {
        Ok(m) => m,
        Err(RankError::PeerFailed) => return Err("a rank failed".into()),
        Err(RankError::Own(e)) => {
            eprintln!("aiv-perf: rank {rank}: {e}");
            std::process::exit(1);
        }
    };
    let mut bytes = Vec::new();
    encode_measure(&out, &mut bytes);
    if let Some(m) = &inp {
        encode_measure(m, &mut bytes);
    }
    let all = peers
        .all_gather(&bytes)
        .map_err(|e| format!("gathering the ranks' figures: {e}"))?;
    let mut own = Some((out, inp));
    all.iter()
        .enumerate()
        .map(|(r, b)| {
            if r as u32 == rank {
                return Ok(Ok(own.take().expect("own figures once")));
            }
            let mut words = b
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
            let out = decode_measure(&mut words)
                .ok_or_else(|| format!("rank {r} sent malformed figures"))?;
            let inp = decode_measure(&mut words);
            Ok(Ok((out, inp)))
        })
        .collect()
}

/// A rank's measurement as words for [`decode_measure`] (the census stays with its process:
/// rank 0 prints its own).
pub fn encode_measure(m: &RankMeasure, out: &mut Vec<u8>) {
    let mut put = |v: u64| out.extend_from_slice(&v.to_le_bytes());
    put(m.time.as_nanos() as u64);
    put(m.batches.len() as u64);
    for b in &m.batches {
        put(b.as_nanos() as u64);
    }
    put(m.counted_calls as u64);
    put(m.checked_launches.hazards);
    put(m.checked_launches.races);
    put(m.wrong.map_or(u64::MAX, |w| w as u64));
    put(m.dma);
    put(m.cores.len() as u64);
    for c in &m.cores {
        put(c.read);
        put(c.written);
    }
}

/// The next measurement of `words` ([`encode_measure`]); None when they end.
pub fn decode_measure(words: &mut impl Iterator<Item = u64>) -> Option<RankMeasure> {
    let time = Duration::from_nanos(words.next()?);
    let batches = (0..words.next()?)
        .map(|_| words.next().map(Duration::from_nanos))
        .collect::<Option<_>>()?;
    let counted_calls = words.next()? as usize;
    let checked_launches = CheckedLaunches {
        hazards: words.next()?,
        races: words.next()?,
    };
    let wrong = words
        .next()
        .map(|w| (w != u64::MAX).then_some(w as usize))?;
    let dma = words.next()?;
    let cores = (0..words.next()?)
        .map(|_| {
            Some(GmTraffic {
                read: words.next()?,
                written: words.next()?,
            })
        })
        .collect::<Option<_>>()?;
    Some(RankMeasure {
        time,
        batches,
        counted_calls,
        checked_launches,
        wrong,
        dma,
        cores,
        census: None,
    })
}
