#!/bin/sh
# CI: the integration suite (and the client packages' suites) run N
# times over (10 by default, or $1) on the build scripts/test.sh made; a
# single failure in any round fails the step. A flaky test is a bug:
# this is where one shows.
set -eu
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}
rounds=${1:-10}
meson test -C "$builddir" --no-rebuild --print-errorlogs \
	--repeat "$rounds" --suite integration --suite python --suite blas \
	--suite examples
