//! aiv-perf: hccl_test / nccl-tests style bandwidth sweep of aiv-comm's collectives on the CPU
//! twin (or, with the `npu` feature, the device).
//!
//! ```text
//! aiv-perf <all_gather|all_reduce> [-b 8K] [-e 64M] [-f 2 | -i STEP] [-d fp32] [-o sum]
//!          [-p RANKS] [-n ITERS] [-w WARMUP] [-c 0|1] [--buffsize MB] [--algo auto|one_shot|two_shot|hd]
//!          [--twin-checks] [--json]
//!
//! `--twin-checks` keeps the twin's pipe-hazard and GM race checkers on (off by default here, so
//! that the figures measure the twin at full speed; they are on by default in the library).
//! ```
//!
//! Sizes follow nccl-tests: for all_gather the whole gathered output (per-rank input x ranks),
//! for all_reduce the buffer; both rounded down to whole elements. busbw = algbw x (n-1)/n for
//! all_gather and x 2(n-1)/n for all_reduce. dmabw is what the kernels' DMA moved on the twin,
//! all ranks together, as copy bandwidth: (GM bytes read + GM bytes written) / 2 per second, the
//! unit in which memcpy bandwidth is quoted (`ascendc_sys::Twin::gm_traffic`). Exits 1 if any element
//! is wrong, 2 on bad arguments.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use aiv_comm::{AllReduceAlgo, Communicator, Config, DataType, DeviceBuffer, ReduceOp, World};
use half::{bf16, f16};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Coll {
    AllGather,
    AllReduce,
}

#[derive(Debug)]
struct Opts {
    coll: Coll,
    begin: usize,
    end: usize,
    factor: Option<usize>,
    step: Option<usize>,
    dtype: DataType,
    op: ReduceOp,
    ranks: usize,
    iters: usize,
    warmup: usize,
    check: bool,
    buffsize_mb: Option<usize>,
    algo: AllReduceAlgo,
    json: bool,
    twin_checks: bool,
}

const USAGE: &str = "usage: aiv-perf <all_gather|all_reduce> [-b 8K] [-e 64M] [-f 2 | -i STEP] [-d fp32|fp16|bf16|int32|int16|int8|uint8|int64|uint64|fp64] [-o sum|max|min] [-p RANKS] [-n ITERS] [-w WARMUP] [-c 0|1] [--buffsize MB] [--algo auto|one_shot|two_shot|hd] [--twin-checks] [--json]";

fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K') | Some('k') => (&s[..s.len() - 1], 1usize << 10),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("bad size `{s}` (a number with an optional K, M or G)"))
}

fn parse_num(flag: &str, s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .map_err(|_| format!("{flag} needs a whole number, got `{s}`"))
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let coll = match args.first().map(String::as_str) {
        Some("all_gather") | Some("allgather") => Coll::AllGather,
        Some("all_reduce") | Some("allreduce") => Coll::AllReduce,
        Some(other) => {
            return Err(format!(
                "unknown collective `{other}` (all_gather or all_reduce)"
            ))
        }
        None => return Err("missing collective (all_gather or all_reduce)".into()),
    };
    let mut o = Opts {
        coll,
        begin: 8 << 10,
        end: 64 << 20,
        factor: None,
        step: None,
        dtype: DataType::F32,
        op: ReduceOp::Sum,
        ranks: 8,
        iters: 20,
        warmup: 5,
        check: true,
        buffsize_mb: None,
        algo: AllReduceAlgo::Auto,
        json: false,
        twin_checks: false,
    };
    let mut i = 1;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--json" {
            o.json = true;
            i += 1;
            continue;
        }
        if flag == "--twin-checks" {
            o.twin_checks = true;
            i += 1;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        let val = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        match flag {
            "-b" | "--minbytes" => o.begin = parse_size(val)?,
            "-e" | "--maxbytes" => o.end = parse_size(val)?,
            "-f" | "--stepfactor" => o.factor = Some(parse_num(flag, val)?),
            "-i" | "--stepbytes" => o.step = Some(parse_size(val)?),
            "-d" | "--datatype" => o.dtype = val.parse()?,
            "-o" | "--op" => o.op = val.parse()?,
            "-p" | "--ranks" | "--npus" => o.ranks = parse_num(flag, val)?,
            "-n" | "--iters" => o.iters = parse_num(flag, val)?,
            "-w" | "--warmup_iters" => o.warmup = parse_num(flag, val)?,
            "-c" | "--check" => {
                o.check = match val {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("-c takes 0 or 1, got `{val}`")),
                }
            }
            "--buffsize" => o.buffsize_mb = Some(parse_num(flag, val)?),
            "--algo" => o.algo = val.parse()?,
            _ => return Err(format!("unknown option `{flag}`\n{USAGE}")),
        }
        i += 2;
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
    if o.ranks == 0 || o.ranks > aiv_comm::world::MAX_RANKS {
        return Err(format!("-p must be 1..={}", aiv_comm::world::MAX_RANKS));
    }
    if o.iters == 0 {
        return Err("-n must be at least 1".into());
    }
    if o.coll == Coll::AllReduce && (o.dtype.reduce_code().is_none() || o.op.code().is_none()) {
        return Err(format!(
            "all_reduce cannot reduce {} with {} on the device (types fp32 fp16 bf16 int32 int16 int8; ops sum max min)",
            o.dtype, o.op
        ));
    }
    Ok(o)
}

fn sizes(o: &Opts) -> Vec<usize> {
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

/// Elements per rank for a row of `size` bytes.
fn per_rank_count(o: &Opts, size: usize) -> usize {
    let es = o.dtype.size();
    match o.coll {
        Coll::AllGather => size / (es * o.ranks),
        Coll::AllReduce => size / es,
    }
}

/// Check data: small integers, exact in every type for any reduction order.
fn check_value(r: usize, i: usize) -> f64 {
    ((r * 3 + i * 7) % 8) as f64
}

fn encode(dtype: DataType, v: f64, out: &mut Vec<u8>) {
    match dtype {
        DataType::F32 => out.extend((v as f32).to_le_bytes()),
        DataType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
        DataType::Bf16 => out.extend(bf16::from_f64(v).to_le_bytes()),
        DataType::I32 => out.extend((v as i32).to_le_bytes()),
        DataType::I16 => out.extend((v as i16).to_le_bytes()),
        DataType::I8 => out.extend((v as i8).to_le_bytes()),
        DataType::U8 => out.extend((v as u8).to_le_bytes()),
        DataType::I64 => out.extend((v as i64).to_le_bytes()),
        DataType::U64 => out.extend((v as u64).to_le_bytes()),
        DataType::F64 => out.extend(v.to_le_bytes()),
        DataType::U16 => out.extend((v as u16).to_le_bytes()),
        DataType::U32 => out.extend((v as u32).to_le_bytes()),
    }
}

fn input_bytes(dtype: DataType, rank: usize, count: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(count * dtype.size());
    for i in 0..count {
        encode(dtype, check_value(rank, i), &mut v);
    }
    v
}

fn expected(o: &Opts, count: usize) -> Vec<u8> {
    let mut v = Vec::new();
    match o.coll {
        Coll::AllGather => {
            for r in 0..o.ranks {
                v.extend(input_bytes(o.dtype, r, count));
            }
        }
        Coll::AllReduce => {
            for i in 0..count {
                let vals = (0..o.ranks).map(|r| check_value(r, i));
                let x = match o.op {
                    ReduceOp::Sum => vals.sum(),
                    ReduceOp::Max => vals.fold(f64::MIN, f64::max),
                    _ => vals.fold(f64::MAX, f64::min),
                };
                encode(o.dtype, x, &mut v);
            }
        }
    }
    v
}

struct RankBufs {
    send: DeviceBuffer,
    recv: DeviceBuffer,
}

fn issue(o: &Opts, comm: &Communicator, b: &RankBufs, count: usize) -> aiv_comm::Result<()> {
    let es = o.dtype.size();
    match o.coll {
        Coll::AllGather => comm.all_gather(
            &b.send.view(0, count * es)?,
            &b.recv.view(0, count * es * o.ranks)?,
            count,
            o.dtype,
        ),
        Coll::AllReduce => comm.all_reduce_with(
            &b.send.view(0, count * es)?,
            &b.recv.view(0, count * es)?,
            count,
            o.dtype,
            o.op,
            o.algo,
        ),
    }
}

struct Row {
    size: usize,
    count: usize,
    time_us: f64,
    algbw: f64,
    busbw: f64,
    /// GM bytes the kernels' DMA read plus wrote, per operation (all ranks).
    dma_per_op: f64,
    /// Those bytes as copy bandwidth: (read + written) / 2 per second, all ranks together.
    dmabw: f64,
    wrong: usize,
}

fn run(o: &Opts) -> Result<Vec<Row>, String> {
    let cfg = Config {
        buffer_bytes: o.buffsize_mb.map(|mb| mb << 20),
        cores: (o.ranks as u32).max(ascendc_sys::DEFAULT_CORES),
        ..Config::default()
    };
    let world = World::sim_with(o.ranks, cfg).map_err(|e| e.to_string())?;
    // A bandwidth run measures the twin at full speed; its pipe-hazard and GM race checkers
    // (on by default in the library, for development and tests) are opt-in here.
    world.twin().set_hazard_check(o.twin_checks);
    world.twin().set_race_check(o.twin_checks);
    let es = o.dtype.size();
    let max_count = per_rank_count(o, o.end);
    let bufs: Vec<RankBufs> = world
        .comms()
        .iter()
        .map(|c| -> aiv_comm::Result<RankBufs> {
            let recv_len = match o.coll {
                Coll::AllGather => max_count * es * o.ranks,
                Coll::AllReduce => max_count * es,
            };
            Ok(RankBufs {
                send: c.alloc(max_count * es)?,
                recv: c.alloc(recv_len)?,
            })
        })
        .collect::<aiv_comm::Result<_>>()
        .map_err(|e| e.to_string())?;
    let factor = match o.coll {
        Coll::AllGather => (o.ranks as f64 - 1.0) / o.ranks as f64,
        Coll::AllReduce => 2.0 * (o.ranks as f64 - 1.0) / o.ranks as f64,
    };
    let list = sizes(o);
    let t_start = Instant::now();
    let mut rows = Vec::new();
    for (k, &size) in list.iter().enumerate() {
        let count = per_rank_count(o, size);
        let size = match o.coll {
            Coll::AllGather => count * es * o.ranks,
            Coll::AllReduce => count * es,
        };
        let barrier = Barrier::new(o.ranks);
        let results = world.run(|comm| -> aiv_comm::Result<(Duration, usize, u64)> {
            let r = comm.rank() as usize;
            let b = &bufs[r];
            if o.check {
                b.send.write(0, &input_bytes(o.dtype, r, count))?;
            }
            for _ in 0..o.warmup {
                issue(o, comm, b, count)?;
            }
            comm.synchronize()?;
            // Every rank's warm-up has finished (and moved its last byte) before rank 0 reads
            // the twin's DMA counters; nobody starts before that reading.
            barrier.wait();
            let dma0 = world.twin().gm_traffic();
            barrier.wait();
            let t0 = Instant::now();
            for _ in 0..o.iters {
                issue(o, comm, b, count)?;
            }
            comm.synchronize()?;
            barrier.wait();
            let dt = t0.elapsed();
            let dma1 = world.twin().gm_traffic();
            let dma = (dma1.read - dma0.read) + (dma1.written - dma0.written);
            let mut wrong = 0;
            if o.check {
                // The timed iterations left their result in recv; AllReduce in place would
                // accumulate, so check the out-of-place result of the last iteration.
                let want = expected(o, count);
                let mut got = vec![0u8; want.len()];
                b.recv.read(0, &mut got)?;
                wrong = got
                    .chunks(es)
                    .zip(want.chunks(es))
                    .filter(|(g, w)| g != w)
                    .count();
            }
            Ok((dt, wrong, dma))
        });
        let mut time = Duration::ZERO;
        let mut wrong = 0;
        let mut dma_bytes = 0;
        for (r, res) in results.into_iter().enumerate() {
            let (dt, w, dma) = res.map_err(|e| format!("rank {r}: {e}"))?;
            time = time.max(dt);
            wrong += w;
            if r == 0 {
                dma_bytes = dma;
            }
        }
        let time_us = time.as_secs_f64() * 1e6 / o.iters as f64;
        let algbw = if time_us > 0.0 {
            size as f64 / time_us / 1e3
        } else {
            0.0
        };
        let dma_per_op = dma_bytes as f64 / o.iters as f64;
        let row = Row {
            size,
            count: size / es,
            time_us,
            algbw,
            busbw: algbw * factor,
            dma_per_op,
            dmabw: if time_us > 0.0 {
                dma_per_op / 2.0 / time_us / 1e3
            } else {
                0.0
            },
            wrong,
        };
        if !o.json {
            print_row(o, &row);
        }
        rows.push(row);
        if t_start.elapsed() > Duration::from_secs(1) {
            eprint!(
                "\raiv-perf: {}/{} sizes done, {:.1} s elapsed   ",
                k + 1,
                list.len(),
                t_start.elapsed().as_secs_f64()
            );
            let _ = std::io::stderr().flush();
        }
    }
    if t_start.elapsed() > Duration::from_secs(1) {
        eprintln!();
    }
    Ok(rows)
}

fn print_header(o: &Opts) {
    println!(
        "# aiv-perf {} on the CPU twin: {} ranks, {} iterations ({} warm-up), check {}",
        match o.coll {
            Coll::AllGather => "all_gather",
            Coll::AllReduce => "all_reduce",
        },
        o.ranks,
        o.iters,
        o.warmup,
        if o.check { "on" } else { "off" }
    );
    println!(
        "#{:>13} {:>12} {:>9} {:>6} {:>10} {:>8} {:>8} {:>7} {:>8}",
        "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "dmabw"
    );
    println!(
        "#{:>13} {:>12} {:>9} {:>6} {:>10} {:>8} {:>8} {:>7} {:>8}",
        "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(GB/s)"
    );
}

fn redop(o: &Opts) -> &'static str {
    match o.coll {
        Coll::AllGather => "none",
        Coll::AllReduce => o.op.name(),
    }
}

fn print_row(o: &Opts, r: &Row) {
    println!(
        "{:>14} {:>12} {:>9} {:>6} {:>10.2} {:>8.2} {:>8.2} {:>7} {:>8.2}",
        r.size,
        r.count,
        o.dtype.name(),
        redop(o),
        r.time_us,
        r.algbw,
        r.busbw,
        if o.check {
            r.wrong.to_string()
        } else {
            "N/A".into()
        },
        r.dmabw
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(2);
        }
    };
    if !o.json {
        print_header(&o);
    }
    let rows = match run(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(1);
        }
    };
    let avg = rows.iter().map(|r| r.busbw).sum::<f64>() / rows.len().max(1) as f64;
    let wrong: usize = rows.iter().map(|r| r.wrong).sum();
    if o.json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"size\":{},\"count\":{},\"type\":\"{}\",\"redop\":\"{}\",\"time_us\":{:.3},\"algbw\":{:.4},\"busbw\":{:.4},\"dma_bytes_per_op\":{:.0},\"dmabw\":{:.4},\"wrong\":{}}}",
                    r.size,
                    r.count,
                    o.dtype.name(),
                    redop(&o),
                    r.time_us,
                    r.algbw,
                    r.busbw,
                    r.dma_per_op,
                    r.dmabw,
                    if o.check { r.wrong as i64 } else { -1 }
                )
            })
            .collect();
        println!(
            "{{\"collective\":\"{}\",\"ranks\":{},\"rows\":[{}],\"avg_busbw\":{:.4},\"wrong\":{}}}",
            match o.coll {
                Coll::AllGather => "all_gather",
                Coll::AllReduce => "all_reduce",
            },
            o.ranks,
            items.join(","),
            avg,
            wrong
        );
    } else {
        println!(
            "# Out of bounds values : {wrong} {}",
            if wrong == 0 { "OK" } else { "FAILED" }
        );
        println!("# Avg bus bandwidth    : {avg:.4}");
    }
    if wrong > 0 {
        eprintln!("aiv-perf: {wrong} wrong elements");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
