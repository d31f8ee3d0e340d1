//! The site's settings: `Leptos.toml` at the repository root (docs/settings.md).
//!
//! The file is embedded at build time. Its `site-root`, when relative, is taken
//! from the repository the binary was built in, not from the directory it runs
//! in: a folder the hub is started in (a cloned repository, say) cannot hand it
//! a page to serve. At run time `LEPTOS_*` variables override the file (as
//! Leptos reads them; a bad one stops the hub), and `--site-root` overrides both.

use std::path::PathBuf;

use std::net::SocketAddr;

use leptos::config::LeptosOptions;

/// `Leptos.toml` as it was when the server was built.
pub const LEPTOS_TOML: &str = include_str!("../../Leptos.toml");

/// `get_config_from_str` reads the keys under a cargo-leptos section header;
/// Leptos.toml holds the keys alone (scripts/lib.sh reads it line by line).
const SECTION_HEADER: &str = "[package.metadata.leptos]\n";

/// Leptos.toml's settings with the `LEPTOS_*` variables of the environment
/// laid over them (`LEPTOS_SITE_ROOT`, `LEPTOS_SITE_PKG_DIR`, `LEPTOS_OUTPUT_NAME`…).
pub fn options_from_file_and_env() -> Result<LeptosOptions, String> {
    leptos::config::get_config_from_str(&format!("{SECTION_HEADER}{LEPTOS_TOML}"))
        .map_err(|err| format!("Leptos.toml or a LEPTOS_* variable is not valid: {err}"))
}

/// Leptos.toml's settings alone, whatever the environment says.
pub fn options_from_file() -> LeptosOptions {
    toml::from_str(LEPTOS_TOML).expect("Leptos.toml holds valid site settings (server/tests/it/leptos_toml.rs)")
}

/// The file's `site-root` as a place: a relative one under the repository the
/// server was built in.
pub fn built_site_root() -> PathBuf {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The workspace root: the server crate's parent (a path cargo gives absolute).
    let repository = server.parent().unwrap_or(server);
    repository.join(&*options_from_file().site_root)
}

/// The address the hub listens on unless `--host`/`--port` (`HUB_HOST`/`HUB_PORT`)
/// say otherwise: Leptos.toml's `site-addr`. `LEPTOS_SITE_ADDR` does not move it
/// (Leptos parses the variable, and a bad one stops the hub; the hub's own flags
/// name its address).
pub fn default_addr() -> SocketAddr {
    options_from_file().site_addr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_gives_the_hubs_names_and_places() {
        let options = options_from_file();
        assert_eq!(&*options.output_name, "agent_hub");
        assert_eq!(&*options.site_root, "target/site");
        assert_eq!(&*options.site_pkg_dir, "pkg");
        assert_eq!(default_addr(), "127.0.0.1:7744".parse().unwrap());
        let root = built_site_root();
        assert!(root.is_absolute() && root.ends_with("target/site"), "{}", root.display());
        let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(root.starts_with(repository), "{} is not under {}", root.display(), repository.display());
    }

    /// What the server serves from, read the way Leptos reads it: the same
    /// values as the plain parse (cargo's own LEPTOS_OUTPUT_NAME, set by
    /// .cargo/config.toml for `cargo test`, agrees with the file).
    #[test]
    fn leptos_reads_the_embedded_file_as_the_plain_parse_does() {
        let layered = options_from_file_and_env().unwrap();
        let plain = options_from_file();
        if std::env::var_os("LEPTOS_SITE_ROOT").is_none() {
            assert_eq!(layered.site_root, plain.site_root);
        }
        assert_eq!(layered.output_name, plain.output_name);
        assert_eq!(layered.site_pkg_dir, plain.site_pkg_dir);
        assert_eq!(layered.reload_port, plain.reload_port);
    }
}
