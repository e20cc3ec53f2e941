/*
 * opcontrol and the kernel collector: load the installed module before a
 * kmod session (never build it), and show its per-CPU counters in
 * --status.  host-kmod/README.md describes the module.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "domprof/kmod.h"

#define KMOD_WAIT_MS	3000	/* for udev to create the device node */
#define KMOD_STEP_MS	100

/* $NAME if set and not empty, else @def (tests point these elsewhere). */
static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static bool is_chardev(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISCHR(sb.st_mode);
}

int ctl_kmod_load(char *err, size_t errlen)
{
	const char *dev = env_or("DOMPROF_KMOD_DEVICE", DP_KMOD_DEVICE);
	const char *modprobe = env_or("DOMPROF_MODPROBE", "modprobe");
	int status = 0, waited;
	pid_t pid;

	if (is_chardev(dev))
		return 0;
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot run %s: %s", modprobe, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		execlp(modprobe, modprobe, DP_KMOD_NAME, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "%s %s failed (exit status %d): is the domprof module "
			 "installed for this kernel? (make install, or DKMS: see host-kmod/README.md)",
			 modprobe, DP_KMOD_NAME, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -ENODEV;
	}
	for (waited = 0; waited < KMOD_WAIT_MS; waited += KMOD_STEP_MS) {
		if (is_chardev(dev))
			return 0;
		usleep(KMOD_STEP_MS * 1000);
	}
	snprintf(err, errlen, "%s %s succeeded but %s did not appear", modprobe, DP_KMOD_NAME,
		 dev);
	return -ENODEV;
}

void ctl_kmod_status(FILE *out)
{
	const char *path = env_or("DOMPROF_KMOD_STATS", DP_KMOD_SYSFS_STATS);
	unsigned long long samples, lost, guest, tot_s = 0, tot_l = 0;
	unsigned int cpu;
	int counting, n = 0;
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;		/* module not loaded: nothing to say */
	fprintf(out, "\nKernel module (%s):\n", path);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "cpu %u samples %llu lost %llu guest %llu counting %d", &cpu,
			   &samples, &lost, &guest, &counting) != 5)
			continue;
		fprintf(out, "  cpu %-4u samples %12llu  lost %10llu  guest %12llu  %s\n", cpu,
			samples, lost, guest, counting ? "counting" : "idle");
		tot_s += samples;
		tot_l += lost;
		n++;
	}
	fclose(f);
	if (n)
		fprintf(out, "  all %d CPUs: samples %llu, lost %llu\n", n, tot_s, tot_l);
}
