#!/bin/sh
# CI: the README's two Quick start commands, exactly, on a fresh Debian 12
# root (debootstrap, minbase) holding a clean clone of this repository.
# The root sees the CUDA Toolkit read-only where this host has it, but
# has no loader entry for it, as after NVIDIA's runfile installer, in a
# container or with a mounted toolkit. Both commands must pass; each
# one's exit status and wall time are printed. Runs as root on Debian 12;
# the root's mounts live in a mount namespace of their own, so they go
# when it ends, and the root is removed at exit.
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
[ "$(id -u)" -eq 0 ] || {
	echo "ci-fresh: needs root (debootstrap, chroot, mounts)" >&2
	exit 1
}

# The Debian mirror this host's apt uses, so the root installs from the
# same place (deb822 sources first, then the one-line form).
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources \
	2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' \
	/etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || {
	echo "ci-fresh: no Debian mirror in this host's apt sources" >&2
	exit 1
}
cuda=""
[ -d /usr/local/cuda ] && cuda=$(readlink -f /usr/local/cuda)

dir=$(mktemp -d /var/tmp/gemmd-fresh.XXXXXX)
root="$dir/root"
cleanup() {
	# Processes a test left behind in the root (a daemon, say) would
	# outlive this script: end them before the root goes.
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] &&
			kill -9 "${p#/proc/}" 2>/dev/null
	done
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

t=$(date +%s)
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" \
	>"$dir/debootstrap.log" 2>&1; then
	tail -n 20 "$dir/debootstrap.log" >&2
	echo "ci-fresh: debootstrap failed" >&2
	exit 1
fi
echo "ci-fresh: Debian 12 minbase root made in $(($(date +%s) - t)) s"
git clone -q --no-hardlinks "$repo" "$root/src/gemmd"
cp /etc/resolv.conf "$root/etc/resolv.conf"

# In the namespace: the kernel's file systems, a private /tmp, the
# toolkit bound read-only at its own path with /usr/local/cuda pointing
# to it, and each command run as a user would, with a clean environment.
unshare -m --propagation private sh -s "$root" "$cuda" <<'EOF'
set -eu
root=$1
cuda=$2
# The root a mount of its own, as / is: tests that make their own mount
# namespace (unshare -m) set its propagation, which needs a mount there.
mount --bind "$root" "$root"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount -t tmpfs tmpfs "$root/tmp"
if [ -n "$cuda" ]; then
	mkdir -p "$root$cuda"
	mount --bind "$cuda" "$root$cuda"
	mount -o remount,bind,ro "$root$cuda"
	[ "$cuda" = /usr/local/cuda ] || ln -s "$cuda" "$root/usr/local/cuda"
fi
rc=0
for cmd in scripts/quickstart.sh scripts/test.sh; do
	t=$(date +%s)
	echo "ci-fresh: \$ $cmd"
	s=0
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb \
		/bin/sh -c "cd /src/gemmd && $cmd" </dev/null || s=$?
	echo "ci-fresh: $cmd exited $s after $(($(date +%s) - t)) s"
	[ $s -eq 0 ] || rc=1
done
exit $rc
EOF
