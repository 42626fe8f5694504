//! The declared layering of each crate, checked against the code.
//!
//! `docs/architecture.md` declares, between `<!-- layering -->` and `<!-- /layering -->`, the
//! layers of each crate from the bottom up and the modules in each. This test reads every
//! source file of those crates, finds each path it names inside its own crate (`use
//! crate::...`, `super::...`, `self::...`, a child module's name, and the same paths written
//! inline), and fails on every reference from a module to one in a higher layer. Modules of
//! one layer may refer to each other; the crate root (`lib.rs`, `main.rs`) belongs to the top
//! layer. A `pub use` that re-exports a module's own descendant is not a dependency, and
//! neither is code under `#[cfg(test)]`. So the graph of layers stays acyclic, and the
//! document and the code cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// One crate's layers, bottom first: each a name and its module paths.
#[derive(Debug, Default)]
struct Layering {
    layers: Vec<(String, Vec<ModPath>)>,
}

impl Layering {
    /// The layer of `module`: that of the longest declared prefix; the crate root is above all.
    fn layer_of(&self, module: &[String]) -> Option<usize> {
        if module.is_empty() {
            return self.layers.len().checked_sub(1);
        }
        let mut best: Option<(usize, usize)> = None;
        for (index, (_, modules)) in self.layers.iter().enumerate() {
            for declared in modules {
                if module.starts_with(declared) && best.is_none_or(|(len, _)| declared.len() > len)
                {
                    best = Some((declared.len(), index));
                }
            }
        }
        best.map(|(_, index)| index)
    }

    fn name(&self, layer: usize) -> &str {
        &self.layers[layer].0
    }
}

/// Reads the declarations: `crate NAME` starts a crate, `LAYER: a, b::c` adds a layer.
fn parse_layering(doc: &str) -> BTreeMap<String, Layering> {
    let start = doc.find("<!-- layering -->").expect("docs/architecture.md declares the layering");
    let end = doc.find("<!-- /layering -->").expect("the layering block ends");
    let mut crates = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc[start..end].lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("crate ") {
            current = Some(name.trim().to_string());
            crates.insert(name.trim().to_string(), Layering::default());
        } else if let Some((layer, modules)) = line.split_once(':')
            && let Some(name) = &current
            && !line.starts_with('<')
        {
            let modules = modules
                .split(',')
                .map(|module| module.trim().split("::").map(str::to_string).collect())
                .collect();
            crates.get_mut(name).unwrap().layers.push((layer.trim().to_string(), modules));
        }
    }
    crates
}

/// Every source file of a crate by module path (`lib.rs`: the root; `a/mod.rs` and `a.rs`: `a`).
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, prefix: &ModPath, out: &mut BTreeMap<ModPath, PathBuf>) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if path.is_dir() {
                let mut inner = prefix.clone();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut module = prefix.clone();
                if !matches!(stem, "mod" | "lib" | "main") || !prefix.is_empty() && stem != "mod" {
                    module.push(stem.to_string());
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &Vec::new(), &mut out);
    // `bin/` targets and build scripts are not modules of the library.
    out.retain(|module, _| module.first().is_none_or(|first| first != "bin"));
    out
}

/// The source without comments and without the contents of string and character literals.
fn strip(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if source[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if source[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(len) = raw_string_len(rest) {
            out.push_str("\"\"");
            i += len;
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let literal = rest[1..]
                .char_indices()
                .nth(1)
                .filter(|&(at, c)| c == '\'' && !rest[1..1 + at].starts_with('\\'))
                .map(|(at, _)| at + 2)
                .or_else(|| rest[1..].starts_with('\\').then(|| rest[2..].find('\'').unwrap() + 3));
            match literal {
                Some(len) => {
                    out.push_str("' '");
                    i += len;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) at the start of `text`.
fn raw_string_len(text: &str) -> Option<usize> {
    let after_prefix = text.strip_prefix("br").or_else(|| text.strip_prefix('r'))?;
    let hashes = after_prefix.len() - after_prefix.trim_start_matches('#').len();
    let body = after_prefix[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(text.len() - body.len() + end + close.len())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokenize(source: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = source.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(next_at, next)) = chars.peek() {
                if next.is_alphanumeric() || next == '_' {
                    end = next_at + next.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(Token::Ident(source[at..end].to_string()));
        } else if c == ':' && chars.peek().is_some_and(|&(_, next)| next == ':') {
            chars.next();
            tokens.push(Token::PathSep);
        } else if !c.is_whitespace() {
            tokens.push(Token::Punct(c));
        }
    }
    tokens
}

/// A path named in a file: its segments, the module it was written in (with inline modules),
/// whether it comes from a `pub use`, and the text for the report.
#[derive(Debug)]
struct Named {
    segments: Vec<String>,
    scope: ModPath,
    reexport: bool,
    from_use: bool,
}

fn is_ident(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Ident(ident)) if ident == word)
}

/// Skips the item after a `#[cfg(test)]` at `i`: to its `;`, or past its braces.
fn skip_item(tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            Token::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The paths one file names, and the child modules it declares under `#[cfg(test)]`.
fn named_paths(module: &ModPath, source: &str) -> (Vec<Named>, Vec<ModPath>) {
    let tokens = tokenize(&strip(source));
    let mut named = Vec::new();
    let mut test_modules = Vec::new();
    // Inline modules open around the cursor: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let scope: ModPath =
            module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
        // An item under `#[cfg(test)]` (or `#[cfg(all(test, ...))]`) is test code.
        if tokens[i] == Token::Punct('#')
            && tokens.get(i + 1) == Some(&Token::Punct('['))
            && is_ident(tokens.get(i + 2), "cfg")
        {
            let close = tokens[i..]
                .iter()
                .position(|t| *t == Token::Punct(']'))
                .map_or(tokens.len(), |p| i + p);
            let attribute = &tokens[i + 3..close];
            let test_only = attribute.iter().enumerate().any(|(at, token)| {
                is_ident(Some(token), "test")
                    && !(at >= 2 && matches!(attribute.get(at - 2), Some(Token::Ident(w)) if w == "not" || w == "any"))
            });
            if test_only {
                let mut j = close + 1;
                if is_ident(tokens.get(j), "pub") {
                    j += 1;
                }
                if is_ident(tokens.get(j), "mod")
                    && let Some(Token::Ident(name)) = tokens.get(j + 1)
                    && tokens.get(j + 2) == Some(&Token::Punct(';'))
                {
                    let mut child = scope.clone();
                    child.push(name.clone());
                    test_modules.push(child);
                }
                i = skip_item(&tokens, close + 1);
                continue;
            }
        }
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Ident(word) if word == "mod" => {
                // `mod name {` (or a macro's `mod $name {`) opens an inline module.
                let (name_at, name) = match (tokens.get(i + 1), tokens.get(i + 2)) {
                    (Some(Token::Punct('$')), Some(Token::Ident(name))) => (i + 2, name),
                    (Some(Token::Ident(name)), _) => (i + 1, name),
                    _ => {
                        i += 1;
                        continue;
                    }
                };
                if tokens.get(name_at + 1) == Some(&Token::Punct('{')) {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i = name_at + 2;
                    continue;
                }
            }
            Token::Ident(word) if word == "use" => {
                let reexport = i > 0
                    && (is_ident(tokens.get(i - 1), "pub")
                        || tokens.get(i - 1) == Some(&Token::Punct(')'))
                            && i >= 4
                            && is_ident(tokens.get(i - 4), "pub"));
                let end = tokens[i..]
                    .iter()
                    .position(|t| *t == Token::Punct(';'))
                    .map_or(tokens.len(), |p| i + p);
                let mut paths = Vec::new();
                use_tree(&tokens[i + 1..end], &[], &mut paths);
                for mut segments in paths {
                    if segments.len() > 1 && segments.last().is_some_and(|s| s == "self") {
                        segments.pop();
                    }
                    named.push(Named { segments, scope: scope.clone(), reexport, from_use: true });
                }
                i = end + 1;
                continue;
            }
            Token::Ident(word)
                if tokens.get(i + 1) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1] != Token::PathSep) =>
            {
                let mut segments = vec![word.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep)
                    && let Some(Token::Ident(next)) = tokens.get(j + 1)
                {
                    segments.push(next.clone());
                    j += 2;
                }
                named.push(Named {
                    segments,
                    scope: scope.clone(),
                    reexport: false,
                    from_use: false,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (named, test_modules)
}

/// Expands a use tree (`a::{b, c::{d, e as f}, *}`) into paths.
fn use_tree(tokens: &[Token], prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut i = 0;
    let mut current = prefix.to_vec();
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "as" => i += 1,
            Token::Ident(word) => current.push(word.clone()),
            Token::PathSep => {}
            Token::Punct('{') => {
                let mut depth = 0;
                let mut end = i;
                for (offset, token) in tokens[i..].iter().enumerate() {
                    match token {
                        Token::Punct('{') => depth += 1,
                        Token::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + offset;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                // Split the group at its top-level commas.
                let inner = &tokens[i + 1..end];
                let mut start = 0;
                let mut level = 0;
                for (at, token) in inner.iter().enumerate() {
                    match token {
                        Token::Punct('{') => level += 1,
                        Token::Punct('}') => level -= 1,
                        Token::Punct(',') if level == 0 => {
                            use_tree(&inner[start..at], &current, out);
                            start = at + 1;
                        }
                        _ => {}
                    }
                }
                use_tree(&inner[start..], &current, out);
                current.clear();
                i = end;
            }
            Token::Punct(',') if current.len() > prefix.len() => {
                out.push(std::mem::replace(&mut current, prefix.to_vec()));
            }
            _ => {}
        }
        i += 1;
    }
    if current.len() > prefix.len() {
        out.push(current);
    }
}

/// The module a path names, if it is in this crate: the longest module prefix of the path.
fn resolve(
    named: &Named,
    modules: &BTreeMap<ModPath, PathBuf>,
    root_exports: &BTreeMap<String, ModPath>,
) -> Option<ModPath> {
    let mut absolute: ModPath = match named.segments[0].as_str() {
        "crate" => Vec::new(),
        "super" | "self" => named.scope.clone(),
        first => {
            // A child module of the scope, named without `self::`.
            let mut child = named.scope.clone();
            child.push(first.to_string());
            if !modules.contains_key(&child) {
                return None;
            }
            named.scope.clone()
        }
    };
    let mut rest = &named.segments[..];
    if rest[0] == "crate" || rest[0] == "self" {
        rest = &rest[1..];
    }
    while rest.first().is_some_and(|s| s == "super") {
        absolute.pop();
        rest = &rest[1..];
    }
    absolute.extend(rest.iter().cloned());
    if absolute.first().is_some_and(|first| !modules.contains_key(&vec![first.clone()])) {
        // An item of the crate root: where the root's `pub use` takes it from.
        return Some(root_exports.get(&absolute[0]).cloned().unwrap_or_default());
    }
    (0..=absolute.len())
        .rev()
        .map(|len| absolute[..len].to_vec())
        .find(|prefix| modules.contains_key(prefix))
}

/// The root's re-exports: item name to the module it comes from.
fn root_exports(modules: &BTreeMap<ModPath, PathBuf>) -> BTreeMap<String, ModPath> {
    let mut exports = BTreeMap::new();
    let Some(root) = modules.get(&Vec::new()) else { return exports };
    let (named, _) = named_paths(&Vec::new(), &std::fs::read_to_string(root).unwrap());
    for path in named.iter().filter(|n| n.reexport) {
        let module: ModPath = path
            .segments
            .iter()
            .take(path.segments.len() - 1)
            .filter(|s| *s != "crate")
            .cloned()
            .collect();
        exports.insert(path.segments.last().unwrap().clone(), module);
    }
    exports
}

/// Every reference of a crate that its layering forbids, and how many references were checked.
fn violations(src: &Path, layering: &Layering) -> (Vec<String>, usize) {
    let (mut problems, checked, top) = scan(src, layering);
    problems.extend(circles(&top));
    (problems, checked)
}

/// The circles among a crate's top-level modules: `a` refers to `b` (through any of their
/// files) and `b`, directly or not, to `a`. Files inside one module's folder may refer to each
/// other; two modules may not, even in one layer.
fn circles(top: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for start in top.keys() {
        // Depth-first from `start`'s successors, looking for a way back to it.
        let mut stack: Vec<(String, Vec<String>)> = top[start]
            .iter()
            .map(|next| (next.clone(), vec![start.clone(), next.clone()]))
            .collect();
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            if at == *start {
                // Report each circle once, from its smallest module.
                if path.iter().min() == Some(start) {
                    found.push(format!(
                        "modules refer to each other in a circle: {}",
                        path.join(" -> ")
                    ));
                }
                break;
            }
            if !seen.insert(at.clone()) {
                continue;
            }
            for next in top.get(&at).into_iter().flatten() {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    found
}

/// The layering's violations, the references checked, and the references between top-level
/// modules.
#[allow(clippy::type_complexity)]
fn scan(
    src: &Path,
    layering: &Layering,
) -> (Vec<String>, usize, BTreeMap<String, BTreeSet<String>>) {
    let modules = module_files(src);
    let exports = root_exports(&modules);
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut test_only: BTreeSet<ModPath> = BTreeSet::new();
    let mut per_file = Vec::new();
    let mut upward: BTreeMap<(PathBuf, ModPath), String> = BTreeMap::new();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &modules {
        let (named, tests) = named_paths(module, &std::fs::read_to_string(path).unwrap());
        test_only.extend(tests);
        per_file.push((module, path, named));
    }
    for (module, path, named) in per_file {
        if test_only.iter().any(|test| module.starts_with(test)) {
            continue;
        }
        let Some(from) = layering.layer_of(module) else {
            problems.push(format!(
                "{}: module `{}` is in no declared layer",
                path.display(),
                module.join("::")
            ));
            continue;
        };
        for reference in named {
            let Some(target) = resolve(&reference, &modules, &exports) else { continue };
            if target == *module || reference.reexport && target.starts_with(module) {
                continue;
            }
            checked += 1;
            if let (Some(from_top), Some(to_top)) = (module.first(), target.first())
                && from_top != to_top
            {
                top.entry(from_top.clone()).or_default().insert(to_top.clone());
            }
            let Some(to) = layering.layer_of(&target) else {
                problems.push(format!(
                    "{}: module `{}` is in no declared layer",
                    path.display(),
                    target.join("::")
                ));
                continue;
            };
            if to > from {
                // One line per file and module it must not name: the first path that does.
                upward.entry((path.clone(), target.clone())).or_insert_with(|| {
                    format!(
                        "{}: `{}`{} names `{}` ({}), above its layer ({})",
                        path.display(),
                        reference.segments.join("::"),
                        if reference.from_use { " (use)" } else { "" },
                        if target.is_empty() {
                            "the crate root".to_string()
                        } else {
                            target.join("::")
                        },
                        layering.name(to),
                        layering.name(from),
                    )
                });
            }
        }
    }
    problems.extend(upward.into_values());
    problems.sort();
    problems.dedup();
    (problems, checked, top)
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[test]
fn every_crate_obeys_its_declared_layering() {
    let doc = std::fs::read_to_string(repository().join("docs/architecture.md")).unwrap();
    let crates = parse_layering(&doc);
    for name in ["engine", "sql", "server", "bench"] {
        assert!(crates.contains_key(name), "docs/architecture.md declares no layering for {name}");
    }
    let mut report = String::new();
    for (name, layering) in &crates {
        let (problems, checked) =
            violations(&repository().join("crates").join(name).join("src"), layering);
        // The scan must see the crate's real dependencies, or it checks nothing.
        assert!(checked > 20, "crates/{name}: only {checked} references found");
        for problem in problems {
            writeln!(report, "{problem}").unwrap();
        }
    }
    assert!(
        report.is_empty(),
        "references against the layering of docs/architecture.md:\n{report}"
    );
}

/// The checker itself: it finds an upward reference however it is written, and lets downward
/// ones, re-exports of descendants and test code pass.
#[test]
fn the_checker_sees_upward_references() {
    let dir = std::env::temp_dir().join(format!("engram-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("low")).unwrap();
    let write = |file: &str, text: &str| std::fs::write(dir.join(file), text).unwrap();
    write("lib.rs", "mod high;\nmod low;\npub use high::Top;\n");
    write("high.rs", "use crate::low::deep::Thing;\npub struct Top;\n");
    write(
        "low/mod.rs",
        "pub mod deep;\npub use deep::Thing;\n#[cfg(test)]\nmod tests { use crate::high::Top; }\n",
    );
    let layering = Layering {
        layers: vec![
            ("low".into(), vec![vec!["low".into()]]),
            ("high".into(), vec![vec!["high".into()]]),
        ],
    };
    let clean = |deep: &str| {
        write("low/deep.rs", deep);
        violations(&dir, &layering).0
    };
    assert_eq!(clean("pub struct Thing;\n"), Vec::<String>::new());
    // Written as a use, a grouped use, an inline path, through `super`, and through the root.
    for upward in [
        "use crate::high::Top;",
        "use crate::{high::{self, Top}};",
        "fn f() -> crate::high::Top { todo!() }",
        "use super::super::high;",
        "use crate::Top;",
    ] {
        let problems: Vec<String> = clean(&format!("pub struct Thing;\n{upward}\n"))
            .into_iter()
            .filter(|problem| problem.contains("above its layer"))
            .collect();
        assert_eq!(problems.len(), 1, "{upward}: {problems:?}");
        assert!(problems[0].contains("`high`"), "{upward}: {problems:?}");
    }
    // Two modules of one layer that refer to each other.
    let one_layer =
        Layering { layers: vec![("all".into(), vec![vec!["low".into()], vec!["high".into()]])] };
    write("low/deep.rs", "pub struct Thing;\nuse crate::high::Top;\n");
    let problems = violations(&dir, &one_layer).0;
    assert!(problems.iter().any(|p| p.contains("circle: high -> low -> high")), "{problems:?}");
    // Comments, strings and test modules do not count.
    assert!(
        clean("pub struct Thing; // crate::high::Top\nconst S: &str = \"crate::high\";\n")
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
