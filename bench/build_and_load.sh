#!/usr/bin/env bash
# Measures the figures the foundation issue asks for and prints them:
#   - clean build time of client and server (with --clean: a separate, empty
#     target dir, so the shared one is left alone; takes ~8 minutes on 2 cores)
#   - incremental rebuild after a one-line UI change (client + server)
#   - wasm size, raw and compressed
#   - first-load transfer of the page as served: html + js + wasm + css
source "$(dirname "$0")/../scripts/lib.sh"

clean=false
[ "${1:-}" = "--clean" ] && clean=true
ensure_wasm_toolchain
ensure_wasm_bindgen
ensure_node_modules

seconds() { local start=$SECONDS; "$@" >/dev/null 2>&1 || die "failed: $*"; echo $((SECONDS - start)); }

if $clean; then
  scratch="$ROOT/target/bench-clean"
  rm -rf "$scratch"
  step "clean client build (wasm-release)"
  if [ "$WASM_MODE" = rustup ]; then
    client_clean=$(seconds env CARGO_TARGET_DIR="$scratch" cargo build --lib -p agent-hub-web --target "$WASM_TARGET" --profile wasm-release)
  else
    client_clean=$(seconds env CARGO_TARGET_DIR="$scratch" HUB_SCRATCH=1 bash -c "source scripts/lib.sh; WASM_MODE=debian; wasm_cargo build --lib -p agent-hub-web --target $WASM_TARGET --profile wasm-release")
  fi
  step "clean server build (release)"
  server_clean=$(seconds env CARGO_TARGET_DIR="$scratch" cargo build --release -p agent-hub-server)
  rm -rf "$scratch"
fi

step "full build (to start from a built tree)"
"$ROOT/scripts/build" >/dev/null 2>&1 || die "scripts/build failed"

step "incremental rebuild after a one-line UI change"
ui_file="$ROOT/app/src/components/folders.rs"
cp "$ui_file" "$ui_file.bench-orig"
trap 'mv -f "$ui_file.bench-orig" "$ui_file"' EXIT
sed -i 's/"No folder open yet."/"No folder is open yet."/' "$ui_file"
grep -q 'No folder is open yet' "$ui_file" || die "the UI edit did not apply"
client_incr=$(seconds build_client)
server_incr=$(seconds cargo build --release -p agent-hub-server)
mv -f "$ui_file.bench-orig" "$ui_file"
trap - EXIT
"$ROOT/scripts/build" >/dev/null 2>&1

pkg="$SITE/pkg"
size() { stat -c %s "$1"; }

step "first load as served"
token=bench-token-1234
target/release/agent-hub --port 0 --token "$token" "$ROOT" > /tmp/agent-hub-bench.out 2>/dev/null &
hub_pid=$!
trap 'kill $hub_pid 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q listening /tmp/agent-hub-bench.out 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's#Agent Hub listening on \(http://[^/]*\)/.*#\1#p' /tmp/agent-hub-bench.out)
[ -n "$base" ] || die "the hub did not start"
transfer() { # path encoding -> "bytes content-encoding"
  curl -s -o /dev/null -H "Authorization: Bearer $token" -H "Accept-Encoding: $2" \
    -w '%{size_download} %header{content-encoding}\n' "$base$1"
}
folder_query="/?folder=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$ROOT")"

printf '\n%-44s %s\n' "Measure" "Value"
printf '%-44s %s\n' "--------------------------------------------" "-----"
if $clean; then
  printf '%-44s %s s\n' "clean client build (wasm-release, $WASM_MODE)" "$client_clean"
  printf '%-44s %s s\n' "clean server build (release)" "$server_clean"
fi
printf '%-44s %s s\n' "one-line UI change: client rebuild" "$client_incr"
printf '%-44s %s s\n' "one-line UI change: server rebuild (release)" "$server_incr"
printf '%-44s %s B\n' "wasm raw" "$(size "$pkg/agent_hub.wasm")"
printf '%-44s %s B\n' "wasm gzip -9" "$(size "$pkg/agent_hub.wasm.gz")"
printf '%-44s %s B\n' "wasm brotli 11" "$(size "$pkg/agent_hub.wasm.br")"
for encoding in "br, gzip" "gzip" "identity"; do
  total=0
  details=""
  for path in "$folder_query" /pkg/agent_hub.js /pkg/agent_hub.wasm /pkg/agent_hub.css; do
    read -r bytes served < <(transfer "$path" "$encoding")
    total=$((total + bytes))
    details="$details ${path%%\?*}=${bytes}(${served:-none})"
  done
  printf '%-44s %s B  [%s ]\n' "first load, Accept-Encoding: $encoding" "$total" "$details"
done
