# Sourced by the bench scripts: the throng they measure, and the engine's
# floor example, from THRONG and FLOOR when given, else built from this
# tree. The build is made each time, not only when none is there: cargo
# takes a moment when nothing changed, and a build left in target/ from
# older sources would otherwise be measured in the tree's place. Needs
# `here`, the tree's root.
# shellcheck shell=bash

# Sets `throng`.
throng_build() {
  if [ -n "${THRONG:-}" ]; then throng=$THRONG; return; fi
  throng=$here/target/release/throng
  (cd "$here" && timeout 1200 cargo build --release -p throng >/dev/null 2>&1) ||
    { echo "cargo build --release -p throng failed" >&2; exit 1; }
}

# Sets `floor`.
floor_build() {
  if [ -n "${FLOOR:-}" ]; then floor=$FLOOR; return; fi
  floor=$here/target/release/examples/floor
  (cd "$here" && timeout 1200 cargo build --release -p throng-engine --example floor >/dev/null 2>&1) ||
    { echo "cargo build --release -p throng-engine --example floor failed" >&2; exit 1; }
}
