//! The architecture's invariants that a test can read off the sources (docs/architecture.md):
//! no import circles among the host modules, and nothing above the backend trait names a type
//! of the twin runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the crate modules its code (not its comments) names as `crate::module`.
fn host_modules() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("host");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut deps = BTreeSet::new();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let mut rest = line;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let m: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !m.is_empty() && m != name {
                    deps.insert(m);
                }
            }
        }
        out.insert(name, deps);
    }
    out
}

#[test]
fn host_modules_import_each_other_without_circles() {
    let graph = host_modules();
    assert!(graph.contains_key("communicator") && graph.contains_key("stream"));
    // Depth-first search for a back edge, reporting the circle.
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
    // The user-kernel ABI (Kernel, ArgBlock, GmAddr, args!, include_kernels!) is shared by
    // every backend; the
    // rest of ascendc_twin (Twin, Device, GmBuffer, HostSignal, TwinError, ...) belongs to
    // backend/twin.rs, and World::twin() (a twin-backend accessor).
    let allowed = ["Kernel", "ArgBlock", "GmAddr", "args", "include_kernels"];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("host");
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "rs") || name == "world.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let mut rest = line;
            while let Some(i) = rest.find("ascendc_twin::") {
                rest = &rest[i + "ascendc_twin::".len()..];
                let items: Vec<String> = if let Some(list) = rest.strip_prefix('{') {
                    list.split('}')
                        .next()
                        .unwrap()
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .collect()
                } else {
                    vec![rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()]
                };
                for item in items.iter().filter(|i| !i.is_empty()) {
                    assert!(
                        allowed.contains(&item.as_str()),
                        "host/{name}:{}: names ascendc_twin::{item}",
                        n + 1
                    );
                }
            }
        }
    }
}
