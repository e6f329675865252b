//! `--help`: the options, and each collective's page from its entry of the table.

use crate::collectives::{Collective, COLLECTIVES};

/// The options, the columns, the JSON keys and the exit status: the end of every help page.
pub const OPTIONS: &str = "\
options:
  -b, --minbytes SIZE       smallest size (default 8K)
  -e, --maxbytes SIZE       largest size (default 64M)
  -f, --stepfactor N        multiply the size by N from row to row (default 2)
  -i, --stepbytes SIZE      add SIZE from row to row instead
  -d, --datatype TYPE       fp32 (default) fp16 bfp16 int32 int16 int8 uint8 uint16 uint32 int64
                            uint64 fp64; nccl-tests' (float half bfloat16 double ...) and Rust's
                            (f32 bf16 u16 ...) names too, any case
  -o, --op OP               sum (default) max min; reducing collectives only
  -r, --root RANK           root rank (broadcast), below the rank count (default 0);
                            collectives without a root check it, ignore it and print -1
  -p, --npus, -g, --ngpus N ranks (default 8, 1..=32; --ranks too)
  -n, --iters N             timed iterations per row and placement (default 20)
  -w, --warmup_iters N      warm-up iterations per row and placement (default 5)
  -c, --check 0|1           check every result against a host reference (default 1); the
                            inputs are written either way, so both time the same work
  -T, --timeout SECONDS     deadline of every device-side wait, as HCCL_EXEC_TIMEOUT in AIV mode:
                            0..=1091 with up to two decimals (0.05 = 50 ms); 0 or more than
                            1091 means 1091. Overrides HCCL_EXEC_TIMEOUT; with neither, the
                            library's default (120 s)
      --buffsize MB         HCCL buffer per rank (default HCCL_BUFFSIZE, else 200)
      --blocks-per-peer K   cores per peer of every launch, 1..=8 (default: by size,
                            aiv_comm::plan::BLOCKS_PER_PEER); one-shot all_reduce and
                            all_gather pull_parts run K blocks in all, one per part
  AIV_PERF_INJECT_WRONG=1   self-test of the check: rank 0 flips a byte of its result
                            as read back, so #wrong is 1 and the exit status 1
                            (=last: of its last element instead of its first)
      --algo ALGO           kernel: all_reduce auto (default) one_shot two_shot hd push;
                            all_gather auto (default: pull_parts) pull (staging + pull,
                            seed 000's) pull_parts (the same, a block per part) push
  -R, --register 0|1        1: every rank registers its send and recv buffers as window memory
                            (Communicator::register, as nccl-tests' -R registers its buffers):
                            all_gather and all_reduce (one-shot out of place, two-shot) then
                            read peers' inputs where they are instead of staged copies
                            (default 0)
      --twin-checks         keep the twin's pipe-hazard and GM race checkers on (off here so
                            that the figures measure the twin at full speed); AIV_TWIN_HAZARDS=0
                            or AIV_TWIN_RACES=0 still turns one off. The output says which were
                            on (the line Twin checkers; JSON: twin_checks)
      --checks-cost         what the checkers cost: every row runs its -n timed iterations
                            with the checkers off and -n more with them on (as --twin-checks
                            would), in alternating batches of one run (off, on, on, off, ...;
                            32 a side, or -n of one call each when -n is 32 or less), after
                            -w warm-up calls each way. The main figures are the unchecked
                            side's (timed batch by batch, so not quite a plain run's); two
                            more columns give the checked time per operation and on/off, the
                            median over adjacent off/on pairs of batches of their time ratio,
                            which a slow stretch of a shared machine or one descheduled batch
                            hardly moves (nor a cost the checkers pay in a few batches only:
                            compare checked_time_us / time_us, the sides' totals). Each batch
                            adds a stream synchronisation to both sides, which pulls on/off
                            toward 1 when calls are short: give small sizes a few hundred
                            calls a side. JSON: checked_time_us, checks_ratio, checks_pairs
                            (every pair's us per operation off and on), checked_batches (which
                            checkers ran); every run's JSON gives checked_launches, the timed
                            launches that ran with each checker on. Not with --twin-checks;
                            an error when AIV_TWIN_HAZARDS=0 and AIV_TWIN_RACES=0 leave
                            nothing to time
      --backend auto|twin|acl
                            the devices: the CPU twin, or NPUs through the ACL runtime
                            (libascendcl.so on the loader's path; acl-twin's runs the twin
                            behind it); auto (default; AIV_BACKEND) is ACL when a device
                            runtime (not acl-twin) loads with enough devices, else the twin.
                            The header names the backend (through ACL: the SoC and CANN
                            version the runtime reports); the twin's own figures (dmabw,
                            cores, census) print N/A through ACL
      --json                one JSON object on stdout instead of the table
  -h, --help                this help (anywhere on the command line)

SIZE is bytes with an optional K, M or G (x1024, x1024^2, x1024^3), also spelt KB, MB, GB,
in any case: 1000, 8K, 64KB, 1m, 1G. Rows whose size holds less than one element per rank are
skipped. Flags take their value as the next word, or attached: -b8K, --minbytes=8K.

Columns as nccl-tests: size count type redop root, then time algbw busbw #wrong out of place
and in place (N/A where a collective has no in-place form), then the twin's dmabw (GM bytes its
DMA read + wrote, / 2, per second, all ranks) out of place and in place, then two NPU figures
of the out-of-place loop, from the twin's per-core counters: cores (block indices, i.e. AIV
cores, whose DMA touched GM on a rank, the most of any rank; flag traffic counts, so a core
that only signals is used) and GMB/core (KiB of GM the busiest core of any rank read + wrote
per operation), then the twin's sync census of one more call with the same arguments (out of
place; untimed, after the timed ones): rdKiB and wrKiB (KiB of GM data memory the DMA of one
rank's kernels read / wrote in the call, the most of any rank; flag memory apart), waits (flag
waits of one rank, the most of any: poll loops, each a run of loads of one flag range) and
rounds (sync rounds on the critical path of a launch: the Lamport depth over flag stores and
loads, i.e. store -> wait hops of the longest chain, each launch starting at 0; an operation
of k chunks runs k such launches one after the other; ascendc-twin/src/census.rs defines them).
--json gives, per placement: cores_used, gm_read_per_rank and gm_written_per_rank (bytes per
operation of the rank that moved the most, flags included), max_core_bytes; from the census:
gm_data_read_per_rank, gm_data_written_per_rank, gm_flag_read_per_rank,
gm_flag_written_per_rank, flag_waits_per_rank, blocking_waits_per_rank (each the most of any
rank), sync_rounds, and census: one object per rank (gm_data_read, gm_data_written,
gm_flag_read, gm_flag_written, flag_loads, flag_stores, flag_waits, blocking_waits (waits that
raised the rank's depth), launches, blocks, depth).

Exit status: 0 ok, 1 wrong elements (or a failed run), 2 bad arguments.";

/// `aiv-perf --help`: every collective, then [`OPTIONS`].
pub fn usage() -> String {
    let mut s = String::from(
        "aiv-perf: nccl-tests / hccl_test style bandwidth sweep of aiv-comm's collectives on the CPU twin\n\n\
         usage: aiv-perf <collective> [options]\n       aiv-perf <collective> --help\n\ncollectives:\n",
    );
    for c in COLLECTIVES {
        s += &format!(
            "  {:<16} {} (also {})\n",
            c.name,
            c.about,
            c.aliases.join(", ")
        );
    }
    s += "\n";
    s += OPTIONS;
    s += "\n";
    s
}

/// `aiv-perf <collective> --help`: what its entry of the table says, then [`OPTIONS`].
pub fn collective_usage(c: &Collective) -> String {
    let mut s = format!(
        "aiv-perf {}: {}\n\nusage: aiv-perf {} [options]   (also: {})\n\n",
        c.name,
        c.about,
        c.name,
        c.aliases.join(", ")
    );
    s += &format!("  size (-b/-e)   {}\n", c.size_doc);
    s += &format!("  count column   {} (nccl-tests' count)\n", c.count_doc);
    if let Some(doc) = c.counts_doc {
        s += &format!("  counts         {}\n", wrap(doc, 17, 96));
    }
    s += &format!(
        "  busbw          algbw x {} (algbw = size / time)\n",
        c.busbw_doc
    );
    s += &format!(
        "  in place       {}\n",
        c.in_place
            .as_ref()
            .map_or("not run (the in-place columns print N/A)", |ip| ip.doc)
    );
    s += &format!(
        "  -o             {}\n",
        if c.reduces {
            "sum max min"
        } else {
            "refused (nothing is reduced; redop prints none)"
        }
    );
    s += &format!(
        "  -r             {}\n",
        if c.rooted {
            "the root rank"
        } else {
            "checked, then ignored (root prints -1)"
        }
    );
    if let Some(a) = c.algos {
        s += &format!("  --algo         {a}\n");
    }
    if c.min_ranks > 1 {
        s += &format!("  ranks          at least {}\n", c.min_ranks);
    }
    s += "\n";
    s += OPTIONS;
    s += "\n";
    s
}

/// `text` in lines of at most `width` characters, the second and later indented by `indent`.
pub fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut col = indent;
    for (k, word) in text.split_whitespace().enumerate() {
        if k > 0 && col + 1 + word.len() > width {
            out += "\n";
            out += &" ".repeat(indent);
            col = indent;
        } else if k > 0 {
            out.push(' ');
            col += 1;
        }
        out += word;
        col += word.len();
    }
    out
}
