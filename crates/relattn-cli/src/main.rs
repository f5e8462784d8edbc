//! `relattn`: compute relative attention, save every intermediate, render any stage for a slide.
//! Errors print one line naming the field, what was given and what is allowed, and exit with code 2.
//!
//! [`args`] holds the commands and their flags; one module a command ([`compute`], [`render`], [`picture`],
//! [`bench`], [`model`], [`atlas`]); [`layer_args`] turns a layer's flags into its scenario; [`files`] reads inputs and writes outputs
//! atomically; [`progress`] and [`report`] are what long and `--json` commands print.

mod args;
mod atlas;
mod bench;
mod compute;
mod files;
mod layer_args;
mod model;
mod picture;
mod progress;
mod render;
mod report;

use args::{AtlasCommand, Cli, Command};
use clap::Parser;
use relattn::layer::presets;
use relattn::Error;
use std::io::Write;
use std::process::ExitCode;

/// Why a command stopped early: an error to report (exit code 2), Ctrl-C (what was done and left undone;
/// exit code 130, as a shell reports SIGINT), or stdout closed by its reader (`| head`), which ends quietly.
enum Stop {
    Failed(Error),
    Interrupted(String),
    StdoutClosed,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// Prints one line on stdout: a closed pipe stops the command quietly, any other failure (a full disk,
/// /dev/full) is an error.
fn say(line: impl std::fmt::Display) -> Result<(), Stop> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| match e.kind() {
        std::io::ErrorKind::BrokenPipe => Stop::StdoutClosed,
        _ => Stop::Failed(Error::Write { path: "stdout".into(), reason: e.to_string() }),
    })
}

fn run(cli: Cli) -> Result<(), Stop> {
    let start = std::time::Instant::now();
    match cli.command {
        Command::Bench { layer, reps, threads, backend, save_output, stages } => {
            say(bench::run(&layer, reps, threads, &backend, save_output.as_deref(), stages)?)?;
        }
        Command::Model { command } => model::run(command)?,
        Command::Atlas { command: AtlasCommand::Render(args) } => atlas::render(&args)?,
        Command::Presets => {
            for name in presets::NAMES {
                say(format!("{name:14} {}", presets::preset(name)?.description))?;
            }
        }
        Command::Compute { layer, out, json } => compute::run(&layer, &out, json, start)?,
        Command::Picture { layer, name, size, out } => picture::run(&layer, &name, &size, &out)?,
        Command::Render { layer, stage, head, batch_index, tokens, size, out, json } => {
            // Negative indices are refused here; the upper bounds are the layer's (checked once it is built).
            let index = |field: &str, v: i64| relattn::error::in_range(field, v, 0..=usize::MAX, "0-based; below the layer's count");
            let (batch, head) = (index("batch index", batch_index)?, index("head", head)?);
            let what = render::Drawn { stage, batch, head, tokens: tokens.as_deref(), size: &size };
            render::run(&layer, what, &out, json, start)?
        }
    }
    Ok(())
}

/// clap's usage error as one line: its message and any tip, without the usage block and the pointer to --help
/// ("error: invalid value '70000' for '--steps <STEPS>': 70000 is not in 0..=65536").
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")).collect();
    parts.join(" ")
}

fn main() -> ExitCode {
    files::handle_ctrl_c();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version, and the help shown for a command given without its subcommand.
        Err(e) if !e.use_stderr() || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) | Err(Stop::StdoutClosed) => ExitCode::SUCCESS,
        Err(Stop::Failed(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Stop::Interrupted(why)) => {
            eprintln!("error: {why}");
            ExitCode::from(130)
        }
    }
}
