/*
 * A domain's metadata in the session (opd_domain.h has the format):
 * SESSION/domains/<escaped NAME>/info, written whole through a temporary
 * file, and, when a domain comes with another command-line UUID than its
 * name's last, that domain's sample and metadata trees renamed aside.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "opd_domain_int.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

static void put_escaped_line(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('\n', f);
}

int opd_dinfo_write(struct opd_domains *ds, const struct dentry *e)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int ret;

	if (snprintf(dir, sizeof(dir), "%s/domains/%s", ds->conf->session_dir, e->esc) >=
		    (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/info", dir) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.info.tmp", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	ret = du_nf_mkdirs(dir);
	if (ret)
		goto out_err;
	f = du_nf_fopen(tmp, "w", DU_SDIR_FILE_MODE);
	if (!f) {
		ret = -errno;
		goto out_err;
	}
	fputs("name ", f);
	put_escaped_line(f, e->pub.name->name);
	fprintf(f, "uuid %s\n", e->uuid);
	fprintf(f, "uuid_source %s\n", e->uuid_cmdline ? "cmdline" : "derived");
	fprintf(f, "hypervisor %s\n", e->hypervisor);
	fprintf(f, "pid %d\n", (int)e->pub.pid);
	fprintf(f, "vcpus %u\n", e->vcpus);
	fputs("agent_path ", f);
	put_escaped_line(f, e->agent_path ? e->agent_path : "-");
	fprintf(f, "first_seen %lld\n", (long long)e->first_seen);
	fprintf(f, "last_seen %lld\n", (long long)e->last_seen);
	fprintf(f, "state %s\n", dom_state_name(e->pub.running ? e->state : DOM_STATE_STOPPED));
	fprintf(f, "selected %s\n", e->pub.selected ? "yes" : "no");
	if (e->agent_seen) {
		fprintf(f, "agent_version %u.%u.%u\n", e->agent_version >> 16,
			(e->agent_version >> 8) & 0xff, e->agent_version & 0xff);
		fputs("guest_release ", f);
		put_escaped_line(f, e->release[0] ? e->release : "-");
	} else {
		fputs("agent_version -\nguest_release -\n", f);
	}
	ret = fclose(f) ? -errno : du_nf_rename(tmp, path);
	if (ret) {
		du_nf_unlink(tmp);
		goto out_err;
	}
	return 0;

out_err:
	du_warn("cannot write %s: %s", path, strerror(-ret));
	return ret;
}

/* The uuid and uuid_source of an info file a previous run left. */
static bool read_old_uuid(const char *path, char uuid[DOM_UUID_STRLEN + 1], bool *cmdline)
{
	char line[256];
	bool have_uuid = false;
	FILE *f = du_nf_fopen(path, "r", 0);

	*cmdline = false;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "uuid ", 5) && strlen(line + 5) == DOM_UUID_STRLEN) {
			memcpy(uuid, line + 5, DOM_UUID_STRLEN + 1);
			have_uuid = true;
		} else if (!strcmp(line, "uuid_source cmdline")) {
			*cmdline = true;
		}
	}
	fclose(f);
	return have_uuid;
}

/* Rename @dir/@from to @dir/@to[.N], the first that does not exist. */
static int rename_aside(const char *dir, const char *from, const char *to, char *done,
			size_t size)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct stat sb;
	int ret;

	if (snprintf(src, sizeof(src), "%s/%s", dir, from) >= (int)sizeof(src))
		return -ENAMETOOLONG;
	ret = du_nf_lstat(src, &sb);	/* (the worker: below what it was handed) */
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	for (int i = 1; i < 100; i++) {
		int n = i == 1 ? snprintf(dst, sizeof(dst), "%s/%s", dir, to)
			       : snprintf(dst, sizeof(dst), "%s/%s.%d", dir, to, i);

		if (n >= (int)sizeof(dst))
			return -ENAMETOOLONG;
		if (!du_nf_lstat(dst, &sb))
			continue;
		ret = du_nf_rename(src, dst);
		if (ret)
			return ret;
		snprintf(done, size, "%s", dst);
		return 0;
	}
	return -EEXIST;
}

void opd_dinfo_rename_old_tree(struct opd_domains *ds, struct dentry *e)
{
	char info[PATH_MAX], old[DOM_UUID_STRLEN + 1], dir[PATH_MAX], done[PATH_MAX];
	char *aside_raw = NULL, aside[ESC_MAX];
	bool old_cmdline;
	int ret;

	if (!e->uuid_cmdline)
		return;
	if (snprintf(info, sizeof(info), "%s/domains/%s/info", ds->conf->session_dir, e->esc) >=
	    (int)sizeof(info))
		return;
	if (!read_old_uuid(info, old, &old_cmdline) || !old_cmdline ||
	    !strcasecmp(old, e->uuid))
		return;
	for (struct dentry *o = ds->list; o; o = o->next) {
		if (o != e && o->pub.running && o->pub.name == e->pub.name) {
			du_warn("domain %s: two running domains share this name (uuids %s, %s); "
				"their samples are merged", e->pub.name->name, o->uuid, e->uuid);
			return;
		}
	}
	if (asprintf(&aside_raw, "%s.%.8s", e->pub.name->name, old) < 0)
		return;
	ret = sfn_escape_component(aside_raw, strlen(aside_raw), aside, sizeof(aside));
	free(aside_raw);
	if (ret < 0 || strchr(aside, '/') || strchr(e->esc, '/')) {
		du_warn("domain %s: uuid changed from %s to %s, but the name is too long to "
			"rename the old samples aside; they are merged", e->pub.name->name, old,
			e->uuid);
		return;
	}
	/* files of a stopped namesake may still be open */
	opd_sfiles_close_domain(ds->sfiles, e->pub.name);
	snprintf(dir, sizeof(dir), "%s/samples/current/{domain}", ds->conf->session_dir);
	ret = rename_aside(dir, e->esc, aside, done, sizeof(done));
	if (ret)
		du_warn("domain %s: cannot rename old samples aside: %s", e->pub.name->name,
			strerror(-ret));
	else
		du_info("domain %s: uuid changed from %s to %s; old samples moved to %s",
			e->pub.name->name, old, e->uuid, done);
	snprintf(dir, sizeof(dir), "%s/domains", ds->conf->session_dir);
	ret = rename_aside(dir, e->esc, aside, done, sizeof(done));
	if (ret)
		du_warn("domain %s: cannot rename old metadata aside: %s", e->pub.name->name,
			strerror(-ret));
}
