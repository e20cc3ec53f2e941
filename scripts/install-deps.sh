#!/usr/bin/env bash
# Install everything domprof needs to build, test and run its lab on Debian 12.
# Idempotent: packages already present are left alone.  Usage:
#   scripts/install-deps.sh          build + tests
#   scripts/install-deps.sh --lab    also the lab (QEMU, a kernel, busybox)
set -euo pipefail

pkgs=(
	build-essential autoconf automake libtool pkg-config
	binutils-dev libiberty-dev libelf-dev zlib1g-dev libcunit1-dev libvirt-dev libxml2-dev
	libxml2-utils	# xmllint: opreport -X is validated against doc/opreport.xsd
	nettle-dev	# the daemon's image cache: SHA-256 content ids
	liblzma-dev libseccomp-dev	# the report's MiniDebugInfo and its parser children's seccomp
	libdebuginfod-dev debuginfod libc6-dbg	# debug info by build-id; host-debuginfo.sh serves and reads it
	libxen-dev
	clang libclang-rt-14-dev
	linux-perf procps time groff-base man-db
	python3
	strace util-linux	# trust-files.sh: how opreport's parser children drop root (setpriv)
	# views: opflame is checked in a headless browser, the pprof export is
	# built with protobuf-c and read back with go tool pprof
	chromium golang-go libprotobuf-c-dev protobuf-c-compiler
	linux-source-6.1	# checkpatch.pl: host-kmod's kernel style check
)
lab_pkgs=(
	qemu-system-x86 qemu-utils busybox-static cpio e2fsprogs xz-utils
	linux-image-amd64 linux-headers-amd64 debootstrap
)
[ "${1:-}" = --lab ] && pkgs+=("${lab_pkgs[@]}")

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# The privsep worker's user (doc/trust.md): a system user of its own, never
# nobody; the daemon refuses to separate without it.  `make install` sets
# it up through sysusers.d; the tests run from the build tree, so here too.
if ! getent passwd domprof >/dev/null; then
	echo "install-deps: creating the system user domprof (oprofiled's privsep worker)"
	if getent group domprof >/dev/null; then
		$SUDO useradd --system --no-create-home --shell /usr/sbin/nologin --gid domprof domprof
	else
		$SUDO useradd --system --no-create-home --shell /usr/sbin/nologin --user-group domprof
	fi
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
