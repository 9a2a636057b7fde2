//! Rust source as the layer check reads it: the code without its comments
//! and literals, and every module path that code names, resolved from the
//! crate root. Text-level on purpose: it must read a tree that is half moved
//! and does not compile, and stay small enough to trust.
//!
//! A path counts from `crate::`, `$crate::`, `self::` and `super::` (any
//! number of them, from the module the text sits in, inline `mod x { }`
//! included); a group `a::{b, c::{d}}` names `a`, `a::b`, `a::c`, `a::c::d`
//! (its prefixes count, as for `import-circles`); and after
//! `use crate::a::alias;` the code's `alias::b` names `crate::a::alias::b`
//! (for a lower-case alias: a module's, not a type's).

/// One module path the code names.
#[derive(Debug)]
pub(super) struct Reference {
    pub(super) line: usize,
    /// As written, a group's member with its group's prefix: `super::super::slot::Buy`.
    pub(super) written: String,
    /// From the crate root (`["domain", "slot", "Buy"]`); `None` when the
    /// `super`s climb above the crate root.
    pub(super) path: Option<Vec<String>>,
}

/// The text with every comment, string and character literal turned into
/// spaces (line breaks kept, so offsets and line numbers stay).
pub(super) fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let end = if rest.starts_with(b"//") {
            at + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            block_comment_end(bytes, at)
        } else if let Some(end) = raw_string_end(bytes, at) {
            end
        } else if bytes[at] == b'"' {
            string_end(bytes, at)
        } else if let Some(end) = char_literal_end(text, at) {
            end
        } else {
            at += 1;
            continue;
        };
        for byte in &mut out[at..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        at = end;
    }
    String::from_utf8(out).expect("whole characters are blanked, so the text stays UTF-8")
}

fn block_comment_end(bytes: &[u8], start: usize) -> usize {
    let (mut depth, mut at) = (0, start);
    while at < bytes.len() {
        if bytes[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if bytes[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    bytes.len()
}

fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// `r"…"`, `r#"…"#`, `br"…"`, `cr#"…"#`: where it ends, if one starts here.
fn raw_string_end(bytes: &[u8], start: usize) -> Option<usize> {
    if start > 0 && is_ident(bytes[start - 1]) {
        return None;
    }
    let after_prefix = match bytes[start..] {
        [b'r', ..] => start + 1,
        [b'b' | b'c', b'r', ..] => start + 2,
        _ => return None,
    };
    let hashes = bytes[after_prefix..]
        .iter()
        .take_while(|&&b| b == b'#')
        .count();
    if bytes.get(after_prefix + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = after_prefix + hashes + 1;
    Some(
        bytes[body..]
            .windows(close.len())
            .position(|w| w == close)
            .map_or(bytes.len(), |p| body + p + close.len()),
    )
}

/// `'x'`, `'\n'`, `'\''`, `'é'`: where it ends; `None` for a lifetime or a label.
fn char_literal_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes[start] != b'\'' {
        return None;
    }
    if bytes.get(start + 1) == Some(&b'\\') {
        let close = bytes[start + 3..].iter().position(|&b| b == b'\'')?;
        return Some(start + 3 + close + 1);
    }
    let c = text[start + 1..].chars().next()?;
    let after = start + 1 + c.len_utf8();
    (c != '\'' && bytes.get(after) == Some(&b'\'')).then_some(after + 1)
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Each word of the code with its offset: identifiers and keywords.
fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = code.as_bytes();
    (0..bytes.len())
        .filter(move |&at| {
            (bytes[at].is_ascii_alphabetic() || bytes[at] == b'_')
                && (at == 0 || !is_ident(bytes[at - 1]))
        })
        .map(move |at| {
            let len = bytes[at..].iter().take_while(|&&b| is_ident(b)).count();
            (at, &code[at..at + len])
        })
}

fn skip_space(bytes: &[u8], at: &mut usize) {
    while bytes.get(*at).is_some_and(u8::is_ascii_whitespace) {
        *at += 1;
    }
}

/// `::` next (after any space), stepping over it.
fn double_colon(bytes: &[u8], at: &mut usize) -> bool {
    let mut next = *at;
    skip_space(bytes, &mut next);
    if bytes[next..].starts_with(b"::") {
        *at = next + 2;
        return true;
    }
    false
}

/// One path of a use tree, group members spelled out.
struct Leaf {
    segments: Vec<String>,
    /// Where its last segment starts.
    at: usize,
    /// `as name`, if given.
    renamed: Option<String>,
    /// The prefix of a group (`a::b` of `a::b::{c, d}`): it names the
    /// module `c` and `d` are found through, but brings no name into scope.
    opens_group: bool,
}

/// Reads the use tree (or plain path) at `at` into its leaves:
/// `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn tree(code: &str, at: &mut usize, prefix: Vec<String>, out: &mut Vec<Leaf>) {
    let bytes = code.as_bytes();
    let mut segments = prefix;
    let mut last = *at;
    loop {
        skip_space(bytes, at);
        match bytes.get(*at) {
            Some(b'{') => {
                if !segments.is_empty() {
                    out.push(Leaf {
                        segments: segments.clone(),
                        at: last,
                        renamed: None,
                        opens_group: true,
                    });
                }
                *at += 1;
                loop {
                    skip_space(bytes, at);
                    match bytes.get(*at) {
                        Some(b'}') => {
                            *at += 1;
                            return;
                        }
                        Some(b',') => *at += 1,
                        Some(_) => {
                            let before = *at;
                            tree(code, at, segments.clone(), out);
                            if *at == before {
                                return; // not a use tree after all
                            }
                        }
                        None => return,
                    }
                }
            }
            Some(b'*') => {
                segments.push("*".to_string());
                out.push(Leaf {
                    segments,
                    at: *at,
                    renamed: None,
                    opens_group: false,
                });
                *at += 1;
                return;
            }
            _ => {}
        }
        let len = bytes[*at..].iter().take_while(|&&b| is_ident(b)).count();
        if len == 0 {
            break;
        }
        last = *at;
        segments.push(code[*at..*at + len].to_string());
        *at += len;
        if !double_colon(bytes, at) {
            break;
        }
    }
    if segments.is_empty() {
        return;
    }
    let mut next = *at;
    skip_space(bytes, &mut next);
    let mut renamed = None;
    if let Some(rest) = code[next..].strip_prefix("as")
        && rest.starts_with(|c: char| c.is_ascii_whitespace())
    {
        let mut name_at = next + 2;
        skip_space(bytes, &mut name_at);
        let len = bytes[name_at..]
            .iter()
            .take_while(|&&b| is_ident(b))
            .count();
        if len > 0 {
            renamed = Some(code[name_at..name_at + len].to_string());
            *at = name_at + len;
        }
    }
    out.push(Leaf {
        segments,
        at: last,
        renamed,
        opens_group: false,
    });
}

/// The inline modules of the code: `(open brace, close brace, name)`.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for (at, word) in words(code) {
        if word != "mod" {
            continue;
        }
        let mut next = at + 3;
        skip_space(bytes, &mut next);
        let len = bytes[next..].iter().take_while(|&&b| is_ident(b)).count();
        let name = &code[next..next + len];
        next += len;
        skip_space(bytes, &mut next);
        if len == 0 || bytes.get(next) != Some(&b'{') {
            continue; // `mod name;`: its own file
        }
        let mut depth = 0;
        let close = (next..bytes.len())
            .find(|&i| {
                match bytes[i] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .unwrap_or(bytes.len());
        found.push((next, close, name.to_string()));
    }
    found
}

/// Every module path the code (see [`code_only`]) names, for a file whose
/// module is `module` (`["domain", "item"]` for `domain/item/mod.rs`).
pub(super) fn references(code: &str, module: &[String]) -> Vec<Reference> {
    let bytes = code.as_bytes();
    let inline = inline_modules(code);
    let module_at = |offset: usize| {
        let mut path = module.to_vec();
        path.extend(
            inline
                .iter()
                .filter(|(open, close, _)| *open < offset && offset < *close)
                .map(|(_, _, name)| name.clone()),
        );
        path
    };
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(code.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| line_starts.partition_point(|&start| start <= offset);
    let starts_path = |at: usize, len: usize| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        !matches!(before, Some(b':' | b'.')) && double_colon(bytes, &mut (at + len))
    };

    let mut found = Vec::new();
    // `use crate::a::b;` lets the code say `b::c`: alias → the path it stands for.
    let mut aliases: Vec<(String, Vec<String>)> = Vec::new();
    // Where the paths read so far are written: a name inside one is no alias.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (at, word) in words(code) {
        if !matches!(word, "crate" | "self" | "super") || !starts_path(at, word.len()) {
            continue;
        }
        let mut end = at;
        let mut leaves = Vec::new();
        tree(code, &mut end, Vec::new(), &mut leaves);
        spans.push((at, end));
        let before = code[..at].strip_suffix('$').unwrap_or(&code[..at]);
        let in_use = before
            .trim_end()
            .strip_suffix("use")
            .is_some_and(|b| !b.ends_with(|c: char| c == '_' || c.is_ascii_alphanumeric()));
        let here = module_at(at);
        for leaf in leaves {
            let path = resolve(&here, &leaf.segments);
            if in_use
                && !leaf.opens_group
                && let Some(path) = &path
            {
                let name = leaf.renamed.clone().or_else(|| {
                    leaf.segments
                        .iter()
                        .rev()
                        .find(|s| *s != "self")
                        .filter(|s| !matches!(s.as_str(), "crate" | "super" | "*"))
                        .cloned()
                });
                // Only a module's alias leads on: a type's is a path to the same file.
                if let Some(name) = name.filter(|n| n.starts_with(|c: char| c.is_ascii_lowercase()))
                {
                    aliases.push((name, path.clone()));
                }
            }
            found.push(Reference {
                line: line_of(leaf.at),
                written: written(&leaf.segments),
                path,
            });
        }
    }
    for (at, word) in words(code) {
        let Some((_, target)) = aliases.iter().find(|(name, _)| name == word) else {
            continue;
        };
        let within_a_path = spans
            .iter()
            .any(|(start, end)| (*start..*end).contains(&at));
        if within_a_path || (at > 0 && bytes[at - 1] == b'$') || !starts_path(at, word.len()) {
            continue;
        }
        let mut end = at;
        let mut leaves = Vec::new();
        tree(code, &mut end, Vec::new(), &mut leaves);
        for leaf in leaves {
            let mut path = Some(target.clone());
            for segment in &leaf.segments[1..] {
                path = path.and_then(|p| step(p, segment));
            }
            found.push(Reference {
                line: line_of(leaf.at),
                written: written(&leaf.segments),
                path,
            });
        }
    }
    found
}

/// `crate::a::{self, b}`'s first member is written `crate::a`.
fn written(segments: &[String]) -> String {
    let named = segments
        .strip_suffix(&["self".to_string()])
        .unwrap_or(segments);
    named.join("::")
}

/// A path written in module `here`, from the crate root.
fn resolve(here: &[String], segments: &[String]) -> Option<Vec<String>> {
    let (start, rest) = match segments.split_first()? {
        (first, rest) if first == "crate" => (Vec::new(), rest),
        _ => (here.to_vec(), segments),
    };
    rest.iter()
        .try_fold(start, |path, segment| step(path, segment))
}

fn step(mut path: Vec<String>, segment: &str) -> Option<Vec<String>> {
    match segment {
        "self" => {}
        "super" => {
            path.pop()?;
        }
        name => path.push(name.to_string()),
    }
    Some(path)
}

#[test]
fn every_path_form_resolves_from_the_crate_root() {
    let text = "
use crate::a::{b, c::{d, e as f}};
use super::super::g;
use self::h::{self as i};
// crate::in_a_comment
/// [crate::in_a_doc]
const S: &str = \"crate::in_a_string\";
fn x<'a>(_: &'a str) -> char { i::j(); $crate::k::l!(); '\"' }
mod tests {
    use super::*;
    use super::super::m;
}
";
    let module = ["p", "q", "r"].map(String::from);
    let found: Vec<(usize, String)> = references(&code_only(text), &module)
        .into_iter()
        .map(|r| (r.line, r.path.unwrap().join("::")))
        .collect();
    let expected = [
        (2, "a"),
        (2, "a::b"),
        (2, "a::c"),
        (2, "a::c::d"),
        (2, "a::c::e"),
        (3, "p::g"),
        (4, "p::q::r::h"),
        (4, "p::q::r::h"),
        (8, "k::l"),
        (10, "p::q::r::*"),
        (11, "p::q::m"),
        (8, "p::q::r::h::j"),
    ];
    let expected: Vec<(usize, String)> = expected
        .iter()
        .map(|(line, path)| (*line, path.to_string()))
        .collect();
    assert_eq!(found, expected);
}
