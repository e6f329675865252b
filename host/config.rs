//! The settings of a world: HCCL buffer size, exec timeout, cores, deterministic reductions,
//! blocks per peer; from `Config` fields, else HCCL's environment variables.

use std::time::Duration;

use crate::error::{Error, Result};

/// Default HCCL buffer per rank: 200 MB, as HCCL (`HCCL_BUFFSIZE` = 200).
pub const DEFAULT_BUFFER_BYTES: usize = 200 * 1024 * 1024;
/// Smallest HCCL buffer accepted: one 32-byte block per rank of the largest world plus room for
/// a two-shot slice.
pub const MIN_BUFFER_BYTES: usize = 4096;
/// Largest HCCL buffer accepted: with the push region after it
/// ([`crate::plan::PUSH_REGION_BYTES`]), at most `isize::MAX` bytes, the most one allocation can
/// hold. Whether a buffer of that size can be allocated depends on the machine: one that cannot
/// is an error naming the setting when the world is made.
pub const MAX_BUFFER_BYTES: usize = isize::MAX as usize - crate::plan::PUSH_REGION_BYTES;
/// Largest number of ranks in one world (the flag layout has cells for 32; collectives use one
/// block per rank).
pub const MAX_RANKS: usize = 32;
/// Default deadline of every device-side wait, when neither [`Config::exec_timeout`] nor
/// `HCCL_EXEC_TIMEOUT` ([`parse_hccl_exec_timeout`]) says otherwise. HCCL's AIV mode defaults
/// to 1091 s; aiv-comm waits 120 s, so that a test that hangs fails within minutes (the twin's
/// watchdog reports a deadlock sooner still).
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(120);
/// Shortest deadline accepted: HCCL reads `HCCL_EXEC_TIMEOUT` to two decimals of a second, and
/// the twin checks deadlines when a parked poll wakes (every few ms), so less would not mean
/// what it says.
pub const MIN_EXEC_TIMEOUT: Duration = Duration::from_millis(10);

/// Settings of a simulated world.
#[derive(Clone, Debug)]
pub struct Config {
    /// HCCL buffer bytes per rank, [`MIN_BUFFER_BYTES`] to [`MAX_BUFFER_BYTES`] (and as much as
    /// the device can allocate). `None`: `HCCL_BUFFSIZE` (MB) if set, else
    /// [`DEFAULT_BUFFER_BYTES`].
    pub buffer_bytes: Option<usize>,
    /// Deadline of every device-side wait, at least [`MIN_EXEC_TIMEOUT`] and at most
    /// [`HCCL_AIV_MAX_EXEC_TIMEOUT`]. `None`:
    /// `HCCL_EXEC_TIMEOUT` (read by [`parse_hccl_exec_timeout`]) if set, else
    /// [`DEFAULT_EXEC_TIMEOUT`].
    /// A wait that expires fails the launch with [`Error::WaitTimeout`].
    pub exec_timeout: Option<Duration>,
    /// AIV cores per simulated device (default 48, as a 910B), at least the number of ranks and
    /// at most 1024. Collectives and launches with tags
    /// ([`crate::Communicator::launch_with_tags`]) run on at most 48 blocks (`ffi::AIV_MAX_BLOCKS`: the
    /// sync area and diagnostic records have cells for 48 blocks, as many AIV cores as an
    /// Atlas A2 has); more cores serve plain launches ([`crate::CommStream::launch`]).
    pub cores: u32,
    /// Deterministic reductions: every AllReduce and ReduceScatter(V) gives the bits of the
    /// plain rank-order reduction, `((x_0 op x_1) op x_2) ...` with each step rounded to the
    /// element type, whatever the algorithm, the chunking and the HCCL buffer size (an AllReduce
    /// asked for [`crate::AllReduceAlgo::Hd`], whose pairwise tree cannot add in that order,
    /// runs the kernel `Auto` picks). So the same inputs on the same rank count give the same
    /// bits on every run and with every buffer size (as `HCCL_DETERMINISTIC=true` on A2).
    /// `None`: `HCCL_DETERMINISTIC` (`true`, `strict` or `false`, any case; unset is `false`;
    /// `strict` is the same order). It costs parallelism where adds into one output would
    /// otherwise land as they arrive: two-shot AllReduce and ReduceScatter
    /// (`benches/deterministic.sh` measures it).
    pub deterministic: Option<bool>,
    /// Blocks (cores) per peer of every collective launch,
    /// 1..=[`crate::plan::MAX_BLOCKS_PER_PEER`] (capped at `min(cores, 48) / ranks`; one-shot
    /// AllReduce and [`crate::AllGatherAlgo::PullParts`] run this many blocks in all, each a
    /// part of the chunk). `None`: by the bytes each block pair moves
    /// ([`crate::plan::blocks_per_peer`]). Results are the same either way; this is for
    /// experiments and tests of the split.
    pub blocks_per_peer: Option<u32>,
    /// The devices [`crate::World::new`] runs on. `None`: `AIV_BACKEND` (`auto`, `twin` or
    /// `acl`) if set, else [`BackendChoice::Auto`]. The other constructors name their backend.
    pub backend: Option<BackendChoice>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buffer_bytes: None,
            exec_timeout: None,
            cores: crate::backend::A2_AIV_CORES,
            deterministic: None,
            blocks_per_peer: None,
            backend: None,
        }
    }
}

/// Which devices a [`crate::World::new`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BackendChoice {
    /// NPUs through ACL when `libascendcl.so` loads, is a device runtime (not acl-twin) and
    /// reports at least as many devices as ranks; else the CPU twin.
    #[default]
    Auto,
    /// The CPU twin ([`crate::World::sim_with`]).
    Twin,
    /// NPUs through the ACL runtime on the loader's path
    /// ([`crate::backend::acl::AclBackend`]); an error if it cannot be used.
    Acl,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "twin" => Ok(BackendChoice::Twin),
            "acl" => Ok(BackendChoice::Acl),
            _ => Err(format!("unknown backend `{s}` (auto twin acl)")),
        }
    }
}

/// The longest exec timeout of HCCL's AIV mode (and its default there): `HCCL_EXEC_TIMEOUT`
/// values of 0 or above this mean this.
pub const HCCL_AIV_MAX_EXEC_TIMEOUT: Duration = Duration::from_secs(1091);

/// Reads an `HCCL_EXEC_TIMEOUT` value as HCCL's AIV mode on Atlas A2 documents it: seconds in
/// [0, 1091] with at most two decimals (`30`, `0.05`, `.5`), where 0 and anything above 1091
/// mean 1091 s ([`HCCL_AIV_MAX_EXEC_TIMEOUT`]). `None` if `v` is not such a number.
///
/// On the NPU the deadline is further rounded up to a multiple of the hardware's operator
/// timeout interval (`aclrtGetOpTimeoutInterval`); the twin has no such interval and uses the
/// value as read.
///
/// ```
/// use std::time::Duration;
/// use aiv_comm::world::parse_hccl_exec_timeout;
/// assert_eq!(parse_hccl_exec_timeout("0.05"), Some(Duration::from_millis(50)));
/// assert_eq!(parse_hccl_exec_timeout("0"), Some(Duration::from_secs(1091)));
/// assert_eq!(parse_hccl_exec_timeout("5000"), Some(Duration::from_secs(1091)));
/// assert_eq!(parse_hccl_exec_timeout("0.001"), None);
/// ```
pub fn parse_hccl_exec_timeout(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    if whole.is_empty() && frac.is_empty()
        || frac.len() > 2
        || !whole
            .chars()
            .chain(frac.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    let max = HCCL_AIV_MAX_EXEC_TIMEOUT;
    // More digits than any u64 of seconds below the maximum can have: above the maximum.
    let s: u64 = match whole.len() {
        0 => 0,
        1..=6 => whole.parse().ok()?,
        _ => return Some(max),
    };
    let cs: u64 = format!("{frac:0<2}").parse().ok()?;
    let d = Duration::from_secs(s) + Duration::from_millis(cs * 10);
    Some(if d.is_zero() || d > max { max } else { d })
}

impl Config {
    /// The backend this configuration asks for, after `AIV_BACKEND`.
    pub fn resolved_backend(&self) -> Result<BackendChoice> {
        self.backend_with(|k| std::env::var(k).ok())
    }

    /// [`Config::resolved_backend`] with the environment given by `env`.
    ///
    /// ```
    /// use aiv_comm::{BackendChoice, Config};
    /// let env = |v: &'static str| move |k: &str| (k == "AIV_BACKEND").then(|| v.to_string());
    /// assert_eq!(Config::default().backend_with(env("acl")).unwrap(), BackendChoice::Acl);
    /// assert_eq!(Config::default().backend_with(|_| None).unwrap(), BackendChoice::Auto);
    /// assert!(Config::default().backend_with(env("npu")).unwrap_err().to_string().contains("AIV_BACKEND"));
    /// ```
    pub fn backend_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<BackendChoice> {
        match (self.backend, env("AIV_BACKEND")) {
            (Some(b), _) => Ok(b),
            (None, Some(v)) => v
                .parse()
                .map_err(|e| Error::Config(format!("AIV_BACKEND: {e}"))),
            (None, None) => Ok(BackendChoice::Auto),
        }
    }

    /// The HCCL buffer size this configuration gives, after `HCCL_BUFFSIZE`.
    pub fn resolved_buffer_bytes(&self) -> Result<usize> {
        self.buffer_bytes_with(|k| std::env::var(k).ok())
    }

    /// The wait deadline this configuration gives, after `HCCL_EXEC_TIMEOUT`.
    pub fn resolved_timeout(&self) -> Result<Duration> {
        self.timeout_with(|k| std::env::var(k).ok())
    }

    /// [`Config::resolved_buffer_bytes`] with the environment given by `env` (testable without
    /// touching the process environment).
    ///
    /// Refused with [`Error::Config`] naming the setting (`Config::buffer_bytes` or
    /// `HCCL_BUFFSIZE`): a size below [`MIN_BUFFER_BYTES`], and one whose allocation (with the
    /// push region after it, [`crate::plan::PUSH_REGION_BYTES`]) would not fit the address
    /// space ([`MAX_BUFFER_BYTES`]).
    ///
    /// ```
    /// use aiv_comm::{Config, Error};
    /// let env = |v: &'static str| move |k: &str| (k == "HCCL_BUFFSIZE").then(|| v.to_string());
    /// assert_eq!(Config::default().buffer_bytes_with(env("3")).unwrap(), 3 << 20);
    /// let e = Config::default().buffer_bytes_with(env("0")).unwrap_err();
    /// assert!(e.to_string().contains("HCCL_BUFFSIZE"));
    /// let huge = Config { buffer_bytes: Some(usize::MAX), ..Config::default() };
    /// assert!(matches!(huge.buffer_bytes_with(env("3")), Err(Error::Config(m)) if m.contains("buffer_bytes")));
    /// ```
    pub fn buffer_bytes_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<usize> {
        let (bytes, setting) = match self.buffer_bytes {
            Some(b) => (b, format!("Config::buffer_bytes of {b} bytes")),
            None => match env("HCCL_BUFFSIZE") {
                Some(v) => {
                    let mb: usize = v.trim().parse().map_err(|_| {
                        Error::Config(format!(
                            "HCCL_BUFFSIZE must be a whole number of MB, got `{v}`"
                        ))
                    })?;
                    let setting = format!("HCCL_BUFFSIZE={mb} (MB)");
                    let bytes = mb.checked_mul(1024 * 1024).ok_or_else(|| {
                        Error::Config(format!("{setting} does not fit the address space"))
                    })?;
                    (bytes, setting)
                }
                None => return Ok(DEFAULT_BUFFER_BYTES),
            },
        };
        if bytes < MIN_BUFFER_BYTES {
            return Err(Error::Config(format!(
                "{setting}: an HCCL buffer of {bytes} bytes is below the minimum of {MIN_BUFFER_BYTES} bytes"
            )));
        }
        if bytes > MAX_BUFFER_BYTES {
            return Err(Error::Config(format!(
                "{setting}: an HCCL buffer of {bytes} bytes is above the maximum of {MAX_BUFFER_BYTES} bytes (with its {} bytes of push region, the largest allocation the address space can hold)",
                crate::plan::PUSH_REGION_BYTES
            )));
        }
        Ok(bytes)
    }

    /// The setting that gave the HCCL buffer size (for errors): `Config::buffer_bytes` or
    /// `HCCL_BUFFSIZE`.
    pub(crate) fn buffer_setting(&self) -> &'static str {
        match self.buffer_bytes {
            Some(_) => "Config::buffer_bytes",
            None => "HCCL_BUFFSIZE",
        }
    }

    /// Whether reductions are deterministic, after `HCCL_DETERMINISTIC`.
    pub fn resolved_deterministic(&self) -> Result<bool> {
        self.deterministic_with(|k| std::env::var(k).ok())
    }

    /// [`Config::resolved_deterministic`] with the environment given by `env`.
    pub fn deterministic_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<bool> {
        if let Some(d) = self.deterministic {
            return Ok(d);
        }
        match env("HCCL_DETERMINISTIC") {
            None => Ok(false),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                // `strict` (CANN: a strict fixed order for AllReduce and ReduceScatter(V)) is
                // what the fixed order here is already.
                "true" | "strict" => Ok(true),
                "false" => Ok(false),
                _ => Err(Error::Config(format!(
                    "HCCL_DETERMINISTIC must be `true`, `strict` or `false`, got `{v}`"
                ))),
            },
        }
    }

    /// [`Config::resolved_timeout`] with the environment given by `env`.
    pub fn timeout_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<Duration> {
        let t = match self.exec_timeout {
            Some(t) => t,
            None => match env("HCCL_EXEC_TIMEOUT") {
                Some(v) => parse_hccl_exec_timeout(&v).ok_or_else(|| {
                    Error::Config(format!(
                        "HCCL_EXEC_TIMEOUT must be seconds (0 to 1091, at most two decimals), got `{v}`"
                    ))
                })?,
                None => DEFAULT_EXEC_TIMEOUT,
            },
        };
        // HCCL_EXEC_TIMEOUT's values are within both bounds (parse_hccl_exec_timeout).
        if t < MIN_EXEC_TIMEOUT {
            return Err(Error::Config(format!(
                "Config::exec_timeout of {t:?} is below the minimum of {MIN_EXEC_TIMEOUT:?}"
            )));
        }
        if t > HCCL_AIV_MAX_EXEC_TIMEOUT {
            return Err(Error::Config(format!(
                "Config::exec_timeout of {t:?} is above the maximum of {HCCL_AIV_MAX_EXEC_TIMEOUT:?} (HCCL's AIV mode reads HCCL_EXEC_TIMEOUT up to that too)"
            )));
        }
        Ok(t)
    }

    pub(crate) fn check(&self, ranks: usize) -> Result<()> {
        self.check_blocks_per_peer()?;
        if self.cores < ranks as u32 {
            return Err(Error::Config(format!(
                "collectives run one block per rank: {ranks} ranks need {ranks} cores, the devices have {}",
                self.cores
            )));
        }
        Ok(())
    }

    pub(crate) fn check_blocks_per_peer(&self) -> Result<()> {
        if let Some(k) = self.blocks_per_peer {
            if !(1..=crate::plan::MAX_BLOCKS_PER_PEER).contains(&k) {
                return Err(Error::Config(format!(
                    "blocks_per_peer must be 1..={}, got {k}",
                    crate::plan::MAX_BLOCKS_PER_PEER
                )));
            }
        }
        Ok(())
    }
}
