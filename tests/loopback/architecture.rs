//! The shape of the code, checked where the compiler cannot: which crates
//! the workspace's crates depend on (the layers), and inside each crate,
//! which source files use which, with no circle of files that use each
//! other and no two rooms (top-level modules; each dialect's wing apart)
//! that reach each other. That a lower crate never names a higher one the
//! compiler keeps: a crate cannot name what it does not depend on.
//!
//! A file uses another when it names a path into it: `crate::a::b::Item`,
//! `super::x`, `self::y` (in `use` lines or inline), resolved to the file
//! of the longest module prefix that exists. A circle is a set of files
//! that reach each other through such uses (a strongly connected component
//! of more than one file); a module that needs its parent and its parent
//! it through such a path is one too. A `mod.rs` naming its own children
//! bare (`acceptor::run`) is not counted: a module's face may run its
//! rooms, whose shared types it holds. `#[cfg(test)] mod tests` blocks are
//! left out: tests may look anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, by its module path.
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
                if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                    parts.pop();
                }
                out.insert(parts, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The source without its `#[cfg(test)] mod tests` block (by convention
/// the file's last item) and without comments (a doc link is not a use).
fn without_tests(src: &str) -> String {
    let code = match src.find("#[cfg(test)]\nmod tests") {
        Some(i) => &src[..i],
        None => src,
    };
    code.lines()
        .map(|l| match l.find("//") {
            // Not inside a string: good enough for this code base, whose
            // strings hold no `crate::` paths after a `//`.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths `src` names from `crate::`, `super::` or `self::`, each as its
/// segments (lowercase module-like segments only; an item ends the path).
fn named_paths(src: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = src[from..].find(start).map(|i| i + from) {
            from = i + start.len();
            // Part of a longer word (`my_crate::`) or path (`super::super::`)?
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':') {
                continue;
            }
            let mut base: Vec<String> = match start {
                "crate::" => Vec::new(),
                "super::" => module[..module.len().saturating_sub(1)].to_vec(),
                _ => module.to_vec(),
            };
            let rest = &src[from..];
            // `a::b::{c, d::e}` or `a::b::Item`.
            let mut prefix = Vec::new();
            let mut tail = rest;
            loop {
                let seg: String = tail
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if seg.is_empty() {
                    break;
                }
                let after = &tail[seg.len()..];
                if !after.starts_with("::") {
                    prefix.push(seg);
                    break;
                }
                if seg == "super" {
                    base.pop();
                } else {
                    prefix.push(seg);
                }
                tail = &after[2..];
            }
            let mut whole = base.clone();
            whole.extend(prefix.iter().filter(|s| is_module_like(s)).cloned());
            out.push(whole.clone());
            if let Some(group) = tail.strip_prefix('{') {
                let end = matching_brace(group);
                for item in split_top(&group[..end]) {
                    let mut p = whole.clone();
                    for seg in item.split(" as ").next().unwrap_or("").split("::") {
                        let seg = seg.trim();
                        if seg == "self" || seg.starts_with('{') {
                            break;
                        }
                        if !is_module_like(seg) {
                            break;
                        }
                        p.push(seg.to_string());
                    }
                    out.push(p);
                }
            }
        }
    }
    out
}

fn is_module_like(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut last, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[last..i].trim());
                last = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[last..].trim());
    out.into_iter().filter(|x| !x.is_empty()).collect()
}

/// Which files each file uses, as paths relative to `src/`.
fn uses(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(root);
    let rel = |p: &Path| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let resolve = |path: &[String]| -> Option<String> {
        (0..=path.len())
            .rev()
            .find_map(|n| mods.get(&path[..n]))
            .map(|p| rel(p))
    };
    let mut out = BTreeMap::new();
    for (module, file) in &mods {
        let src = std::fs::read_to_string(file).unwrap();
        let me = rel(file);
        let deps: BTreeSet<String> = named_paths(&without_tests(&src), module)
            .iter()
            .filter(|p| !p.is_empty())
            .filter_map(|p| resolve(p))
            .filter(|d| *d != me && d != "lib.rs")
            .collect();
        out.insert(me, deps);
    }
    out
}

/// The circles: strongly connected components of more than one file.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // Kosaraju: order by finish time, then walk the reversed graph.
    fn visit(v: &str, g: &BTreeMap<String, BTreeSet<String>>, seen: &mut BTreeSet<String>, order: &mut Vec<String>) {
        let mut stack = vec![(v.to_string(), false)];
        while let Some((v, done)) = stack.pop() {
            if done {
                order.push(v);
                continue;
            }
            if !seen.insert(v.clone()) {
                continue;
            }
            stack.push((v.clone(), true));
            for w in g.get(&v).into_iter().flatten() {
                if !seen.contains(w) {
                    stack.push((w.clone(), false));
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for v in graph.keys() {
        visit(v, graph, &mut seen, &mut order);
    }
    let mut rev: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (v, ws) in graph {
        for w in ws {
            rev.entry(w.clone()).or_default().insert(v.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for v in order.iter().rev() {
        if assigned.contains(v) {
            continue;
        }
        let mut comp = BTreeSet::new();
        let mut stack = vec![v.clone()];
        while let Some(x) = stack.pop() {
            if !assigned.insert(x.clone()) {
                continue;
            }
            comp.insert(x.clone());
            for w in rev.get(&x).into_iter().flatten() {
                if !assigned.contains(w) {
                    stack.push(w.clone());
                }
            }
        }
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

/// The source folders of every crate of the workspace: the binary's and
/// each of `crates/`.
fn src_roots() -> Vec<PathBuf> {
    let top = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![top.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(top.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    out.extend(crates);
    out
}

#[test]
fn no_two_files_use_each_other() {
    for root in src_roots() {
        let found = circles(&uses(&root));
        assert!(
            found.is_empty(),
            "import circles in {} (files that reach each other through their uses): {found:#?}\n\
             break each by moving what both need to a module below them",
            root.display()
        );
    }
}

/// The room a file belongs to: its top-level module, or for the dialect
/// wings, `dialect/<wing>`.
fn room(file: &str) -> String {
    let parts: Vec<&str> = file.trim_end_matches(".rs").split('/').collect();
    match parts.as_slice() {
        ["dialect", wing, _, ..] => format!("dialect/{wing}"),
        [top, ..] => top.to_string(),
        [] => String::new(),
    }
}

/// The rooms each room uses (through any of its files).
fn rooms(files: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, deps) in files {
        let r = room(from);
        let entry = out.entry(r.clone()).or_default();
        entry.extend(deps.iter().map(|d| room(d)).filter(|d| *d != r));
    }
    out
}

#[test]
fn no_two_rooms_reach_each_other() {
    // Inside a crate the rooms stand in layers too: the shared server
    // hands clients to the wings through `server::Wings` and never names
    // them; the wings and the modes sit above what they use.
    for root in src_roots() {
        let found = circles(&rooms(&uses(&root)));
        assert!(
            found.is_empty(),
            "rooms of {} (top-level modules, a dialect's wing each) that reach each other: {found:#?}",
            root.display()
        );
    }
}

/// Each package's normal dependencies, and every package each workspace
/// crate links (those, transitively), from `cargo metadata`.
type Graph = BTreeMap<String, BTreeSet<String>>;
fn dependencies() -> (Graph, Graph) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let name: BTreeMap<&str, &str> = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut direct: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for n in m["resolve"]["nodes"].as_array().unwrap() {
        let normal = n["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()));
        direct.insert(
            name[n["id"].as_str().unwrap()].to_string(),
            normal.map(|d| name[d["pkg"].as_str().unwrap()].to_string()).collect(),
        );
    }
    let mut out = BTreeMap::new();
    for c in direct.keys().filter(|c| c.starts_with("wirespeed")) {
        let mut seen = BTreeSet::new();
        let mut stack = vec![c.clone()];
        while let Some(x) = stack.pop() {
            for d in direct.get(&x).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        out.insert(c.clone(), seen);
    }
    (direct, out)
}

#[test]
fn each_layer_links_only_what_is_below_it() {
    let (direct, linked) = dependencies();
    let forbid = |krate: &str, what: &[&str], why: &str| {
        let deps = &linked[krate];
        let bad: Vec<&&str> = what.iter().filter(|w| deps.contains(**w)).collect();
        assert!(bad.is_empty(), "{krate} links {bad:?}: {why}");
    };
    let above_core = [
        "wirespeed-report",
        "wirespeed-iperf",
        "wirespeed-cli",
        "wirespeed-http",
        "wirespeed-web",
        "wirespeed-rpm-http",
        "wirespeed-quic",
    ];
    let async_http = ["tokio", "hyper", "h2", "rustls", "tokio-rustls", "quinn", "quinn-proto"];
    forbid(
        "wirespeed-core",
        &above_core,
        "the core knows no output, server, web or RPM server",
    );
    forbid(
        "wirespeed-core",
        &async_http,
        "no async runtime or TLS in the measurement core",
    );
    forbid(
        "wirespeed-report",
        &above_core[1..],
        "the outputs know no server, command line, web or RPM server",
    );
    forbid(
        "wirespeed-report",
        &async_http,
        "no async runtime or TLS in the outputs",
    );
    forbid(
        "wirespeed-iperf",
        &above_core[2..],
        "the iperf server and clients know no command line or web",
    );
    forbid("wirespeed-iperf", &async_http, "the data plane is plain threads");
    forbid(
        "wirespeed-cli",
        &above_core[3..],
        "the command lines know no HTTP, web or RPM server",
    );
    forbid(
        "wirespeed-http",
        &[
            "wirespeed-iperf",
            "wirespeed-cli",
            "wirespeed-web",
            "wirespeed-rpm-http",
        ],
        "the HTTP layer serves what it is handed",
    );
    forbid(
        "wirespeed-rpm-http",
        &["wirespeed-web", "wirespeed-cli"],
        "the RPM server and client use the HTTP layer, not the UI",
    );
    // The QUIC crate carries the iperf3 dialect's `--quic` data (it
    // implements the iperf crate's `QuicData`, the iperf crate links no
    // async runtime or TLS), and knows nothing above that.
    forbid(
        "wirespeed-quic",
        &["wirespeed-cli", "wirespeed-http", "wirespeed-web", "wirespeed-rpm-http"],
        "QUIC serves the iperf dialect and the perf protocol, not the command line or the web",
    );
    forbid(
        "wirespeed-iperf",
        &["wirespeed-quic"],
        "QUIC reaches the iperf3 dialect from above, through QuicData",
    );
    for krate in linked.keys().filter(|k| *k != "wirespeed-web" && *k != "wirespeed") {
        forbid(
            krate,
            &["rusqlite", "libsqlite3-sys"],
            "only the web crate keeps a database",
        );
    }
    let proto: Vec<&String> = direct["wirespeed-proto"]
        .iter()
        .filter(|d| !["serde", "serde_json"].contains(&d.as_str()))
        .collect();
    assert!(
        proto.is_empty(),
        "the protocol crate depends on serde_json alone, not on {proto:?}"
    );
    forbid("wirespeed-sys", &above_core, "the system calls know nothing above them");
    forbid(
        "wirespeed-tls",
        &above_core,
        "the shared TLS pieces know only the core's error type",
    );
}

#[test]
fn the_analysis_sees_a_circle_it_is_shown() {
    let dir = std::env::temp_dir().join(format!("ws-arch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(dir.join("a/mod.rs"), "pub mod x;\nuse crate::b::Thing;\n").unwrap();
    std::fs::write(dir.join("a/x.rs"), "use super::super::b;\n").unwrap();
    std::fs::write(dir.join("b.rs"), "use crate::{a::x::Y, c};\npub struct Thing;\n").unwrap();
    let g = uses(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(g["a/mod.rs"].contains("b.rs"), "{g:?}");
    assert!(g["a/x.rs"].contains("b.rs"), "{g:?}");
    assert!(g["b.rs"].contains("a/x.rs"), "{g:?}");
    let c = circles(&g);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0], ["a/x.rs", "b.rs"].iter().map(|s| s.to_string()).collect());
    let r = circles(&rooms(&g));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0], ["a", "b"].iter().map(|s| s.to_string()).collect());
    assert_eq!(room("dialect/iperf2/server/tcp.rs"), "dialect/iperf2");
    assert_eq!(room("dialect/mod.rs"), "dialect");
    assert_eq!(room("app.rs"), "app");
}
