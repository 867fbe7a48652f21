//! The sidecar's layout, checked: its layers ([`LAYERS`]: nothing imports a
//! layer above its own, and no endpoint imports another), and no module, nor
//! any folder, imports one that imports it back, directly or through others:
//! on such a circle every module depends on all the others, so none can be
//! read, tested or changed alone. The sidecar had one
//! (`auth` -> `config` -> `vectordb::query_batch` -> `metrics` -> `state`
//! -> `auth`); `the_circle_of_the_issue_is_found` shows the check catches
//! it. A failure names each group of modules on a circle and its shortest
//! circle, each step with the file and line that names the next module.
//!
//! Each module is a node: each file (`auth/mod.rs` is `crate::auth`,
//! `auth/rate.rs` is `crate::auth::rate`), and each inline module, such as a
//! file's `mod tests`. Its edges are the modules its paths name, in `use`
//! trees and in code: `crate::…`, `super::…`, `self::…`, a child module's
//! name, or a module's name a `use` brought in (`use crate::{auth,
//! vectordb}`, then `vectordb::search::…`), each taken to the deepest module
//! it names. Neither declaring a submodule (`mod x;`) nor a `use` that only
//! brings in a module's name is an edge; comments (doc links included) and
//! literals are skipped. Read by hand: the crate has no Rust parser among its
//! dependencies, and this needs none.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let cycles = cycles(&sidecar());
    assert!(
        cycles.is_empty(),
        "modules that import each other, each with where it names the next:\n{}",
        cycles.join("\n")
    );
}

/// The sidecar's layers, lowest first. A module may import modules of its
/// own layer and of the layers below, never of one above; and endpoints,
/// which are alone on their layer, import none of each other: what two of
/// them share belongs a layer down. Each top-level module, whether a file
/// or a folder, is in one layer; a folder's modules are in its layer.
const LAYERS: [Layer; 5] = [
    Layer {
        name: "base",
        modules: &["config", "abandon"],
        siblings: true,
    },
    Layer {
        name: "shared services",
        modules: &[
            "error",
            "db",
            "metrics",
            "reads",
            "auth",
            "query_vectors",
            "state",
        ],
        siblings: true,
    },
    Layer {
        name: "building blocks",
        modules: &["json", "extract", "cors", "refusals", "outcome"],
        siblings: true,
    },
    Layer {
        name: "endpoints",
        modules: &["health", "api_key", "transaction", "identity", "vectordb"],
        siblings: false,
    },
    Layer {
        name: "wiring",
        modules: &["openapi", "app", "serve", "admin", "module_cycles"],
        siblings: true,
    },
];

struct Layer {
    name: &'static str,
    modules: &'static [&'static str],
    /// Whether its modules may import each other.
    siblings: bool,
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let files = sidecar_files();
    // `auth/mod.rs`, `auth/rate.rs` and `auth.rs` are all of `auth`.
    let modules: BTreeSet<&str> = files
        .iter()
        .filter_map(|(path, _)| path.split(['/', '.']).next())
        .filter(|&m| m != "main")
        .collect();
    let unplaced: Vec<&&str> = modules.iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer (module_cycles::LAYERS): {unplaced:?}"
    );
    let stale: Vec<&&str> = LAYERS
        .iter()
        .flat_map(|l| l.modules)
        .filter(|m| !modules.contains(*m))
        .collect();
    assert!(stale.is_empty(), "LAYERS names no such module: {stale:?}");
    let wrong = layer_breaks(&Graph::of(&files));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Folders are nodes: no two top-level modules import each other, directly
/// or through others, even where no two files do.
#[test]
fn no_folder_imports_one_that_imports_it_back() {
    let cycles = cycles(&sidecar().folders());
    assert!(
        cycles.is_empty(),
        "folders that import each other:\n{}",
        cycles.join("\n")
    );
}

/// The four arrows of issue 62, each put back into today's sources, are
/// each refused: by the layers or, for the one inside a layer, as a circle
/// of folders.
#[test]
fn the_arrows_of_the_issue_are_refused() {
    let restored = [
        // state.rs took the query embedder from the search endpoint.
        ("state.rs", "use crate::vectordb::search::Search;"),
        // auth/ and state.rs imported each other (AppState / Limits).
        ("auth/mod.rs", "use crate::state::AppState;"),
        // The /api/key endpoint and openapi.rs imported each other.
        ("api_key.rs", "use crate::openapi::ApiDoc;"),
        // identity/schema.rs took Confidence and Outcome from transaction.
        (
            "identity/schema.rs",
            "use crate::transaction::schema::Assessment;",
        ),
    ];
    for (path, line) in restored {
        let mut files = sidecar_files();
        let file = files.iter_mut().find(|(p, _)| p == path).unwrap();
        file.1.push_str(&format!("\n{line}\n"));
        let graph = Graph::of(&files);
        let found: Vec<String> = layer_breaks(&graph)
            .into_iter()
            .chain(cycles(&graph.folders()))
            .collect();
        assert!(!found.is_empty(), "{path}: `{line}` passed");
    }
    let graph = sidecar();
    assert!(layer_breaks(&graph).is_empty() && cycles(&graph.folders()).is_empty());
}

/// The layer of a top-level module, by its index in [`LAYERS`].
fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.modules.contains(&module))
}

/// Each import that climbs a layer or joins two endpoints, with where.
fn layer_breaks(graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (from, to) in &graph.edges {
        for (to, at) in to {
            let (Some(a), Some(b)) = (top(from), top(to)) else {
                continue;
            };
            let (Some(la), Some(lb)) = (layer_of(a), layer_of(b)) else {
                continue;
            };
            if lb > la {
                out.push(format!(
                    "{from} ({}) imports {to} ({}), a layer above: {at}",
                    LAYERS[la].name, LAYERS[lb].name
                ));
            } else if la == lb && a != b && !LAYERS[la].siblings {
                out.push(format!(
                    "{from} imports {to}, both {}: {at}",
                    LAYERS[la].name
                ));
            }
        }
    }
    out
}

/// `crate::vectordb::search` is under `vectordb`; the crate root is under none.
fn top(module: &str) -> Option<&str> {
    module.strip_prefix("crate::")?.split("::").next()
}

/// The circle as the issue found it, in files of one line each.
#[test]
fn the_circle_of_the_issue_is_found() {
    let files = [
        (
            "main.rs",
            "mod auth; mod config; mod metrics; mod state; mod vectordb;",
        ),
        ("auth/mod.rs", "use crate::config::LimitArgs;"),
        (
            "config.rs",
            "#[arg(default_value_t = crate::vectordb::query_batch::DEFAULT_BATCH)] x: u8,",
        ),
        ("vectordb/mod.rs", "pub mod query_batch;"),
        (
            "vectordb/query_batch.rs",
            "use crate::metrics::{self, Metrics};",
        ),
        ("metrics.rs", "fn f(s: State<crate::state::AppState>) {}"),
        ("state.rs", "use crate::{auth::Limits, vectordb};"),
    ]
    .map(|(path, text)| (path.to_owned(), text.to_owned()));
    let cycles = cycles(&Graph::of(&files));
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let modules: Vec<&str> = cycles[0]
        .split_once(": ")
        .unwrap()
        .1
        .split(" -> ")
        .map(|step| step.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        modules,
        [
            "crate::auth",
            "crate::config",
            "crate::vectordb::query_batch",
            "crate::metrics",
            "crate::state",
            "crate::auth"
        ]
    );
}

/// Comments, strings, lifetimes, a child module's name, `super`, a module
/// named by `use`, and the module a test is in.
#[test]
fn paths_are_read_where_code_names_them() {
    let files = [
        ("main.rs", "mod a; mod b;"),
        (
            "a/mod.rs",
            r##"mod inner; //! crate::b
            /// [`X`](crate::b::X)
            fn f<'a>(x: &'a str) -> char { let _ = ("crate::b", r#"crate::b"#); '"' }
            fn g() { inner::h() }
            #[cfg(test)] mod tests { use super::*; use crate::{b::{self as bee}}; fn t() { bee::deep::f() } }"##,
        ),
        ("a/inner.rs", "pub fn h() { super::f(\"\") }"),
        ("b/mod.rs", "pub mod deep;"),
        ("b/deep.rs", "pub fn f() {}"),
    ]
    .map(|(path, text)| (path.to_owned(), text.to_owned()));
    let graph = Graph::of(&files);
    let edges: BTreeSet<(&str, &str)> = graph
        .edges
        .iter()
        .flat_map(|(from, to)| to.keys().map(move |to| (from.as_str(), to.as_str())))
        .collect();
    assert_eq!(
        edges,
        BTreeSet::from([
            ("crate::a", "crate::a::inner"),
            ("crate::a::inner", "crate::a"),
            ("crate::a::tests", "crate::a"),
            ("crate::a::tests", "crate::b::deep"),
        ])
    );
    assert_eq!(cycles(&graph).len(), 1);
}

/// The graph of the sidecar's sources.
fn sidecar() -> Graph {
    Graph::of(&sidecar_files())
}

/// The sidecar's sources, as paths relative to `src` and their text.
fn sidecar_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&src, &src, &mut files);
    assert!(files.len() > 10, "no sources under {}", src.display());
    files
}

/// The `.rs` files under `dir`, as paths relative to `src` and their text.
fn read_tree(src: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(src, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).unwrap().to_string_lossy().into();
            files.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Modules and, for each, the modules it names with where it first does.
struct Graph {
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn of(files: &[(String, String)]) -> Graph {
        let walked: Vec<(&str, Walked)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), walk(&module_of(path), &tokens(text))))
            .collect();
        let modules: BTreeSet<String> = walked
            .iter()
            .flat_map(|(_, w)| w.modules.iter().cloned())
            .collect();
        // The modules `use` brings into scope by name, such as `auth` after
        // `use crate::{auth, cors}`: (where, name) to the module.
        let mut names = BTreeMap::new();
        for (inner, path) in walked.iter().flat_map(|(_, w)| &w.paths) {
            if let (Some(name), Some((to, true))) = (
                &path.used_as,
                resolve(&modules, &BTreeMap::new(), inner, &path.segments),
            ) {
                names.insert((inner.clone(), name.clone()), to);
            }
        }
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, walked) in &walked {
            for (inner, path) in &walked.paths {
                let Some((to, whole)) = resolve(&modules, &names, inner, &path.segments) else {
                    continue;
                };
                // A `use` of a module whole only names it: the paths
                // through that name are the edges.
                let named_only = whole && path.used_as.is_some();
                if to != *inner && to != "crate" && !named_only {
                    edges
                        .entry(inner.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| {
                            format!("{file}:{} `{}`", path.line, path.segments.join("::"))
                        });
                }
            }
        }
        Graph { edges }
    }

    /// The graph of the top-level modules: an edge wherever a module of one
    /// names a module of another, with the first place it does.
    fn folders(&self) -> Graph {
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (from, to) in &self.edges {
            for (to, at) in to {
                if let (Some(a), Some(b)) = (top(from), top(to)) {
                    if a != b {
                        edges
                            .entry(format!("crate::{a}"))
                            .or_default()
                            .entry(format!("crate::{b}"))
                            .or_insert_with(|| at.clone());
                    }
                }
            }
        }
        Graph { edges }
    }
}

/// `auth/mod.rs` is `crate::auth`, `auth/rate.rs` `crate::auth::rate`.
fn module_of(path: &str) -> String {
    let path = path.trim_end_matches(".rs");
    let path = path.strip_suffix("/mod").unwrap_or(path);
    match path {
        "main" | "lib" => "crate".to_owned(),
        _ => format!("crate::{}", path.replace('/', "::")),
    }
}

/// The deepest module `segments` name from `module`, `names` being the
/// modules `use` brought into scope, and whether they name a module
/// whole; None for a path of no module of the crate (another crate's, a
/// local item's).
fn resolve(
    modules: &BTreeSet<String>,
    names: &BTreeMap<(String, String), String>,
    module: &str,
    segments: &[String],
) -> Option<(String, bool)> {
    let first = segments.first()?.as_str();
    let (mut at, mut rest) = match first {
        "crate" => ("crate".to_owned(), &segments[1..]),
        "self" => (module.to_owned(), &segments[1..]),
        "super" => (module.to_owned(), segments),
        _ => match names.get(&(module.to_owned(), first.to_owned())) {
            Some(named) => (named.clone(), &segments[1..]),
            None if modules.contains(&format!("{module}::{first}")) => {
                (module.to_owned(), segments)
            }
            None => return None,
        },
    };
    while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
        at = at.rsplit_once("::")?.0.to_owned();
        rest = tail;
    }
    for segment in rest {
        let child = format!("{at}::{segment}");
        if !modules.contains(&child) {
            return Some((at, false));
        }
        at = child;
    }
    Some((at, true))
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// A path as written, and in a `use` the name it brings into scope (its
/// last segment, or the one after `as`).
struct Written {
    segments: Vec<String>,
    line: usize,
    used_as: Option<String>,
}

/// What a file holds: its modules (itself and those inline in it), and its
/// paths, each with the innermost module it is written in; a `use` group
/// gives one path per leaf.
struct Walked {
    modules: Vec<String>,
    paths: Vec<(String, Written)>,
}

fn walk(module: &str, tokens: &[(Token, usize)]) -> Walked {
    let mut walked = Walked {
        modules: vec![module.to_owned()],
        paths: Vec::new(),
    };
    // The modules open, each with the brace depth it opened at.
    let mut open: Vec<(String, usize)> = vec![(module.to_owned(), 0)];
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let inner = &open.last().unwrap().0;
        match &tokens[i].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if open.len() > 1 && open.last().unwrap().1 == depth {
                    open.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some((Token::Ident(name), _)), Some((Token::Punct('{'), _))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    let name = format!("{inner}::{name}");
                    walked.modules.push(name.clone());
                    open.push((name, depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(_) if i == 0 || tokens[i - 1].0 != Token::PathSep => {
                let used = i > 0 && tokens[i - 1].0 == Token::Ident("use".to_owned());
                let mut paths = Vec::new();
                let next = path_tree(tokens, i, &mut Vec::new(), &mut paths);
                for mut path in paths {
                    if !used {
                        path.used_as = None;
                    }
                    // One segment alone is a name, not a path.
                    if path.segments.len() > 1 || path.used_as.is_some() {
                        walked.paths.push((inner.clone(), path));
                    }
                }
                if next > i + 1 {
                    i = next;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    walked
}

/// Reads the path or `use` tree at `i` after `prefix`, pushing each leaf
/// to `paths`; returns where it ends.
fn path_tree(
    tokens: &[(Token, usize)],
    mut i: usize,
    prefix: &mut Vec<String>,
    paths: &mut Vec<Written>,
) -> usize {
    let token = |i: usize| tokens.get(i).map(|t| &t.0);
    let base = prefix.len();
    let line = tokens[i].1;
    loop {
        match token(i) {
            Some(Token::Ident(segment)) => prefix.push(segment.clone()),
            Some(Token::Punct('*')) => prefix.push("*".to_owned()),
            Some(Token::Punct('{')) => {
                i += 1;
                while !matches!(token(i), None | Some(Token::Punct('}'))) {
                    i = path_tree(tokens, i, prefix, paths);
                    if token(i) == Some(&Token::Punct(',')) {
                        i += 1;
                    }
                }
                prefix.truncate(base);
                return i + 1;
            }
            _ => break,
        }
        i += 1;
        if token(i) != Some(&Token::PathSep) {
            break;
        }
        i += 1;
    }
    let mut segments = prefix.clone();
    if segments.last().is_some_and(|s| s == "self") && segments.len() > base {
        segments.pop();
    }
    let mut used_as = segments.last().filter(|s| *s != "*").cloned();
    if let (Some(Token::Ident(word)), Some(Token::Ident(name))) = (token(i), token(i + 1)) {
        if word == "as" {
            used_as = Some(name.clone());
            i += 2;
        }
    }
    paths.push(Written {
        segments,
        line,
        used_as,
    });
    prefix.truncate(base);
    i
}

/// The identifiers, `::` and other punctuation of `text`, each with its
/// line; comments, strings, characters, numbers and lifetimes left out.
fn tokens(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Skips a quoted literal whose opening quote is at `i`; returns past its end.
    let quoted = |mut i: usize, quote: char, line: &mut usize| {
        i += 1;
        while i < chars.len() && chars[i] != quote {
            if chars[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut nested = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    nested += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    nested -= 1;
                    i += 2;
                    if nested == 0 {
                        break;
                    }
                } else {
                    if at(i) == '\n' {
                        line += 1;
                    }
                    i += 1;
                    if i >= chars.len() {
                        break;
                    }
                }
            }
        } else if c == '"' {
            i = quoted(i, '"', &mut line);
        } else if c == '\'' {
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = quoted(i, '\'', &mut line);
            } else {
                // A lifetime or label.
                i += 1;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while at(i).is_alphanumeric()
                || at(i) == '_'
                || (at(i) == '.' && at(i + 1).is_ascii_digit())
            {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '"' | '#'))) {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                while i < chars.len()
                    && !(chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#'))
                {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 1 + hashes;
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = quoted(i, '"', &mut line);
            } else if word == "b" && at(i) == '\'' {
                i = quoted(i, '\'', &mut line);
            } else if word == "r" && at(i) == '#' {
                // A raw identifier: `r#type`.
                i += 1;
            } else {
                out.push((Token::Ident(word), line));
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// One line per group of modules that import each other (a strongly
/// connected component): its modules, and its shortest circle, each step
/// with where it names the next.
fn cycles(graph: &Graph) -> Vec<String> {
    let reach: BTreeMap<&str, BTreeMap<&str, &str>> = graph
        .edges
        .keys()
        .map(|n| (n.as_str(), ways_from(graph, n)))
        .collect();
    let leads = |from: &str, to: &str| reach.get(from).is_some_and(|r| r.contains_key(to));
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for &start in reach.keys() {
        if done.contains(start) || !leads(start, start) {
            continue;
        }
        let group: Vec<&str> = reach[start]
            .keys()
            .copied()
            .filter(|&n| leads(n, start))
            .collect();
        done.extend(group.iter().copied());
        // A member's shortest way back to itself stays in the group.
        let shortest = group
            .iter()
            .map(|&member| way(&reach[member], member, member))
            .min_by_key(Vec::len)
            .unwrap();
        let steps: Vec<String> = shortest
            .windows(2)
            .map(|pair| format!("{} ({})", pair[0], graph.edges[pair[0]][pair[1]]))
            .chain(std::iter::once(shortest[0].to_owned()))
            .collect();
        out.push(format!(
            "{} import each other, as in: {}",
            group.join(", "),
            steps.join(" -> ")
        ));
    }
    out
}

/// The modules `from` leads to, each with the one before it on a shortest
/// way there (breadth first).
fn ways_from<'g>(graph: &'g Graph, from: &'g str) -> BTreeMap<&'g str, &'g str> {
    let mut came_from = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(node) = queue.pop_front() {
        for to in graph.edges.get(node).into_iter().flat_map(|to| to.keys()) {
            if !came_from.contains_key(to.as_str()) {
                came_from.insert(to.as_str(), node);
                queue.push_back(to);
            }
        }
    }
    came_from
}

/// The way from `from` to `to` that `ways_from(from)` found.
fn way<'g>(came_from: &BTreeMap<&'g str, &'g str>, from: &'g str, to: &'g str) -> Vec<&'g str> {
    let mut way = vec![to];
    let mut node = came_from[to];
    while node != from {
        way.push(node);
        node = came_from[node];
    }
    way.push(from);
    way.reverse();
    way
}
