#!/usr/bin/env bash
# Serve benchmark: rwb serve vs reward-kit's generic_server on the same evaluator
# (the bundled samples' relevance evaluator), loaded from one client on loopback,
# in alternating rounds. Installs reward-kit 0.4.1 into a throwaway virtualenv for
# the comparison only. Extra arguments go to benches/serve_load.rs, e.g.
#   scripts/bench_serve.sh --rounds 5 --seconds 3 --jobs 2
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${RWB_REAL_REWARD_KIT_PYTHON:-}"
if [ -z "$venv" ]; then
  dir="${TMPDIR:-/tmp}/rwb-bench-reward-kit"
  if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import reward_kit" 2>/dev/null; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q -U "pip>=25.3"
    "$dir/bin/pip" install -q --uploaded-prior-to 2025-07-14T00:00:00Z reward-kit==0.4.1
  fi
  venv="$dir/bin/python"
fi
cargo build --release -q
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r samples/. "$work/"
rm -rf "$work/.rwb"
cargo bench -q --bench serve_load -- --rwb "$PWD/target/release/rwb" --rk-python "$venv" --workspace "$work" "$@"
