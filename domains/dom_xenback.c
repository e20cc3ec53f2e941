/*
 * dom0's back-end kernel threads (dom_xen.h): the threads Linux's Xen
 * block and network back ends run for one domain are found by name in
 * the proc tree, so that their work is filed as that domain's {vmm}.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dom_xen.h"

/* PF_KTHREAD in the flags field of /proc/PID/stat (include/linux/sched.h):
 * set by the kernel for its own threads, which no process can fake. */
#define XB_PF_KTHREAD 0x00200000UL

/* Xen's first reserved domid (DOMID_FIRST_RESERVED): real domains are below. */
#define XB_DOMID_LIMIT 0x7ff0u

bool dom_xenback_domid(const char *comm, uint32_t *domid)
{
	const char *p;
	uint32_t v = 0;
	int digits = 0;

	/* blkback: a ring's thread "DOMID.DEV-N" (Linux 6.1's; older
	 * kernels: "blkback.DOMID.DEV"), DEV the guest's name for the disk
	 * (xvda, sda, hda...); netback: "vifDOMID.HANDLE-qN-guest-rx" and
	 * "...-dealloc" (older kernels: no "-qN").  /proc shows a kernel
	 * thread's whole name (since Linux 5.17) or its first 15 bytes, which
	 * never cut the domid and the dot after it. */
	if (!strncmp(comm, "blkback.", 8))
		p = comm + 8;
	else if (!strncmp(comm, "vif", 3))
		p = comm + 3;
	else
		p = comm;
	for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
		v = v * 10 + (uint32_t)(*p - '0');
	if (!digits || digits > 5 || *p != '.' || v == 0 || v >= XB_DOMID_LIMIT)
		return false;
	/* the bare form: a disk's name, a letter first, after the dot */
	if (p - digits == comm && !(p[1] >= 'a' && p[1] <= 'z'))
		return false;
	if (digits > 1 && comm[p - comm - digits] == '0')
		return false;	/* the kernel prints no leading zero */
	*domid = v;
	return true;
}

/* comm and flags of /proc/@pid/stat under @dirfd: 0, or -1 (gone, or not
 * a stat line). */
static int read_stat(int dirfd, const char *pid, char *comm, size_t size, unsigned long *flags)
{
	char path[64], buf[512];
	const char *open_p, *close_p, *f;
	ssize_t n;
	size_t len;
	int fd, field;

	snprintf(path, sizeof(path), "%s/stat", pid);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "PID (COMM) S PPID PGRP SESSION TTY TPGID FLAGS ...": COMM may hold
	 * ')' and spaces, so it ends at the last ')' */
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return -1;
	len = (size_t)(close_p - open_p - 1);
	if (len >= size)
		len = size - 1;
	memcpy(comm, open_p + 1, len);
	comm[len] = '\0';
	/* to the space before FLAGS, the seventh after COMM's ')' (each
	 * step starts past a space, never past the NUL) */
	f = close_p;
	for (field = 0; field < 7 && f; field++)
		f = strchr(f + 1, ' ');
	if (!f)
		return -1;
	*flags = strtoul(f + 1, NULL, 10);
	return 0;
}

int dom_xenback_scan(const char *proc_root, void (*fn)(void *arg, uint32_t domid, pid_t tid),
		     void *arg)
{
	DIR *dir;
	struct dirent *de;
	int found = 0, dfd;

	dir = opendir(proc_root ? proc_root : "/proc");
	if (!dir)
		return -errno;
	dfd = dirfd(dir);
	while ((de = readdir(dir))) {
		char comm[32], *end;
		unsigned long flags;
		uint32_t domid;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid > (1L << 22))
			continue;
		if (read_stat(dfd, de->d_name, comm, sizeof(comm), &flags))
			continue;
		if (!(flags & XB_PF_KTHREAD) || !dom_xenback_domid(comm, &domid))
			continue;
		fn(arg, domid, (pid_t)pid);
		found++;
	}
	closedir(dir);
	return found;
}
