//! What the harness reads from a sample's CMakeLists.txt: the sources of its executable and
//! of its library, and the preprocessor definitions it gives them, as CMake would configure it
//! for Atlas A2 (dav-2201). Only the forms the public samples use are understood.

use std::path::{Path, PathBuf};

/// The library the sample's CMakeLists builds (`add_library(NAME SHARED|STATIC sources)`):
/// its name, kind and sources.
pub(crate) fn library(dir: &Path) -> Option<(String, String, Vec<PathBuf>)> {
    let cmake = std::fs::read_to_string(dir.join("CMakeLists.txt")).ok()?;
    let args = cmake.split("add_library(").nth(1)?.split(')').next()?;
    let mut w = args.split_whitespace();
    let name = w.next()?.to_string();
    let kind = w.next()?.to_string();
    if kind != "SHARED" && kind != "STATIC" {
        return None;
    }
    let srcs = w
        .filter(|s| s.ends_with(".asc") || s.ends_with(".cpp"))
        .map(|s| dir.join(s))
        .collect();
    Some((name, kind, srcs))
}

/// The sources of the sample's executable (`add_executable(demo ...)` in its CMakeLists; a
/// `${VAR}` there is the list of a `set(VAR ...)`).
pub(crate) fn sources(dir: &Path) -> Vec<PathBuf> {
    let cmake = std::fs::read_to_string(dir.join("CMakeLists.txt")).unwrap_or_default();
    let args = |cmd: &str| -> Vec<String> {
        cmake
            .split(cmd)
            .nth(1)
            .and_then(|s| s.split(')').next())
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let list: Vec<String> = args("add_executable(")
        .into_iter()
        .flat_map(
            |w| match w.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
                Some(var) => args(&format!("set({var}")),
                None => vec![w],
            },
        )
        .collect();
    list.iter()
        .filter(|w| w.ends_with(".asc") || w.ends_with(".cpp"))
        .map(|w| dir.join(w.trim_start_matches("${CMAKE_CURRENT_SOURCE_DIR}/")))
        .collect()
}

/// The preprocessor definitions the sample's CMakeLists gives its sources
/// (`add_definitions(-DNAME=VALUE)`, `target_compile_definitions(demo PRIVATE NAME=VALUE ...)`),
/// with `${VAR}` replaced as CMake would for the README's configuration: `SCENARIO_NUM` is the
/// scenario (`-DSCENARIO_NUM=N`) or the `set()` default, `CMAKE_ASC_ARCHITECTURES` is
/// `dav-2201`, and other variables come from the `set(VAR value)` lines CMake runs for it (in an
/// `if(CMAKE_ASC_ARCHITECTURES STREQUAL "...")` chain, only the dav-2201 branch; other `if`s only
/// guard messages in these samples, so their `set`s are taken as given).
pub(crate) fn definitions(dir: &Path, scenario: Option<u32>) -> Vec<(String, String)> {
    let cmake = std::fs::read_to_string(dir.join("CMakeLists.txt")).unwrap_or_default();
    let mut vars = std::collections::HashMap::new();
    vars.insert(
        "CMAKE_ASC_ARCHITECTURES".to_string(),
        "dav-2201".to_string(),
    );
    if let Some(n) = scenario {
        vars.insert("SCENARIO_NUM".to_string(), n.to_string());
    }
    // Per open `if`: whether its taken branch is running, and whether a branch was taken.
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let arch_branch = |cond: &str| -> Option<bool> {
        let at = cond.find("CMAKE_ASC_ARCHITECTURES STREQUAL")?;
        Some(cond[at..].contains("\"dav-2201\""))
    };
    let mut defs = Vec::new();
    let mut pos = 0;
    while let Some(rel) = cmake[pos..].find('(') {
        let open = pos + rel;
        let word_start = cmake[..open]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let cmd = cmake[word_start..open].to_ascii_lowercase();
        let Some(close) = cmake[open..].find(')').map(|c| open + c) else {
            break;
        };
        let args = &cmake[open + 1..close];
        pos = close + 1;
        // A `#` comment on the line hides the command.
        if cmake[..word_start]
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .contains('#')
        {
            continue;
        }
        let running = stack.iter().all(|&(run, _)| run);
        match cmd.as_str() {
            "if" => {
                let take = arch_branch(args).unwrap_or(true);
                stack.push((take, take));
            }
            "elseif" => {
                if let Some(top) = stack.last_mut() {
                    let take = !top.1 && arch_branch(args).unwrap_or(true);
                    *top = (take, top.1 || take);
                }
            }
            "else" => {
                if let Some(top) = stack.last_mut() {
                    *top = (!top.1, true);
                }
            }
            "endif" => {
                stack.pop();
            }
            "set" if running => {
                let mut w = args.split_whitespace();
                if let (Some(name), Some(value)) = (w.next(), w.next()) {
                    vars.entry(name.to_string())
                        .or_insert_with(|| value.trim_matches('"').to_string());
                }
            }
            "add_definitions" | "target_compile_definitions" if running => {
                for w in args.split_whitespace() {
                    let w = w.strip_prefix("-D").unwrap_or(w);
                    let Some((name, value)) = w.split_once('=') else {
                        continue;
                    };
                    let mut v = value.to_string();
                    for (k, x) in &vars {
                        v = v.replace(&format!("${{{k}}}"), x);
                    }
                    defs.push((name.to_string(), v));
                }
            }
            _ => {}
        }
    }
    defs
}
