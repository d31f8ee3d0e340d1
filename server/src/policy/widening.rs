//! Options that make a command write files or run programs of the caller's
//! choosing, per program. An allow rule (`commandPrefix = "git log"`) is
//! written for what the command usually does; with one of these options it
//! does something else (`git log --output=~/.bashrc`, `cargo test --config
//! 'target."cfg(all())".runner=…'`). So a rule never covers a command that
//! carries one: it goes to the caller's default (a card, or YOLO). The table
//! is in docs/rules.md.

/// How an option is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `--output`, `--output=x`.
    Long,
    /// `-o`, `-ofile`, or within a cluster of flags (`-so`).
    Short,
    /// A word of its own, exactly (`find -exec`).
    Word,
}

/// Per program (by its file name), the options that widen it.
pub const WIDENING: &[(&str, &[(&str, Form)])] = &[
    (
        "git",
        &[
            ("--output", Form::Long),
            ("--upload-pack", Form::Long),
            ("--receive-pack", Form::Long),
            ("--exec", Form::Long),
            ("--ext-diff", Form::Long),
            ("--textconv", Form::Long),
            ("--open-files-in-pager", Form::Long),
            ("--extcmd", Form::Long),
            ("--tool", Form::Long),
            ("--config-env", Form::Long),
            ("--exec-path", Form::Long),
            ("-O", Form::Short),
        ],
    ),
    ("cargo", &[("--config", Form::Long), ("-Z", Form::Short), ("--manifest-path", Form::Long)]),
    ("npm", &[("--script-shell", Form::Long), ("--userconfig", Form::Long), ("--globalconfig", Form::Long)]),
    ("pnpm", &[("--script-shell", Form::Long), ("--config", Form::Long)]),
    ("yarn", &[("--script-shell", Form::Long)]),
    (
        "find",
        &[
            ("-exec", Form::Word),
            ("-execdir", Form::Word),
            ("-ok", Form::Word),
            ("-okdir", Form::Word),
            ("-delete", Form::Word),
            ("-fprint", Form::Word),
            ("-fprint0", Form::Word),
            ("-fprintf", Form::Word),
            ("-fls", Form::Word),
        ],
    ),
    ("sed", &[("-i", Form::Short), ("--in-place", Form::Long)]),
    ("sort", &[("-o", Form::Short), ("--output", Form::Long), ("--compress-program", Form::Long)]),
    (
        "tar",
        &[
            ("--to-command", Form::Long),
            ("--use-compress-program", Form::Long),
            ("-I", Form::Short),
            ("--checkpoint-action", Form::Long),
            ("--info-script", Form::Long),
            ("--new-volume-script", Form::Long),
            ("-F", Form::Short),
        ],
    ),
    ("rsync", &[("-e", Form::Short), ("--rsh", Form::Long), ("--rsync-path", Form::Long)]),
    ("ssh", &[("-o", Form::Short), ("-F", Form::Short)]),
    (
        "curl",
        &[
            ("-o", Form::Short),
            ("--output", Form::Long),
            ("-O", Form::Short),
            ("--remote-name", Form::Long),
            ("-K", Form::Short),
            ("--config", Form::Long),
        ],
    ),
    (
        "wget",
        &[("-O", Form::Short), ("--output-document", Form::Long), ("-o", Form::Short), ("--output-file", Form::Long)],
    ),
    (
        "make",
        &[
            ("-f", Form::Short),
            ("--file", Form::Long),
            ("--makefile", Form::Long),
            ("--eval", Form::Long),
            ("-E", Form::Short),
        ],
    ),
    ("go", &[("-toolexec", Form::Word), ("-exec", Form::Word), ("-overlay", Form::Word)]),
    ("pytest", &[("-p", Form::Short), ("-c", Form::Short), ("--confcutdir", Form::Long)]),
    ("zip", &[("-TT", Form::Word), ("--unzip-command", Form::Long)]),
];

/// The widening option `words` (a simple command's values, its program
/// first) carry, if any.
pub fn widening_option(words: &[String]) -> Option<&'static str> {
    let program = words.first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let (_, options) = WIDENING.iter().find(|(known, _)| *known == name)?;
    let arguments = words[1..].iter().take_while(|word| *word != "--");
    for word in arguments {
        for (option, form) in options.iter() {
            let found = match form {
                Form::Long => word == option || word.starts_with(&format!("{option}=")),
                Form::Word => word == option,
                Form::Short => {
                    let letter = &option[1..];
                    let cluster = word.starts_with('-') && !word.starts_with("--") && word.len() > 1;
                    // `-o`, `-ofile`, or a cluster of one-letter flags holding it (`-sSo`).
                    word.starts_with(option) || (cluster && letter.len() == 1 && word[1..].contains(letter))
                }
            };
            if found {
                return Some(option);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn every_option_of_the_table_is_found_in_each_form_it_is_written() {
        for (program, options) in WIDENING {
            for (option, form) in options.iter() {
                let mut lines = vec![format!("{program} sub {option} x"), format!("/usr/bin/{program} {option} x")];
                match form {
                    Form::Long => lines.push(format!("{program} sub {option}=x")),
                    Form::Short => lines.push(format!("{program} {option}x")),
                    Form::Word => {}
                }
                for line in lines {
                    assert_eq!(widening_option(&words(&line)), Some(*option), "{line}");
                }
            }
        }
    }

    #[test]
    fn the_docs_show_the_table_as_it_is() {
        let docs = include_str!("../../../docs/rules.md");
        for (program, options) in WIDENING {
            let row = docs
                .lines()
                .find(|line| line.starts_with(&format!("| `{program}` |")))
                .unwrap_or_else(|| panic!("docs/rules.md has no row for {program}"));
            let listed = row.matches('`').count() / 2 - 1;
            assert_eq!(listed, options.len(), "{row}");
            for (option, _) in options.iter() {
                assert!(row.contains(&format!("`{option}`")), "{program} {option}: {row}");
            }
        }
    }

    #[test]
    fn ordinary_use_and_other_programs_are_not_widened() {
        for line in [
            "git log -1 --format=%H",
            "git status --short",
            "cargo test -p agent-hub",
            "find . -name x -print",
            "sed -n 1p file",
            "sort -u file",
            "curl -s https://example.com",
            "ls -lo",
            "make test",
            "echo --output=x",
            "git log -- --output=x",
        ] {
            assert_eq!(widening_option(&words(line)), None, "{line}");
        }
        assert_eq!(widening_option(&words("curl -sSo out https://x")), Some("-o"), "within a cluster");
        assert_eq!(widening_option(&words("sed -i.bak s/a/b/ f")), Some("-i"));
    }
}
