//! The architecture's invariants that a test can read off the sources (docs/architecture.md):
//! no import circles among the host modules, nothing above the backend trait names a type of
//! the twin runtime, only the ACL backend names the ACL runtime, and every file of a one-binary
//! test directory is compiled.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The host's sources (not `host/bin/`, the aiv-perf tool), as (path under host/, code without
/// its comment lines and its unit tests, `#[cfg(test)]` onwards).
fn host_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, under: &str, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let rel = format!("{under}{name}");
            if path.is_dir() {
                if name != "bin" {
                    walk(&path, &format!("{rel}/"), out);
                }
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code: Vec<&str> = text
                    .lines()
                    .take_while(|l| l.trim() != "#[cfg(test)]")
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect();
                out.push((rel, code.join("\n")));
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("host"),
        "",
        &mut out,
    );
    out
}

/// The top-level module a source file belongs to (`backend/twin.rs` -> `backend`).
fn module_of(path: &str) -> String {
    path.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// The identifiers after each `prefix` in `code`: a path's next segment, or every name of a
/// `prefix{a, b::c, ...}` list (its first segment each), across lines.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let body = list.split('}').next().unwrap();
            out.extend(body.split(',').map(ident).filter(|s| !s.is_empty()));
        } else {
            out.push(ident(rest));
        }
    }
    out
}

/// Which module each name the crate root re-exports comes from (`pub use plan::{A, B};`).
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(i) = stmt.find("pub use ") else {
            continue;
        };
        let path = stmt[i + "pub use ".len()..].trim();
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        for name in names_after(&format!("::{rest}"), "::") {
            out.insert(name, module.to_string());
        }
    }
    out
}

#[test]
fn host_modules_import_each_other_without_circles() {
    let sources = host_sources();
    let lib = &sources.iter().find(|(p, _)| p == "lib.rs").unwrap().1;
    let reexports = root_reexports(lib);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in &sources {
        let m = module_of(path);
        if m == "lib" {
            continue;
        }
        let deps = graph.entry(m.clone()).or_default();
        for name in names_after(code, "crate::") {
            // `crate::module::...`, or a name the crate root re-exports from a module.
            let d = reexports.get(&name).cloned().unwrap_or(name);
            if d != m {
                deps.insert(d);
            }
        }
    }
    assert!(graph.contains_key("communicator") && graph.contains_key("stream"));
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("import circle: {} -> {m}", path[i..].join(" -> "));
        }
        path.push(m.to_string());
        for d in graph.get(m).into_iter().flatten() {
            if graph.contains_key(d) {
                visit(d, graph, path, done);
            }
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn nothing_above_the_backend_trait_names_a_twin_runtime_type() {
    // The kernel ABI is shared by every backend; the rest of ascendc_twin (Twin, Device,
    // GmBuffer, HostSignal, TwinError, ...) belongs to backend/twin.rs, and to world.rs's
    // constructors and accessors of twin worlds (World::on_twin, World::twin, twin_device).
    let abi = ["Kernel", "ArgBlock", "GmAddr", "args", "include_kernels"];
    let twin_world = ["Twin", "TwinConfig", "DeviceConfig", "Device"];
    for (path, code) in host_sources() {
        if path == "backend/twin.rs" {
            continue;
        }
        for item in names_after(&code, "ascendc_twin::") {
            let allowed = abi.contains(&item.as_str())
                || path == "world.rs" && twin_world.contains(&item.as_str());
            assert!(allowed, "host/{path} names ascendc_twin::{item}");
        }
    }
}

#[test]
fn only_the_acl_backend_names_the_acl_runtime() {
    // ascendc_sys (the ACL declarations) belongs to backend/acl.rs: the rest of the host,
    // World::new's choice of backend included, asks AclBackend.
    for (path, code) in host_sources() {
        if path == "backend/acl.rs" {
            continue;
        }
        let named = names_after(&code, "ascendc_sys::");
        assert!(named.is_empty(), "host/{path} names ascendc_sys::{named:?}");
    }
}

/// The test modules a one-binary test directory declares in its `main.rs`: `mod name;` lines and
/// the files of `#[path = "..."]` attributes (here and in the modules they name).
fn declared_modules(dir: &Path) -> BTreeSet<PathBuf> {
    let dir = dir.canonicalize().unwrap();
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.join("main.rs")];
    while let Some(file) = todo.pop() {
        let text = std::fs::read_to_string(&file).unwrap();
        let here = file.parent().unwrap();
        let mut path_attr = None;
        for line in text.lines().map(str::trim) {
            if let Some(p) = line.strip_prefix("#[path = \"") {
                path_attr = Some(here.join(p.trim_end_matches("\"]")));
            } else if let Some(m) = line.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                let f = path_attr
                    .take()
                    .unwrap_or_else(|| here.join(format!("{m}.rs")));
                let f = f.canonicalize().unwrap_or(f);
                if f.starts_with(&dir) && out.insert(f.clone()) {
                    todo.push(f);
                }
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.insert(path.canonicalize().unwrap());
        }
    }
    out
}

/// The integration tests are one binary per crate, so a new file in their directory runs only
/// if its `main.rs` declares it: none may be left out, or its tests would silently never run.
#[test]
fn every_file_of_a_one_binary_test_directory_is_compiled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["tests/integration", "twin-tests/tests/twin"] {
        let dir = root.join(dir);
        let mut files = rust_files(&dir);
        files.remove(&dir.join("main.rs").canonicalize().unwrap());
        let declared = declared_modules(&dir);
        assert!(
            declared.len() > 10,
            "{}: the scan found only {declared:?}",
            dir.display()
        );
        let missing: Vec<_> = files.difference(&declared).collect();
        assert!(
            missing.is_empty(),
            "declared by no `mod` of {}/main.rs: {missing:?}",
            dir.display()
        );
    }
}
