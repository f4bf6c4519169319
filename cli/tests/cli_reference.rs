//! docs/reference/cli.md is every command's `--help`, as the CLI's argument definitions (clap)
//! render it: this test walks the command tree the binary reports (each "Commands:" list,
//! recursively), renders the page, and fails when the committed page differs.
//! Regenerate it with `CODEDB_BLESS=1 cargo test --release --test cli_reference`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::Command;

const REGENERATE: &str = "CODEDB_BLESS=1 cargo test --release --test cli_reference";
/// The width the page is wrapped at (clap's `wrap_help` reads `COLUMNS` off a terminal).
const COLUMNS: &str = "100";

fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/cli.md")
}

/// `codedb <path> --help`, in an empty environment: no variable a default is read from, or
/// that clap shows as `[env: …]`, changes the page.
fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(path)
        .arg("--help")
        .env_clear()
        .env("COLUMNS", COLUMNS)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "codedb {path:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands listed under "Commands:" (clap's own `help` aside).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with("  "))
        .filter(|l| l.as_bytes().get(2).is_some_and(|b| b.is_ascii_lowercase()))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect()
}

/// Every command path, depth first in the order `--help` lists them, with its help text.
fn walk(path: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let text = help(&path);
    let subs = subcommands(&text);
    out.push((path.clone(), text));
    for s in subs {
        let mut p = path.clone();
        p.push(s);
        walk(p, out);
    }
}

/// The anchor GitHub and mdBook give the heading "`codedb a b`": `codedb-a-b`.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn render() -> String {
    let mut commands = Vec::new();
    walk(Vec::new(), &mut commands);
    let mut page = String::from(
        "# Command-line reference\n\n\
         Every command of `codedb` with its `--help`, generated from the CLI's argument \
         definitions.\nDo not edit; regenerate with\n\
         `CODEDB_BLESS=1 cargo test --release --test cli_reference`\n\
         (the test fails when this page differs from what the CLI prints).\n\n",
    );
    for (path, _) in &commands {
        let title = std::iter::once("codedb")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let indent = "  ".repeat(path.len().saturating_sub(1));
        page.push_str(&format!("{indent}- [`{title}`](#{})\n", anchor(&title)));
    }
    for (path, text) in &commands {
        let title = std::iter::once("codedb")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!text.contains("```"), "{title}: help holds a code fence");
        page.push_str(&format!(
            "\n## `{title}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    }
    page
}

#[test]
fn committed_cli_reference_is_what_the_cli_generates() {
    let generated = render();
    let path = page_path();
    if std::env::var_os("CODEDB_BLESS").is_some_and(|v| v == "1") {
        let tmp = path.with_extension("md.tmp");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&tmp, &generated).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with `{REGENERATE}`", path.display()));
    if committed != generated {
        let (line, (old, new)) = committed
            .lines()
            .chain(std::iter::repeat(""))
            .zip(generated.lines().chain(std::iter::repeat("")))
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap();
        panic!(
            "{} is out of date with the CLI's definitions (first difference at line {}:\n  \
             committed: {old:?}\n  generated: {new:?}).\nRegenerate it with: {REGENERATE}",
            path.display(),
            line + 1
        );
    }
}

#[test]
fn cli_reference_has_every_command_and_option() {
    let page = render();
    let mut commands = Vec::new();
    walk(Vec::new(), &mut commands);
    assert!(commands.len() >= 18, "{}", commands.len());
    for (path, _) in &commands {
        let title = format!("## `codedb {}`", path.join(" "));
        let title = title.replace("codedb `", "codedb`");
        assert!(page.contains(&title), "{title} missing");
    }
    for needle in [
        "## `codedb search`",
        "--queries",
        "## `codedb bench scan`",
        "Exit codes:",
    ] {
        assert!(page.contains(needle), "{needle} missing");
    }
}

#[test]
fn subcommands_are_read_from_the_commands_list() {
    let text = "Usage: x\n\nCommands:\n  search  Searches\n  add-class  Adds\n  help  Print\n\nOptions:\n  -h\n";
    assert_eq!(subcommands(text), ["search", "add-class"]);
    assert!(subcommands("Usage: x\n\nOptions:\n  -h, --help\n").is_empty());
    assert_eq!(anchor("codedb add-class"), "codedb-add-class");
}
