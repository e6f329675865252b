//! Writing to stdout: `out!`, which exits with status 1 when stdout is gone.

use std::io::Write;

/// Writes one line (`out!(...)`) or text as is (`out!("{text}")` with its own newlines) to
/// stdout; if stdout is gone (`aiv-perf ... | head`), exits with status 1 instead of
/// panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        if !line.ends_with('\n') {
            line.push('\n');
        }
        $crate::stdout::write_stdout(&line);
    }};
}

/// Writes `s` and flushes; exits with status 1 if stdout is gone (what `out!` calls).
pub fn write_stdout(s: &str) {
    let mut so = std::io::stdout().lock();
    if so.write_all(s.as_bytes()).and_then(|_| so.flush()).is_err() {
        std::process::exit(1);
    }
}
