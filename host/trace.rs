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

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
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
