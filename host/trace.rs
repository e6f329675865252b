//! Opt-in tracing of stream tasks: who ran what, on which stream, in which stage, when.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// One finished stream task.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Rank that ran it.
    pub rank: u32,
    /// Stream name.
    pub stream: String,
    /// Stage label given when it was enqueued (e.g. `pre-step`, `step 1`, `final`).
    pub stage: String,
    /// Task name (kernel or host step).
    pub task: String,
    /// Start, microseconds since the world was created.
    pub start_us: f64,
    /// End, microseconds since the world was created.
    pub end_us: f64,
}

/// The trace of a world.
pub(crate) struct Trace {
    enabled: AtomicBool,
    t0: Instant,
    events: Mutex<Vec<TraceEvent>>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            enabled: AtomicBool::new(false),
            t0: Instant::now(),
            events: Mutex::new(Vec::new()),
        }
    }
}

impl Trace {
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn now_us(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1e6
    }

    pub fn push(&self, e: TraceEvent) {
        self.events.lock().push(e);
    }

    pub fn events(&self) -> Vec<TraceEvent> {
        self.events.lock().clone()
    }
}

/// `s` as the contents of a JSON string: quotes, backslashes and every control character
/// escaped (RFC 8259, section 7).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// Chrome trace JSON ("X" complete events; pid = rank, tid = stream).
pub fn chrome_json(events: &[TraceEvent]) -> String {
    let items: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":{},\"tid\":\"{}\",\"args\":{{\"stage\":\"{}\"}}}}",
                escape(&e.task),
                escape(&e.stage),
                e.start_us,
                (e.end_us - e.start_us).max(0.0),
                e.rank,
                escape(&e.stream),
                escape(&e.stage)
            )
        })
        .collect();
    format!("{{\"traceEvents\":[{}]}}", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_quotes_backslashes_and_control_characters_stay_valid_json() {
        let nasty = "a\"b\\c\nd\te\u{1}f\u{1f}g\u{7f}h\u{e9}";
        let e = TraceEvent {
            rank: 1,
            stream: nasty.into(),
            stage: "stage \"x\"".into(),
            task: nasty.into(),
            start_us: 1.0,
            end_us: 2.5,
        };
        let json = chrome_json(&[e]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        let ev = &v["traceEvents"][0];
        assert_eq!(ev["name"], nasty);
        assert_eq!(ev["tid"], nasty);
        assert_eq!(ev["args"]["stage"], "stage \"x\"");
        assert_eq!(ev["dur"], 1.5);
    }
}
