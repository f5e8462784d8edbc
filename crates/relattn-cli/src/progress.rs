//! The progress line of long commands.

/// A progress line on stderr for work that takes more than [`Progress::QUIET`]: "sampling: 1200 of 65536
/// tokens (3 s)", at most once a second, rewritten in place on a terminal and one line each otherwise.
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    total: usize,
    start: std::time::Instant,
    last: Option<std::time::Instant>,
    terminal: bool,
}

impl Progress {
    /// Quiet for this long: quick commands print nothing on stderr.
    const QUIET: std::time::Duration = std::time::Duration::from_secs(2);

    pub fn new(what: &'static str, unit: &'static str, total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress { what, unit, total, start: std::time::Instant::now(), last: None, terminal: std::io::stderr().is_terminal() }
    }

    pub fn tick(&mut self, done: usize) {
        let now = std::time::Instant::now();
        if now - self.start < Self::QUIET || self.last.is_some_and(|t| now - t < std::time::Duration::from_secs(1)) {
            return;
        }
        self.last = Some(now);
        let line = format!("{}: {done} of {} {} ({} s)", self.what, self.total, self.unit, (now - self.start).as_secs());
        if self.terminal {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    /// Ends a line rewritten in place.
    pub fn finish(&mut self) {
        if self.terminal && self.last.is_some() {
            eprintln!();
        }
    }
}
