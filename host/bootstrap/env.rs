//! [`LaunchEnv`]: the rank, the world size and the rendezvous of a process started by a
//! launcher, read from the variables launchers set.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use sha2::{Digest, Sha256};

use super::id::UniqueId;
use crate::error::{BootstrapError, Error, Result};

/// The launcher whose variables gave the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Launcher {
    /// aiv-comm's own variables (`AIV_RANK`, `AIV_WORLD_SIZE`, ...).
    Aiv,
    /// torchrun (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`).
    Torchrun,
    /// Open MPI's `mpirun` (`OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`).
    OpenMpi,
    /// A PMI launcher such as MPICH's Hydra (`PMI_RANK`, `PMI_SIZE`).
    Pmi,
}

impl std::fmt::Display for Launcher {
    /// The launcher's name: `AIV_*`, `torchrun`, `Open MPI`, `PMI`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Launcher::Aiv => "AIV_*",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Pmi => "PMI",
        })
    }
}

/// Where a process of a job stands, from its environment: its rank, the job's size, its rank
/// on its host (which picks its device: `local_rank % devices`, as hccl_test does) and the
/// rendezvous of the job ([`LaunchEnv::unique_id`], for [`super::join`]).
///
/// The variables are read in this order; the first launcher whose rank and size are both set
/// is taken:
///
/// | launcher | rank, size, local rank | rendezvous |
/// |---|---|---|
/// | aiv-comm | `AIV_RANK`, `AIV_WORLD_SIZE`, `AIV_LOCAL_RANK` | `AIV_UNIQUE_ID` (a [`UniqueId`] in hex), or address and job as below |
/// | torchrun | `RANK`, `WORLD_SIZE`, `LOCAL_RANK` | `MASTER_ADDR`, port `MASTER_PORT + 1` |
/// | Open MPI | `OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK` | the loopback, a port derived from the job id |
/// | PMI | `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID` | the loopback, a port derived from the job id |
///
/// Unless `AIV_UNIQUE_ID` gives the rendezvous (read with aiv-comm's own variables only),
/// `AIV_MASTER_ADDR` and `AIV_MASTER_PORT` choose rank 0's address and port, and `AIV_JOB_ID`
/// (any string all ranks share, and no other job uses) names the job. The local rank defaults
/// to the rank. A master address given as a name or a non-loopback address makes rank 0 listen
/// on every interface (on that port); otherwise it listens on the loopback.
///
/// **Under torchrun**, torch's store (torchrun's agent) already listens on `MASTER_PORT`, so
/// aiv-comm's rank 0 takes the next port.
///
/// **The job's secret** is derived from the launcher's job id (torchrun: `TORCHELASTIC_RUN_ID`
/// with `MASTER_ADDR` and `MASTER_PORT`, which no two running jobs share; Open MPI:
/// `PMIX_NAMESPACE` or `OMPI_MCA_ess_base_jobid`; or `AIV_JOB_ID`), the address, the port and
/// the world size. It keeps two jobs apart, and a stray connection out; it is only as hard to
/// guess as the launcher's job id. For a secret nobody can guess, make a [`UniqueId`] on one
/// rank and carry it to the others (`AIV_UNIQUE_ID`).
///
/// **Open MPI and PMI without `AIV_MASTER_ADDR`** rendezvous on the loopback: all ranks on one
/// host. When the launcher says the ranks are on several hosts (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_SIZE`, Hydra's `MPI_LOCALNRANKS` below the world size) the launch is
/// refused with a message asking for `AIV_MASTER_ADDR` (rank 0's host).
#[derive(Debug, Clone)]
pub struct LaunchEnv {
    /// This process's rank.
    pub rank: u32,
    /// The number of ranks of the job.
    pub world_size: u32,
    /// This process's rank among the job's processes on its host.
    pub local_rank: u32,
    /// Whose variables these were.
    pub launcher: Launcher,
    id: UniqueId,
}

/// Bottom of the ports derived from a job id.
const DERIVED_PORT_BASE: u16 = 20000;
/// How many ports a job id is spread over.
const DERIVED_PORTS: u16 = 10000;

fn env_err(msg: String) -> Error {
    Error::Bootstrap(BootstrapError::Environment(msg))
}

impl LaunchEnv {
    /// The process's launch, from its environment; `Ok(None)` if no launcher's rank and size
    /// are set (a program started on its own).
    pub fn from_env() -> Result<Option<LaunchEnv>> {
        LaunchEnv::from_vars(|k| std::env::var(k).ok())
    }

    /// As [`LaunchEnv::from_env`], with the variables from `get` (for a launcher that passes
    /// them some other way, and for tests).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<LaunchEnv>> {
        let var = |k: &str| get(k).filter(|v| !v.is_empty());
        let num = |k: &str| -> Result<Option<u32>> {
            match var(k) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u32>().map(Some).map_err(|_| {
                    env_err(format!("{k}={v:?} is not a rank or size (a whole number)"))
                }),
            }
        };
        let (launcher, rank_var, size_var, local_var) = [
            (
                Launcher::Aiv,
                "AIV_RANK",
                "AIV_WORLD_SIZE",
                "AIV_LOCAL_RANK",
            ),
            (Launcher::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"),
            (
                Launcher::OpenMpi,
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
            ),
            (Launcher::Pmi, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
        ]
        .into_iter()
        .find(|(_, r, s, _)| var(r).is_some() && var(s).is_some())
        .map_or((None, "", "", ""), |(l, r, s, lr)| (Some(l), r, s, lr));
        let Some(launcher) = launcher else {
            return Ok(None);
        };
        let rank = num(rank_var)?.expect("set");
        let world_size = num(size_var)?.expect("set");
        if world_size == 0 || rank >= world_size {
            return Err(env_err(format!(
                "{rank_var}={rank} and {size_var}={world_size}: the rank must be below the size"
            )));
        }
        let local_rank = num(local_var)?.unwrap_or(rank);
        let id = match (launcher, var("AIV_UNIQUE_ID")) {
            (Launcher::Aiv, Some(hex)) => {
                UniqueId::from_hex(&hex).map_err(|e| env_err(format!("AIV_UNIQUE_ID: {e}")))?
            }
            _ => derived_id(launcher, world_size, &var)?,
        };
        Ok(Some(LaunchEnv {
            rank,
            world_size,
            local_rank,
            launcher,
            id,
        }))
    }

    /// The job's rendezvous, for [`super::join`].
    pub fn unique_id(&self) -> &UniqueId {
        &self.id
    }
}

/// Rank 0's address and the job's secret, from the launcher's variables.
fn derived_id(
    launcher: Launcher,
    world_size: u32,
    var: &impl Fn(&str) -> Option<String>,
) -> Result<UniqueId> {
    let job = var("AIV_JOB_ID").or_else(|| match launcher {
        Launcher::Torchrun => Some(format!(
            "{}|{}|{}",
            var("TORCHELASTIC_RUN_ID").unwrap_or_default(),
            var("MASTER_ADDR").unwrap_or_default(),
            var("MASTER_PORT").unwrap_or_default()
        )),
        Launcher::OpenMpi | Launcher::Pmi => {
            var("PMIX_NAMESPACE").or_else(|| var("OMPI_MCA_ess_base_jobid"))
        }
        Launcher::Aiv => None,
    });
    let Some(job) = job else {
        return Err(env_err(format!(
            "no job id for {launcher:?}'s ranks: set AIV_JOB_ID to a string all ranks of the job share and no other job uses{}",
            if launcher == Launcher::Aiv { " (or AIV_UNIQUE_ID to a UniqueId's hex)" } else { "" }
        )));
    };
    let port = |k: &str| -> Result<Option<u16>> {
        match var(k) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .map(Some)
                .ok_or_else(|| env_err(format!("{k}={v:?} is not a port"))),
        }
    };
    let port = match (port("AIV_MASTER_PORT")?, launcher) {
        (Some(p), _) => p,
        (None, Launcher::Torchrun) => {
            let p = port("MASTER_PORT")?.ok_or_else(|| {
                env_err("torchrun's MASTER_PORT is not set (or set AIV_MASTER_PORT)".into())
            })?;
            p.checked_add(1).ok_or_else(|| {
                env_err("MASTER_PORT=65535 leaves no port for aiv-comm: set AIV_MASTER_PORT".into())
            })?
        }
        (None, _) => {
            let h = Sha256::digest(job.as_bytes());
            DERIVED_PORT_BASE + u16::from_be_bytes([h[0], h[1]]) % DERIVED_PORTS
        }
    };
    let host = var("AIV_MASTER_ADDR").or_else(|| match launcher {
        Launcher::Torchrun => var("MASTER_ADDR"),
        _ => None,
    });
    let one_host = match launcher {
        Launcher::OpenMpi => {
            var("OMPI_COMM_WORLD_LOCAL_SIZE").is_none_or(|l| l.trim() == world_size.to_string())
        }
        // MPICH's Hydra: the ranks on this host.
        Launcher::Pmi => var("MPI_LOCALNRANKS").is_none_or(|l| l.trim() == world_size.to_string()),
        _ => true,
    };
    let (ip, named) = match &host {
        Some(h) => (resolve(h, port)?, h.trim().to_string()),
        None if one_host => (IpAddr::V4(Ipv4Addr::LOCALHOST), String::new()),
        None => {
            return Err(env_err(
                "the job's ranks are on several hosts: set AIV_MASTER_ADDR to rank 0's host".into(),
            ))
        }
    };
    // The secret hashes the address as given, not as resolved: hosts may resolve one name
    // differently (Debian maps a host's own name to 127.0.1.1 on that host alone).
    let mut h = Sha256::new();
    h.update(b"aiv-comm job secret v1\0");
    h.update(format!("{launcher:?}\0{job}\0{named}\0{port}\0{world_size}").as_bytes());
    let id = UniqueId::from_parts(SocketAddr::new(ip, port), h.finalize().into());
    // A master address that is not a loopback one (a host's name or address): rank 0 listens on
    // every interface, as torch's store does, so that ranks on other hosts reach it whatever
    // its own host resolves the name to.
    Ok(match host {
        Some(_) if !ip.is_loopback() || named.parse::<IpAddr>().is_err() => id.binding_any(),
        _ => id,
    })
}

/// The address of `host` (a name or an address): of a name, its first IPv4 address if it has
/// one (every rank then picks the same, whatever order the resolver gives), else its first.
fn resolve(host: &str, port: u16) -> Result<IpAddr> {
    if let Ok(ip) = host.trim().parse::<IpAddr>() {
        return Ok(ip);
    }
    let all: Vec<IpAddr> = (host.trim(), port)
        .to_socket_addrs()
        .map(|a| a.map(|a| a.ip()).collect())
        .unwrap_or_default();
    all.iter()
        .find(|ip| ip.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| env_err(format!("cannot resolve the master address {host:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn launch(vars: &[(&str, &str)]) -> Result<Option<LaunchEnv>> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LaunchEnv::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn no_launcher_is_none() {
        assert!(
            launch(&[("RANK", "1")]).unwrap().is_none(),
            "a rank needs a size"
        );
        assert!(launch(&[]).unwrap().is_none());
    }

    #[test]
    fn launchers_in_order_with_their_ranks_and_rendezvous() {
        let torch = [
            ("RANK", "3"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "abc"),
        ];
        let t = launch(&torch).unwrap().unwrap();
        assert_eq!(
            (t.launcher, t.rank, t.world_size, t.local_rank),
            (Launcher::Torchrun, 3, 4, 1)
        );
        assert_eq!(t.unique_id().addr(), "127.0.0.1:29501".parse().unwrap());
        // aiv-comm's own variables come first.
        let id = UniqueId::from_parts("127.0.0.1:4242".parse().unwrap(), [9; 32]);
        let hex = id.to_hex();
        let mut both = torch.to_vec();
        both.extend([
            ("AIV_RANK", "0"),
            ("AIV_WORLD_SIZE", "2"),
            ("AIV_UNIQUE_ID", hex.as_str()),
        ]);
        let a = launch(&both).unwrap().unwrap();
        assert_eq!((a.launcher, a.rank, a.local_rank), (Launcher::Aiv, 0, 0));
        assert_eq!(a.unique_id(), &id);
        let ompi = [
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("PMIX_NAMESPACE", "502464513"),
        ];
        let o = launch(&ompi).unwrap().unwrap();
        assert_eq!(
            (o.launcher, o.rank, o.local_rank),
            (Launcher::OpenMpi, 1, 1)
        );
        let port = o.unique_id().addr().port();
        assert!((DERIVED_PORT_BASE..DERIVED_PORT_BASE + DERIVED_PORTS).contains(&port));
        assert!(o.unique_id().addr().ip().is_loopback());
        let p = launch(&[("PMI_RANK", "0"), ("PMI_SIZE", "3"), ("AIV_JOB_ID", "j")])
            .unwrap()
            .unwrap();
        assert_eq!((p.launcher, p.world_size), (Launcher::Pmi, 3));
    }

    #[test]
    fn ranks_of_one_job_agree_and_two_jobs_differ() {
        let rank = |r: &'static str, job: &'static str| {
            launch(&[
                ("OMPI_COMM_WORLD_RANK", r),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("PMIX_NAMESPACE", job),
            ])
            .unwrap()
            .unwrap()
            .id
        };
        assert_eq!(rank("0", "111"), rank("1", "111"));
        assert_ne!(rank("0", "111").secret(), rank("0", "112").secret());
        let torch = |port: &'static str| {
            launch(&[
                ("RANK", "0"),
                ("WORLD_SIZE", "2"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", port),
            ])
            .unwrap()
            .unwrap()
            .id
        };
        assert_ne!(torch("29500").secret(), torch("29502").secret());
    }

    #[test]
    fn bad_values_are_named() {
        for (vars, what) in [
            (vec![("RANK", "x"), ("WORLD_SIZE", "2")], "RANK=\"x\""),
            (vec![("RANK", "2"), ("WORLD_SIZE", "2")], "must be below"),
            (
                vec![("RANK", "0"), ("WORLD_SIZE", "2")],
                "MASTER_PORT is not set",
            ),
            (
                vec![("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_PORT", "http")],
                "MASTER_PORT=\"http\"",
            ),
            (
                vec![("AIV_RANK", "0"), ("AIV_WORLD_SIZE", "2")],
                "AIV_JOB_ID",
            ),
            (
                vec![
                    ("AIV_RANK", "0"),
                    ("AIV_WORLD_SIZE", "2"),
                    ("AIV_UNIQUE_ID", "00"),
                ],
                "AIV_UNIQUE_ID",
            ),
            (vec![("PMI_RANK", "0"), ("PMI_SIZE", "2")], "AIV_JOB_ID"),
            (
                vec![
                    ("PMI_RANK", "0"),
                    ("PMI_SIZE", "4"),
                    ("MPI_LOCALNRANKS", "2"),
                    ("AIV_JOB_ID", "j"),
                ],
                "AIV_MASTER_ADDR",
            ),
            (
                vec![
                    ("OMPI_COMM_WORLD_RANK", "0"),
                    ("OMPI_COMM_WORLD_SIZE", "4"),
                    ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
                    ("PMIX_NAMESPACE", "1"),
                ],
                "AIV_MASTER_ADDR",
            ),
        ] {
            let e = launch(&vars).unwrap_err().to_string();
            assert!(e.contains(what), "{vars:?}: {e}");
        }
    }
}
