#!/usr/bin/env bash
# Regenerates every sample output in README.md and docs/*.md: each fenced
# block under a `<!-- sample: fleetsim ... -->` marker is replaced by what
# that command prints now (stdout; `keep`/`from`/`head` markers excerpt it).
# The same code, without FLEETSIM_BLESS_SAMPLES, is the check that fails CI
# when a sample has drifted: tests/readme_samples.rs. Review the diff after:
#   bash tools/readme-samples.sh && git diff README.md docs/
set -euo pipefail
cd "$(dirname "$0")/.."
FLEETSIM_BLESS_SAMPLES=1 cargo test --profile checked --test readme_samples -- --nocapture
