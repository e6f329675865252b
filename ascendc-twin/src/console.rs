//! Kernel console output: `AscendC::printf` / `PRINTF`, `DumpTensor`, failed asserts.
//!
//! On the NPU, printf output goes to a GM buffer and the host prints it, each line prefixed
//! `[AIV Block b/n] `. The twin prints each call's text as it happens, every line prefixed with
//! the rank too (`[rank r] [AIV Block b/n] `), so lines of many ranks stay attributable. A twin
//! can capture the lines instead of printing them ([`crate::Twin::capture_output`]), for tests.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// The console of one twin.
#[derive(Default)]
pub(crate) struct Console {
    capture: AtomicBool,
    lines: Mutex<Vec<String>>,
}

impl Console {
    /// Starts or stops capturing.
    pub fn set_capture(&self, on: bool) {
        self.capture.store(on, Ordering::Relaxed);
    }

    /// The captured lines so far (and forgets them).
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock())
    }

    /// Prints `text` of block `block`/`blocks` on `rank`, each line prefixed.
    pub fn print(&self, rank: u32, block: u32, blocks: u32, text: &str) {
        let prefix = format!("[rank {rank}] [AIV Block {block}/{blocks}] ");
        let body = text.strip_suffix('\n').unwrap_or(text);
        let lines: Vec<String> = body.split('\n').map(|l| format!("{prefix}{l}")).collect();
        if self.capture.load(Ordering::Relaxed) {
            self.lines.lock().extend(lines);
            return;
        }
        let out = std::io::stdout();
        let mut out = out.lock();
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_prefixed_with_rank_and_block() {
        let c = Console::default();
        c.set_capture(true);
        c.print(2, 3, 8, "a=1\nb=2\n");
        c.print(0, 0, 1, "no newline");
        assert_eq!(
            c.take(),
            [
                "[rank 2] [AIV Block 3/8] a=1",
                "[rank 2] [AIV Block 3/8] b=2",
                "[rank 0] [AIV Block 0/1] no newline"
            ]
        );
        assert!(c.take().is_empty());
    }
}
