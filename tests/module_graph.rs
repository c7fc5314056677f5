//! No module cycles: the modules of the core (src/), the C ABI (ffi/src) and the Python
//! binding (python/src) depend on each other in one direction only, at the top level
//! (`audio`, `context`, `engine`, ...) and inside each of them (`engine::decode` and
//! `engine::beam`, ...). Read from the source: every `crate::a::b` path, every
//! `use crate::{a, b::c}` group and every `super::x` path outside `#[cfg(test)]`
//! modules and comments. Prints the top-level graph of src/.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;
type Graph = BTreeMap<Module, BTreeSet<Module>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file defines: `src/engine/decode.rs` -> `[engine, decode]`.
fn module_of(root: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(root).expect("under the root");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    parts
}

/// The code of a file without its comments and its `#[cfg(test)] mod tests`.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Identifiers (lowercase: modules) that follow `prefix` in `code`, each with the path
/// segments after it: `crate::engine::decode::x` gives `[engine, decode, x]`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                found.push(segments(item.trim()));
            }
            continue;
        }
        found.push(segments(rest));
    }
    found.retain(|path| !path.is_empty());
    found
}

/// The leading lowercase path segments of `text` (`engine::decode::Decoded` ->
/// `[engine, decode]`).
fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split("::") {
        let ident: String = part
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() || !ident.starts_with(|c: char| c.is_ascii_lowercase()) {
            break;
        }
        let whole = ident.len() == part.trim_end().len();
        out.push(ident);
        if !whole {
            break;
        }
    }
    out
}

/// Each module's dependencies on other modules of the crate, at `depth` (1: top level;
/// 2: inside each top-level module).
fn graph(root: &Path, depth: usize) -> Graph {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let module = module_of(root, &file);
        if module.len() < depth || module.iter().any(|m| m == "tests" || m == "bin") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).expect("read source"));
        let mut targets: Vec<Module> = paths_after(&code, "crate::");
        let parent = &module[..module.len() - 1];
        for path in paths_after(&code, "super::") {
            let mut absolute = parent.to_vec();
            absolute.extend(path);
            targets.push(absolute);
        }
        let from: Module = module[..depth].to_vec();
        for target in targets {
            if target.len() < depth || target[..depth] == from[..] {
                continue;
            }
            if depth > 1 && target[..depth - 1] != from[..depth - 1] {
                continue;
            }
            graph
                .entry(from.clone())
                .or_default()
                .insert(target[..depth].to_vec());
        }
    }
    graph
}

/// A cycle of `graph`, if it has one.
fn find_cycle(graph: &Graph) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &Graph,
        done: &mut BTreeSet<Module>,
        path: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

fn name(module: &Module) -> String {
    module.join("::")
}

#[test]
fn modules_depend_on_each_other_in_one_direction() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for crate_root in ["src", "ffi/src", "python/src"] {
        let root = repo.join(crate_root);
        for depth in [1, 2] {
            let graph = graph(&root, depth);
            assert!(
                !graph.is_empty() || depth == 2,
                "{crate_root}: no modules read"
            );
            if let Some(cycle) = find_cycle(&graph) {
                let cycle: Vec<String> = cycle.iter().map(name).collect();
                panic!("{crate_root}: a module cycle: {}", cycle.join(" -> "));
            }
        }
    }
    for (module, targets) in graph(&repo.join("src"), 1) {
        let targets: Vec<String> = targets.iter().map(name).collect();
        println!("{} -> {}", name(&module), targets.join(", "));
    }
}

#[test]
fn the_reader_sees_a_cycle_when_there_is_one() {
    let code = "use crate::{engine, context::terms::Term};\nuse super::decode::{self, X};\n\
                // crate::commented::out\nfn f() { crate::audio::decode(); }";
    let crate_paths = paths_after(code, "crate::");
    assert_eq!(
        crate_paths,
        [
            vec!["engine".to_owned()],
            vec!["context".into(), "terms".into()],
            vec!["commented".into(), "out".into()],
            vec!["audio".into(), "decode".into()],
        ]
    );
    assert_eq!(code_of(code).matches("commented").count(), 0);
    assert_eq!(paths_after(code, "super::"), [vec!["decode".to_owned()]]);
    let mut graph = Graph::new();
    let (a, b) = (vec!["a".to_owned()], vec!["b".to_owned()]);
    graph.entry(a.clone()).or_default().insert(b.clone());
    assert_eq!(find_cycle(&graph), None);
    graph.entry(b.clone()).or_default().insert(a.clone());
    assert_eq!(find_cycle(&graph), Some(vec![a.clone(), b, a]));
}
