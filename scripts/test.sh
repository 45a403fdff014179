#!/bin/sh
# Quick start, second command: install what is missing, build, and run
# every test suite (GPU tests report "skipped" without a GPU).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
meson test -C "${BUILDDIR:-build}" --print-errorlogs "$@"
