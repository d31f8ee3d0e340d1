//! Bash's own reading of a small part of its language, written to bash's rules
//! (the "Shell Operation" and "Quoting" chapters of its manual): words, operators,
//! separators and here-document bodies. Anything outside that part is refused
//! rather than guessed: expansions, globs, brace expansion, `~user`, `case` terminators, process substitution, `<<-`, and
//! here-documents whose delimiter is partly quoted.
//!
//! It exists to check tree-sitter: a command runs without a card only when bash
//! reads the same tokens from its text as from the hub's rendering of what
//! tree-sitter parsed (see `render`).

use super::shell::ansi_c;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Word(Word),
    /// Digits right before `<` or `>` (`2>`): a file descriptor, not a word.
    Descriptor(String),
    /// `;`, `&`, `&&`, `|`, `(`, `<`, … (a `;` is kept apart from a newline:
    /// bash parses and runs a line at a time).
    Operator(&'static str),
    Newline,
    /// A here-document's delimiter (its spelling does not matter once the body is known).
    Delimiter,
    Body(String),
}

/// A word's value, and what else bash sees in it: whether any of it was quoted
/// (a quoted `if` or `{` is no keyword) and whether it is an assignment (`A=…`
/// with `A=` unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub value: String,
    pub quoted: bool,
    pub assigns: bool,
}

/// Operators, longest first so that `&&` is not read as `&` `&`.
const OPERATORS: [&str; 18] =
    ["&&", "&>>", "&>", "&", "||", "|&", "|", ";", "(", ")", "<<<", "<<", "<&", "<", ">>", ">&", ">|", ">"];

/// The tokens of `text`, or what in it this reading does not cover.
pub fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut lexer = Lexer { chars: text.chars().collect(), at: 0, tokens: Vec::new(), heredocs: Vec::new() };
    lexer.run()?;
    Ok(normalized(lexer.tokens))
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    tokens: Vec<Token>,
    /// Here-documents whose bodies start after the next newline: (delimiter, quoted).
    heredocs: Vec<(String, bool)>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' => self.at += 1,
                // A line continuation is removed before anything is read.
                '\\' if self.peek(1) == Some('\n') => self.at += 2,
                '\n' => {
                    self.at += 1;
                    self.tokens.push(Token::Newline);
                    self.bodies()?;
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                _ => match self.operator() {
                    Some(operator) => self.after_operator(operator)?,
                    None => {
                        let before = self.at;
                        self.word()?;
                        // Every character is a blank, an operator or part of a word.
                        if self.at == before {
                            return Err(format!("`{c}` is not read here"));
                        }
                    }
                },
            }
        }
        if !self.heredocs.is_empty() {
            return Err("a here-document has no body".into());
        }
        Ok(())
    }

    fn operator(&self) -> Option<&'static str> {
        OPERATORS.into_iter().find(|operator| operator.chars().enumerate().all(|(i, c)| self.peek(i) == Some(c)))
    }

    fn after_operator(&mut self, operator: &'static str) -> Result<(), String> {
        self.at += operator.chars().count();
        if self.peek(0) == Some('\\') && self.peek(1) == Some('\n') {
            // Bash joins `&\⏎>` into `&>`: not read here.
            return Err("a line continuation right after an operator is not read here".into());
        }
        match (operator, self.peek(0)) {
            (";", Some(';' | '&')) => return Err("`;;` and `;&` (case) are not read here".into()),
            ("<<", Some('-')) => return Err("`<<-` is not read here".into()),
            ("<" | ">" | ">>" | ">|", Some('(')) => return Err("process substitution is not read here".into()),
            ("<", Some('>')) => return Err("`<>` is not read here".into()),
            _ => {}
        }
        self.tokens.push(Token::Operator(operator));
        if operator == "<<" {
            while matches!(self.peek(0), Some(' ' | '\t')) {
                self.at += 1;
            }
            let start = self.at;
            while self.peek(0).is_some_and(|c| !is_blank_or_meta(c)) {
                self.at += 1;
            }
            let raw: String = self.chars[start..self.at].iter().collect();
            let (delimiter, quoted) = heredoc_delimiter(&raw)
                .ok_or_else(|| format!("the here-document delimiter `{raw}` is not a plain or wholly quoted word"))?;
            let delimiter = (delimiter.to_string(), quoted);
            self.heredocs.push(delimiter);
            self.tokens.push(Token::Delimiter);
        }
        Ok(())
    }

    /// The bodies of the here-documents begun on the line just ended.
    fn bodies(&mut self) -> Result<(), String> {
        for (delimiter, quoted) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.at >= self.chars.len() {
                    return Err(format!("the here-document ending at `{delimiter}` is never ended"));
                }
                let start = self.at;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
                let line: String = self.chars[start..self.at].iter().collect();
                if self.peek(0) == Some('\n') {
                    self.at += 1;
                }
                if line == delimiter {
                    break;
                }
                if !quoted && line.contains(['$', '`', '\\']) {
                    return Err("an unquoted here-document expands or escapes something".into());
                }
                body.push_str(&line);
                body.push('\n');
            }
            self.tokens.push(Token::Body(body));
        }
        Ok(())
    }

    fn word(&mut self) -> Result<(), String> {
        let mut value = String::new();
        let mut quoted = false;
        // The unquoted text before the first quote or escape (where `A=` must be).
        let mut head = String::new();
        // Every unquoted character, a quoted piece as one NUL (for brace expansion).
        let mut unquoted = String::new();
        while let Some(c) = self.peek(0) {
            if is_blank_or_meta(c) {
                break;
            }
            self.at += 1;
            match c {
                '\'' => {
                    value.push_str(&self.until('\'')?);
                    quoted = true;
                    unquoted.push('\0');
                }
                '"' => {
                    value.push_str(&self.double_quoted()?);
                    quoted = true;
                    unquoted.push('\0');
                }
                '$' if self.peek(0) == Some('\'') => {
                    self.at += 1;
                    let body = self.ansi_c_body()?;
                    plain_escapes(&body)?;
                    let decoded = ansi_c(&body);
                    if decoded.contains('\0') {
                        return Err("`$'…'` decodes to a NUL byte".into());
                    }
                    value.push_str(&decoded);
                    quoted = true;
                    unquoted.push('\0');
                }
                // `$$`, `$?`, `$#`, `$!` as a whole word: numbers, whatever the run.
                '$' if value.is_empty()
                    && !quoted
                    && matches!(self.peek(0), Some('$' | '?' | '#' | '!'))
                    && self.peek(1).is_none_or(is_blank_or_meta) =>
                {
                    value.push('$');
                    value.extend(self.peek(0));
                    self.at += 1;
                }
                '$' | '`' => return Err("an expansion is not read here".into()),
                '\\' => match self.peek(0) {
                    Some('\n') => self.at += 1,
                    None => return Err("a `\\` ends the command".into()),
                    Some(next) => {
                        self.at += 1;
                        value.push(next);
                        quoted = true;
                        unquoted.push('\0');
                    }
                },
                // `~` or `~/…` at a word's start is the home directory, as the rules read it.
                '~' if value.is_empty()
                    && !quoted
                    && self.peek(0).is_none_or(|next| next == '/' || is_blank_or_meta(next)) =>
                {
                    value.push(c);
                    head.push(c);
                }
                '*' | '?' | '[' | '~' => return Err(format!("an unquoted `{c}` is not read here")),
                _ => {
                    unquoted.push(c);
                    value.push(c);
                    if !quoted {
                        head.push(c);
                    }
                }
            }
        }
        // Bash expands `{a,b}` and `{1..3}` (unquoted braces around an unquoted `,` or `..`).
        let expands = unquoted.find('{').is_some_and(|open| {
            unquoted[open..].find('}').is_some_and(|close| {
                let inside = &unquoted[open..open + close];
                inside.contains(',') || inside.contains("..")
            })
        });
        if expands {
            return Err("a brace expansion is not read here".into());
        }
        if !quoted
            && !value.is_empty()
            && value.chars().all(|c| c.is_ascii_digit())
            && value.parse::<i32>().is_ok()
            && matches!(self.peek(0), Some('<' | '>'))
        {
            self.tokens.push(Token::Descriptor(value));
            return Ok(());
        }
        if !quoted && value.is_empty() {
            // Only line continuations: no word.
            return Ok(());
        }
        // `{fd}>file`: bash opens a new descriptor and names it; not read here.
        if !quoted && value.starts_with('{') && value.ends_with('}') && matches!(self.peek(0), Some('<' | '>')) {
            return Err("a named file descriptor is not read here".into());
        }
        let assigns = assignment_head(&head);
        self.tokens.push(Token::Word(Word { value, quoted, assigns }));
        Ok(())
    }

    /// The text up to `end` (single quotes: nothing is special inside).
    fn until(&mut self, end: char) -> Result<String, String> {
        let start = self.at;
        while self.peek(0).is_some_and(|c| c != end) {
            self.at += 1;
        }
        if self.peek(0).is_none() {
            return Err(format!("an unmatched `{end}`"));
        }
        let text = self.chars[start..self.at].iter().collect();
        self.at += 1;
        Ok(text)
    }

    fn double_quoted(&mut self) -> Result<String, String> {
        let mut value = String::new();
        loop {
            match self.peek(0) {
                None => return Err("an unmatched `\"`".into()),
                Some('"') => {
                    self.at += 1;
                    return Ok(value);
                }
                Some('$' | '`') => return Err("an expansion is not read here".into()),
                Some('\\') => {
                    self.at += 1;
                    match self.peek(0) {
                        Some('\n') => self.at += 1,
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            self.at += 1;
                            value.push(c);
                        }
                        _ => value.push('\\'),
                    }
                }
                Some(c) => {
                    self.at += 1;
                    value.push(c);
                }
            }
        }
    }

    /// The raw text of `$'…'` up to its closing quote (a `\'` does not close it).
    fn ansi_c_body(&mut self) -> Result<String, String> {
        let start = self.at;
        loop {
            match self.peek(0) {
                None => return Err("an unmatched `$'`".into()),
                Some('\\') => self.at += 2,
                Some('\'') => break,
                Some(_) => self.at += 1,
            }
        }
        let text = self.chars[start..self.at.min(self.chars.len())].iter().collect();
        self.at += 1;
        Ok(text)
    }
}

/// A here-document's delimiter as written after `<<`, if this reading covers
/// it: a plain word (`EOF`), or one wholly in single or double quotes; and
/// whether it was quoted (the body is then taken as it is).
pub(super) fn heredoc_delimiter(raw: &str) -> Option<(&str, bool)> {
    let plain = |text: &str| !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain(raw) {
        return Some((raw, false));
    }
    raw.strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .or_else(|| raw.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')))
        .filter(|inside| plain(inside))
        .map(|inside| (inside, true))
}

/// Blanks, newlines and bash's metacharacters end a word.
fn is_blank_or_meta(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '|' | '&' | ';' | '(' | ')' | '<' | '>')
}

/// `NAME=` or `NAME+=` at a word's start, unquoted: bash reads an assignment.
fn assignment_head(head: &str) -> bool {
    let Some(equals) = head.find('=') else { return false };
    let name = head[..equals].strip_suffix('+').unwrap_or(&head[..equals]);
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Newlines where bash does not tell them apart: runs of them are one, none
/// at either end, none right after `&&`, `||`, `|` or `|&` (the command goes
/// on to the next line either way).
fn normalized(tokens: Vec<Token>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if token == Token::Newline
            && matches!(out.last(), None | Some(Token::Newline) | Some(Token::Operator("&&" | "||" | "|" | "|&")))
        {
            continue;
        }
        out.push(token);
    }
    if out.last() == Some(&Token::Newline) {
        out.pop();
    }
    out
}

/// The escapes of `$'…'` that `shell::ansi_c` decodes as bash does: the
/// named ones, and `\xHH` and octal below 0x80 (bash wraps octal past
/// `\377` and keeps the backslash of an unknown escape).
fn plain_escapes(body: &str) -> Result<(), String> {
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied().unwrap_or_default();
        i += 2;
        // The digits that follow, as `ansi_c` takes them.
        let (radix, max, first) = match next {
            'n' | 't' | 'r' | 'a' | 'b' | 'e' | 'E' | 'f' | 'v' | '\\' | '\'' | '"' | '?' => continue,
            'x' => (16, 2, String::new()),
            '0'..='7' => (8, 2, next.to_string()),
            _ => return Err(format!("the escape `\\{next}` in `$'…'` is not read here")),
        };
        let more: String = chars[i..].iter().take(max).take_while(|c| c.is_digit(radix)).collect();
        i += more.len();
        let value = u32::from_str_radix(&format!("{first}{more}"), radix).unwrap_or(u32::MAX);
        if value >= 0x80 {
            return Err(format!("the escape `\\{next}{more}` in `$'…'` is not read here"));
        }
    }
    Ok(())
}
