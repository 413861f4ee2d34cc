# Sourced by the bench scripts: the throng they measure, and the engine's
# floor example, from THRONG and FLOOR when given, else built from this
# tree. The build is made each time, not only when none is there: cargo
# takes a moment when nothing changed, and a build left in target/ from
# older sources would otherwise be measured in the tree's place. Needs
# `here`, the tree's root.
# shellcheck shell=bash

# Prints the given path, or builds with `cargo build --release --quiet
# ARGS...` (its errors shown) and prints the built one.
built() {
  local given=$1 path=$2; shift 2
  if [ -n "$given" ]; then echo "$given"; return; fi
  (cd "$here" && timeout 1200 cargo build --release --quiet "$@" >&2) ||
    { echo "cargo build --release $* failed" >&2; exit 1; }
  echo "$path"
}

# Sets `throng`.
throng_build() { throng=$(built "${THRONG:-}" "$here/target/release/throng" -p throng) || exit 1; }

# Sets `floor`.
floor_build() {
  floor=$(built "${FLOOR:-}" "$here/target/release/examples/floor" -p throng-engine --example floor) || exit 1
}
