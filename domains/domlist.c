/*
 * domlist: print the domains the procfs backend finds (lab helper).
 *   domlist [-p PROC_ROOT] [-w SECONDS] [NAME|UUID ...]
 * With -w, rescans once a second for that long and prints changes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dom_procfs.h"
#include "util/du_log.h"

static void print_domain(const char *what, const struct dom_domain *d)
{
	unsigned int i, n = dom_domain_nr_vcpus(d);
	const char *agent = dom_domain_agent_path(d);
	char safe[4096];

	if (dom_domain_safe_name(d, safe, sizeof(safe)) < 0)
		snprintf(safe, sizeof(safe), "?");
	printf("%s pid %d name %s uuid %s%s%s agent %s vcpus %u:",
	       what, (int)dom_domain_pid(d), safe,
	       dom_domain_uuid(d), dom_domain_has_uuid(d) ? "" : " (derived)",
	       dom_domain_selected(d) ? " selected" : "",
	       agent ? agent : "-", n);
	for (i = 0; i < n; i++)
		printf(" %u=%d", i, (int)dom_domain_vcpu_tid(d, i));
	printf("\n");
}

static void on_added(void *ctx, const struct dom_domain *d)
{
	print_domain("+", d);
}

static void on_removed(void *ctx, const struct dom_domain *d)
{
	print_domain("-", d);
}

static void on_vcpus(void *ctx, const struct dom_domain *d)
{
	print_domain("~", d);
}

int main(int argc, char **argv)
{
	static const struct dom_ops ops = {
		.added = on_added,
		.removed = on_removed,
		.vcpus_changed = on_vcpus,
	};
	struct dom_config cfg = { 0 };
	struct dom_table *t;
	long wait = 0;
	int opt, err, ret = 1;

	du_log_set_prog("domlist");
	while ((opt = getopt(argc, argv, "p:w:h")) != -1) {
		switch (opt) {
		case 'p':
			cfg.proc_root = optarg;
			break;
		case 'w':
			wait = strtol(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-p PROC_ROOT] [-w SECONDS] [NAME|UUID ...]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		cfg.names = (const char *const *)(argv + optind);
	t = dom_table_new(&cfg);
	if (!t) {
		fprintf(stderr, "domlist: %s\n", strerror(errno));
		return 1;
	}
	err = dom_scan(t, &ops, NULL);
	if (err) {
		fprintf(stderr, "domlist: scan: %s\n", strerror(-err));
		goto out_free;
	}
	printf("%zu domain(s)\n", dom_table_count(t));
	for (; wait > 0; wait--) {
		sleep(1);
		err = dom_scan(t, &ops, NULL);
		if (err) {
			fprintf(stderr, "domlist: scan: %s\n", strerror(-err));
			goto out_free;
		}
	}
	ret = 0;
out_free:
	dom_table_free(t);
	return ret;
}
