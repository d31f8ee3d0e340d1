//! Leptos.toml is the one place for the site's settings (docs/settings.md). Two
//! copies must follow it: Cargo.toml's `[[workspace.metadata.leptos]]`, which
//! cargo-leptos 0.3 reads (it reads no other file), and `LEPTOS_OUTPUT_NAME` in
//! .cargo/config.toml, which the leptos crate reads when it is compiled. And
//! scripts/lib.sh reads Leptos.toml line by line, so every setting must be one line.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("server/ has a parent").to_path_buf()
}

fn read(relative: &str) -> String {
    let path = repository_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn parse(relative: &str) -> Table {
    read(relative).parse().unwrap_or_else(|err| panic!("{relative} is not valid TOML: {err}"))
}

/// Cargo.toml's cargo-leptos section (an array of one table: one site).
fn cargo_leptos_section(cargo_toml: &Table) -> &Table {
    let sites = cargo_toml
        .get("workspace")
        .and_then(|workspace| workspace.get("metadata"))
        .and_then(|metadata| metadata.get("leptos"))
        .and_then(Value::as_array)
        .expect("Cargo.toml has a [[workspace.metadata.leptos]] section");
    assert_eq!(sites.len(), 1, "Cargo.toml names one site for cargo-leptos");
    sites[0].as_table().expect("[[workspace.metadata.leptos]] is a table")
}

/// A value as it is written in the file (the crate's Display is not compiled in).
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        Value::Integer(number) => number.to_string(),
        Value::Boolean(flag) => flag.to_string(),
        other => format!("{other:?}"),
    }
}

/// Every way the two sets of settings differ: a key in one and not the other,
/// or a key with two values. Empty when they agree.
fn differences(leptos_toml: &Table, cargo_section: &Table) -> Vec<String> {
    let mut found = Vec::new();
    for (key, value) in leptos_toml {
        match cargo_section.get(key) {
            None => found.push(format!("`{key}` is in Leptos.toml but not in Cargo.toml")),
            Some(other) if other != value => {
                found.push(format!("`{key}` is {} in Leptos.toml but {} in Cargo.toml", shown(value), shown(other)))
            }
            Some(_) => {}
        }
    }
    for key in cargo_section.keys().filter(|key| !leptos_toml.contains_key(*key)) {
        found.push(format!("`{key}` is in Cargo.toml but not in Leptos.toml"));
    }
    found
}

#[test]
fn cargo_toml_gives_cargo_leptos_the_settings_of_leptos_toml() {
    let leptos_toml = parse("Leptos.toml");
    let cargo_toml = parse("Cargo.toml");
    let found = differences(&leptos_toml, cargo_leptos_section(&cargo_toml));
    assert!(
        found.is_empty(),
        "Cargo.toml's [[workspace.metadata.leptos]] must repeat Leptos.toml exactly:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_value_changed_in_one_file_only_is_a_difference() {
    let leptos_toml = parse("Leptos.toml");
    let mut cargo_section = leptos_toml.clone();
    assert!(differences(&leptos_toml, &cargo_section).is_empty());
    cargo_section.insert("site-pkg-dir".into(), Value::String("assets".into()));
    cargo_section.insert("hash-files".into(), Value::Boolean(true));
    cargo_section.remove("reload-port");
    let found = differences(&leptos_toml, &cargo_section);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found.iter().any(|line| line.contains("`site-pkg-dir` is \"pkg\" in Leptos.toml but \"assets\"")));
}

#[test]
fn cargo_config_compiles_leptos_with_the_same_output_name() {
    let config = parse(".cargo/config.toml");
    let compiled = config.get("env").and_then(|env| env.get("LEPTOS_OUTPUT_NAME")).and_then(Value::as_str);
    let leptos_toml = parse("Leptos.toml");
    let output_name = leptos_toml.get("output-name").and_then(Value::as_str);
    assert!(output_name.is_some(), "Leptos.toml names the bundle (output-name)");
    assert_eq!(
        compiled, output_name,
        ".cargo/config.toml's [env] LEPTOS_OUTPUT_NAME against Leptos.toml's output-name"
    );
}

/// scripts/lib.sh reads `key = value` lines with sed; a table, a value over
/// several lines or a duplicate key would be misread there.
#[test]
fn every_setting_is_one_line_the_scripts_can_read() {
    let text = read("Leptos.toml");
    let mut keys = Vec::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let (key, value) = line.split_once(" = ").unwrap_or_else(|| panic!("not a `key = value` line: {line}"));
        assert!(key.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "a bare key: {line}");
        let one_value: Table =
            line.parse().unwrap_or_else(|err| panic!("{line} is not a whole setting on one line: {err}"));
        assert!(!matches!(one_value[key], Value::Table(_) | Value::Array(_)), "a plain value: {line}");
        assert!(!value.contains('#'), "no comment after a value (the scripts would read it): {line}");
        keys.push(key.to_string());
    }
    assert_eq!(keys.len(), parse("Leptos.toml").len(), "every key once, each on its own line");
}

/// The server embeds Leptos.toml; what it reads must be the file in the repository.
#[test]
fn the_server_serves_what_leptos_toml_says() {
    let options = agent_hub::site::options_from_file();
    let leptos_toml = parse("Leptos.toml");
    // Served from the file's site-root under this repository, wherever the hub runs.
    let served = agent_hub::site::built_site_root();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let expected = repository.join(leptos_toml["site-root"].as_str().unwrap());
    assert_eq!(served, expected);
    assert_eq!(Some(&*options.output_name), leptos_toml["output-name"].as_str());
    assert_eq!(Some(&*options.site_root), leptos_toml["site-root"].as_str());
    assert_eq!(Some(&*options.site_pkg_dir), leptos_toml["site-pkg-dir"].as_str());
    assert_eq!(Some(options.site_addr.to_string().as_str()), leptos_toml["site-addr"].as_str());
}
