/*
 * dom0's back-end kernel threads (dom_xen.h): the threads Linux's Xen
 * block and network back ends run for one domain are found by name in
 * the proc tree, so that their work is filed as that domain's {vmm}.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "dom_proc.h"
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
		struct dom_pstat st;
		uint32_t domid;
		pid_t pid = dom_proc_pid(de->d_name);

		if (!pid || dom_proc_stat(dfd, pid, &st))
			continue;
		if (!(st.flags & XB_PF_KTHREAD) || !dom_xenback_domid(st.comm, &domid))
			continue;
		fn(arg, domid, pid);
		found++;
	}
	closedir(dir);
	return found;
}
