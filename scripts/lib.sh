# Shared by scripts/*: installs what the build needs, idempotently, and builds.
# Sourced, not run. Every step prints one line and is quick when already done.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export PATH="$CARGO_HOME/bin:$ROOT/node_modules/.bin:$PATH"
WASM_TARGET=wasm32-unknown-unknown

step() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# One setting of Leptos.toml, the one place for the site's names and places
# (docs/settings.md). Every setting there is one `key = value` line
# (server/tests/it/leptos_toml.rs keeps it so); quotes are dropped.
leptos_setting() { # key
  local value
  value="$(sed -n -E "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"?([^\"]*)\"?[[:space:]]*\$/\1/p" "$ROOT/Leptos.toml")"
  [ -n "$value" ] && [ "$(printf '%s\n' "$value" | wc -l)" -eq 1 ] \
    || die "Leptos.toml has no single \`$1 = ...\` line"
  printf '%s' "$value"
}
OUTPUT_NAME="$(leptos_setting output-name)"
SITE="$(leptos_setting site-root)"
PKG_DIR="$(leptos_setting site-pkg-dir)"
# The build moves and deletes under these: a relative place inside the repository, and a
# plain folder name, nothing that climbs out (`..`) or names the site itself.
[[ "$SITE" != /* && "/$SITE/" != */../* ]] || die "Leptos.toml's site-root must be a path inside the repository: $SITE"
[[ "$PKG_DIR" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] || die "Leptos.toml's site-pkg-dir must be a plain folder name: $PKG_DIR"
SITE="$ROOT/$SITE"
STYLE_FILE="$(leptos_setting tailwind-input-file)"
ASSETS_DIR="$(leptos_setting assets-dir)"
CLIENT_PACKAGE="$(leptos_setting lib-package)"
CLIENT_PROFILE="$(leptos_setting lib-profile-release)"
SERVER_PACKAGE="$(leptos_setting bin-package)"
SERVER_BIN="$(leptos_setting bin-target)"
# Where cargo builds: CARGO_TARGET_DIR when set (a target dir shared between
# checkouts), else target/. The site stays where Leptos.toml puts it.
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET_DIR" = /* ]] || TARGET_DIR="$ROOT/$TARGET_DIR" # cargo runs from $ROOT too

# Runs apt-get as root (directly, or via sudo) where this is a Debian-like machine.
apt_install() {
  command -v apt-get >/dev/null || die "please install: $*"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if [ ! -f /tmp/.agent-hub-apt-updated ]; then
    $sudo apt-get update -qq >&2 && touch /tmp/.agent-hub-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

# Chooses how to build for wasm32: rustup's target when it can be had, else
# Debian's rustc-web with the standard library built from source (shared/BUILD.md).
# Sets WASM_MODE to "rustup" or "debian"; HUB_WASM_TOOLCHAIN=debian forces the
# fallback (to check it on a machine where rustup works).
ensure_wasm_toolchain() {
  if [ "${HUB_WASM_TOOLCHAIN:-}" != debian ] && command -v rustup >/dev/null; then
    if rustup target list --installed 2>/dev/null | grep -qx "$WASM_TARGET"; then
      WASM_MODE=rustup; return
    fi
    step "adding the $WASM_TARGET target with rustup"
    if timeout 180 rustup target add "$WASM_TARGET" >&2 \
      && rustup target list --installed | grep -qx "$WASM_TARGET"; then
      WASM_MODE=rustup; return
    fi
    step "rustup could not add $WASM_TARGET: using Debian's rustc-web with -Zbuild-std"
  fi
  if ! { [ -x /usr/bin/cargo ] && [ -d /usr/lib/rustlib/src/rust ] && [ -e /usr/bin/rust-lld ] \
         && /usr/bin/rustc --print target-list | grep -qx "$WASM_TARGET"; }; then
    step "installing Debian's rustc-web, rust-web-src and lld"
    apt_install rustc-web cargo-web rust-web-src lld-22
  fi
  WASM_MODE=debian
}

# `erase_components` makes every Leptos component return a type-erased view:
# one copy of the rendering code instead of one per component tree (-22 % gzip,
# docs/measurements.md "Weight"). Server and client must agree or the server's
# HTML does not hydrate; .cargo/config.toml sets it, but RUSTFLAGS from the environment
# replaces that setting, so it is added there too.
# (app fails to compile without it, so a mismatch cannot go unnoticed.)
for flags in RUSTFLAGS RUSTDOCFLAGS; do
  if [ -n "${!flags+set}" ] && [[ "${!flags}" != *erase_components* ]]; then
    export "$flags=${!flags} --cfg erase_components"
  fi
done
if [ -n "${CARGO_ENCODED_RUSTFLAGS+set}" ] && [[ "$CARGO_ENCODED_RUSTFLAGS" != *erase_components* ]]; then
  export CARGO_ENCODED_RUSTFLAGS="${CARGO_ENCODED_RUSTFLAGS:+$CARGO_ENCODED_RUSTFLAGS$'\x1f'}--cfg"$'\x1f'"erase_components"
fi
# Flags of the client build; --emit-relocs lets wasm-split-cli move code between modules.
WASM_RUSTFLAGS="--cfg erase_components -Clink-arg=--emit-relocs"
# wasm-split-cli: its 0.2 line speaks the protocol of wasm_split_helpers 0.2 (checked against Cargo.lock).
WASM_SPLIT_VERSION=0.2.4

# Cargo for the client build, by WASM_MODE. The client's flags replace the
# environment's, which are the host's (a linker, say) and would otherwise replace
# them, --emit-relocs with them; HUB_WASM_RUSTFLAGS adds to them.
wasm_cargo() {
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$WASM_RUSTFLAGS ${HUB_WASM_RUSTFLAGS:-}"
  if [ "$WASM_MODE" = rustup ]; then
    env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS cargo "$@"
  else
    # Debian's cargo and rustc both; a target dir of its own so the two
    # toolchains never invalidate each other's artifacts.
    env -u RUSTC -u RUSTDOC -u RUSTUP_TOOLCHAIN -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS PATH="/usr/bin:$PATH" RUSTC_BOOTSTRAP=1 \
      CARGO_TARGET_DIR="$TARGET_DIR/debian-wasm" /usr/bin/cargo "$@" -Zbuild-std=std,panic_abort
  fi
}

wasm_target_dir() {
  if [ "$WASM_MODE" = rustup ]; then echo "$TARGET_DIR"; else echo "$TARGET_DIR/debian-wasm"; fi
}

# wasm-bindgen-cli must match the wasm-bindgen version in Cargo.lock exactly.
ensure_wasm_bindgen() {
  local want
  want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)"
  [ -n "$want" ] || die "wasm-bindgen not found in Cargo.lock"
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    step "installing wasm-bindgen-cli $want (about 2 minutes, once)"
    # Not --locked: its lockfile pins a crate version the registry may lack.
    cargo install -q wasm-bindgen-cli --version "$want" >&2
  fi
}

# wasm-split-cli cuts the client's wasm at its #[wasm_split] functions (what
# `cargo leptos --split` does, without cargo-leptos).
ensure_wasm_split() {
  local helpers
  helpers="$(awk '/^name = "wasm_split_helpers"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)"
  [ "${helpers%.*}" = "${WASM_SPLIT_VERSION%.*}" ] \
    || die "Cargo.lock has wasm_split_helpers $helpers; wasm-split-cli $WASM_SPLIT_VERSION is for ${WASM_SPLIT_VERSION%.*}: update WASM_SPLIT_VERSION in scripts/lib.sh"
  if ! command -v wasm-split-cli >/dev/null \
     || ! cargo install --list | grep -qx "wasm_split_cli_support v$WASM_SPLIT_VERSION:"; then
    step "installing wasm-split-cli $WASM_SPLIT_VERSION (about 2 minutes, once)"
    cargo install -q --locked wasm_split_cli_support --version "$WASM_SPLIT_VERSION" --features build-binary >&2
  fi
}

# Node packages: Tailwind and playwright-core, as locked in package-lock.json.
# `npm install --no-save` rather than `npm ci`: some registry mirrors lack
# Tailwind's optional binaries for other platforms, which `npm ci` refuses.
ensure_node_modules() {
  command -v npm >/dev/null || apt_install nodejs npm
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
     || [ package.json -nt node_modules/.package-lock.json ]; then
    step "installing node packages"
    npm install --no-save --no-audit --no-fund --loglevel=error >&2
  fi
}

# The real Gemini CLI for the ACP end-to-end tests (end2end/gemini-cli, locked).
# It needs Node.js 20 or newer.
ensure_npm_dir() { # dir, what
  local dir=$1
  if [ ! -f $dir/node_modules/.package-lock.json ] || [ $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]; then
    step "installing $2"
    # `install`, not `ci`: npm leaves other platforms' optional packages out of
    # a lock written on Linux, and `ci` then refuses it; the lock still pins every version.
    npm install --prefix $dir --no-save --no-audit --no-fund --loglevel=error >&2
  fi
}

ensure_gemini_cli() {
  ensure_npm_dir end2end/gemini-cli "Gemini CLI (for the ACP tests)"
}

# Claude Code, Codex and Qwen Code (with the Node.js 22 it needs), pinned in end2end/acp-agents.
ensure_acp_agents() {
  ensure_npm_dir end2end/acp-agents "Claude Code, Codex and Qwen Code ACP agents (for the ACP tests)"
}

build_client() {
  ensure_wasm_toolchain
  ensure_wasm_bindgen
  ensure_wasm_split
  ensure_node_modules
  step "building the client (wasm, $WASM_MODE toolchain)"
  wasm_cargo build --lib -p "$CLIENT_PACKAGE" --target "$WASM_TARGET" --profile "$CLIENT_PROFILE"
  local wasm split="$TARGET_DIR/wasm-split" pkg="$SITE/$PKG_DIR.new"
  wasm="$(wasm_target_dir)/$WASM_TARGET/$CLIENT_PROFILE/${CLIENT_PACKAGE//-/_}.wasm"
  # The functions marked #[wasm_split] go to wasm files of their own, fetched on
  # first use (or prefetched after hydration); the rest is the main module.
  # Built aside and moved in at the end: a failed build leaves the last one.
  rm -rf "$split" "$pkg"
  mkdir -p "$split" "$pkg"
  wasm-split-cli "$wasm" "$split" --target web --out-name "$OUTPUT_NAME" >&2
  # --keep-lld-exports: the split-off modules call into the main one through them.
  wasm-bindgen --target web --out-name "$OUTPUT_NAME" --out-dir "$pkg" --no-typescript \
    --keep-lld-exports --remove-name-section --remove-producers-section "$split/$OUTPUT_NAME.wasm"
  mv -f "$pkg/${OUTPUT_NAME}_bg.wasm" "$pkg/$OUTPUT_NAME.wasm"
  find "$split" -maxdepth 1 -type f ! -name "$OUTPUT_NAME.wasm" -exec cp {} "$pkg/" \;
  strip_names $(find "$pkg" -name '*.wasm' ! -name "$OUTPUT_NAME.wasm")
  name_parts_by_content "$pkg"
  minify_js "$pkg"/*.js
  step "bundling the syntax highlighter (esbuild)"
  bundle_highlighter "$pkg/highlighter.js"
  step "building the stylesheet (Tailwind)"
  tailwindcss -i "$STYLE_FILE" -o "$pkg/$OUTPUT_NAME.css" --minify 2>/dev/null
  cp -R "$ASSETS_DIR/." "$SITE/"
  compress_assets "$pkg"/*.js "$pkg"/*.wasm "$pkg/$OUTPUT_NAME.css"
  rm -rf "$SITE/$PKG_DIR.old"
  [ ! -d "$SITE/$PKG_DIR" ] || mv "$SITE/$PKG_DIR" "$SITE/$PKG_DIR.old"
  mv "$pkg" "$SITE/$PKG_DIR"
  rm -rf "$SITE/$PKG_DIR.old"
}

# Drops the "name" and "producers" sections of wasm files (what wasm-bindgen's
# --remove-name-section does for the main module; the split-off parts never pass
# through wasm-bindgen). Nothing the browser runs depends on them.
strip_names() {
  [ $# -gt 0 ] && [ -e "$1" ] || return 0
  node -e '
    const fs = require("fs");
    for (const file of process.argv.slice(1)) {
      const wasm = fs.readFileSync(file);
      let at = 8;
      const leb = () => { let value = 0, shift = 0, byte;
        do { byte = wasm[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
        return value; };
      const kept = [wasm.subarray(0, 8)];
      while (at < wasm.length) {
        const start = at, id = wasm[at++], size = leb(), body = at;
        at = body + size;
        if (id === 0) {
          const end = at; at = body;
          const length = leb(), name = wasm.subarray(at, at + length).toString();
          at = end;
          if (name === "name" || name === "producers") continue;
        }
        kept.push(wasm.subarray(start, at));
      }
      fs.writeFileSync(file, Buffer.concat(kept));
    }' "$@"
}

# Puts a hash of its content into the name of each split-off wasm file and of
# their loader, __wasm_split.js (rewriting the names where they are referenced).
# A page open across a rebuild then fetches no part of another build (which
# would call into its main module at the wrong places): it gets a 404, and the
# page says the part could not be loaded.
name_parts_by_content() {
  node -e '
    const fs = require("fs"), path = require("path"), crypto = require("crypto");
    const [pkg, main] = process.argv.slice(1);
    const hash = (data) => crypto.createHash("sha256").update(data).digest("hex").slice(0, 16);
    const replaceAll = (text, from, to, where) => {
      if (!text.includes(from)) throw new Error(`${from} is not in ${where}`);
      return text.split(from).join(to);
    };
    const loaderPath = path.join(pkg, "__wasm_split.js");
    let loader = fs.readFileSync(loaderPath, "utf8");
    for (const name of fs.readdirSync(pkg)) {
      if (!name.endsWith(".wasm") || name === `${main}.wasm`) continue;
      const hashed = name.replace(/\.wasm$/, `.${hash(fs.readFileSync(path.join(pkg, name)))}.wasm`);
      loader = replaceAll(loader, JSON.stringify(`./${name}`), JSON.stringify(`./${hashed}`), "__wasm_split.js");
      fs.renameSync(path.join(pkg, name), path.join(pkg, hashed));
    }
    const loaderName = `__wasm_split.${hash(loader)}.js`;
    fs.writeFileSync(path.join(pkg, loaderName), loader);
    fs.unlinkSync(loaderPath);
    // Only the module imports: the wasm itself keeps importing "./__wasm_split.js".
    const mainPath = path.join(pkg, `${main}.js`);
    const glue = replaceAll(fs.readFileSync(mainPath, "utf8"), `from "./__wasm_split.js"`, `from "./${loaderName}"`, mainPath);
    fs.writeFileSync(mainPath, glue);
  ' "$1" "$OUTPUT_NAME"
}

# wasm-bindgen's glue and the parts' loader are written to be read; every page
# loads them before it is interactive, and terser takes a quarter off their gzip
# (docs/measurements.md "Weight"). Property names stay: the wasm imports the glue's by name.
minify_js() {
  local file
  for file in "$@"; do
    terser "$file" --module --compress --mangle --output "$file"
  done
}

# The syntax highlighter: app/js/highlight.js with highlight.js, its grammars and
# the tokens' colours (style/highlight.css, as text), bundled into one classic
# script that defines `hubHighlight`. The page loads it only once a code block or
# a diff is on screen (app/src/highlight.rs), so it is no part of the first load.
# highlight.js is BSD-3-Clause: its notice goes along.
bundle_highlighter() {
  local version
  version="$(node -p 'require("highlight.js/package.json").version')"
  esbuild app/js/highlight.js --bundle --format=iife --global-name=hubHighlight --minify --loader:.css=text \
    --banner:js="/*! highlight.js $version | BSD-3-Clause | Copyright (c) 2006, Ivan Sagalaev and other contributors | https://github.com/highlightjs/highlight.js */" \
    --log-level=warning --outfile="$1"
  # BSD-3-Clause: the conditions and the disclaimer go with the code.
  cp node_modules/highlight.js/LICENSE "${1%.js}.LICENSE.txt"
}

# Writes .gz and .br beside each asset; the server sends them as they are.
compress_assets() {
  node -e '
    const zlib = require("zlib"), fs = require("fs");
    for (const file of process.argv.slice(1)) {
      const data = fs.readFileSync(file);
      fs.writeFileSync(file + ".gz", zlib.gzipSync(data, { level: 9 }));
      fs.writeFileSync(file + ".br", zlib.brotliCompressSync(data, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
    }' "$@"
}

# Fails when the first load (gzip of the js, wasm and css every page loads
# before it is interactive: the main module and its loader, not the parts
# fetched after hydration) is over the budget in bench/first-load-budget:
# size cannot drift silently.
check_first_load_size() {
  local budget total pkg="$SITE/$PKG_DIR"
  budget=$(grep -v '^#' "$ROOT/bench/first-load-budget" | tr -d '[:space:]')
  # Without its parts the main module would hold everything again.
  local part
  for part in session cards markdown policy; do
    compgen -G "$pkg/split_$part.*.wasm" >/dev/null || die "the client has no $part part (split_$part.*.wasm): the wasm split did not happen"
  done
  [ -f "$pkg/highlighter.js.gz" ] || die "the client has no syntax highlighter (highlighter.js): the esbuild step did not run"
  total=$(cat "$pkg/$OUTPUT_NAME.js.gz" "$pkg"/__wasm_split.*.js.gz "$pkg/$OUTPUT_NAME.wasm.gz" \
    "$pkg/$OUTPUT_NAME.css.gz" | wc -c)
  if [ "$total" -gt "$budget" ]; then
    die "the first load is $total bytes gzipped, over the budget of $budget in bench/first-load-budget (raise it only on purpose, in a commit that says why)"
  fi
  step "first load: $total bytes gzipped (budget $budget); the highlighter, fetched once code is shown: $(wc -c <"$pkg/highlighter.js.gz") bytes"
}

# Debian's Chromium (no browser download); CHROMIUM_PATH overrides.
ensure_chromium() {
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    [ -x "$CHROMIUM_PATH" ] || die "CHROMIUM_PATH=$CHROMIUM_PATH is not executable"
    return
  fi
  if [ ! -x /usr/bin/chromium ]; then
    step "installing Debian's chromium"
    apt_install chromium
  fi
  export CHROMIUM_PATH=/usr/bin/chromium
}

# bubblewrap: the sandbox every command and agent of the hub runs in
# (docs/sandbox.md). Where it cannot be had the hub still runs, keeps YOLO off
# and says why; --no-sandbox runs without it.
ensure_bwrap() {
  command -v bwrap >/dev/null && return
  if [ "$(uname -s)" != Linux ] || ! command -v apt-get >/dev/null; then
    step "no bubblewrap (bwrap): the hub will run without its sandbox and keep YOLO off (docs/sandbox.md)"
    return
  fi
  step "installing bubblewrap (the hub's sandbox)"
  apt_install bubblewrap
}

ensure_rust_components() {
  if command -v rustup >/dev/null && ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
    step "adding rustfmt and clippy"
    rustup component add rustfmt clippy >&2
  fi
}
