//! Every subcommand's long help ends with EXAMPLES and EXIT CODES; every
//! example parses with the real command line (so none can drift from the
//! flags), and the exit codes are those of `exit_codes::ALL`.

use clap::{CommandFactory, Parser};
use seckill::cli::Cli;

/// Split an example like a shell would (double quotes group; `>` and `|` end it).
fn words(example: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in example.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            '>' | '|' if !quoted => break,
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[test]
fn every_subcommand_has_examples_that_parse_and_its_exit_codes() {
    let mut command = Cli::command();
    command.build();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|name| name != "help")
        .collect();
    assert!(names.len() >= 11, "{names:?}");
    for name in &names {
        let examples = seckill::invocation::help::examples(name);
        assert!(!examples.is_empty(), "{name} has no examples");
        for example in examples {
            let args = words(example);
            assert_eq!(args[0], "seckill", "{example}");
            assert!(
                args.iter().any(|a| a == name),
                "{example} is not about {name}"
            );
            if let Err(error) = Cli::try_parse_from(&args) {
                panic!("example `{example}` does not parse:\n{error}");
            }
        }
        let sub = command.find_subcommand_mut(name).unwrap();
        let help = sub.render_long_help().to_string();
        assert!(help.contains("Examples:\n  seckill"), "{name}:\n{help}");
        assert!(
            help.contains(&seckill::model::exit_codes::help(name)),
            "{name}:\n{help}"
        );
    }
    // `seckill --help`: a launch day and every code.
    for example in seckill::invocation::help::examples("") {
        if let Err(error) = Cli::try_parse_from(words(example)) {
            panic!("example `{example}` does not parse:\n{error}");
        }
    }
    let root = command.render_long_help().to_string();
    for (code, name, _) in seckill::model::exit_codes::ALL {
        assert!(root.contains(&format!("{code:>2}  {name}")), "{root}");
    }
    // A command's own codes are listed, and only under it.
    let preheat = seckill::model::exit_codes::help("preheat");
    assert!(preheat.contains("preheat_refused"));
    assert!(!seckill::model::exit_codes::help("buy").contains("preheat_refused"));
}
