#!/usr/bin/env bash
# Configure and build domprof out of tree in build/ (prefix /usr/local) and
# install it into the staging tree build/stage: the host tests run it from
# there (DOMPROF_EVENTS_DIR points at its events) and the lab copies it into
# the lab host as it is.
#   scripts/build.sh [configure options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${DP_BUILD_DIR:-$top/build}
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	echo "build: autoreconf"
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	echo "build: configure"
	"$top/configure" --enable-werror "$@" >configure.out 2>&1 ||
		{ tail -30 configure.out; exit 1; }
	sed -n '/configuration summary/,$p' configure.out
fi
echo "build: make"
make -j"$(nproc)" >make.out 2>&1 || { grep -B2 -A8 -m5 'error' make.out || tail -40 make.out; exit 1; }
rm -rf stage && make install DESTDIR="$build/stage" >install.out 2>&1 || { tail -30 install.out; exit 1; }
# The module for the kernel configure found (the lab boots that kernel),
# which need not be the one this machine runs.
kver=$(sed -n 's/^KERNEL_RELEASE = //p' host-kmod/Makefile)
if [ -n "$kver" ]; then
	make install-module DESTDIR="$build/stage" KVER="$kver" >>install.out 2>&1 ||
		{ tail -30 install.out; exit 1; }
fi
echo "build: staged in $build/stage"
