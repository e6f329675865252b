//! The command line: flags and environment into [`Opts`], or help, or a one-line error (exit
//! status 2); and what the options imply (the world's [`Config`], the sweep's sizes, the redop,
//! root and timeout the output names).

use std::time::Duration;

use aiv_comm::bootstrap::LaunchEnv;
use aiv_comm::world::{MAX_BUFFER_BYTES, MIN_BUFFER_BYTES};
use aiv_comm::{AllGatherAlgo, AllReduceAlgo, BackendChoice, Config, DataType, ReduceOp};

use crate::check::Flip;
use crate::collectives::{collective_names, find_collective, Collective};
use crate::help::{collective_usage, usage};

/// Where the exec timeout came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutSource {
    /// `-T`.
    Flag,
    /// `HCCL_EXEC_TIMEOUT`.
    Env,
    /// Neither: the library's default.
    Default,
}

/// A parsed command line.
pub struct Opts {
    /// The collective (the subcommand).
    pub coll: &'static Collective,
    /// `-b`: the smallest size, bytes.
    pub begin: usize,
    /// `-e`: the largest size, bytes.
    pub end: usize,
    /// `-f`: the factor from row to row (None: 2, unless `-i`).
    pub factor: Option<usize>,
    /// `-i`: the bytes added from row to row instead.
    pub step: Option<usize>,
    /// `-d`: the element type.
    pub dtype: DataType,
    /// `-o`: the reduce op.
    pub op: ReduceOp,
    /// `-r`: the root rank.
    pub root: usize,
    /// `-p`: ranks (under a launcher: the job's size).
    pub ranks: usize,
    /// `-n`: timed iterations per row and placement.
    pub iters: usize,
    /// `-w`: warm-up iterations per row and placement.
    pub warmup: usize,
    /// `-c 1`: check every result against the host's reference.
    pub check: bool,
    /// `--buffsize`: the HCCL buffer per rank, MB (None: `HCCL_BUFFSIZE`, else the default).
    pub buffsize_mb: Option<usize>,
    /// `--blocks-per-peer`: Config::blocks_per_peer.
    pub blocks_per_peer: Option<u32>,
    /// `AIV_PERF_INJECT_WRONG=1` (or `last`): rank 0 flips a byte of the first (last) element
    /// of what it read back before comparing (a self-test of the check, the `#wrong` count and
    /// exit status 1).
    pub inject_wrong: Option<Flip>,
    /// `--algo` as given (parsed for the collective once it is known).
    pub algo: Option<String>,
    /// The AllReduce kernel `--algo` names.
    pub ar_algo: AllReduceAlgo,
    /// The AllGather kernel `--algo` names.
    pub ag_algo: AllGatherAlgo,
    /// `--json`: one JSON object instead of the table.
    pub json: bool,
    /// `--twin-checks`: keep the twin's checkers as configured.
    pub twin_checks: bool,
    /// `--checks-cost`: time the iterations with the twin's checkers off and on, in alternating
    /// batches of one run.
    pub checks_cost: bool,
    /// `-R 1`: every rank registers its send and recv buffers as window memory.
    pub register: bool,
    /// The deadline of device-side waits (None: the library's default).
    pub timeout: Option<Duration>,
    /// Where [`Opts::timeout`] came from.
    pub timeout_source: TimeoutSource,
    /// `--backend`: the devices (None: `AIV_BACKEND`, else auto).
    pub backend: Option<BackendChoice>,
    /// Started by a launcher (mpirun, torchrun, `AIV_RANK`/`AIV_WORLD_SIZE`): this process is
    /// one rank of `ranks`, which the launcher sets; `-p` then means NPUs per node, as in
    /// hccl_test.
    pub launch: Option<LaunchEnv>,
    /// `-p` under a launcher: NPUs per node, hccl_test's meaning. On the twin it only labels
    /// the run (the header shows it); nothing picks a device by it yet.
    pub npus_per_node: Option<usize>,
}

/// What the command line asks for.
pub enum Parsed {
    /// Print this on stdout and exit 0.
    Help(String),
    /// Run the sweep.
    Run(Box<Opts>),
}

/// Parses a size: bytes with an optional K/M/G or KB/MB/GB (powers of 1024), any case.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix('b').unwrap_or(&lower);
    let (num, mult) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1usize << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        _ => (body, 1),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "bad size `{s}` (bytes, with an optional K, M, G or KB, MB, GB)"
        ));
    }
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("size `{s}` is too large"))
}

/// Parses a whole number given to `flag`.
pub fn parse_num(flag: &str, s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("{flag} needs a whole number, got `{s}`"))
}

/// Reads seconds as HCCL's AIV mode reads `HCCL_EXEC_TIMEOUT` (the library's parser).
pub fn parse_exec_timeout(s: &str) -> Option<Duration> {
    aiv_comm::world::parse_hccl_exec_timeout(s)
}

/// What a flag sets ([`FLAGS`] has its spellings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    /// `-b`
    MinBytes,
    /// `-e`
    MaxBytes,
    /// `-f`
    StepFactor,
    /// `-i`
    StepBytes,
    /// `-d`
    DataType,
    /// `-o`
    Op,
    /// `-r`
    Root,
    /// `-p` (and `-g`)
    Ranks,
    /// `-n`
    Iters,
    /// `-w`
    Warmup,
    /// `-c`
    Check,
    /// `-T`
    Timeout,
    /// `--buffsize`
    BuffSize,
    /// `--blocks-per-peer`
    BlocksPerPeer,
    /// `--backend`
    Backend,
    /// `--algo`
    Algo,
    /// `-R`
    Register,
    /// `--json`
    Json,
    /// `--twin-checks`
    TwinChecks,
    /// `--checks-cost`
    ChecksCost,
}

/// Every flag: its spellings (getopt's short one first, then nccl-tests' and hccl_test's long
/// ones) and what it sets. `-h` and `--help` are looked for before any flag is read.
const FLAGS: &[(&[&str], Key)] = &[
    (&["-b", "--minbytes"], Key::MinBytes),
    (&["-e", "--maxbytes"], Key::MaxBytes),
    (&["-f", "--stepfactor"], Key::StepFactor),
    (&["-i", "--stepbytes"], Key::StepBytes),
    (&["-d", "--datatype"], Key::DataType),
    (&["-o", "--op"], Key::Op),
    (&["-r", "--root"], Key::Root),
    (&["-p", "--npus", "--ranks", "-g", "--ngpus"], Key::Ranks),
    (&["-n", "--iters"], Key::Iters),
    (&["-w", "--warmup_iters"], Key::Warmup),
    (&["-c", "--check"], Key::Check),
    (&["-T", "--timeout"], Key::Timeout),
    (&["--buffsize"], Key::BuffSize),
    (&["--blocks-per-peer"], Key::BlocksPerPeer),
    (&["--backend"], Key::Backend),
    (&["--algo"], Key::Algo),
    (&["-R", "--register"], Key::Register),
    (&["--json"], Key::Json),
    (&["--twin-checks"], Key::TwinChecks),
    (&["--checks-cost"], Key::ChecksCost),
];

impl Key {
    /// The flag spelt `flag`, if there is one.
    fn of(flag: &str) -> Option<Key> {
        FLAGS
            .iter()
            .find(|(names, _)| names.contains(&flag))
            .map(|&(_, key)| key)
    }

    /// Takes a value (the next word, or attached to the flag); the others are switches.
    fn takes_value(self) -> bool {
        !matches!(self, Key::Json | Key::TwinChecks | Key::ChecksCost)
    }
}

/// Splits `--flag=value` and `-fVALUE` (getopt's forms) into flag and value.
pub fn normalize(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        if let Some((flag, value)) = a.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            out.push(flag.to_string());
            out.push(value.to_string());
        } else if a.len() > 2
            && !a.starts_with("--")
            && a.is_char_boundary(2)
            && Key::of(&a[..2]).is_some_and(Key::takes_value)
        {
            out.push(a[..2].to_string());
            out.push(a[2..].to_string());
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// A 0|1 flag's value.
pub fn parse_switch(flag: &str, val: &str) -> Result<bool, String> {
    match val.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("{flag} takes 0 or 1, got `{val}`")),
    }
}

impl Opts {
    /// The options of a command line that names `coll` and nothing else.
    fn new(coll: &'static Collective) -> Opts {
        Opts {
            coll,
            begin: 8 << 10,
            end: 64 << 20,
            factor: None,
            step: None,
            dtype: DataType::F32,
            op: ReduceOp::Sum,
            root: 0,
            ranks: 8,
            iters: 20,
            warmup: 5,
            check: true,
            buffsize_mb: None,
            blocks_per_peer: None,
            inject_wrong: None,
            algo: None,
            ar_algo: AllReduceAlgo::Auto,
            ag_algo: AllGatherAlgo::Auto,
            json: false,
            twin_checks: false,
            checks_cost: false,
            register: false,
            timeout: None,
            timeout_source: TimeoutSource::Default,
            backend: None,
            launch: None,
            npus_per_node: None,
        }
    }
}

/// The options as the flags leave them, before they are checked against each other and the
/// environment ([`Draft::finish`]).
struct Draft {
    /// The options so far.
    o: Opts,
    /// `-o` was given (refused for a collective that does not reduce).
    op_given: bool,
    /// `-p` was given (under a launcher it means NPUs per node).
    ranks_given: bool,
    /// `-T`'s value, read once every flag is (it wins over `HCCL_EXEC_TIMEOUT`).
    timeout_flag: Option<String>,
}

impl Draft {
    /// Sets what `key` sets from `val` (empty for a switch); errors name the flag as `flag`
    /// spells it.
    fn set(&mut self, key: Key, flag: &str, val: &str) -> Result<(), String> {
        let o = &mut self.o;
        match key {
            Key::MinBytes => o.begin = parse_size(val)?,
            Key::MaxBytes => o.end = parse_size(val)?,
            Key::StepFactor => o.factor = Some(parse_num(flag, val)?),
            Key::StepBytes => o.step = Some(parse_size(val)?),
            Key::DataType => o.dtype = val.parse()?,
            Key::Op => {
                o.op = val.parse()?;
                self.op_given = true;
            }
            Key::Root => o.root = parse_num(flag, val)?,
            Key::Ranks => {
                o.ranks = parse_num(flag, val)?;
                self.ranks_given = true;
            }
            Key::Iters => o.iters = parse_num(flag, val)?,
            Key::Warmup => o.warmup = parse_num(flag, val)?,
            Key::Check => o.check = parse_switch(flag, val)?,
            Key::Timeout => self.timeout_flag = Some(val.to_string()),
            Key::BuffSize => o.buffsize_mb = Some(parse_num(flag, val)?),
            Key::BlocksPerPeer => {
                let k = parse_num(flag, val)?;
                if !(1..=aiv_comm::plan::MAX_BLOCKS_PER_PEER as usize).contains(&k) {
                    return Err(format!(
                        "--blocks-per-peer takes 1..={}, got {k}",
                        aiv_comm::plan::MAX_BLOCKS_PER_PEER
                    ));
                }
                o.blocks_per_peer = Some(k as u32);
            }
            Key::Backend => o.backend = Some(val.parse().map_err(|e| format!("--backend: {e}"))?),
            Key::Algo => o.algo = Some(val.to_string()),
            Key::Register => o.register = parse_switch(flag, val)?,
            Key::Json => o.json = true,
            Key::TwinChecks => o.twin_checks = true,
            Key::ChecksCost => o.checks_cost = true,
        }
        Ok(())
    }

    /// The options, checked against each other and the environment (`env`), in a fixed order:
    /// the first problem found is the one reported.
    fn finish(self, env: impl Fn(&str) -> Option<String>) -> Result<Parsed, String> {
        let Draft {
            mut o,
            op_given,
            ranks_given,
            timeout_flag,
        } = self;
        let coll = o.coll;
        if let Some(v) = timeout_flag {
            o.timeout = Some(parse_exec_timeout(&v).ok_or_else(|| {
                format!("-T takes seconds 0..=1091 with at most two decimals, got `{v}`")
            })?);
            o.timeout_source = TimeoutSource::Flag;
        } else if let Some(v) = env("HCCL_EXEC_TIMEOUT") {
            o.timeout = Some(parse_exec_timeout(&v).ok_or_else(|| {
                format!(
                    "HCCL_EXEC_TIMEOUT takes seconds 0..=1091 with at most two decimals, got `{v}`"
                )
            })?);
            o.timeout_source = TimeoutSource::Env;
        }
        if o.factor.is_some() && o.step.is_some() {
            return Err("give either -f or -i, not both".into());
        }
        if o.factor == Some(0) || o.factor == Some(1) && o.begin != o.end {
            return Err("-f must be at least 2".into());
        }
        if o.step == Some(0) {
            return Err("-i must be positive".into());
        }
        if o.begin > o.end {
            return Err(format!("-b {} is larger than -e {}", o.begin, o.end));
        }
        let max = aiv_comm::world::MAX_RANKS;
        if o.ranks == 0 || o.ranks > max {
            return Err(format!("-p must be 1..={max}, got {}", o.ranks));
        }
        // Under a launcher the job's size is the launcher's; -p is NPUs per node (hccl_test).
        o.launch = LaunchEnv::from_vars(&env).map_err(|e| e.to_string())?;
        if let Some(l) = &o.launch {
            o.npus_per_node = ranks_given.then_some(o.ranks);
            o.ranks = l.world_size as usize;
            if o.checks_cost {
                return Err(
                    "--checks-cost switches every rank's checkers from one process: run it without a launcher (-p ranks in one process)"
                        .into(),
                );
            }
        }
        if o.ranks < coll.min_ranks {
            return Err(format!(
                "{} needs at least {} ranks, got -p {}",
                coll.name, coll.min_ranks, o.ranks
            ));
        }
        if o.root >= o.ranks {
            return Err(format!(
                "-r {} is not a rank of {} (0..={})",
                o.root,
                o.ranks,
                o.ranks - 1
            ));
        }
        if o.checks_cost && o.twin_checks {
            return Err(
                "--checks-cost times the checkers both off and on: drop --twin-checks".into(),
            );
        }
        let twin = ascendc_twin::TwinConfig::try_from_lookup(&env)?;
        if o.checks_cost && !twin.hazard_check && !twin.race_check {
            return Err(
                "--checks-cost: AIV_TWIN_HAZARDS=0 and AIV_TWIN_RACES=0 leave no checker to time"
                    .into(),
            );
        }
        if o.iters == 0 {
            return Err("-n must be at least 1".into());
        }
        if op_given && !coll.reduces {
            return Err(format!("{} does not reduce: -o does not apply", coll.name));
        }
        if let Some(a) = &o.algo {
            if coll.algos.is_none() {
                return Err(format!("--algo does not apply to {}", coll.name));
            }
            match coll.name {
                "all_reduce" => o.ar_algo = a.parse()?,
                "all_gather" => o.ag_algo = a.parse()?,
                _ => {
                    return Err(format!(
                        "{} lists kernels that aiv-perf cannot parse",
                        coll.name
                    ))
                }
            }
        }
        if coll.reduces && (o.dtype.reduce_code().is_none() || o.op.code().is_none()) {
            return Err(format!(
                "{} cannot reduce {} with {} on the device (types fp32 fp16 bf16 int32 int16 int8; ops sum max min)",
                coll.name, o.dtype, o.op
            ));
        }
        if sizes(&o).iter().all(|&s| row_count(&o, s) == 0) {
            return Err(format!(
                "no size in -b {} .. -e {} holds one {} element per rank for {} on {} ranks",
                o.begin, o.end, o.dtype, coll.name, o.ranks
            ));
        }
        if let Some(mb) = o.buffsize_mb {
            let fits = mb
                .checked_mul(1 << 20)
                .is_some_and(|b| (MIN_BUFFER_BYTES..=MAX_BUFFER_BYTES).contains(&b));
            if !fits {
                return Err(format!(
                    "--buffsize takes MB from 1 to {}, got {mb}",
                    MAX_BUFFER_BYTES >> 20
                ));
            }
        }
        let cfg = config(&o);
        cfg.buffer_bytes_with(&env).map_err(|e| e.to_string())?;
        cfg.timeout_with(&env).map_err(|e| e.to_string())?;
        cfg.deterministic_with(&env).map_err(|e| e.to_string())?;
        o.inject_wrong = match env("AIV_PERF_INJECT_WRONG").as_deref() {
            Some("1") => Some(Flip::First),
            Some("last") => Some(Flip::Last),
            _ => None,
        };
        Ok(Parsed::Run(Box::new(o)))
    }
}

/// Parses the command line (without the program name); `env` looks up environment variables.
pub fn parse(args: &[String], env: impl Fn(&str) -> Option<String>) -> Result<Parsed, String> {
    let args = normalize(args);
    let named = args.first().and_then(|a| find_collective(a));
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Parsed::Help(named.map_or_else(usage, collective_usage)));
    }
    let coll = match (args.first(), named) {
        (_, Some(c)) => c,
        (Some(flag), None) if flag.starts_with('-') => {
            return Err(format!(
            "the first argument must be the collective (one of: {}; aiv-perf --help), got `{flag}`",
            collective_names()
        ))
        }
        (Some(other), None) => {
            return Err(format!(
                "unknown collective `{other}` (one of: {}; aiv-perf --help)",
                collective_names()
            ))
        }
        (None, None) => {
            return Err(format!(
                "missing collective (one of: {}; aiv-perf --help)",
                collective_names()
            ))
        }
    };
    let mut draft = Draft {
        o: Opts::new(coll),
        op_given: false,
        ranks_given: false,
        timeout_flag: None,
    };
    let mut words = args[1..].iter().map(String::as_str);
    while let Some(flag) = words.next() {
        let key =
            Key::of(flag).ok_or_else(|| format!("unknown option `{flag}` (aiv-perf --help)"))?;
        let val = match key.takes_value() {
            true => words
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?,
            false => "",
        };
        draft.set(key, flag, val)?;
    }
    draft.finish(env)
}

/// The world's configuration for `o`.
pub fn config(o: &Opts) -> Config {
    Config {
        buffer_bytes: o.buffsize_mb.map(|mb| mb << 20),
        blocks_per_peer: o.blocks_per_peer,
        exec_timeout: o.timeout,
        cores: (o.ranks as u32).max(ascendc_twin::DEFAULT_CORES),
        backend: o.backend,
        ..Config::default() // HCCL_DETERMINISTIC
    }
}

/// The sizes of the sweep, before skipping.
pub fn sizes(o: &Opts) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = o.begin;
    loop {
        v.push(s);
        let next = match (o.step, o.factor) {
            (Some(step), _) => s.saturating_add(step),
            (None, f) => s.saturating_mul(f.unwrap_or(2)),
        };
        if next > o.end || next == s {
            break;
        }
        s = next;
    }
    v
}

/// Per-rank element count of a row of `size` bytes (0: the row is skipped).
pub fn row_count(o: &Opts, size: usize) -> usize {
    (o.coll.count)(size, o.dtype.size(), o.ranks)
}

/// The redop column: the op's name, or `none` for a collective that does not reduce.
pub fn redop(o: &Opts) -> &'static str {
    if o.coll.reduces {
        o.op.name()
    } else {
        "none"
    }
}

/// The root column: the root rank, or -1 for a collective without one.
pub fn root(o: &Opts) -> i64 {
    if o.coll.rooted {
        o.root as i64
    } else {
        -1
    }
}

/// The exec timeout in force and where it came from, for the header and timeout errors.
pub fn timeout_note(o: &Opts) -> String {
    let t = config(o)
        .resolved_timeout()
        .map_or_else(|e| e.to_string(), |t| format!("{:.2} s", t.as_secs_f64()));
    let from = match o.timeout_source {
        TimeoutSource::Flag => "-T",
        TimeoutSource::Env => "HCCL_EXEC_TIMEOUT",
        TimeoutSource::Default => "default",
    };
    format!("{t} ({from})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn opts(s: &str) -> Opts {
        match parse(&args(s), |_| None) {
            Ok(Parsed::Run(o)) => *o,
            Ok(Parsed::Help(_)) => panic!("{s}: help"),
            Err(e) => panic!("{s}: {e}"),
        }
    }

    #[test]
    fn sizes_take_k_m_g_and_kb_mb_gb_in_any_case() {
        for (s, v) in [
            ("1000", 1000),
            ("8b", 8),
            ("8K", 8 << 10),
            ("64KB", 64 << 10),
            ("64kb", 64 << 10),
            ("1m", 1 << 20),
            ("1MB", 1 << 20),
            ("1G", 1 << 30),
            ("2gB", 2 << 30),
        ] {
            assert_eq!(parse_size(s), Ok(v), "{s}");
        }
        for s in ["", "K", "KB", "10X", "1.5M", "-1", "8KK", "1BB"] {
            assert!(parse_size(s).is_err(), "{s}");
        }
    }

    #[test]
    fn exec_timeout_reads_as_hccl_aiv_mode() {
        let s = |x: &str| parse_exec_timeout(x).map(|d| d.as_millis());
        assert_eq!(s("30"), Some(30_000));
        assert_eq!(s("0.05"), Some(50));
        assert_eq!(s(".5"), Some(500));
        assert_eq!(s("1091"), Some(1_091_000));
        assert_eq!(s("0"), Some(1_091_000));
        assert_eq!(s("0.00"), Some(1_091_000));
        assert_eq!(s("1092"), Some(1_091_000));
        assert_eq!(s("99999999999999999999999"), Some(1_091_000));
        for bad in ["", ".", "-1", "0.005", "1e3", "abc", "1.2.3"] {
            assert_eq!(s(bad), None, "{bad}");
        }
    }

    #[test]
    fn flag_overrides_the_environment() {
        let bogus = |k: &str| (k == "HCCL_EXEC_TIMEOUT").then(|| "bogus".to_string());
        let Ok(Parsed::Run(o)) = parse(&args("all_reduce -T 2.5"), bogus) else {
            panic!("-T should win over a bad HCCL_EXEC_TIMEOUT")
        };
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(o.timeout_source, TimeoutSource::Flag);
        let seven = |k: &str| (k == "HCCL_EXEC_TIMEOUT").then(|| "7".to_string());
        let Ok(Parsed::Run(o)) = parse(&args("all_reduce"), seven) else {
            panic!("HCCL_EXEC_TIMEOUT=7")
        };
        assert_eq!(o.timeout, Some(Duration::from_secs(7)));
        assert_eq!(o.timeout_source, TimeoutSource::Env);
        assert!(parse(&args("all_reduce"), bogus).is_err());
    }

    #[test]
    fn getopt_forms_and_aliases() {
        let o = opts("all_reduce_perf -b8K --maxbytes=1M -g 4 -d bfp16");
        assert_eq!(
            (o.coll.name, o.begin, o.end, o.ranks),
            ("all_reduce", 8192, 1 << 20, 4)
        );
        assert_eq!(o.dtype, DataType::Bf16);
    }

    #[test]
    fn help_anywhere() {
        for s in [
            "-h",
            "--help",
            "all_reduce -b 10X -h",
            "bogus --help",
            "-p 0 -h",
        ] {
            assert!(
                matches!(parse(&args(s), |_| None), Ok(Parsed::Help(_))),
                "{s}"
            );
        }
        let Ok(Parsed::Help(t)) = parse(&args("sendrecv --help"), |_| None) else {
            panic!()
        };
        assert!(t.starts_with("aiv-perf sendrecv:"), "{t}");
        let Ok(Parsed::Help(t)) = parse(&args("alltoallv_perf -h"), |_| None) else {
            panic!()
        };
        assert!(t.contains("counts         rank p sends rank q"), "{t}");
        assert!(t.contains("count column   elements per peer"), "{t}");
        assert!(t.lines().all(|l| l.len() <= 100), "{t}");
    }

    #[test]
    fn count_semantics_follow_nccl_tests() {
        let o = opts("all_gather -p 3 -d int8 -b 1000 -e 1000");
        assert_eq!(row_count(&o, 1000), 333);
        let o = opts("all_reduce -p 3 -b 1000 -e 1000");
        assert_eq!(row_count(&o, 1000), 250);
        // (collective, count column, size column) of a 1000-byte int8 row on 3 ranks.
        for (name, count, size) in [
            ("all_gather", 333, 999),
            ("reduce_scatter", 333, 999),
            ("alltoall", 333, 999),
            ("alltoallv", 333, 999),
            ("all_gather_v", 333, 999),
            ("reduce_scatter_v", 333, 999),
            ("broadcast", 1000, 1000),
            ("sendrecv", 1000, 1000),
        ] {
            let o = opts(&format!("{name} -p 3 -d int8 -b 1000 -e 1000"));
            let c = row_count(&o, 1000);
            assert_eq!((c, (o.coll.size_elems)(c, 3)), (count, size), "{name}");
        }
    }

    /// Every refusal of the parser, in its own words (the binary prefixes `aiv-perf: ` and exits
    /// with status 2): the flag as it was spelt, the value as it was given.
    #[test]
    fn refusals_name_the_flag_as_spelt_and_the_value_as_given() {
        let names = "all_gather, all_reduce, reduce_scatter, broadcast, alltoall, alltoallv, \
                     all_gather_v, reduce_scatter_v, sendrecv";
        // (command line, environment, what the parser says)
        type Case = (
            &'static str,
            &'static [(&'static str, &'static str)],
            String,
        );
        let cases: &[Case] = &[
            (
                "",
                &[],
                format!("missing collective (one of: {names}; aiv-perf --help)"),
            ),
            (
                "reduce",
                &[],
                format!("unknown collective `reduce` (one of: {names}; aiv-perf --help)"),
            ),
            (
                "-b 8K",
                &[],
                format!(
                    "the first argument must be the collective (one of: {names}; aiv-perf \
                     --help), got `-b`"
                ),
            ),
            ("all_gather -f", &[], "-f needs a value".into()),
            (
                "all_reduce --stepfactor",
                &[],
                "--stepfactor needs a value".into(),
            ),
            (
                "all_reduce -g abc",
                &[],
                "-g needs a whole number, got `abc`".into(),
            ),
            (
                "all_reduce --ngpus=x",
                &[],
                "--ngpus needs a whole number, got `x`".into(),
            ),
            (
                "all_reduce -r -1",
                &[],
                "-r needs a whole number, got `-1`".into(),
            ),
            (
                "all_reduce --warmup_iters=-1",
                &[],
                "--warmup_iters needs a whole number, got `-1`".into(),
            ),
            ("all_gather -c 2", &[], "-c takes 0 or 1, got `2`".into()),
            (
                "all_reduce --register yes",
                &[],
                "--register takes 0 or 1, got `yes`".into(),
            ),
            (
                "all_reduce -c0 -c 3",
                &[],
                "-c takes 0 or 1, got `3`".into(),
            ),
            (
                "all_gather --nope",
                &[],
                "unknown option `--nope` (aiv-perf --help)".into(),
            ),
            (
                "all_reduce -xyz",
                &[],
                "unknown option `-xyz` (aiv-perf --help)".into(),
            ),
            (
                "all_reduce --json=1",
                &[],
                "unknown option `1` (aiv-perf --help)".into(),
            ),
            (
                "all_reduce foo",
                &[],
                "unknown option `foo` (aiv-perf --help)".into(),
            ),
            (
                "all_reduce --",
                &[],
                "unknown option `--` (aiv-perf --help)".into(),
            ),
            (
                "all_reduce -b=8K",
                &[],
                "bad size `=8K` (bytes, with an optional K, M, G or KB, MB, GB)".into(),
            ),
            (
                "all_reduce -b 99999999999999999999G",
                &[],
                "size `99999999999999999999G` is too large".into(),
            ),
            (
                "all_gather -f 2 -i 1K",
                &[],
                "give either -f or -i, not both".into(),
            ),
            ("all_gather -f 1", &[], "-f must be at least 2".into()),
            ("all_reduce -i 0", &[], "-i must be positive".into()),
            (
                "all_reduce --minbytes 1 --maxbytes 0",
                &[],
                "-b 1 is larger than -e 0".into(),
            ),
            (
                "all_reduce -p 4 -p 40",
                &[],
                "-p must be 1..=32, got 40".into(),
            ),
            (
                "sendrecv -p 1",
                &[],
                "sendrecv needs at least 2 ranks, got -p 1".into(),
            ),
            (
                "broadcast -p 3 -r 3",
                &[],
                "-r 3 is not a rank of 3 (0..=2)".into(),
            ),
            (
                "all_reduce --checks-cost --twin-checks",
                &[],
                "--checks-cost times the checkers both off and on: drop --twin-checks".into(),
            ),
            (
                "all_reduce --checks-cost",
                &[("AIV_TWIN_HAZARDS", "0"), ("AIV_TWIN_RACES", "0")],
                "--checks-cost: AIV_TWIN_HAZARDS=0 and AIV_TWIN_RACES=0 leave no checker to time"
                    .into(),
            ),
            (
                "all_reduce --checks-cost",
                &[
                    ("AIV_RANK", "0"),
                    ("AIV_WORLD_SIZE", "2"),
                    ("AIV_JOB_ID", "x"),
                ],
                "--checks-cost switches every rank's checkers from one process: run it without \
                 a launcher (-p ranks in one process)"
                    .into(),
            ),
            (
                "sendrecv -p 4",
                &[
                    ("AIV_RANK", "0"),
                    ("AIV_WORLD_SIZE", "1"),
                    ("AIV_JOB_ID", "x"),
                ],
                "sendrecv needs at least 2 ranks, got -p 1".into(),
            ),
            ("all_gather -n 0", &[], "-n must be at least 1".into()),
            (
                "all_gather -o sum",
                &[],
                "all_gather does not reduce: -o does not apply".into(),
            ),
            (
                "broadcast --algo x",
                &[],
                "--algo does not apply to broadcast".into(),
            ),
            (
                "all_reduce -o max -o prod",
                &[],
                "all_reduce cannot reduce float with prod on the device (types fp32 fp16 bf16 \
                 int32 int16 int8; ops sum max min)"
                    .into(),
            ),
            (
                "all_gather -b 4 -e 8 -p 4",
                &[],
                "no size in -b 4 .. -e 8 holds one float element per rank for all_gather on 4 \
                 ranks"
                    .into(),
            ),
            (
                "all_reduce --buffsize 0",
                &[],
                "--buffsize takes MB from 1 to 8796093022199, got 0".into(),
            ),
            (
                "all_reduce --blocks-per-peer 9",
                &[],
                "--blocks-per-peer takes 1..=8, got 9".into(),
            ),
            (
                "all_reduce -T 0.001",
                &[],
                "-T takes seconds 0..=1091 with at most two decimals, got `0.001`".into(),
            ),
            (
                "all_reduce",
                &[("HCCL_EXEC_TIMEOUT", "soon")],
                "HCCL_EXEC_TIMEOUT takes seconds 0..=1091 with at most two decimals, got `soon`"
                    .into(),
            ),
        ];
        for (line, vars, want) in cases {
            let env = |k: &str| {
                vars.iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| v.to_string())
            };
            match parse(&args(line), env) {
                Err(e) => assert_eq!(&e, want, "{line} {vars:?}"),
                Ok(_) => panic!("{line} {vars:?}: accepted"),
            }
        }
    }
}
