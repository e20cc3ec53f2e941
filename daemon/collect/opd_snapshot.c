#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_procfs.h"
#include "opd_snapshot.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

static int copy_file(const char *from, const char *session, const char *name)
{
	char path[PATH_MAX], tmp[PATH_MAX], buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", session, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", session, name);
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	/* Real kernel addresses are root's to read (kptr_restrict): the copy
	 * taken as root stays root's alone, even in a domprof-group session. */
	out = du_nf_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, DU_SDIR_SECRET_MODE, false);
	if (out < 0) {
		ret = out;
		goto out_in;
	}
	if (fchmod(out, DU_SDIR_SECRET_MODE)) {	/* an older, wider file */
		ret = -errno;
		close(out);
		goto out_unlink;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	}
	if (n < 0)
		ret = -errno;
	if (close(out) && !ret)
		ret = -errno;
	if (!ret)
		ret = du_nf_rename(tmp, path);
out_unlink:
	if (ret)
		du_nf_unlink(tmp);
out_in:
	close(in);
	return ret;
}

void opd_snapshot_copy_kernel(const char *proc_root, const char *session_dir)
{
	char from[PATH_MAX];
	int ret;

	if (!proc_root)
		proc_root = "/proc";
	snprintf(from, sizeof(from), "%s/kallsyms", proc_root);
	ret = copy_file(from, session_dir, "kallsyms");
	if (ret)
		du_warn("cannot copy %s to the session: %s", from, strerror(-ret));
	snprintf(from, sizeof(from), "%s/modules", proc_root);
	ret = copy_file(from, session_dir, "modules");
	if (ret == -ENOENT) {
		/* a kernel without modules: an empty list, not a missing file */
		char path[PATH_MAX];
		int fd;

		snprintf(path, sizeof(path), "%s/modules", session_dir);
		fd = du_nf_open(path, O_WRONLY | O_CREAT | O_TRUNC, DU_SDIR_SECRET_MODE, false);
		if (fd >= 0) {
			if (fchmod(fd, DU_SDIR_SECRET_MODE))
				du_warn("cannot chmod %s: %s", path, strerror(errno));
			close(fd);
		}
	} else if (ret) {
		du_warn("cannot copy %s to the session: %s", from, strerror(-ret));
	}
}

struct synth {
	struct raw_writer *w;
	int n;
};

static int synth_map(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	struct synth *s = ctx;

	s->n++;
	return raw_put_mmap(s->w, m, path, len);
}

static int synth_kmod(void *ctx, uint64_t start, uint64_t size, const char *name, size_t len)
{
	struct synth *s = ctx;

	s->n++;
	return raw_put_kmod(s->w, start, size, name, len);
}

static int write_kernel(struct synth *s, const char *proc_root)
{
	char path[PATH_MAX];
	uint64_t kstart, kend;
	int ret;

	snprintf(path, sizeof(path), "%s/kallsyms", proc_root);
	if (!opd_procfs_kernel_range(path, &kstart, &kend)) {
		ret = raw_put_kmod(s->w, kstart, kend - kstart, "vmlinux", 7);
		if (ret)
			return ret;
	} else {
		du_warn("no _text/_etext in %s: kernel samples will be unresolved", path);
	}
	snprintf(path, sizeof(path), "%s/modules", proc_root);
	ret = opd_procfs_modules(path, synth_kmod, s);
	if (ret < 0 && ret != -ENOENT)
		du_warn("cannot read %s: %s", path, strerror(-ret));
	return ret > 0 ? ret : 0;
}

int opd_snapshot_write(struct raw_writer *w, const char *proc_root)
{
	struct synth s = { w, 0 };
	struct dirent *de;
	int ret, nproc = 0;
	DIR *dir;

	if (!proc_root)
		proc_root = "/proc";
	ret = write_kernel(&s, proc_root);
	if (ret)
		return ret;
	dir = opendir(proc_root);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char comm[16], *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		/* a process that exits while we read it is simply skipped */
		if (opd_procfs_comm(proc_root, (pid_t)pid, comm))
			continue;
		ret = raw_put_comm(w, (uint32_t)pid, (uint32_t)pid, 0, comm);
		if (ret)
			break;
		ret = opd_procfs_maps(proc_root, (pid_t)pid, synth_map, &s);
		if (ret > 0 || ret == -ENOENT || ret == -ESRCH || ret == -EACCES)
			ret = 0;
		if (ret)
			break;
		nproc++;
	}
	closedir(dir);
	du_info("synthesized %d processes, %d mappings and modules", nproc, s.n);
	return ret;
}
