//! Progress on stderr for every command that can take more than a couple
//! of seconds: an indicatif bar on a terminal; a plain line every few
//! seconds when stderr is a file or a pod's log (`FLEETSIM_PROGRESS_EVERY_S`,
//! default 5); nothing with `--quiet`. Progress never touches stdout, so
//! `--json` output stays one document.
//!
//! A `Progress` counts work done (trials, simulations) through `inc` and
//! `set_position`, or follows a simulation's clock through the `AtomicU64`
//! the event loop publishes at its periodic check (`Sim::with_progress`):
//! a ticker thread reads it and prints the plain lines.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the ticker pulls a followed clock and checks for a due line.
const TICK: Duration = Duration::from_millis(100);

/// Set by `--quiet`: no bar, no lines.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences every progress display of this process (`--quiet`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// The plain lines' interval: `FLEETSIM_PROGRESS_EVERY_S` (0.1 to 3600
/// seconds), else 5 s.
fn every() -> Duration {
    std::env::var("FLEETSIM_PROGRESS_EVERY_S")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| (0.1..=3600.0).contains(s))
        .map_or(Duration::from_secs(5), Duration::from_secs_f64)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Quiet,
    Bar,
    Plain,
}

struct Shared {
    bar: ProgressBar,
    label: String,
    unit: &'static str,
    mode: Mode,
    start: Instant,
    last_line: Mutex<Instant>,
    every: Duration,
    /// A simulation's clock (microseconds) to follow, and its scale to the
    /// bar's units (seconds: 1e6).
    clock: Option<(Arc<AtomicU64>, u64)>,
    done: AtomicBool,
}

impl Shared {
    fn line(&self, last: &mut Instant, now: Instant, word: &str) {
        let (pos, len) = (self.bar.position(), self.bar.length().unwrap_or(0));
        let pct = if len > 0 {
            format!(" ({:.0}%)", 100.0 * pos as f64 / len as f64)
        } else {
            String::new()
        };
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let eta = if pos > 0 && len > pos && word.is_empty() {
            let rest = elapsed * (len - pos) as f64 / pos as f64;
            format!(", ETA {rest:.0} s")
        } else {
            String::new()
        };
        // A failed write to stderr loses a progress line, nothing else.
        let _ = writeln!(
            std::io::stderr(),
            "progress: {}: {word}{pos}/{len} {}{pct}, {elapsed:.1} s elapsed{eta}",
            self.label,
            self.unit
        );
        *last = now;
    }

    /// Pulls the followed clock and prints a plain line when one is due.
    fn tick(&self) {
        if let Some((clock, scale)) = &self.clock {
            let at = clock.load(Ordering::Relaxed) / scale;
            let len = self.bar.length().unwrap_or(at);
            self.bar.set_position(at.min(len));
        }
        if self.mode != Mode::Plain {
            return;
        }
        let now = Instant::now();
        let mut last = self.last_line.lock().unwrap_or_else(|p| p.into_inner());
        if now.duration_since(*last) >= self.every {
            self.line(&mut last, now, "");
        }
    }
}

/// One command's progress; clones share it (rayon workers may `inc`).
#[derive(Clone)]
pub struct Progress {
    shared: Arc<Shared>,
    ticker: Option<Arc<Ticker>>,
}

impl Progress {
    /// Progress over `len` `unit`s of work (trials, simulations).
    pub fn new(label: impl Into<String>, len: u64, unit: &'static str) -> Self {
        Self::build(label.into(), len, unit, None)
    }

    /// Progress of one simulation of `duration_s` simulated seconds, read
    /// from `clock` (microseconds, as `Sim::with_progress` publishes).
    pub fn clock(label: impl Into<String>, duration_s: u64, clock: Arc<AtomicU64>) -> Self {
        Self::build(
            label.into(),
            duration_s,
            "simulated s",
            Some((clock, 1_000_000)),
        )
    }

    fn build(
        label: String,
        len: u64,
        unit: &'static str,
        clock: Option<(Arc<AtomicU64>, u64)>,
    ) -> Self {
        let mode = if QUIET.load(Ordering::Relaxed) {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Plain
        };
        let bar = ProgressBar::with_draw_target(
            Some(len),
            if mode == Mode::Bar {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        let template = format!("{{prefix}} {{bar:40}} {{pos}}/{{len}} {unit}, ETA {{eta}}");
        bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
        bar.set_prefix(label.clone());
        let now = Instant::now();
        let shared = Arc::new(Shared {
            bar,
            label,
            unit,
            mode,
            start: now,
            last_line: Mutex::new(now),
            every: every(),
            clock,
            done: AtomicBool::new(false),
        });
        // A ticker only where something needs pulling or printing on time.
        let needs_ticker = mode != Mode::Quiet && (shared.clock.is_some() || mode == Mode::Plain);
        let ticker = needs_ticker
            .then(|| {
                let s = shared.clone();
                // No thread (the system refused one): no timed lines, no harm.
                std::thread::Builder::new()
                    .name("progress".into())
                    .spawn(move || {
                        // Parked, not asleep: `Ticker::stop` unparks it, so
                        // a finished command does not wait out the interval
                        // (a blind 100 ms sleep cost a short run ~50 ms of
                        // wall clock at its join, a quarter of a day's run).
                        let mut next = Instant::now() + TICK;
                        loop {
                            if s.done.load(Ordering::Acquire) {
                                break;
                            }
                            let now = Instant::now();
                            if now < next {
                                std::thread::park_timeout(next - now);
                                continue;
                            }
                            next = now + TICK;
                            s.tick();
                        }
                    })
                    .ok()
            })
            .flatten()
            .map(|h| {
                Arc::new(Ticker {
                    shared: shared.clone(),
                    handle: Mutex::new(Some(h)),
                })
            });
        Progress { shared, ticker }
    }

    /// Counts `n` more units done; a count past the announced total raises
    /// the total (an estimate that fell short is no 120%).
    pub fn inc(&self, n: u64) {
        let bar = &self.shared.bar;
        bar.inc(n);
        if bar.length().is_some_and(|len| bar.position() > len) {
            bar.set_length(bar.position());
        }
    }

    pub fn set_position(&self, pos: u64) {
        self.shared.bar.set_position(pos);
    }

    fn stop_ticker(&self) {
        self.shared.done.store(true, Ordering::Release);
        if let Some(t) = &self.ticker {
            t.stop();
        }
    }

    /// All done where the total announced was the most the work might take
    /// (a calibration's simulated windows): the total becomes the count
    /// done, so the last line does not claim the estimate.
    pub fn finish_counted(&self) {
        let bar = &self.shared.bar;
        bar.set_length(bar.position());
        self.finish();
    }

    /// All done: the bar is cleared; a plain display prints its last line,
    /// unless the work took less than one interval (a quick command's log
    /// stays free of progress).
    pub fn finish(&self) {
        self.stop_ticker();
        let s = &self.shared;
        match s.mode {
            Mode::Bar => s.bar.finish_and_clear(),
            Mode::Plain if s.start.elapsed() < s.every => {}
            Mode::Plain => {
                if let Some(len) = s.bar.length() {
                    s.bar.set_position(len);
                }
                let mut last = s.last_line.lock().unwrap_or_else(|p| p.into_inner());
                s.line(&mut last, Instant::now(), "done, ");
            }
            Mode::Quiet => {}
        }
    }

    /// Stopped before the end (Ctrl-C, an error): the bar stays as it was;
    /// a plain display says where it stopped.
    pub fn abandon(&self) {
        self.stop_ticker();
        let s = &self.shared;
        match s.mode {
            Mode::Bar => s.bar.abandon(),
            Mode::Plain => {
                let mut last = s.last_line.lock().unwrap_or_else(|p| p.into_inner());
                s.line(&mut last, Instant::now(), "stopped at ");
            }
            Mode::Quiet => {}
        }
    }
}

/// The ticker thread; the last clone of a `Progress` to go stops it, so an
/// early return (`?`) leaves no thread printing.
struct Ticker {
    shared: Arc<Shared>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Ticker {
    fn stop(&self) {
        self.shared.done.store(true, Ordering::Release);
        if let Some(h) = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop();
    }
}
