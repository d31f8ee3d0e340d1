//! A shell command split into the simple commands it runs, with tree-sitter-bash,
//! the parser Gemini CLI splits with (`collectCommandDetails` in
//! `packages/core/src/utils/shell-utils.ts`): every `command`, declaration, `unset`
//! and test command anywhere in the tree, inside `$( )`, backticks, subshells,
//! process substitutions, compound statements, heredocs and strings; and, beyond
//! Gemini CLI, bare assignments and arithmetic commands (`a=…`, `((…))`, `for ((…))`).

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser, Tree};

use super::runners::{self, basename, inner_script, wrapper_levels};

/// Gemini CLI gives up parsing after one second; so does the hub.
const PARSE_TIMEOUT: Duration = Duration::from_secs(1);

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The command's text from its name on: leading `VAR=value` assignments are
    /// dropped, so `FOO=1 rm -rf /` is judged as `rm -rf /` (by deny and ask rules:
    /// such a part is `dynamic`, no rule allows it).
    pub text: String,
    /// The same command seen through wrappers (`env`, `nohup`, `sudo`, `timeout`…)
    /// and with its name unquoted and without a path (`"rm"`, `\rm`, `/bin/rm` → `rm`),
    /// and with every word unquoted (`git 'push'` → `git push`).
    /// Deny and ask rules judge these too, so a wrapper cannot hide a command.
    pub variants: Vec<String>,
    /// The raw words: the name and its arguments (no assignments, no redirections).
    pub words: Vec<String>,
    /// Reads or writes through a redirection (`>`, `>>`, `<`, `<<`, `<<<`, `&>`), in
    /// the command or in a statement around it. `2>&1`-style duplications and
    /// `/dev/null` do not count: they touch no file.
    pub redirected: bool,
    /// The script a shell runs (`bash -c '…'`, `eval …`): judged as a command too.
    pub inner: Option<Inner>,
    /// No rule can allow it (deny and ask rules still judge it): it sets variables
    /// for what it runs (`GIT_EXTERNAL_DIFF=x git diff`, `LD_PRELOAD=…`, `PATH=…`),
    /// which a rule about the command cannot foresee; or it is a bare assignment
    /// (`a=…`), or evaluates variables as arithmetic (`$((a))`, `$[a]`, `${x[a]}`,
    /// `((a))`, `for ((…))`, `[[ a -eq b ]]`), where a value like `x[$(cmd)]` runs cmd.
    pub dynamic: bool,
    /// A word (the name, an argument or a redirection's target) whose value is
    /// known only when it runs: a parameter or arithmetic expansion, a command
    /// or process substitution, an unquoted glob (`*`, `?`, `[…]`) or brace
    /// expansion. What runs cannot be checked against a rule or a protected
    /// path, so such a part always asks (YOLO too). Quotes and escapes are
    /// resolved (`.gem''ini` is `.gemini`), so they hide nothing.
    pub opaque: bool,
    /// Each word's value as the shell will see it (quotes and escapes
    /// resolved; a word with no static value as written), redirection targets
    /// included: what protected paths are checked against.
    pub values: Vec<String>,
    /// Why what it runs cannot be read from its words (`xargs`, `git -c`, a git
    /// alias; see `runners::unreadable`): like an opaque part, it asks.
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    Script(String),
    /// Known only when it runs (`bash -c "$CMD"`): no rule can allow it.
    Dynamic,
}

/// Why a command was not split; Gemini CLI then falls back as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unparsed {
    /// tree-sitter found a syntax error (or a missing token).
    Syntax,
    /// No simple command was found (an empty line, only a comment).
    NoCommand,
    /// `${var@P}` runs the variable's content as a prompt string: Gemini CLI refuses it.
    PromptTransform,
    TimedOut,
    /// Over 16 KiB, or over 500 simple commands: it always asks (its parts are not
    /// checked, so no deny could speak).
    TooLong,
    /// An unquoted here-document expands `` `…` ``, `$( )` or `${ }` in its body, which
    /// tree-sitter-bash does not reliably parse (backticks not at all): it always asks.
    HereDocument,
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

pub(super) fn parse(command: &str) -> Result<Tree, Unparsed> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let parser = slot.get_or_insert_with(|| {
            let mut parser = Parser::new();
            parser.set_language(&tree_sitter_bash::LANGUAGE.into()).expect("tree-sitter-bash matches tree-sitter");
            parser
        });
        let deadline = Instant::now() + PARSE_TIMEOUT;
        let mut timed_out = false;
        let mut progress = |_: &tree_sitter::ParseState| {
            if Instant::now() > deadline {
                timed_out = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = command.as_bytes();
        let tree = parser.parse_with_options(
            &mut |offset, _| if offset < bytes.len() { &bytes[offset..] } else { &[][..] },
            None,
            Some(ParseOptions::new().progress_callback(&mut progress)),
        );
        if timed_out {
            parser.reset();
            return Err(Unparsed::TimedOut);
        }
        tree.ok_or(Unparsed::TimedOut)
    })
}

/// A longer command is not split (it asks): the walk is linear, but a rule's regex
/// runs on every part, and no one reads such a command before approving it.
const MAX_LEN: usize = 16 * 1024;
const MAX_PARTS: usize = 500;

/// A node to visit, with what its ancestors say about it.
struct Visit<'t> {
    node: Node<'t>,
    /// The part it belongs to (the nearest command around it).
    within: Option<usize>,
    /// Inside a redirected statement, up to the nearest substitution.
    around: bool,
    /// Those redirected statements (tree-sitter finds a node's parent by a walk
    /// from the root, so they are carried down, not looked up).
    holders: std::rc::Rc<Vec<Node<'t>>>,
    parent: &'t str,
}

/// The simple commands of `command`, in order, or why it cannot be split.
pub fn split(command: &str) -> Result<Vec<Part>, Unparsed> {
    match split_parts(command)? {
        (_, true) => Err(Unparsed::HereDocument),
        (parts, false) => Ok(parts),
    }
}

/// The simple commands tree-sitter found in a command that is `Unparsed::HereDocument`
/// (for deny and ask rules: what is seen can still be denied).
pub fn split_seen(command: &str) -> Result<Vec<Part>, Unparsed> {
    split_parts(command).map(|(parts, _)| parts)
}

/// The parts, and whether an unquoted here-document expands something.
fn split_parts(command: &str) -> Result<(Vec<Part>, bool), Unparsed> {
    if command.trim().is_empty() {
        return Err(Unparsed::NoCommand);
    }
    if command.len() > MAX_LEN {
        return Err(Unparsed::TooLong);
    }
    let tree = parse(command)?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(Unparsed::Syntax);
    }
    let mut parts: Vec<Part> = Vec::new();
    // Each node with the part it belongs to (the nearest command around it).
    let mut stack =
        vec![Visit { node: root, within: None, around: false, holders: std::rc::Rc::default(), parent: "" }];
    let mut prompt_transform = false;
    let mut here_document = false;
    while let Some(Visit { node, mut within, around, holders, parent }) = stack.pop() {
        if parts.len() > MAX_PARTS {
            return Err(Unparsed::TooLong);
        }
        let before = parts.len();
        match node.kind() {
            "command" => parts.extend(command_part(node, command, around, &holders)),
            "declaration_command" | "unset_command" | "test_command" => {
                let mut part = whole_part(node, command, around);
                // `[[ a -eq b ]]` evaluates `a` and `b` as arithmetic, like `$((a))`.
                part.dynamic = node.kind() == "test_command"
                    && part.text.starts_with("[[")
                    && part.text.split_whitespace().any(|word| ARITHMETIC_TESTS.contains(&word));
                parts.push(part);
            }
            // A redirection with no command (`ls; > file`) still truncates the file.
            "redirected_statement" if node.child_by_field_name("body").is_none() => {
                parts.push(Part { redirected: true, ..whole_part(node, command, around) })
            }
            // `a=1`, `a=1 b=2` as statements: they set what later commands expand.
            "variable_assignments" => parts.push(Part { dynamic: true, ..whole_part(node, command, around) }),
            "variable_assignment" if !matches!(parent, "command" | "declaration_command" | "variable_assignments") => {
                parts.push(Part { dynamic: true, ..whole_part(node, command, around) })
            }
            // `((a))` and `for ((…))` evaluate variables as arithmetic.
            "compound_statement" if text_of(node, command).starts_with("((") => {
                parts.push(Part { dynamic: true, ..whole_part(node, command, around) })
            }
            "c_style_for_statement" => {
                let end = node.child_by_field_name("body").map_or(node.end_byte(), |body| body.start_byte());
                let text = command[node.start_byte()..end].trim().to_string();
                parts.push(Part { words: vec![text.clone()], text, dynamic: true, ..whole_part(node, command, around) })
            }
            // `$((a))`, `$[a]`, `${x[a]}`: a variable holding `x[$(cmd)]` runs cmd.
            "arithmetic_expansion" | "expansion" if evaluates_variables(node, command) => match within {
                Some(index) => {
                    let part: &mut Part = &mut parts[index];
                    part.dynamic = true;
                }
                None => parts.push(Part { dynamic: true, ..whole_part(node, command, around) }),
            },
            _ => {}
        }
        match node.kind() {
            "expansion" => prompt_transform |= is_prompt_transform(node, command),
            "heredoc_redirect" => here_document |= expands_in_body(node, command),
            _ => {}
        }
        if parts.len() > before {
            within = Some(parts.len() - 1);
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        // Redirected around: what runs inside `$( )` writes into the substitution.
        let around = match node.kind() {
            "command_substitution" | "process_substitution" => false,
            "redirected_statement" => around || own_redirect(node, command),
            _ => around,
        };
        let holders = match node.kind() {
            "command_substitution" | "process_substitution" => std::rc::Rc::default(),
            "redirected_statement" => std::rc::Rc::new(holders.iter().copied().chain([node]).collect()),
            _ => holders,
        };
        let parent = node.kind();
        stack.extend(children.into_iter().rev().map(|child| Visit {
            node: child,
            within,
            around,
            holders: holders.clone(),
            parent,
        }));
    }
    if parts.len() > MAX_PARTS {
        return Err(Unparsed::TooLong);
    }
    if prompt_transform {
        return Err(Unparsed::PromptTransform);
    }
    if parts.is_empty() {
        return Err(Unparsed::NoCommand);
    }
    Ok((parts, here_document))
}

/// An unquoted here-document (`<<EOF`, not `<<'EOF'`, `<<"EOF"` or `<<\EOF`) whose
/// body has a backtick, `$(` or `${`.
fn expands_in_body(redirect: Node, source: &str) -> bool {
    let mut cursor = redirect.walk();
    let children: Vec<Node> = redirect.children(&mut cursor).collect();
    let quoted = children
        .iter()
        .filter(|child| child.kind() == "heredoc_start")
        .any(|start| text_of(*start, source).contains(['\'', '"', '\\']));
    !quoted
        && children.iter().filter(|child| child.kind() == "heredoc_body").any(|body| {
            let text = text_of(*body, source);
            text.contains('`') || text.contains("$(") || text.contains("${")
        })
}

/// The comparisons `[[ ]]` makes between arithmetic expressions.
const ARITHMETIC_TESTS: [&str; 6] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// A part that is its node's whole text.
fn whole_part(node: Node, source: &str, around: bool) -> Part {
    let text = text_of(node, source).trim().to_string();
    let words = word_nodes(node);
    Part {
        words: vec![text.clone()],
        text,
        variants: Vec::new(),
        redirected: around || own_redirect(node, source),
        inner: None,
        dynamic: false,
        opaque: has_expansion(node, source) || words.iter().any(|word| has_pattern(*word, source)),
        values: words
            .iter()
            .map(|word| literal(*word, source, false).unwrap_or_else(|| text_of(*word, source).to_string()))
            .collect(),
        unreadable: None,
    }
}

/// The word-like children of a node (its name, arguments, values, and its
/// redirections' targets), for the static check.
fn word_nodes(node: Node) -> Vec<Node> {
    const WORDS: [&str; 6] = ["word", "string", "raw_string", "ansi_c_string", "concatenation", "command_name"];
    let mut found = Vec::new();
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        let mut cursor = current.walk();
        for child in current.children(&mut cursor) {
            if WORDS.contains(&child.kind()) {
                found.push(child);
            } else if !matches!(child.kind(), "command" | "command_substitution" | "process_substitution") {
                stack.push(child);
            }
        }
    }
    found
}

/// An unquoted glob (`*`, `?`, `[`) or brace expansion (`{a,b}`, `{1..3}`) in
/// a word: its value is file names or words known only when it runs.
fn has_pattern(node: Node, source: &str) -> bool {
    // The word's unquoted pieces, escapes kept (a quoted `*` is text).
    let mut unquoted = String::new();
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        match current.kind() {
            "string" | "raw_string" | "ansi_c_string" => unquoted.push(' '),
            _ if current.child_count() == 0 || current.kind() == "word" => unquoted.push_str(text_of(current, source)),
            _ => {
                let mut cursor = current.walk();
                let children: Vec<Node> = current.children(&mut cursor).collect();
                stack.extend(children.into_iter().rev());
            }
        }
    }
    let mut escaped = false;
    let mut plain = String::with_capacity(unquoted.len());
    for c in unquoted.chars() {
        match (escaped, c) {
            (false, '\\') => escaped = true,
            (false, '*' | '?' | '[') => return true,
            (false, c) => plain.push(c),
            (true, _) => escaped = false,
        }
    }
    plain.find('{').is_some_and(|open| {
        let rest = &plain[open..];
        rest.contains('}') && (rest.contains(',') || rest.contains(".."))
    })
}

/// An arithmetic expansion, or an array subscript (evaluated as arithmetic), that
/// names a variable or expands something: only digits and operators are known.
fn evaluates_variables(node: Node, source: &str) -> bool {
    let arithmetic = |text: &str| text.chars().any(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '`'));
    match node.kind() {
        // After its own `$`.
        "arithmetic_expansion" => arithmetic(&text_of(node, source)[1..]),
        _ => {
            let mut cursor = node.walk();
            let subscripts: Vec<Node> =
                node.children(&mut cursor).filter(|child| child.kind() == "subscript").collect();
            subscripts.into_iter().any(|subscript| {
                subscript
                    .child_by_field_name("index")
                    .is_some_and(|index| arithmetic(text_of(index, source).trim_matches(['@', '*'])))
            })
        }
    }
}

fn has_child(node: Node, kind: &str) -> bool {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).any(|child| child.kind() == kind);
    found
}

pub(super) fn text_of<'s>(node: Node, source: &'s str) -> &'s str {
    &source[node.start_byte()..node.end_byte()]
}

/// `around`: in a redirected statement (`{ a; b; } > out`, `while …; done < in`),
/// up to the nearest substitution.
fn command_part<'t>(node: Node<'t>, source: &str, around: bool, holders: &[Node<'t>]) -> Option<Part> {
    let name = node.child_by_field_name("name")?;
    let text = source[name.start_byte()..node.end_byte()].trim().to_string();
    // The name and the arguments; not the assignments before, nor redirections.
    let words: Vec<Node> = (0..node.child_count())
        .filter(|&i| matches!(node.field_name_for_child(i), Some("name" | "argument")))
        .filter_map(|i| node.child(i))
        .collect();
    let redirected = around || own_redirect(node, source);
    let mut variants = Vec::new();
    let mut inner = None;
    let mut unreadable = None;
    // The command at each level of wrappers: `sudo env rm x` is also `env rm x` and `rm x`.
    let (levels, unknown_option) = wrapper_levels(&words, source);
    if let Some(option) = unknown_option {
        unreadable =
            Some(format!("{option} is an option the hub does not know, so where its command starts is not read"));
    }
    for start in levels {
        let Some(program) = words.get(start) else { break };
        let rest = &source[program.end_byte()..node.end_byte()];
        let effective = source[program.start_byte()..node.end_byte()].trim().to_string();
        let base = literal(*program, source, false).map(|name| basename(&name).to_string());
        let normalized = base.as_ref().map(|base| format!("{base}{rest}").trim().to_string());
        // One space between words: a tab or a line continuation is JSON-escaped in
        // the stringified arguments, where a prefix's space would not match it.
        let name = base.clone().unwrap_or_else(|| text_of(*program, source).to_string());
        let spaced = std::iter::once(name)
            .chain(words[start + 1..].iter().map(|word| text_of(*word, source).to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        // Every word's value, quotes and escapes removed: `git 'push'`, `git pu\sh` and
        // `git pus''h` are `git push` (for deny and ask rules only: the value is what
        // runs, the allow was given for the text as written).
        let unquoted = words[start..]
            .iter()
            .map(|word| literal(*word, source, true).unwrap_or_else(|| text_of(*word, source).to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        for variant in [Some(effective), normalized, Some(spaced), Some(unquoted)].into_iter().flatten() {
            if variant != text && !variants.contains(&variant) {
                variants.push(variant);
            }
        }
        if let Some(base) = &base {
            // Each level may run a script of its own.
            inner = match (inner, inner_script(base, &words[start + 1..], source)) {
                (None, found) | (found, None) => found,
                // Two scripts (`env -S '…' bash -c '…'`): joined, one could swallow the
                // other (a here-document); judged apart, they are not, so it asks.
                _ => Some(Inner::Dynamic),
            };
            let args: Vec<Option<String>> =
                words[start + 1..].iter().map(|word| literal(*word, source, false)).collect();
            unreadable = unreadable.or_else(|| runners::unreadable(base, &args));
        }
    }
    // The name, the arguments and the redirections' targets, not the
    // assignments before the name (a `dynamic` part already).
    let checked: Vec<Node> = word_nodes(node)
        .into_iter()
        .filter(|word| {
            word.start_byte() >= name.start_byte() || word.parent().is_some_and(|p| p.kind() != "variable_assignment")
        })
        .collect();
    let opaque = words.iter().any(|word| literal(*word, source, false).is_none())
        || checked.iter().any(|word| literal(*word, source, false).is_none() || has_pattern(*word, source))
        || redirect_targets(node, holders).iter().any(|target| literal(*target, source, false).is_none());
    // A word without a static value counts by its text (`$CODEX_HOME/x` still names CODEX_HOME).
    let value = |word: &Node| literal(*word, source, false).unwrap_or_else(|| text_of(*word, source).to_string());
    let mut values: Vec<String> = checked.iter().map(value).collect();
    values.extend(redirect_targets(node, holders).iter().map(value));
    Some(Part {
        text,
        variants,
        words: words.iter().map(|word| text_of(*word, source).to_string()).collect(),
        redirected,
        inner,
        dynamic: has_child(node, "variable_assignment"),
        opaque,
        values,
        unreadable,
    })
}

/// A word's value as the shell would see it, when it is known before running:
/// quotes removed and escapes applied. With `keep_expansions`, `$VAR` and `$( )`
/// stay as written (what a script inside `bash -c "…"` would be parsed as), else
/// such a word has no known value.
pub(super) fn literal(node: Node, source: &str, keep_expansions: bool) -> Option<String> {
    let text = text_of(node, source);
    match node.kind() {
        "word" | "command_name" if node.named_child_count() == 0 => Some(unescape(text, |_| true)),
        "command_name" => node.named_child(0).and_then(|child| literal(child, source, keep_expansions)),
        "number" => Some(text.to_string()),
        // `$$`, `$?`, `$#`, `$!`: numbers, whatever the run (judged as written).
        "simple_expansion" if NUMERIC_SPECIALS.contains(&text) => Some(text.to_string()),
        "raw_string" => Some(text.trim_start_matches('\'').trim_end_matches('\'').to_string()),
        "string" => {
            if !keep_expansions && has_expansion(node, source) {
                return None;
            }
            let inside = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
            Some(unescape(inside, |c| matches!(c, '$' | '`' | '"' | '\\' | '\n')))
        }
        "ansi_c_string" => {
            let inside = text.strip_prefix("$'").and_then(|t| t.strip_suffix('\'')).unwrap_or(text);
            Some(ansi_c(inside))
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let pieces: Option<Vec<String>> =
                node.children(&mut cursor).map(|child| literal(child, source, keep_expansions)).collect();
            pieces.map(|pieces| pieces.concat())
        }
        _ if keep_expansions => Some(text.to_string()),
        _ => None,
    }
}

/// Special parameters whose value is always a number: known to be harmless text.
pub(super) const NUMERIC_SPECIALS: [&str; 4] = ["$$", "$?", "$#", "$!"];

fn has_expansion(node: Node, source: &str) -> bool {
    const EXPANSIONS: [&str; 5] =
        ["simple_expansion", "expansion", "command_substitution", "arithmetic_expansion", "process_substitution"];
    // A loop, not recursion: nesting depth is the command writer's choice.
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        let mut cursor = current.walk();
        for child in current.children(&mut cursor) {
            if EXPANSIONS.contains(&child.kind())
                && !(child.kind() == "simple_expansion" && NUMERIC_SPECIALS.contains(&text_of(child, source)))
            {
                return true;
            }
            stack.push(child);
        }
    }
    false
}

/// Backslash escapes: `\x` is `x` where `escapes(x)`, else the backslash stays.
fn unescape(text: &str, escapes: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) if escapes(next) => out.push(next),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The value of `$'…'`, as bash decodes it: `\n`, `\t`… , `\xHH`, `\NNN` (octal),
/// `\uHHHH`, `\UHHHHHHHH`, `\cX`; so `$'\x70ush'` is `push`.
pub(super) fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let take = |chars: &mut std::iter::Peekable<std::str::Chars>, radix: u32, max: usize| {
        let mut digits = String::new();
        while digits.len() < max {
            match chars.peek() {
                Some(c) if c.is_digit(radix) => digits.push(chars.next().unwrap_or_default()),
                _ => break,
            }
        }
        (!digits.is_empty()).then(|| u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32)).flatten()
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match next {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            'x' => take(&mut chars, 16, 2),
            'u' => take(&mut chars, 16, 4),
            'U' => take(&mut chars, 16, 8),
            'c' => chars.next().filter(char::is_ascii).map(|c| char::from((c as u8) & 0x1f)),
            '0'..='7' => {
                let mut digits = String::from(next);
                while digits.len() < 3 && chars.peek().is_some_and(|c| ('0'..='7').contains(c)) {
                    digits.push(chars.next().unwrap_or_default());
                }
                u32::from_str_radix(&digits, 8).ok().and_then(char::from_u32)
            }
            other => Some(other),
        };
        match decoded {
            Some(c) => out.push(c),
            None => {
                out.push('\\');
                out.push(next);
            }
        }
    }
    out
}

const REDIRECTS: [&str; 3] = ["file_redirect", "heredoc_redirect", "herestring_redirect"];

/// The targets of the redirections a command writes or reads through (`> out`,
/// `< in`): its own, and those of the redirected statements around it up to
/// the nearest substitution (`holders`; tree-sitter hangs `a && b > f` on the list).
fn redirect_targets<'t>(node: Node<'t>, holders: &[Node<'t>]) -> Vec<Node<'t>> {
    let mut targets = Vec::new();
    for holder in std::iter::once(&node).chain(holders) {
        let mut cursor = holder.walk();
        let children: Vec<Node> = holder.children(&mut cursor).collect();
        targets.extend(
            children
                .into_iter()
                .filter(|child| child.kind() == "file_redirect")
                .filter_map(|redirect| redirect.child_by_field_name("destination")),
        );
    }
    targets
}

fn own_redirect(node: Node, source: &str) -> bool {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).any(|child| REDIRECTS.contains(&child.kind()) && !harmless(child, source));
    found
}

/// `2>&1`, `>&2`, `<&0`, `>&-` and `/dev/null` touch no file.
fn harmless(redirect: Node, source: &str) -> bool {
    if redirect.kind() != "file_redirect" {
        return false;
    }
    let mut cursor = redirect.walk();
    let operator = redirect.children(&mut cursor).find(|child| !child.is_named()).map(|op| text_of(op, source));
    let Some(destination) = redirect.child_by_field_name("destination") else { return false };
    let target = text_of(destination, source);
    match operator {
        Some(">&" | "<&") => destination.kind() == "number" || target == "-",
        Some(">" | ">>" | "&>" | "&>>" | ">|" | "<") => target == "/dev/null",
        _ => false,
    }
}

/// `${var@P}` (Gemini CLI's `hasPromptCommandTransform`).
fn is_prompt_transform(expansion: Node, source: &str) -> bool {
    let mut cursor = expansion.walk();
    let children: Vec<Node> = expansion.children(&mut cursor).collect();
    children
        .windows(2)
        .any(|pair| text_of(pair[0], source) == "@" && text_of(pair[1], source).eq_ignore_ascii_case("p"))
}
