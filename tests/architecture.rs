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
        ("Predicate::parse(", "RowFilter::checked"),
        ("RowFilter::default()", "RowFilter::checked"),
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

/// The driver of `model/`: it uses the learners (`classify/`, `supervised/`, `text/`) and the
/// stages, so no other file of the room may use it (ARCHITECTURE.md, "Training, and where each
/// kind lives"). Options, events and reports are in `train_options.rs` / `train_report.rs`.
const MODEL_DRIVERS: [&str; 2] = ["train", "train_from_codes"];

#[test]
fn no_arrow_runs_back_up_inside_the_model_room() {
    let model = src().join("model");
    let mut offences = Vec::new();
    for file in rust_files(&model) {
        let rel = file
            .strip_prefix(&model)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        if rel == "mod.rs" || MODEL_DRIVERS.iter().any(|d| rel == format!("{d}.rs")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let c = code(line);
            for d in MODEL_DRIVERS {
                let uses = [
                    format!("super::{d}::"),
                    format!("crate::model::{d}::"),
                    format!("super::{{{d}}}"),
                ];
                if uses.iter().any(|u| c.contains(u.as_str())) {
                    offences.push(format!("model/{rel}:{}: uses the driver `{d}`", i + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "arrows back up inside model/ (take options, events and reports from \
         train_options.rs / train_report.rs):\n{}",
        offences.join("\n")
    );
}

#[test]
fn no_glob_re_export_in_the_engine() {
    // Every public name is named where it is re-exported, so a facade's list is the whole of
    // what it offers (ARCHITECTURE.md, "The front door"; `tools/public_names.py` counts them).
    let mut offences = Vec::new();
    for file in rust_files(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let c = code(line).trim();
            let re_export = c.starts_with("pub") && c.contains(" use ");
            if re_export && (c.ends_with("::*;") || c.contains("::*}") || c.contains(", *}")) {
                offences.push(format!("{}:{}: {c}", file.display(), i + 1));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "glob re-exports (name each item):\n{}",
        offences.join("\n")
    );
}

/// The longest a function may be, in lines of code (blank and comment-only lines not counted,
/// the signature and closing brace counted).
const MAX_FN_LINES: usize = 150;

/// Every function of `file` with its length in lines of code. Relies on rustfmt's layout (CI
/// runs `cargo fmt --check`): a body ends at the first line that is the signature's
/// indentation followed by `}`.
fn function_lengths(file: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let mut rest = t;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else {
            continue;
        };
        let end_of_line = code(line).trim_end();
        if end_of_line.ends_with(';') || end_of_line.ends_with('}') {
            continue; // a declaration, or a one-line body
        }
        let name: String = sig
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let closing = format!("{indent}}}");
        let mut end = None;
        for (j, l) in lines.iter().enumerate().skip(i + 1) {
            if *l == closing {
                end = Some(j);
                break;
            }
            let lt = l.trim_start();
            let shallower = !lt.is_empty() && l.len() - lt.len() <= indent.len();
            if shallower && !(lt.starts_with(')') || lt.starts_with("where") || lt == "{") {
                break; // a declaration over several lines, not a body
            }
        }
        if let Some(end) = end {
            let n = lines[i..=end]
                .iter()
                .filter(|l| {
                    let s = l.trim();
                    !s.is_empty() && !s.starts_with("//")
                })
                .count();
            out.push((name, n));
        }
    }
    out
}

#[test]
fn functions_stay_under_the_length_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offences = Vec::new();
    for dir in ["src", "cli/src", "python/src"] {
        for file in rust_files(&root.join(dir)) {
            let rel = file
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            for (name, n) in function_lengths(&file) {
                if n <= MAX_FN_LINES {
                    continue;
                }
                offences.push(format!("{rel}: fn {name} has {n} lines of code"));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "functions over {MAX_FN_LINES} lines of code (split them):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_length_counter_counts_bodies_not_declarations() {
    let dir = std::env::temp_dir().join(format!("codedb-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("sample.rs");
    std::fs::write(
        &f,
        "fn short() -> u32 { 1 }\n\
         pub(crate) fn two(\n    a: u32,\n) -> u32 {\n    // a comment\n\n    a + 1\n}\n\
         trait T {\n    fn decl(&self);\n    fn body(&self) {\n        let _ = 1;\n    }\n}\n",
    )
    .unwrap();
    let got = function_lengths(&f);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(got, vec![("two".to_string(), 5), ("body".to_string(), 3)]);
}

/// The file of the module `segs` below the crate root `root` (`lib.rs` / `main.rs` for the
/// root itself), if that module is a file of the tree.
fn module_file(root: &Path, segs: &[String]) -> Option<PathBuf> {
    if segs.is_empty() {
        return ["lib.rs", "main.rs"]
            .iter()
            .map(|f| root.join(f))
            .find(|f| f.exists());
    }
    let d = segs.iter().fold(root.to_path_buf(), |d, s| d.join(s));
    [d.with_extension("rs"), d.join("mod.rs")]
        .into_iter()
        .find(|f| f.exists())
}

/// The module path of `file` below the crate root `root`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        segs.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        segs.pop();
    }
    segs
}

/// A file's code without comments and without its `#[cfg(test)]` part.
fn library_code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let lib = text.split("#[cfg(test)]").next().unwrap_or("");
    lib.lines().map(|l| format!("{}\n", code(l))).collect()
}

/// The items a module file re-exports (`pub use a::b::{c, d as e};`, not `crate::` or
/// `super::` ones): name → path relative to the module.
fn re_exports(file: &Path) -> Vec<(String, Vec<String>)> {
    let code = library_code(file);
    let mut out = Vec::new();
    for stmt in code.split(';') {
        let t = stmt.trim();
        let Some(body) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| t.rfind(p).map(|i| &t[i + p.len()..]))
        else {
            continue;
        };
        let body = body.trim();
        if body.starts_with("crate::") || body.starts_with("super::") {
            continue;
        }
        let (pre, items): (Vec<&str>, Vec<&str>) = match body.find('{') {
            Some(i) => (
                body[..i].trim_end_matches(':').split("::").collect(),
                body[i + 1..body.rfind('}').unwrap_or(body.len())]
                    .split(',')
                    .collect(),
            ),
            None => {
                let parts: Vec<&str> = body.split("::").collect();
                let (last, pre) = parts.split_last().unwrap();
                (pre.to_vec(), vec![*last])
            }
        };
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            let path = item.split(" as ").next().unwrap().trim();
            let name = item.rsplit(" as ").next().unwrap().trim();
            let name = name.rsplit("::").next().unwrap().to_string();
            let mut full: Vec<String> = pre.iter().map(|s| s.trim().to_string()).collect();
            full.extend(path.split("::").map(|s| s.trim().to_string()));
            out.push((name, full));
        }
    }
    out
}

/// The file that defines what `path` (below module `base`) names: the deepest module file the
/// path walks through, following a name that module only re-exports to where it is defined.
fn defining_file(root: &Path, base: &[String], path: &[String], depth: usize) -> Option<PathBuf> {
    let mut segs = base.to_vec();
    for (i, n) in path.iter().enumerate() {
        let mut next = segs.clone();
        next.push(n.clone());
        if module_file(root, &next).is_some() {
            segs = next;
            continue;
        }
        if depth < 8
            && let Some(f) = module_file(root, &segs)
            && let Some((_, to)) = re_exports(&f).into_iter().find(|(name, _)| name == n)
            && to.first().is_some_and(|s| s != "self")
        {
            let mut rest = to;
            rest.extend(path[i + 1..].iter().cloned());
            return defining_file(root, &segs, &rest, depth + 1);
        }
        break;
    }
    module_file(root, &segs)
}

/// The path segments at the start of `rest` (`a::b::C`), or each path of a `{…}` group.
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        let mut segs = Vec::new();
        for seg in s.split("::") {
            let w: String = seg
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if w.is_empty() {
                break;
            }
            segs.push(w);
        }
        segs
    };
    match rest.strip_prefix('{') {
        Some(group) => group[..group.find('}').unwrap_or(group.len())]
            .split(',')
            .map(|p| ident(p.split(" as ").next().unwrap_or("")))
            .collect(),
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            vec![ident(&rest[..end])]
        }
    }
}

/// The files of the crate below `root` that `file` uses: through `crate::`, `super::` and
/// `self::` paths and its own child modules (`child::f`), each resolved to the file that
/// defines the name (a name a `mod.rs` only re-exports is the defining file's, so a room's
/// list of names is no arrow; a name a `mod.rs` defines is). Re-export lines are no use.
fn file_edges(root: &Path, file: &Path) -> Vec<PathBuf> {
    let module = module_of(root, file);
    let mut code = library_code(file);
    for stmt in code.clone().split(';') {
        let t = stmt.trim_start();
        if ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|p| t.starts_with(p))
        {
            code = code.replacen(t, "", 1);
        }
    }
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let at_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let word: String = code[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !at_word || word.is_empty() || !code[i + word.len()..].starts_with("::") {
            i += word.len().max(1);
            while i < code.len() && !code.is_char_boundary(i) {
                i += 1;
            }
            continue;
        }
        // A path starts here: climb its `super::`s from the file's module.
        let mut base = module.clone();
        let mut rest = &code[i..];
        let mut known = false;
        loop {
            if let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
                known = true;
            } else if let Some(r) = rest.strip_prefix("self::") {
                rest = r;
                known = true;
            } else if let Some(r) = rest.strip_prefix("crate::") {
                base.clear();
                rest = r;
                known = true;
            } else {
                break;
            }
        }
        for path in paths_at(rest) {
            let Some(first) = path.first() else { continue };
            let mut child = module.clone();
            child.push(first.clone());
            // A bare path is the file's own child module's, or a name from elsewhere.
            if !known && module_file(root, &child).is_none() {
                continue;
            }
            if let Some(t) = defining_file(root, &base, &path, 0)
                && t != file
            {
                out.push(t);
            }
        }
        // Past the path's first segment: its later segments are no path of their own.
        i = (code.len() - rest.len()).max(i + word.len() + 2);
        while i < code.len() && !code.is_char_boundary(i) {
            i += 1;
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_circle_reader_finds_a_circle_through_a_mod_rs_and_none_through_a_re_export() {
    // The shape of a circle this rule once listed: a child reading a name its `mod.rs` defines,
    // while the `mod.rs` calls the child. Reading the name where it is defined (a re-export of
    // the `mod.rs` is no arrow) opens it.
    let dir = std::env::temp_dir().join(format!("codedb-arch-circle-{}", std::process::id()));
    let room = dir.join("room");
    std::fs::create_dir_all(&room).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod room;\npub mod words;\n").unwrap();
    std::fs::write(dir.join("words.rs"), "pub struct Word;\n").unwrap();
    std::fs::write(
        room.join("mod.rs"),
        "mod eval;\npub use crate::words::Word;\npub struct Data;\n\
         pub fn run() { eval::eval(); }\n",
    )
    .unwrap();
    std::fs::write(room.join("eval.rs"), "use super::Data;\npub fn eval() {}\n").unwrap();
    let (circle, _) = import_circle(&dir);
    let mut names: Vec<String> = circle
        .expect("no circle found between room/mod.rs and room/eval.rs")
        .iter()
        .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    names.sort();
    names.dedup();

    std::fs::write(
        room.join("eval.rs"),
        "use crate::words::Word;\npub fn eval() {}\n",
    )
    .unwrap();
    let (after, arrows) = import_circle(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(names, ["room/eval.rs", "room/mod.rs"]);
    assert_eq!(after, None);
    assert_eq!(
        arrows, 2,
        "room/mod.rs -> room/eval.rs, room/eval.rs -> words.rs"
    );
}

/// A circle of the files of the crate below `root` that use each other, if there is one; and
/// the number of arrows read.
fn import_circle(root: &Path) -> (Option<Vec<PathBuf>>, usize) {
    let files = rust_files(root);
    let edges: Vec<Vec<usize>> = files
        .iter()
        .map(|f| {
            file_edges(root, f)
                .iter()
                .filter_map(|t| files.iter().position(|g| g == t))
                .collect()
        })
        .collect();
    // Depth-first search; a grey node met again closes a circle.
    fn visit(
        u: usize,
        edges: &[Vec<usize>],
        state: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        state[u] = 1;
        path.push(u);
        for &v in &edges[u] {
            if state[v] == 1 {
                let from = path.iter().position(|&p| p == v).unwrap();
                let mut circle = path[from..].to_vec();
                circle.push(v);
                return Some(circle);
            }
            if state[v] == 0
                && let Some(c) = visit(v, edges, state, path)
            {
                return Some(c);
            }
        }
        path.pop();
        state[u] = 2;
        None
    }
    let arrows = edges.iter().map(Vec::len).sum();
    let mut state = vec![0u8; files.len()];
    for u in 0..files.len() {
        if state[u] == 0
            && let Some(c) = visit(u, &edges, &mut state, &mut Vec::new())
        {
            return (Some(c.iter().map(|&i| files[i].clone()).collect()), arrows);
        }
    }
    (None, arrows)
}

#[test]
fn no_import_circle_between_files() {
    // Every file of the engine, the CLI and the Python binding stands on the files it uses:
    // no file uses, through any chain, a file that uses it — a `mod.rs` included when it
    // defines what a child uses or calls a child (its re-exports are not uses). No circle is
    // allowed, with or without a reason.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (root, min_arrows) in [
        (src(), 500),
        (manifest.join("cli/src"), 100),
        (manifest.join("python/src"), 20),
    ] {
        let (circle, arrows) = import_circle(&root);
        assert!(
            arrows > min_arrows,
            "{}: only {arrows} arrows found; the reader is broken",
            root.display()
        );
        if let Some(c) = circle {
            let shown: Vec<String> = c
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
                .collect();
            panic!(
                "files that use each other in a circle in {}: {}",
                root.display(),
                shown.join(" -> ")
            );
        }
    }
}

/// The code of `text` without `//` comments and without attributes (`#[…]`, `#![…]`), line
/// structure kept.
fn code_without_attributes(text: &str) -> String {
    let code: String = text.lines().map(|l| format!("{}\n", code(l))).collect();
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && matches!(chars.peek(), Some('[' | '!')) {
            let mut depth = 0usize;
            for d in chars.by_ref() {
                match d {
                    '[' => depth += 1,
                    ']' if depth == 1 => break,
                    ']' => depth -= 1,
                    '\n' => out.push('\n'),
                    _ => {}
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The items of a `mod.rs` that are not a module declaration, a `pub` / `pub(crate)` /
/// `pub(super)` re-export or a `compile_error!` guard: what the file defines or uses itself.
fn mod_rs_definitions(text: &str) -> Vec<String> {
    let code = code_without_attributes(text);
    let mut out = Vec::new();
    for item in code.split(';') {
        let t = item.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.is_empty() {
            continue;
        }
        let rest = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| t.strip_prefix(v));
        let declared = {
            let m = rest.unwrap_or(&t);
            m.strip_prefix("mod ")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        };
        let re_export = rest.is_some_and(|r| r.starts_with("use "));
        let guard = t.starts_with("compile_error!(") && t.ends_with(')');
        if !(declared || re_export || guard) {
            out.push(t.chars().take(80).collect());
        }
    }
    out
}

#[test]
fn every_mod_rs_only_declares_and_re_exports() {
    // A folder's `mod.rs` is its list of names: it declares its children and re-exports what
    // they define. A name it defined would be one its children take through the file that
    // declares them, an arrow back up inside the room (ARCHITECTURE.md, "Rules between rooms").
    let src = src();
    // No exception is allowed.
    let mut offences = Vec::new();
    let mut read = 0;
    for file in rust_files(&src) {
        if file.file_name().is_none_or(|n| n != "mod.rs") {
            continue;
        }
        read += 1;
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let defs = mod_rs_definitions(&std::fs::read_to_string(&file).unwrap());
        if let Some(d) = defs.first() {
            offences.push(format!("{rel}: `{d}`"));
        }
    }
    assert!(
        read > 10,
        "only {read} mod.rs files read; the reader is broken"
    );
    assert!(
        offences.is_empty(),
        "mod.rs files that define or use names themselves (move the code to a file of its own \
         and re-export it):\n{}",
        offences.join("\n")
    );
}

/// The paths of a `use` tree or an expression path at the start of `rest` (`a::b::C`,
/// `a::{b, c::{self, D}}`, `a::*`), each as its segments; `self` in a group names the group's
/// prefix, `*` is kept as a segment.
fn path_tree(rest: &str) -> Vec<Vec<String>> {
    fn tree(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut segs = prefix.to_vec();
        let mut rest = s.trim_start();
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0usize;
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            tree(&group[start..i], &segs, out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            tree(&group[start..i], &segs, out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            if rest.starts_with('*') {
                segs.push("*".to_string());
                break;
            }
            let w: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if w.is_empty() {
                break;
            }
            rest = rest[w.len()..].trim_start();
            if w != "self" {
                segs.push(w);
            }
            match rest.strip_prefix("::") {
                Some(r) => rest = r.trim_start(),
                None => break,
            }
        }
        if segs.len() > prefix.len() || !prefix.is_empty() {
            out.push(segs);
        }
    }
    let mut out = Vec::new();
    tree(rest, &[], &mut out);
    out
}

/// Every name `file` takes through the `mod.rs` of a folder it stands in (its own folder or
/// one above, not the crate root: that is the front door): `(line, name, that mod.rs)`. A
/// path through such a folder to one of its modules (`super::child::Name`) is no offence; a
/// name the `mod.rs` defines or only re-exports is. `super::` climbs from the module the path
/// stands in: the file's, or an inline module's (`mod tests { … }`, `mod x86 { … }`).
fn names_through_own_folders(root: &Path, file: &Path) -> Vec<(usize, String, PathBuf)> {
    let text = std::fs::read_to_string(file).unwrap();
    let own = module_of(root, file);
    let code = text.as_str();
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    // Inline modules open at this file: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let at_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        // Comments and raw strings are no code.
        let skip_to =
            |end: &str, from: usize| rest[from..].find(end).map_or(rest.len(), |k| k + from);
        if rest.starts_with("//") {
            i += skip_to("\n", 0);
            continue;
        }
        if rest.starts_with("/*") {
            i += skip_to("*/", 2) + 2;
            continue;
        }
        let raw = rest.strip_prefix("br").or_else(|| rest.strip_prefix('r'));
        if at_word && let Some(r) = raw.filter(|r| r.trim_start_matches('#').starts_with('"')) {
            let hashes = r.len() - r.trim_start_matches('#').len();
            let open = rest.len() - r.len() + hashes + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            i += skip_to(&close, open) + close.len();
            continue;
        }
        match bytes[i] {
            b'"' => {
                // A string literal: skip to its closing quote.
                let mut j = i + 1;
                while j < code.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                continue;
            }
            b'\'' => {
                // A char literal ('{', '\n'); a lifetime has no closing quote.
                let close = if rest[1..].starts_with('\\') {
                    rest[2..].find('\'').map(|k| k + 2)
                } else {
                    rest[1..].char_indices().nth(1).map(|(k, _)| k + 1)
                };
                if let Some(k) = close.filter(|&k| rest[k..].starts_with('\'')) {
                    i += k + 1;
                    continue;
                }
            }
            b'{' => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            b'}' => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            b';' => pending_mod = None,
            _ => {}
        }
        if at_word && let Some(r) = rest.strip_prefix("mod ") {
            let name: String = r
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            pending_mod = Some(name);
        }
        let starts = ["super::", "crate::", "self::"]
            .iter()
            .any(|p| rest.starts_with(p));
        if !at_word || !starts {
            i += 1;
            while i < code.len() && !code.is_char_boundary(i) {
                i += 1;
            }
            continue;
        }
        // The module the path starts from: the file's, or the inline module it stands in.
        let mut base = own.clone();
        base.extend(inline.iter().map(|(n, _)| n.clone()));
        let mut rest = rest;
        loop {
            if let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            } else if let Some(r) = rest.strip_prefix("self::") {
                rest = r;
            } else if let Some(r) = rest.strip_prefix("crate::") {
                base.clear();
                rest = r;
            } else {
                break;
            }
        }
        let line = code[..i].matches('\n').count() + 1;
        for path in path_tree(rest) {
            let mut m = base.clone();
            for seg in &path {
                let mut next = m.clone();
                next.push(seg.clone());
                if seg != "*" && module_file(root, &next).is_some() {
                    m = next;
                    continue;
                }
                let ancestor = !m.is_empty() && m.len() < own.len() && own.starts_with(&m);
                if ancestor
                    && let Some(f) = module_file(root, &m)
                    && f.ends_with("mod.rs")
                    && f != file
                {
                    out.push((line, seg.clone(), f));
                }
                break;
            }
        }
        i += code[i..].len() - rest.len();
    }
    out
}

#[test]
fn no_file_takes_a_name_through_the_mod_rs_of_its_own_folder() {
    // A child that takes `super::Name` from the `mod.rs` that declares it runs an arrow back
    // up inside its room: it names the defining file instead (`super::options::Name`).
    let src = src();
    let mut offences = Vec::new();
    let mut files = 0;
    for file in rust_files(&src) {
        files += 1;
        for (line, name, through) in names_through_own_folders(&src, &file) {
            offences.push(format!(
                "{}:{line}: `{name}` through {}",
                file.strip_prefix(&src).unwrap().display(),
                through.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    assert!(files > 100, "only {files} files read; the reader is broken");
    assert!(
        offences.is_empty(),
        "names taken through the mod.rs of the file's own folder (import them from the file \
         that defines them):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_folder_rules_find_a_name_through_a_mod_rs_and_code_in_one() {
    // A small crate: room/b.rs takes `Word` through room/mod.rs, which also defines `Data`.
    let dir = std::env::temp_dir().join(format!("codedb-arch-folder-{}", std::process::id()));
    let room = dir.join("room");
    std::fs::create_dir_all(&room).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod room;\npub struct Root;\n").unwrap();
    let mod_rs = "//! The room.\n#[cfg(target_endian = \"big\")]\ncompile_error!(\"no\");\n\
                  mod a;\npub(crate) mod b;\n#[allow(unused)]\npub use a::{\n    Word,\n};\n";
    std::fs::write(room.join("mod.rs"), format!("{mod_rs}pub struct Data;\n")).unwrap();
    std::fs::write(room.join("a.rs"), "pub struct Word;\n").unwrap();
    let b = |uses: &str| {
        format!(
            "{uses}\npub fn f() -> crate::Root {{ crate::Root }}\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use super::super::a::Word;\n}}\n"
        )
    };
    let found = |uses: &str| {
        std::fs::write(room.join("b.rs"), b(uses)).unwrap();
        names_through_own_folders(&dir, &room.join("b.rs"))
            .into_iter()
            .map(|(line, name, f)| (line, name, f.strip_prefix(&dir).unwrap().to_path_buf()))
            .collect::<Vec<_>>()
    };
    let through_mod = PathBuf::from("room/mod.rs");
    let before = [
        found("use super::Word;"),
        found("use super::{a, Word};"),
        found("use crate::room::{a::{self, Word}, Data};"),
        found("use super::*;"),
        found("fn g() -> super::Word {\n    super::a::Word\n}"),
        found("mod inner {\n    use super::super::Word;\n}"),
    ];
    let after = [
        found("mod inner {\n    use super::super::a::Word;\n}"),
        found("const S: &str = \"super::Word\"; // super::Word\nconst C: char = '{';"),
        found("use super::a::Word;"),
        found("use super::{a, a::Word};"),
        found("use crate::room::{a::{self, Word}};"),
        found("fn g() -> super::a::Word {\n    super::a::Word\n}"),
    ];
    let defs_before = mod_rs_definitions(&std::fs::read_to_string(room.join("mod.rs")).unwrap());
    let defs_after = mod_rs_definitions(mod_rs);
    let defs_use = mod_rs_definitions("mod a;\nuse a::Word;\n");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(before[0], [(1, "Word".to_string(), through_mod.clone())]);
    assert_eq!(before[1], [(1, "Word".to_string(), through_mod.clone())]);
    assert_eq!(before[2], [(1, "Data".to_string(), through_mod.clone())]);
    assert_eq!(before[3], [(1, "*".to_string(), through_mod.clone())]);
    assert_eq!(before[4], [(1, "Word".to_string(), through_mod.clone())]);
    assert_eq!(before[5], [(2, "Word".to_string(), through_mod)]);
    for a in &after {
        assert!(a.is_empty(), "{a:?}");
    }
    assert_eq!(defs_before, ["pub struct Data"]);
    assert!(defs_after.is_empty(), "{defs_after:?}");
    assert_eq!(defs_use, ["use a::Word"]);
}
