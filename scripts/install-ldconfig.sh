#!/bin/sh
# Run by `meson install` (client/meson.build), not for a staged install
# (DESTDIR: a package's own scripts run ldconfig on the machine it goes
# to). Refreshes the dynamic loader's cache, so that programs find
# libgemmd.so.0 and LD_PRELOAD=libgemmd_blas.so finds the shim by name in
# a libdir the loader searches (the default prefix /usr/local: Debian
# lists /usr/local/lib/x86_64-linux-gnu in /etc/ld.so.conf.d/); says what
# to do where it cannot (not root, or a libdir the loader does not
# search). $1: the libdir.
set -eu
libdir=$1
if [ "$(id -u)" -ne 0 ]; then
	echo "gemmd: run 'ldconfig' as root so that programs find libgemmd.so.0 in $libdir"
	exit 0
fi
ldconfig
if ! ldconfig -p | grep -q "libgemmd\.so\.0 .*=> $libdir/libgemmd\.so\.0\$"; then
	echo "gemmd: the dynamic loader does not search $libdir: add it to a file in /etc/ld.so.conf.d/ and run ldconfig, or set LD_LIBRARY_PATH=$libdir"
fi
