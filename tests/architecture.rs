//! The rules between rooms (ARCHITECTURE.md, "Rules") still hold: every `crate::…` path in a
//! room's files names only rooms below it, the engine keeps no process-global mutable state,
//! `unsafe` is allowed only where Cargo.toml's lint policy says, and the engine does not depend
//! on the CLI's crates, and the front ends (`cli/`, `python/`) call the engine's query words
//! instead of spelling them again. Plain text checks over the sources, so they run in
//! `cargo test` without tools.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

/// The rooms, lowest first: a room may use only the rooms before it.
const ROOMS: [&str; 6] = ["format", "scan", "model", "classes", "storage", "search"];

/// Known breaks of the order, each with its reason (ARCHITECTURE.md, "Rules between rooms");
/// the list only shrinks.
/// (Empty since the index's write and class operations return `StorageError`, which wraps the
/// class and model errors they meet.)
const EXCEPTIONS: [(&str, &str, &str); 0] = [];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The code of a line: without `//` comments (doc comments cite other rooms freely).
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// Every `crate::NAME` in the code of `file`, with its line number.
fn crate_paths(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let c = code(line);
        for (at, _) in c.match_indices("crate::") {
            let rest = &c[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                .collect();
            out.push((i + 1, name));
        }
    }
    out
}

#[test]
fn rooms_use_only_the_rooms_below_them() {
    let mut offences = Vec::new();
    for (level, room) in ROOMS.iter().enumerate() {
        for file in rust_files(&src().join(room)) {
            for (line, name) in crate_paths(&file) {
                let allowed = name == *room
                    || ROOMS[..level].contains(&name.as_str())
                    || EXCEPTIONS
                        .iter()
                        .any(|(f, n, _)| file.ends_with(f) && name == *n);
                if !allowed {
                    offences.push(format!(
                        "{}:{line}: room `{room}` uses `crate::{name}`",
                        file.strip_prefix(src()).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "rules between rooms broken (ARCHITECTURE.md):\n{}",
        offences.join("\n")
    );
}

/// The public modules (ARCHITECTURE.md, "The front door"): each a flat list for one kind of
/// user. Every other module of the crate root is private, but for the hidden ones below.
const FACADES: [&str; 5] = ["admin", "format", "kernels", "model", "research"];

/// Public modules hidden from the documentation (`#[doc(hidden)]` on the line before): the
/// search room's internals, for the benchmarks and tests that measure them piece by piece.
const HIDDEN: [&str; 1] = ["internals"];

#[test]
fn the_crate_root_declares_no_public_module_but_the_facades() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let lines: Vec<&str> = lib.lines().map(|l| code(l).trim()).collect();
    let mut public = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = l.strip_prefix("pub mod ") else {
            continue;
        };
        let name = name.trim_end_matches(';').trim();
        if HIDDEN.contains(&name) {
            assert!(
                i > 0 && lines[i - 1] == "#[doc(hidden)]",
                "lib.rs: `pub mod {name}` is not an API and must be `#[doc(hidden)]`"
            );
            continue;
        }
        public.push(name);
    }
    let extra: Vec<&&str> = public.iter().filter(|m| !FACADES.contains(m)).collect();
    assert!(
        extra.is_empty(),
        "lib.rs makes {extra:?} public; the public modules are the facades {FACADES:?} \
         (ARCHITECTURE.md): re-export what users need instead"
    );
    assert_eq!(
        public.len(),
        FACADES.len(),
        "a facade is missing: {public:?}"
    );
}

#[test]
fn every_engine_file_belongs_to_a_room_or_the_front_door() {
    let front_door = [
        "lib.rs",
        "error.rs",
        "admin.rs",
        "kernels.rs",
        "research.rs",
        "internals.rs",
    ];
    for e in std::fs::read_dir(src()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let known = if p.is_dir() {
            ROOMS.contains(&name.as_str())
        } else {
            front_door.contains(&name.as_str())
        };
        assert!(
            known,
            "src/{name} is neither a room nor the front door (ARCHITECTURE.md)"
        );
    }
}

#[test]
fn the_engine_keeps_no_process_global_mutable_state() {
    // A `static` holding a lock, a cell or an atomic is state shared by every index in the
    // process. Two are allowed: the CPU-feature probe (`scan/dispatch.rs`, a `OnceLock` written
    // once with a fact about the machine) and `FileId::generate`'s uniqueness counter.
    let mut offences = Vec::new();
    for file in rust_files(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let c = code(line).trim_start();
            let is_static = c.starts_with("static ") || c.starts_with("pub static ");
            let mutable = [
                "Mutex",
                "RwLock",
                "RefCell",
                "Cell<",
                "Atomic",
                "static mut",
            ]
            .iter()
            .any(|m| c.contains(m));
            let probe = file.ends_with("scan/dispatch.rs") && c.contains("OnceLock<Probe>");
            // `FileId::generate`'s counter only makes ids unique within a process; no result
            // depends on its value.
            let id_nonce =
                file.ends_with("format/container.rs") && c.contains("static COUNTER: AtomicU64");
            if id_nonce {
                continue;
            }
            if (is_static && mutable)
                || (c.starts_with("static mut "))
                || (is_static && c.contains("OnceLock") && !probe)
            {
                offences.push(format!("{}:{}: {c}", file.display(), i + 1));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "global mutable state:\n{}",
        offences.join("\n")
    );
}

#[test]
fn errors_keep_their_sources_in_the_engine() {
    // An error converted into another by way of a string loses its type and its `source()`
    // chain: `map_err(|e| …e.to_string()…)` or `…format!("…{e}")…` within the closure. (Reports
    // that show an error's message to a person — verify, inspect — are text on purpose.)
    let mut offences = Vec::new();
    for file in rust_files(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests check messages as text; only the code above them counts.
        let lib = text.split("#[cfg(test)]").next().unwrap_or("");
        let lines: Vec<&str> = lib.lines().map(code).collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(at) = line.find("map_err(|") else {
                continue;
            };
            let param: String = line[at + "map_err(|".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if param.is_empty() || param == "_" {
                continue;
            }
            let closure = lines[i..(i + 4).min(lines.len())].join(" ");
            let closure = &closure[closure.find("map_err(|").unwrap_or(0)..];
            if closure.contains(&format!("{param}.to_string()"))
                || closure.contains(&format!("{{{param}}}"))
            {
                offences.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "stringified errors:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_engine_does_not_depend_on_the_cli_crates() {
    let toml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let deps = toml
        .split("\n[dependencies]\n")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for cli_only in ["clap", "anyhow", "indicatif"] {
        assert!(
            !deps.lines().any(|l| l.starts_with(cli_only)),
            "the engine depends on {cli_only}, which only the CLI needs"
        );
    }
}

/// Code of the front ends' files (`cli/src`, `python/src`, `python/codedb`), with `#` and `//`
/// comments left out.
fn front_end_code() -> Vec<(PathBuf, usize, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = rust_files(&root.join("cli/src"));
    files.extend(rust_files(&root.join("python/src")));
    for e in std::fs::read_dir(root.join("python/codedb")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            files.push(p);
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let python = f.extension().is_some_and(|x| x == "py");
        for (i, line) in text.lines().enumerate() {
            let c = if python {
                line.split('#').next().unwrap_or("")
            } else {
                code(line)
            };
            out.push((f.clone(), i + 1, c.to_string()));
        }
    }
    out
}

#[test]
fn the_front_ends_do_not_spell_the_engines_query_words() {
    // Each word has one engine spelling the CLI and Python call (issue 31, item 1).
    let words = [
        (
            "MarginPolicy::Caption =>",
            "MarginPolicy::from_str / default_epsilon",
        ),
        (
            "MarginPolicy::Constant =>",
            "MarginPolicy::from_str / default_epsilon",
        ),
        ("Some(\"f16\")", "VectorDType::parse"),
        ("Some(\"f32\")", "VectorDType::parse"),
        ("train_pamir(", "Model::with_trained_text_head"),
        ("kernels::Direction", "SearchMode::larger_is_better"),
        ("\"adc-ip\", \"float-ip\"", "SearchMode::larger_is_better"),
        ("Some(\"hamming\")", "SearchMode::resolve"),
        ("eq_ignore_ascii_case(\"auto\")", "CcaRho::from_str"),
        ("CCA_RHO_GRID", "CcaRho::from_str / CcaRho::auto"),
        ("cca_rho_grid", "CcaRho"),
    ];
    let mut found = Vec::new();
    for (file, line, c) in front_end_code() {
        for (word, engine) in words {
            if c.contains(word) {
                found.push(format!("{}:{line}: {word} (use {engine})", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "front ends spelling engine words:\n{}",
        found.join("\n")
    );
}
