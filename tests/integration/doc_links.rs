//! Every relative link in the README, BENCHMARKS.md and docs/*.md resolves: the file or
//! directory it names exists, and a `#fragment` names a heading of the Markdown file it points
//! into (GitHub's anchors). Links to other sites are not followed.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The Markdown files whose links are checked, relative to the repository root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    let mut pages: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The lines of `text` outside fenced code blocks, with inline code spans removed, numbered
/// from 1.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        for (j, part) in line.split('`').enumerate() {
            if j % 2 == 0 {
                kept.push_str(part);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// The targets of the `[text](target)` links (and images) of one line.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                targets.push(after[..end].trim().to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_` kept, spaces made
/// `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading's later ones get `-1`, `-2`,
/// ... as on GitHub).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// Why `target`, linked from `doc`, does not resolve, if it does not.
fn broken(doc: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let fragment = fragment?;
    if file.extension().is_none_or(|x| x != "md") {
        return None;
    }
    let text = fs::read_to_string(&file).expect("a linked Markdown file");
    if anchors(&text).iter().any(|a| a == fragment) {
        None
    } else {
        Some(format!("{} has no heading #{fragment}", file.display()))
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut links = 0;
    let mut failures = Vec::new();
    for doc in documents(root) {
        let text = fs::read_to_string(&doc).expect("a document");
        for (line, prose) in prose_lines(&text) {
            for target in link_targets(&prose) {
                links += 1;
                if let Some(why) = broken(&doc, &target) {
                    let name = doc.strip_prefix(root).unwrap().display();
                    failures.push(format!("{name}:{line}: ({target}): {why}"));
                }
            }
        }
    }
    assert!(links > 20, "found only {links} links: is the scan broken?");
    assert!(
        failures.is_empty(),
        "broken links:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_checker_sees_what_it_should() {
    assert_eq!(
        link_targets("see [a](docs/a.md) and ![b](b.svg#x)"),
        ["docs/a.md", "b.svg#x"]
    );
    assert_eq!(
        prose_lines("a `[x](gone.md)` b\n```\n[y](gone.md)\n```\n[z](here.md)"),
        [(1, "a  b".to_string()), (5, "[z](here.md)".to_string())]
    );
    assert_eq!(
        slug(" The twin's checkers, and what they cost"),
        "the-twins-checkers-and-what-they-cost"
    );
    assert_eq!(
        slug("aiv-comm on the CPU twin vs Open MPI (`run.sh`)"),
        "aiv-comm-on-the-cpu-twin-vs-open-mpi-runsh"
    );
    assert_eq!(anchors("# A\n## A\n```\n# A\n```\n# B"), ["a", "a-1", "b"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = root.join("README.md");
    assert!(broken(&readme, "docs/nothing-here.md").is_some());
    assert!(broken(&readme, "docs/twin.md#no-such-heading").is_some());
    assert!(broken(&readme, "docs/twin.md#the-device-it-models").is_none());
    assert!(broken(&readme, "https://example.com/x").is_none());
}
