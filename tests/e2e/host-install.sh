#!/usr/bin/env bash
# Installing like a system package (issue 25): `make install DESTDIR=D`
# writes below D only, puts the daemon in sbin and every page in place, and
# installs no kernel module; `make install-module` does, for the kernel it
# names, below DESTDIR, without a depmod there, and refuses a kernel with no
# build tree clearly; `make install-dkms` writes the DKMS source tree below
# DESTDIR and that tree builds with dkms.conf's MAKE line; `make dist`
# carries every tracked file.
# Needs DP_BUILD (a configured build tree).
set -uo pipefail
: "${DP_BUILD:?set DP_BUILD to the build directory}"
work=$(mktemp -d "${TMPDIR:-/tmp}/dp-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mk() { sed -n "s/^$1 = //p" "$DP_BUILD/Makefile" | head -n 1; }

prefix=$(mk prefix)
sysconfdir=$(mk sysconfdir)
[ "$sysconfdir" = '${prefix}/etc' ] && sysconfdir=$prefix/etc
# where an install that ignored DESTDIR would write
watch=("$prefix" "$sysconfdir" /etc /usr/lib/modules /lib/modules /usr/src /usr/lib/systemd
	/lib/systemd /usr/lib/sysusers.d /var/lib/domprof)
marker=$work/marker
touch "$marker"
sleep 1
dest=$work/root
if ! make -s -C "$DP_BUILD" install DESTDIR="$dest" >"$work/install.log" 2>&1; then
	tail -n 20 "$work/install.log"
	fail "make install DESTDIR failed"
fi
outside=$(for d in "${watch[@]}"; do [ -d "$d" ] && find "$d" -xdev -newer "$marker" \
	! -type d 2>/dev/null; done | sort -u)
[ -z "$outside" ] && ok "make install DESTDIR wrote nothing outside DESTDIR" ||
	fail "make install DESTDIR wrote outside it: $(echo "$outside" | head -n 5)"
[ -x "$dest$prefix/sbin/oprofiled" ] && [ ! -e "$dest$prefix/bin/oprofiled" ] &&
	ok "oprofiled in sbin" || fail "oprofiled not in $prefix/sbin"
[ -x "$dest$prefix/sbin/opagent" ] && ok "opagent in sbin" || fail "opagent not in sbin"
for p in opcontrol opreport opannotate oparchive opflame ophelp; do
	[ -x "$dest$prefix/bin/$p" ] || fail "$p not in $prefix/bin"
done
mans=0
for page in man1/opcontrol.1 man1/opreport.1 man1/opannotate.1 man1/oparchive.1 man1/opflame.1 \
	man1/ophelp.1 man8/oprofiled.8 man8/opagent.8; do
	[ -f "$dest$prefix/share/man/$page" ] && mans=$((mans + 1)) || fail "no $page installed"
done
ok "$mans man pages installed"
kos=$(find "$dest" -name '*.ko' | wc -l)
[ "$kos" -eq 0 ] && ok "make install installs no kernel module" ||
	fail "make install installed $kos kernel modules"

# install-module for the configured kernel, below DESTDIR
kver=$(sed -n 's/^KERNEL_RELEASE = //p' "$DP_BUILD/host-kmod/Makefile")
if [ -n "$kver" ]; then
	touch "$marker"
	sleep 1
	mdest=$work/mod
	if make -s -C "$DP_BUILD" install-module DESTDIR="$mdest" KVER="$kver" >"$work/mod.log" 2>&1; then
		ko=$(find "$mdest" -name domprof.ko)
		[ -n "$ko" ] && [[ "$ko" == */$kver/extra/domprof.ko ]] &&
			ok "install-module KVER=$kver: ${ko#"$mdest"}" || fail "no domprof.ko for $kver below DESTDIR"
		[ -z "$(find "$mdest" -name 'modules.dep*')" ] &&
			grep -q "depmod -a $kver" "$work/mod.log" &&
			ok "with DESTDIR no depmod ran there, and it says what to run" ||
			fail "install-module with DESTDIR ran depmod there or did not say to: $(cat "$work/mod.log")"
		outside=$(for d in /usr/lib/modules /lib/modules; do find "$d" -xdev -newer "$marker" ! -type d \
			2>/dev/null; done)
		[ -z "$outside" ] && ok "install-module wrote nothing outside DESTDIR" ||
			fail "install-module wrote outside DESTDIR: $outside"
	else
		tail -n 20 "$work/mod.log"
		fail "make install-module KVER=$kver DESTDIR failed"
	fi
else
	echo "note: no kernel build tree configured: install-module for it not tried"
fi
if make -s -C "$DP_BUILD" install-module DESTDIR="$work/none" KVER=0.0-no-such-kernel >"$work/bad.log" 2>&1; then
	fail "install-module for a kernel without a build tree succeeded"
elif grep -q "no build tree for kernel 0.0-no-such-kernel" "$work/bad.log"; then
	ok "install-module refuses a kernel without a build tree: $(grep -m1 'no build tree' "$work/bad.log")"
else
	fail "install-module failed without saying why: $(tail -n 3 "$work/bad.log")"
fi

# install-dkms: the DKMS source tree below DESTDIR only, and it builds as
# dkms.conf's MAKE line builds it (dkms itself copies the tree to its
# build directory and runs that line)
touch "$marker"
sleep 1
ddest=$work/dkms
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$DP_BUILD/config.h")
if make -s -C "$DP_BUILD" install-dkms DESTDIR="$ddest" >"$work/dkms.log" 2>&1; then
	tree=$ddest/usr/src/domprof-$version
	outside=$(for d in /usr/src /usr/lib/modules /lib/modules; do find "$d" -xdev -newer "$marker" \
		! -type d 2>/dev/null; done)
	[ -z "$outside" ] && ok "install-dkms wrote nothing outside DESTDIR" ||
		fail "install-dkms wrote outside DESTDIR: $outside"
	if grep -q "^PACKAGE_VERSION=\"$version\"$" "$tree/dkms.conf" 2>/dev/null; then
		ok "install-dkms: $tree/dkms.conf for $version"
	else
		fail "install-dkms: no dkms.conf for $version in $tree"
	fi
	if [ -n "$kver" ]; then
		cp -r "$tree" "$work/dkms-build"
		# dkms.conf's MAKE line with dkms's variables filled in
		mline=$(sed -n 's/^MAKE\[0\]="\(.*\)"$/\1/p' "$tree/dkms.conf" |
			sed -e "s|\${kernel_source_dir}|/lib/modules/$kver/build|" \
				-e "s|\${dkms_tree}/\${PACKAGE_NAME}/\${PACKAGE_VERSION}/build|$work/dkms-build|")
		if (eval "$mline") >"$work/dkms-build.log" 2>&1 && [ -f "$work/dkms-build/domprof.ko" ]; then
			ok "the DKMS tree builds domprof.ko for $kver with dkms.conf's MAKE line"
		else
			tail -n 20 "$work/dkms-build.log"
			fail "the DKMS tree does not build for $kver: $mline"
		fi
	fi
else
	tail -n 20 "$work/dkms.log"
	fail "make install-dkms DESTDIR failed"
fi

# the tarball carries every tracked file (make dist's own check)
if make -s -C "$DP_BUILD" dist >"$work/dist.log" 2>&1; then
	ok "make dist: every tracked file is in the tarball"
else
	tail -n 5 "$work/dist.log"
	fail "make dist failed"
fi
rm -f "$DP_BUILD"/*.tar.gz

echo "host-install: $fails failed"
[ $fails -eq 0 ]
