//! The `codedb` admin CLI: a thin layer over the library, one file per command group in
//! `cmd/`.
//!
//! Exit codes: 0 success; 1 the file or index has a problem, or the operation failed;
//! 2 usage error (bad arguments); 141 standard output closed by its reader (see `out`).

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

mod args;
mod cmd;
mod inputs;
mod out;
mod progress;

use cmd::{
    bench, build, classes, columns, compact_gc, demo, eval, eval_args, inspect_verify, rows,
    search, search_examples, search_text, spec, train, versions,
};
use out::errln;

const EXIT_CODES: &str = "\
Exit codes:
  0    success (verify: no problem found)
  1    the file or index has a problem, or the operation failed
  2    usage error (unknown command, bad or missing argument, arguments that do
       not go together)
  141  standard output was closed by its reader (`codedb … | head`): the
       status of a process killed by SIGPIPE; nothing more is printed";

#[derive(Parser)]
#[command(
    name = "codedb",
    version,
    about = "Embedded index database for compact image codes: train models, build, search, compact, inspect and verify indexes.",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Inspect(inspect_verify::InspectArgs),
    Demo(demo::DemoArgs),
    Train(train::TrainArgs),
    Build(build::BuildArgs),
    Add(rows::AddArgs),
    Delete(rows::DeleteArgs),
    Compact(compact_gc::CompactArgs),
    Gc(compact_gc::GcArgs),
    Versions(versions::VersionsArgs),
    Recover(versions::RecoverArgs),
    Classes(classes::ClassesArgs),
    Search(search::SearchArgs),
    AddClass(classes::AddClassArgs),
    AddColumn(columns::AddColumnArgs),
    Classify(classes::ClassifyArgs),
    Eval(eval_args::EvalArgs),
    /// Benchmarks (numbers, not pass/fail).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    Verify(inspect_verify::VerifyArgs),
    Spec(spec::SpecArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version on a pipe go through `out` (a closed pipe exits 141 like every
        // other output); on a terminal, and usage errors, clap prints them (exit 0 or 2).
        Err(e) if !e.use_stderr() && !std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            out::bytes(e.render().to_string().as_bytes());
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let result = run(cli.command);
    match result {
        Ok(code) => code,
        Err(e) if e.chain().any(|c| c.is::<args::UsageError>()) => {
            errln!("codedb: usage error: {}", error_chain(&e));
            ExitCode::from(2)
        }
        // A call stopped through its cancel token exits like a process stopped by Ctrl-C
        // (128 + SIGINT), which is what the CLI does on Ctrl-C: the default signal action ends
        // it, and the index's crash safety leaves it at its last committed version.
        Err(e) if is_cancelled(&e) => {
            errln!("codedb: cancelled");
            ExitCode::from(130)
        }
        Err(e) => {
            errln!("codedb: error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// Whether the engine stopped the call through its cancel token (any room's form of it).
fn is_cancelled(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<codedb::Error>()
            .is_some_and(codedb::Error::is_cancelled)
            || c.downcast_ref::<codedb::ModelError>()
                .is_some_and(|m| matches!(m, codedb::ModelError::Cancelled))
            || c.downcast_ref::<codedb::StorageError>()
                .is_some_and(codedb::StorageError::is_cancelled)
            || c.downcast_ref::<codedb::SearchError>()
                .is_some_and(codedb::SearchError::is_cancelled)
    })
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Inspect(a) => inspect_verify::inspect(a),
        Command::Demo(a) => demo::run(a),
        Command::Train(a) => train::run(a),
        Command::Build(a) => build::run(a),
        Command::Add(a) => rows::add(a),
        Command::Delete(a) => rows::delete(a),
        Command::Compact(a) => compact_gc::compact(a),
        Command::Gc(a) => compact_gc::gc(a),
        Command::Versions(a) => versions::versions(a),
        Command::Recover(a) => versions::recover(a),
        Command::Classes(a) => classes::classes(a),
        Command::Search(a) if a.asks_text() => search_text::run(a),
        Command::Search(a) if a.asks_examples() => search_examples::run(a),
        Command::Search(a) => search::run(a),
        Command::AddClass(a) => classes::add_class(a),
        Command::AddColumn(a) => columns::add_column(a),
        Command::Classify(a) => classes::classify(a),
        Command::Eval(a) => eval::run(a),
        Command::Bench(c) => bench::run(c),
        Command::Verify(a) => inspect_verify::verify(a),
        Command::Spec(a) => spec::run(a),
    }
}

/// The error and its causes joined by ": ", skipping a cause whose text the message before it
/// already ends with (the library's errors print their source themselves).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every command (clap's own --help and --version aside) has a help
    /// line, and clap's consistency checks hold.
    #[test]
    fn every_argument_has_help() {
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in c.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&cmd, "codedb", &mut missing);
        assert!(missing.is_empty(), "no help: {missing:?}");
    }
}
