#!/bin/sh
# Quick start, second command: install what is missing, build, and run
# every test suite (GPU tests report "skipped" without a GPU).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh -Dtests=enabled
meson test -C "${BUILDDIR:-build}" --print-errorlogs "$@"
