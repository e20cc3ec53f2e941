#!/usr/bin/env bash
# Build, or reuse from the cache, the images of the domprof test lab:
#   l1.ext4        root filesystem of the lab host (L1): Debian bookworm with
#                  QEMU, perf, libvirt and the kernel's modules
#   vmlinuz        the kernel L1 boots (the build host's)
#   vmlinux        the same kernel as an ELF (the bzImage's xz payload): L2
#                  guests boot it through its PVH entry, Xen's PV guests as is
#   initramfs.gz   busybox initramfs shared by L1 (mounts l1.ext4, switches
#                  root) and L2 (loads virtio modules, runs a workload)
#   xen            (--kind xen only) the Xen hypervisor, a multiboot ELF that
#                  QEMU's -kernel loads; L1 is then Xen's dom0
# Usage: build-images.sh [--print-dir] [--force] [--kind kvm|xen]
# --kind xen (or LAB_KIND=xen) builds the Xen lab host: the same tree plus
# Xen's hypervisor, tools and device model, cached under its own keys.
# Prints progress on stderr; with --print-dir the image directory is the
# only line on stdout.  --force rebuilds everything, the Debian tree too.
# The cache keeps the $LAB_CACHE_KEEP (3) most recently used image sets.
# Needs root (debootstrap, chroot).
set -euo pipefail

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${DOMPROF_LAB_CACHE:-/var/cache/domprof-lab}
SUITE=bookworm
# Bump when the rootfs recipe (package set, steps in build_rootfs) changes
# in a way the package list alone does not show.
ROOTFS_RECIPE=1
# L1 packages.  qemu-system-x86 comes without its recommends (no GUI, no
# OVMF); libvirt is there for the libvirt backend's lab tests.
L1_PKGS=(
	kmod procps busybox iproute2 socat util-linux
	qemu-system-x86 linux-perf
	libbinutils libelf1 zlib1g libvirt0 libcunit1 libprotobuf-c1
	libvirt-daemon-system libvirt-clients
	# the report's debug-info lookup: libdebuginfod and liblzma (MiniDebugInfo)
	# link in, a debuginfod server and libc's detached debug info serve the
	# guest-debuginfo scenario, libseccomp confines the parsers
	libdebuginfod1 debuginfod libc6-dbg liblzma5 libseccomp2
)
# Added for the Xen kind of L1: the hypervisor (its /boot/xen-*.gz is the
# image QEMU boots), xl and the daemons, xenstore clients, and the QEMU
# that serves PV consoles and backends.
XEN_PKGS=(xen-hypervisor-4.17-amd64 xen-utils-4.17 xenstore-utils qemu-system-xen)
XEN_IMAGE=boot/xen-4.17-amd64.gz
# domprof built with libxen links these; on the KVM lab host too, where
# its xen parts find no Xen and stay off (xen-utils brings them on Xen's).
XEN_LIB_PKGS=(libxenmisc4.17 libxenstore4)
# Host packages whose versions shape the images (the key hashes them).
HOST_PKGS=(qemu-system-x86 busybox-static debootstrap e2fsprogs cpio kmod xz-utils)
# Modules loaded by the initramfs, in this order after dependencies.
INITRAMFS_MODS=(virtio_pci virtio_blk virtio_console ext4 9pnet_virtio 9p)

print_dir=0
force=0
kind=${LAB_KIND:-kvm}
while [ $# -gt 0 ]; do
	case $1 in
	--print-dir) print_dir=1 ;;
	--force) force=1 ;;
	--kind) kind=${2:-}; shift ;;
	*) echo "usage: $0 [--print-dir] [--force] [--kind kvm|xen]" >&2; exit 2 ;;
	esac
	shift
done
case $kind in
kvm) L1_PKGS+=("${XEN_LIB_PKGS[@]}") ;;
xen) L1_PKGS+=("${XEN_PKGS[@]}") ;;
*) echo "build-images: --kind wants kvm or xen" >&2; exit 2 ;;
esac

log() { echo "build-images: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot)"
for t in debootstrap mkfs.ext4 cpio busybox modprobe depmod sha256sum xz; do
	command -v "$t" >/dev/null || die "$t missing: scripts/install-deps.sh --lab"
done
# Read the whole list (no grep -q): under pipefail an early exit of grep
# would make busybox die of SIGPIPE and fail the check.
[ -x /bin/busybox ] && /bin/busybox --list | grep -x switch_root >/dev/null ||
	die "busybox-static missing: scripts/install-deps.sh --lab"

# The lab kernel: the newest /boot/vmlinuz-* with its modules installed.
pick_kernel() {
	local v best=
	for f in /boot/vmlinuz-*; do
		v=${f#/boot/vmlinuz-}
		[ -d "/lib/modules/$v/kernel" ] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v
		fi
	done
	echo "$best"
}
KVER=${LAB_KVER:-$(pick_kernel)}
[ -n "$KVER" ] && [ -f "/boot/vmlinuz-$KVER" ] ||
	die "no /boot/vmlinuz-* with /lib/modules: install linux-image-amd64"

# The Debian mirror this host's apt uses (deb822 or one-line sources).
# Security and third-party sources are skipped.  None found: the user
# names one in LAB_MIRROR; no mirror is written in this project.
pick_mirror() {
	local u
	u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' |
		grep -E '/debian/?$' | head -n1 || true)
	if [ -z "$u" ]; then
		u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' |
			grep -E '/debian/?$' | head -n1 || true)
	fi
	echo "$u"
}
MIRROR=${LAB_MIRROR:-$(pick_mirror)}
[ -n "$MIRROR" ] ||
	die "apt's sources name no Debian mirror: set LAB_MIRROR to the Debian archive URL the lab should install from"

host_versions() {
	dpkg-query -W -f='${Package} ${Version}\n' "${HOST_PKGS[@]}" 2>/dev/null || true
}

ROOTFS_KEY=$( {
	echo "recipe $ROOTFS_RECIPE suite $SUITE mirror $MIRROR"
	echo "pkgs ${L1_PKGS[*]}"
	dpkg-query -W -f='${Version}\n' debootstrap
} | sha256sum | cut -c1-16)

KEY=$( {
	cat "$LAB_DIR/build-images.sh" "$LAB_DIR"/image/*
	[ "$kind" = kvm ] || echo "kind $kind"
	echo "kernel $KVER"
	sha256sum "/boot/vmlinuz-$KVER" | cut -d' ' -f1
	echo "rootfs $ROOTFS_KEY"
	host_versions
} | sha256sum | cut -c1-16)
OUT=$CACHE_ROOT/$KEY

# Tools chatter on stdout; keep it for the directory name alone.
exec 3>&1 1>&2
finish() {
	[ $print_dir -eq 1 ] && echo "$OUT" >&3
	exit 0
}

mkdir -p "$CACHE_ROOT"
# One builder at a time; a second caller waits, then finds the result.
exec 9>"$CACHE_ROOT/.lock"
flock -w 3600 9 || die "timed out waiting for $CACHE_ROOT/.lock"

# Drop leftovers of interrupted builds and all but the most recently used
# image sets, and Debian trees no kept set was built from.  Runs under the
# lock, so no build is in progress.
prune_cache() {
	local keep=${LAB_CACHE_KEEP:-3} d n=0 kept_rootfs=" rootfs-$ROOTFS_KEY "
	rm -rf "$CACHE_ROOT"/*.tmp
	for d in $(ls -1dt "$CACHE_ROOT"/*/.last-used 2>/dev/null); do
		d=${d%/.last-used}
		n=$((n + 1))
		if [ $n -le "$keep" ]; then
			kept_rootfs="$kept_rootfs rootfs-$(awk '$1 == "rootfs" { print $2 }' "$d/manifest.txt") "
		else
			log "pruning old images $d"
			rm -rf "$d"
		fi
	done
	for d in "$CACHE_ROOT"/rootfs-*; do
		[ -d "$d" ] || continue
		case $kept_rootfs in *" ${d##*/} "*) ;; *) log "pruning old tree $d"; rm -rf "$d" ;; esac
	done
}

if [ $force -eq 0 ] && [ -f "$OUT/.complete" ]; then
	touch "$OUT/.last-used"
	log "reusing cached images $OUT (key $KEY, kernel $KVER)"
	prune_cache
	finish
fi
[ $force -eq 1 ] && rm -rf "$CACHE_ROOT/rootfs-$ROOTFS_KEY"

t_start=$(date +%s)
log "building $kind images $OUT (key $KEY, kernel $KVER, mirror $MIRROR)"

# Stage 1: the Debian tree, cached by its own key so that editing the init
# scripts or this file's later steps does not re-run debootstrap.
ROOTFS=$CACHE_ROOT/rootfs-$ROOTFS_KEY
chroot_mounts=()
umount_chroot() {
	local m
	for m in "${chroot_mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
	chroot_mounts=()
}
build_rootfs() {
	local tmp=$ROOTFS.tmp t0
	t0=$(date +%s)
	rm -rf "$tmp"
	log "debootstrap $SUITE (minbase) from $MIRROR"
	debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" >"$CACHE_ROOT/debootstrap.log" 2>&1 || {
		tail -n 30 "$CACHE_ROOT/debootstrap.log" >&2
		tail -n 30 "$tmp/debootstrap/debootstrap.log" >&2 2>/dev/null || true
		die "debootstrap failed (log: $CACHE_ROOT/debootstrap.log)"
	}
	# apt inside the tree for the rest: it resolves alternatives and honours
	# --no-install-recommends, which debootstrap --include does not.
	mount -t proc proc "$tmp/proc" && chroot_mounts+=("$tmp/proc")
	trap umount_chroot EXIT
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod +x "$tmp/usr/sbin/policy-rc.d"
	echo "deb $MIRROR $SUITE main" >"$tmp/etc/apt/sources.list"
	log "apt-get install ${L1_PKGS[*]}"
	if ! chroot "$tmp" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
		sh -c "apt-get update -qq && apt-get install -y -q --no-install-recommends ${L1_PKGS[*]}" \
		>"$CACHE_ROOT/apt.log" 2>&1; then
		tail -n 30 "$CACHE_ROOT/apt.log" >&2
		umount_chroot
		die "apt-get in the L1 tree failed (log: $CACHE_ROOT/apt.log)"
	fi
	chroot "$tmp" apt-get clean
	umount_chroot
	trap - EXIT
	rm -f "$tmp/usr/sbin/policy-rc.d"
	rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/usr/share/doc/* "$tmp"/usr/share/man/* \
		"$tmp"/usr/share/locale/* "$tmp"/usr/share/info/*
	chroot "$tmp" dpkg-query -W -f='${Package} ${Version}\n' >"$tmp/.lab-packages"
	mv "$tmp" "$ROOTFS"
	log "rootfs built in $(( $(date +%s) - t0 ))s"
}
if [ -f "$ROOTFS/.lab-packages" ]; then
	log "reusing Debian tree $ROOTFS"
else
	build_rootfs
fi

WORK=$CACHE_ROOT/$KEY.tmp
rm -rf "$WORK"
mkdir -p "$WORK"
TREE=$WORK/tree

# Stage 2: the L1 tree = Debian tree + kernel modules + lab init.
log "assembling the L1 tree"
cp -a "$ROOTFS" "$TREE"
mkdir -p "$TREE/usr/lib/modules"
# Drop module trees a headless virtual lab host never loads; keeps the
# image small.
tar -C /lib/modules -cf - \
	--exclude="$KVER/kernel/drivers/gpu" --exclude="$KVER/kernel/sound" \
	--exclude="$KVER/kernel/drivers/media" --exclude="$KVER/kernel/drivers/net/wireless" \
	--exclude="$KVER/kernel/drivers/infiniband" --exclude="$KVER/kernel/drivers/staging" \
	--exclude="$KVER/kernel/drivers/iio" --exclude="$KVER/kernel/drivers/bluetooth" \
	--exclude="$KVER/kernel/net/bluetooth" --exclude="$KVER/kernel/net/wireless" \
	--exclude="$KVER/kernel/net/mac80211" --exclude="$KVER/build" --exclude="$KVER/source" \
	"$KVER" | tar -C "$TREE/usr/lib/modules" -xf -
depmod -b "$TREE" "$KVER"
install -m 0755 "$LAB_DIR/image/l1-init" "$TREE/sbin/lab-init"
echo lab-l1 >"$TREE/etc/hostname"
echo "127.0.0.1 localhost lab-l1" >"$TREE/etc/hosts"
mkdir -p "$TREE/lab" "$TREE/results"

tree_mb=$(du -sm "$TREE" | cut -f1)
# Room for what scenarios write locally (perf data, sessions); the qcow2
# overlay keeps this sparse.
img_mb=$(( tree_mb + tree_mb / 4 + 2048 ))
log "mkfs.ext4 -d (${tree_mb} MiB of files, ${img_mb} MiB image)"
mkfs.ext4 -q -F -L lab-l1 -E root_owner=0:0 -d "$TREE" "$WORK/l1.ext4" "${img_mb}M" ||
	die "mkfs.ext4 failed"

# The shared initramfs: static busybox, a few modules, one init.
log "building the initramfs"
IR=$WORK/initramfs
mkdir -p "$IR"/{bin,dev,proc,sys,mnt,newroot,share,tmp,lib/modules}
cp /bin/busybox "$IR/bin/busybox"
for m in "${INITRAMFS_MODS[@]}"; do
	modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' >"$WORK/mods.list"
: >"$IR/lib/modules/order"
while read -r f; do
	b=$(basename "$f")
	cp "$f" "$IR/lib/modules/$b"
	echo "$b" >>"$IR/lib/modules/order"
done <"$WORK/mods.list"
install -m 0755 "$LAB_DIR/image/initramfs-init" "$IR/init"
(cd "$IR" && find . | sort | cpio -o -H newc --quiet -R 0:0) | gzip -6 >"$WORK/initramfs.gz"

cp "/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
# The kernel as an ELF, the xz payload of the bzImage (xz complains about
# the bytes after it: ignored, the ELF check below is what counts).  Xen's
# PV guests take it as it is: xl's domain builder would otherwise unpack
# the bzImage in dom0 on every start, which under TCG took minutes.  KVM
# guests boot it through its PVH entry (lib.sh): no decompressor to run
# in the guest, about 3 s of each L2 boot.
off=$(grep -abo -F "$(printf '\3757zXZ')" "$WORK/vmlinuz" | head -n 1 | cut -d: -f1)
[ -n "$off" ] || die "no xz payload in /boot/vmlinuz-$KVER"
tail -c +"$((off + 1))" "$WORK/vmlinuz" | xz -dc >"$WORK/vmlinux" 2>/dev/null || true
[ "$(head -c 4 "$WORK/vmlinux" | od -An -c | tr -d ' ')" = 177ELF ] ||
	die "could not unpack the kernel's ELF from /boot/vmlinuz-$KVER"
if [ "$kind" = xen ]; then
	# QEMU's multiboot loader takes the ELF, not the gzip Debian ships.
	gzip -dc "$ROOTFS/$XEN_IMAGE" >"$WORK/xen" || die "no $XEN_IMAGE in the tree"
	# PV guests get the initramfs uncompressed too (the domain builder)
	gzip -dc "$WORK/initramfs.gz" >"$WORK/initramfs.cpio"
fi
rm -rf "$TREE" "$IR"
{
	echo "key $KEY"
	echo "kind $kind"
	echo "kernel $KVER"
	echo "mirror $MIRROR"
	echo "rootfs $ROOTFS_KEY"
	echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - t_start ))s"
	echo "sizes: l1.ext4 ${img_mb} MiB ($(du -sm "$WORK/l1.ext4" | cut -f1) MiB allocated)," \
		"vmlinuz $(du -k "$WORK/vmlinuz" | cut -f1) KiB, initramfs.gz $(du -k "$WORK/initramfs.gz" | cut -f1) KiB"
	echo "host packages:"; host_versions
	echo "L1 packages:"; cat "$ROOTFS/.lab-packages"
} >"$WORK/manifest.txt"
touch "$WORK/.complete" "$WORK/.last-used"
rm -rf "$OUT"
mv "$WORK" "$OUT"
log "built $OUT in $(( $(date +%s) - t_start ))s"
prune_cache
finish
