//! The hub's own rendering of a command as tree-sitter parsed it: every word
//! re-quoted from its decoded value, operators and keywords spelled one way,
//! here-documents with a quoted delimiter, comments dropped. What the rules
//! judged is tree-sitter's parse, so a command that runs without a card runs
//! as this rendering (see `agents::builtin`), never as the model's text.
//!
//! A command runs without a card only when it is `faithful`: bash reads the
//! same tokens from its text as from the rendering (`bash_words`), so an agent
//! that runs the text itself runs what was judged too. Where tree-sitter and
//! bash part ways (an escaped blank before `#`, a line starting with `\`, a
//! partly quoted here-document delimiter), or where the text uses what the
//! rendering does not cover (function and alias definitions, `shopt`, `source`,
//! `[[ ]]`, `case`, …), it asks.

use tree_sitter::Node;

use super::bash_words;
use super::hidden_runs::{refused, runs_through, sets_what_runs};
use super::shell::{literal, parse, text_of, NUMERIC_SPECIALS};

/// Bash's reserved words: first in a command, they are syntax, not a program.
const RESERVED: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
    "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// The rendering of `command`, when bash reads it as tree-sitter did; else why not.
pub fn faithful(command: &str) -> Result<String, String> {
    let rendered = render(command)?;
    let read = bash_words::tokens(command).map_err(|why| format!("bash may read it otherwise than the hub: {why}"))?;
    let ours = bash_words::tokens(&rendered).map_err(|why| format!("its rendering cannot be checked: {why}"))?;
    if read != ours {
        return Err("bash and the hub's parser read this command differently".into());
    }
    Ok(rendered)
}

/// Whether bash reads no command at all in `text` (blanks and comments only).
pub fn runs_nothing(text: &str) -> bool {
    bash_words::tokens(text).is_ok_and(|tokens| tokens.is_empty())
}

/// The command as tree-sitter parsed it, spelled the hub's way.
pub fn render(command: &str) -> Result<String, String> {
    let tree = parse(command).map_err(|why| format!("it could not be parsed ({why:?})"))?;
    let root = tree.root_node();
    if root.has_error() {
        return Err("it could not be parsed".into());
    }
    let mut renderer = Renderer { source: command, out: String::new(), bodies: Vec::new(), row: 0, depth: 0 };
    renderer.block(root)?;
    if !renderer.bodies.is_empty() {
        renderer.newline();
    }
    Ok(renderer.out.trim_matches('\n').to_string())
}

struct Renderer<'s> {
    source: &'s str,
    out: String,
    /// Here-document bodies (each with its closing line), due after the next newline.
    bodies: Vec<String>,
    /// The line of the text rendered last: a line of the text is a line of the
    /// rendering (bash parses and runs a line at a time).
    row: usize,
    /// Statements within statements, bounded (the rendering recurses).
    depth: usize,
}

/// Deeper than this, a command asks (no one reads such a command anyway).
const MAX_DEPTH: usize = 64;

impl Renderer<'_> {
    fn emit(&mut self, token: &str) {
        if !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
            self.out.push(' ');
        }
        self.out.push_str(token);
    }

    /// A newline first where `node` starts on a later line of the text.
    fn line_of(&mut self, node: Node) {
        if node.start_position().row > self.row {
            self.newline();
        }
        self.row = self.row.max(node.start_position().row);
    }

    /// After `node` is rendered: the line of its last character that is not
    /// a blank (a here-document's body and end are part of it).
    fn past(&mut self, node: Node) {
        let text = text_of(node, self.source).trim_end();
        self.row = self.row.max(node.start_position().row + text.matches('\n').count());
    }

    fn newline(&mut self) {
        if self.out.ends_with('\n') && self.bodies.is_empty() {
            return;
        }
        self.out.push('\n');
        for body in std::mem::take(&mut self.bodies) {
            self.out.push_str(&body);
        }
    }

    /// Statements with their terminators and keywords: the program, a subshell,
    /// `{ }`, `do … done`, `if`, `while`, `for` and their clauses.
    fn block(&mut self, node: Node) -> Result<(), String> {
        if node.kind() == "compound_statement" && text_of(node, self.source).starts_with("((") {
            return Err("`(( ))` is not rendered".into());
        }
        let mut after_statement = false;
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            if child.kind() == "comment" {
                continue;
            }
            let row = self.row;
            self.line_of(child);
            if !child.is_named() {
                match text_of(child, self.source) {
                    // A newline the parser keeps as a token (`if a⏎then`).
                    "\n" => self.newline(),
                    ";" => self.out.push(';'),
                    "&" => self.emit("&"),
                    token @ ("if" | "while" | "until" | "for" | "select" | "(" | "{" | "in" | "then" | "do"
                    | "else" | "elif" | "fi" | "done" | ")" | "}") => self.emit(token),
                    other => return Err(format!("`{other}` is not rendered")),
                }
                after_statement = false;
                continue;
            }
            match child.kind() {
                "do_group" | "elif_clause" | "else_clause" => {
                    self.block(child)?;
                    self.past(child);
                }
                "variable_name" if node.kind() == "for_statement" => {
                    let name = text_of(child, self.source);
                    if runs_through(name) {
                        return Err(format!("a loop over `{name}` sets what bash runs"));
                    }
                    self.emit(name);
                }
                _ if node.kind() == "for_statement" && node.child_by_field_name("body") != Some(child) => {
                    self.word(child)?
                }
                _ => {
                    // Two statements on one line with nothing between: not bash as bash reads it.
                    if after_statement && child.start_position().row <= row {
                        return Err("two commands on one line without a separator are not rendered".into());
                    }
                    self.statement(child)?;
                    self.past(child);
                    after_statement = true;
                }
            }
        }
        Ok(())
    }

    fn statement(&mut self, node: Node) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("commands nested this deep are not rendered".into());
        }
        let rendered = self.statement_at_depth(node);
        self.depth -= 1;
        rendered
    }

    fn statement_at_depth(&mut self, node: Node) -> Result<(), String> {
        match node.kind() {
            "command" => self.command(node),
            "redirected_statement" | "list" | "pipeline" | "negated_command" => self.joined(node),
            "subshell" | "compound_statement" | "if_statement" | "while_statement" | "for_statement" => {
                self.block(node)
            }
            "declaration_command" | "unset_command" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                let values: Vec<String> =
                    children.iter().filter_map(|child| literal(*child, self.source, false)).collect();
                // `-i` evaluates values as arithmetic, `-n` makes a reference, `-f` a function.
                if let Some(option) =
                    values.iter().find(|value| value.starts_with('-') && value.contains(['i', 'n', 'f']))
                {
                    return Err(format!("a declaration with `{option}` is not rendered"));
                }
                let name_of =
                    |value: &String| value.split_once('=').map_or(value.clone(), |(name, _)| name.to_string());
                if let Some(value) = values
                    .iter()
                    .find(|value| sets_what_runs(value) || value.contains('[') || runs_through(&name_of(value)))
                {
                    return Err(format!("`{value}` sets what bash or a program runs, or an array element"));
                }
                for child in children {
                    match child.kind() {
                        "variable_assignment" => self.assignment(child)?,
                        "variable_name" => {
                            let name = text_of(child, self.source);
                            self.emit(name);
                        }
                        "export" | "declare" | "local" | "readonly" | "typeset" | "unset" | "unsetenv"
                            if !child.is_named() =>
                        {
                            let keyword = text_of(child, self.source);
                            self.emit(keyword);
                        }
                        _ => self.word(child)?,
                    }
                }
                Ok(())
            }
            "variable_assignments" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                children.into_iter().try_for_each(|child| self.assignment(child))
            }
            "variable_assignment" => self.assignment(node),
            "test_command" => Err("`[ ]` and `[[ ]]` are not rendered (`test` is)".into()),
            "function_definition" => Err("a function definition is not rendered".into()),
            other => Err(format!("a {} is not rendered", other.replace('_', " "))),
        }
    }

    /// Statements joined by operators (`&&`, `|`, `!`), or a statement and its redirections.
    fn joined(&mut self, node: Node) -> Result<(), String> {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "&&" | "||" | "|" | "|&" | "!" if !child.is_named() => {
                    self.line_of(child);
                    let operator = text_of(child, self.source);
                    self.emit(operator);
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => self.redirect(child)?,
                "comment" => {}
                _ if child.is_named() => {
                    self.line_of(child);
                    self.statement(child)?;
                    self.past(child);
                }
                other => return Err(format!("`{other}` is not rendered")),
            }
        }
        Ok(())
    }

    fn command(&mut self, node: Node) -> Result<(), String> {
        let words: Vec<String> = (0..node.child_count())
            .filter(|&i| matches!(node.field_name_for_child(i), Some("name" | "argument")))
            .filter_map(|i| node.child(i))
            .map(|word| literal(word, self.source, false).unwrap_or_default())
            .collect();
        if let Some(why) = refused(&words) {
            return Err(why);
        }
        // Tree-sitter reads `then x` or `fi` as a command; bash, as a keyword.
        let name_node = node.child_by_field_name("name");
        if let Some(name) = name_node.filter(|name| !text_of(*name, self.source).contains(['\'', '"', '\\'])) {
            let name = text_of(name, self.source);
            if RESERVED.contains(&name) {
                return Err(format!("`{name}` is a reserved word where the hub's parser reads a command"));
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "variable_assignment" => self.assignment(child)?,
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => self.redirect(child)?,
                _ => self.word(child)?,
            }
        }
        Ok(())
    }

    /// A word, re-quoted from its value: bare when it was bare and needs no
    /// quotes, else in single quotes (a quoted word stays quoted, so a quoted
    /// `if` or `{` stays a plain word).
    fn word(&mut self, node: Node) -> Result<(), String> {
        let rendered = self.spelled(node)?;
        self.emit(&rendered);
        Ok(())
    }

    fn spelled(&self, node: Node) -> Result<String, String> {
        let text = text_of(node, self.source);
        // `$$`, `$?`, `$#`, `$!` stay as they are: numbers, whatever the run.
        if node.kind() == "simple_expansion" && NUMERIC_SPECIALS.contains(&text) {
            return Ok(text.to_string());
        }
        let value = literal(node, self.source, false)
            .ok_or_else(|| format!("`{}` is known only when it runs", text.chars().take(40).collect::<String>()))?;
        quote(&value, text.contains(['\'', '"', '\\']))
    }

    fn assignment(&mut self, node: Node) -> Result<(), String> {
        let name = node.child_by_field_name("name").ok_or("an assignment without a name")?;
        let name = text_of(name, self.source);
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("the assignment to `{name}` is not rendered"));
        }
        if sets_what_runs(&format!("{name}=")) {
            return Err(format!("`{name}` sets what bash or a program runs"));
        }
        let mut cursor = node.walk();
        let operator = node
            .children(&mut cursor)
            .find(|child| !child.is_named())
            .map(|child| text_of(child, self.source))
            .filter(|operator| matches!(*operator, "=" | "+="))
            .ok_or("an assignment without `=`")?;
        let value = match node.child_by_field_name("value") {
            None => String::new(),
            Some(value) if value.kind() == "array" => return Err("an array assignment is not rendered".into()),
            Some(value) => {
                let text = text_of(value, self.source);
                let decoded = literal(value, self.source, false).ok_or_else(|| {
                    format!("`{}` is known only when it runs", text.chars().take(40).collect::<String>())
                })?;
                quote(&decoded, text.contains(['\'', '"', '\\']))?
            }
        };
        self.emit(&format!("{name}{operator}{value}"));
        Ok(())
    }

    fn redirect(&mut self, node: Node) -> Result<(), String> {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        match node.kind() {
            "file_redirect" => {
                let descriptor = match node.child_by_field_name("descriptor") {
                    // Past an int, bash takes the digits for a word.
                    Some(fd) if text_of(fd, self.source).parse::<i32>().is_ok() => text_of(fd, self.source),
                    Some(_) => return Err("a named or huge file descriptor is not rendered".into()),
                    None => "",
                };
                let operator = children
                    .iter()
                    .find(|child| !child.is_named())
                    .map(|child| text_of(*child, self.source))
                    .ok_or("a redirection without an operator")?;
                if !matches!(operator, ">" | ">>" | "<" | "&>" | "&>>" | ">|" | ">&" | "<&" | ">&-" | "<&-") {
                    return Err(format!("the redirection `{operator}` is not rendered"));
                }
                let destinations: Vec<Node> = children
                    .iter()
                    .copied()
                    .filter(|child| child.is_named() && child.kind() != "file_descriptor")
                    .collect();
                let target = match destinations.as_slice() {
                    [] if operator.ends_with('-') => String::new(),
                    // `2>&1` as one piece, `> file` spaced.
                    [destination] if operator.ends_with('&') => self.spelled(*destination)?,
                    [destination] if !operator.ends_with('-') => format!(" {}", self.spelled(*destination)?),
                    _ => return Err("a redirection with more than one target".into()),
                };
                self.emit(&format!("{descriptor}{operator}{target}"));
                Ok(())
            }
            "herestring_redirect" => {
                self.emit("<<<");
                match children.iter().filter(|child| child.is_named()).collect::<Vec<_>>().as_slice() {
                    [word] => self.word(**word),
                    _ => Err("a here-string without one word".into()),
                }
            }
            _ => self.here_document(&children),
        }
    }

    /// `<<'DELIMITER'`, its body due after the line; what follows the
    /// delimiter on its line (`| grep x && …`) is rendered after it.
    fn here_document(&mut self, children: &[Node]) -> Result<(), String> {
        let start = children
            .iter()
            .find(|child| child.kind() == "heredoc_start")
            .ok_or("a here-document without a delimiter")?;
        let raw = text_of(*start, self.source);
        let (delimiter, quoted) = bash_words::heredoc_delimiter(raw)
            .ok_or_else(|| format!("the here-document delimiter `{raw}` is not rendered"))?;
        let body =
            children.iter().find(|child| child.kind() == "heredoc_body").map_or("", |body| text_of(*body, self.source));
        let end = children.iter().find(|child| child.kind() == "heredoc_end").map(|end| text_of(*end, self.source));
        if end != Some(delimiter) || body.lines().any(|line| line == delimiter) {
            return Err(format!("the here-document's end `{delimiter}` is not where bash ends it"));
        }
        if !quoted && body.contains(['$', '`', '\\']) {
            return Err("an unquoted here-document that expands or escapes something is not rendered".into());
        }
        if !body.is_empty() && !body.ends_with('\n') {
            return Err("a here-document body without its last newline".into());
        }
        for child in children {
            match child.kind() {
                "<<" if !child.is_named() => self.emit(&format!("<<'{delimiter}'")),
                "heredoc_start" | "heredoc_body" | "heredoc_end" => {}
                "file_redirect" | "herestring_redirect" => self.redirect(*child)?,
                "pipeline" | "list" => self.joined(*child)?,
                other => return Err(format!("`{other}` in a here-document is not rendered")),
            }
        }
        self.bodies.push(format!("{body}{delimiter}\n"));
        Ok(())
    }
}

/// Characters a bare word may hold and mean itself (braces only where they
/// were bare: a word with a brace expansion was never judged as known).
fn bare(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./:@%+,=-^{}".contains(c)
}

fn quote(value: &str, quoted: bool) -> Result<String, String> {
    if value.contains('\0') {
        return Err("a word holds a NUL byte".into());
    }
    // A leading `~` stays bare: bash expands it, and the rules read it as written.
    let home = value.strip_prefix('~').filter(|rest| rest.is_empty() || rest.starts_with('/'));
    if !quoted && home.is_some_and(|rest| rest.chars().all(bare)) {
        return Ok(value.to_string());
    }
    if !quoted && !value.is_empty() && value.chars().all(bare) {
        return Ok(value.to_string());
    }
    Ok(format!("'{}'", value.replace('\'', r"'\''")))
}
