//! `--help` of every command: examples on one line each at 80 and 200 columns (copy-paste
//! works), every command has examples, every option and argument a description. (The walk
//! over clap's own command tree is the binary's unit test `every_argument_has_help`.)
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;
use cli_support::codedb_env;

fn help(cmd: &[&str], columns: &str) -> String {
    let args: Vec<&str> = cmd.iter().copied().chain(["--help"]).collect();
    let out = codedb_env(&args, &[("COLUMNS", columns)]);
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The names listed under "Commands:" (without `help`).
fn commands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.as_bytes().get(2).is_some_and(|b| b.is_ascii_lowercase()))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect()
}

fn every_command() -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for c in commands(&help(&[], "200")) {
        let sub = commands(&help(&[&c], "200"));
        if sub.is_empty() {
            all.push(vec![c]);
        } else {
            all.extend(sub.into_iter().map(|s| vec![c.clone(), s]));
        }
    }
    all
}

/// The example lines (`  codedb …` and their `\` continuations).
fn examples(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("  codedb ") {
            let mut ex = lines[i].to_string();
            while ex.ends_with('\\') {
                i += 1;
                let next = lines.get(i).copied().unwrap_or("");
                assert!(
                    next.starts_with("    "),
                    "continuation of {ex:?} is not indented: {next:?}"
                );
                ex.push('\n');
                ex.push_str(next);
            }
            out.push(ex);
        }
        i += 1;
    }
    out
}

#[test]
fn every_command_has_examples_that_do_not_wrap() {
    let all = every_command();
    assert!(all.len() >= 17, "{all:?}");
    for cmd in &all {
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let narrow = help(&cmd, "80");
        let wide = help(&cmd, "200");
        assert!(narrow.contains("Examples:"), "{cmd:?} has no examples");
        let (en, ew) = (examples(&narrow), examples(&wide));
        assert!(!en.is_empty(), "{cmd:?}: no `codedb …` example lines");
        assert_eq!(en, ew, "{cmd:?}: an example wraps at 80 columns");
        // Indented lines (examples, tables) are laid out by hand: they must fit 80 columns,
        // or a terminal of 80 wraps them without their indentation.
        for l in wide.lines().skip_while(|l| !l.starts_with("Examples:")) {
            if l.starts_with(' ') {
                assert!(l.chars().count() <= 80, "{cmd:?}: {l:?} is wider than 80");
            }
        }
        for e in &en {
            for l in e.lines() {
                assert!(l.chars().count() <= 80, "{cmd:?}: {l:?} is wider than 80");
            }
            let words: Vec<&str> = e.split_whitespace().collect();
            assert_eq!(words[0], "codedb");
            assert_eq!(&words[1..=cmd.len()], &cmd[..], "{cmd:?}: {e}");
        }
    }
}

#[test]
fn every_option_has_a_description() {
    for cmd in every_command() {
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let text = help(&cmd, "200");
        let lines: Vec<&str> = text.lines().collect();
        let mut in_list = false;
        for (i, l) in lines.iter().enumerate() {
            if *l == "Options:" || *l == "Arguments:" {
                in_list = true;
                continue;
            }
            if l.is_empty() || !l.starts_with(' ') {
                in_list = false;
                continue;
            }
            let entry = l.starts_with("  -") || l.starts_with("      --") || l.starts_with("  <");
            if !in_list || !entry {
                continue;
            }
            let described = l.trim().contains("  ")
                || lines.get(i + 1).is_some_and(|n| {
                    n.starts_with("          ") && !n.trim_start().starts_with('-')
                });
            assert!(described, "{cmd:?}: {l:?} has no description");
        }
    }
}
