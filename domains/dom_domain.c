/*
 * The backend-neutral domain (dom.h): what every backend knows of a
 * domain, and the thread-to-vCPU hash that sample lookups use.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "domprof/raw.h"

#include "dom.h"
#include "sfname/sfname.h"

struct dom_domain {
	char *name;
	char uuid[DOM_UUID_STRLEN + 1];
	bool has_uuid;
	bool selected;
	const char *hypervisor;		/* static string */
	uint64_t id;
	uint32_t id_ns;			/* DOMAIN records' namespace of id */
	bool vcpus_exact;		/* the map's length is the hypervisor's */
	pid_t pid;
	enum dom_state state;
	char *agent_path;
	pid_t *vcpu_tid;		/* [nr_vcpus], -1 for gaps */
	unsigned int nr_vcpus;
	/* tid -> vcpu, open addressing, rebuilt with the vCPU map */
	pid_t *ht_tid;			/* 0: empty slot */
	unsigned int *ht_vcpu;
	unsigned int ht_mask;
	pid_t helper[DOM_HELPER_MAX];	/* sorted */
	unsigned int nr_helpers;
};

/* ---- the key derived from a name ---------------------------------------- */

#define FNV64_BASIS 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= FNV64_PRIME;
	}
	return h;
}

void dom_uuid_from_name(const char *name, char out[DOM_UUID_STRLEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h[2] = { FNV64_BASIS, FNV64_BASIS ^ 0x5bd1e9955bd1e995ULL };
	unsigned char b[16];
	size_t i, o = 0;

	for (i = 0; i < 2; i++)
		h[i] = fnv1a(fnv1a(h[i], "domprof:"), name);
	for (i = 0; i < 16; i++)
		b[i] = (unsigned char)(h[i / 8] >> (56 - 8 * (i % 8)));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x80);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o] = '\0';
}

/* ---- construction --------------------------------------------------------- */

struct dom_domain *dom_domain_new(const char *name)
{
	struct dom_domain *d;

	if (strlen(name) > DOM_NAME_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->name = strdup(name);
	if (!d->name) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	dom_uuid_from_name(name, d->uuid);
	d->hypervisor = "qemu";
	d->id_ns = DOM_ID_NS_NONE;
	d->selected = true;
	d->state = DOM_STATE_RUNNING;
	return d;
}

void dom_domain_free(struct dom_domain *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->agent_path);
	free(d->vcpu_tid);
	free(d->ht_tid);
	free(d->ht_vcpu);
	free(d);
}

int dom_domain_set_uuid(struct dom_domain *d, const char *uuid)
{
	char tmp[DOM_UUID_STRLEN + 1];

	if (strlen(uuid) != DOM_UUID_STRLEN)
		return -EINVAL;
	for (size_t i = 0; i < DOM_UUID_STRLEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? uuid[i] != '-' : !isxdigit((unsigned char)uuid[i]))
			return -EINVAL;
		tmp[i] = (char)tolower((unsigned char)uuid[i]);
	}
	tmp[DOM_UUID_STRLEN] = '\0';
	memcpy(d->uuid, tmp, sizeof(tmp));
	d->has_uuid = true;
	return 0;
}

void dom_domain_set_hypervisor(struct dom_domain *d, const char *hv)
{
	d->hypervisor = hv;
}

void dom_domain_set_id(struct dom_domain *d, uint64_t id)
{
	d->id = id;
}

void dom_domain_set_id_ns(struct dom_domain *d, uint32_t ns)
{
	d->id_ns = ns;
}

void dom_domain_set_vcpus_exact(struct dom_domain *d, bool exact)
{
	d->vcpus_exact = exact;
}

void dom_domain_set_pid(struct dom_domain *d, pid_t pid)
{
	d->pid = pid;
}

void dom_domain_set_state(struct dom_domain *d, enum dom_state s)
{
	d->state = s;
}

int dom_domain_set_agent_path(struct dom_domain *d, const char *path)
{
	char *copy = NULL;

	if (path) {
		copy = strdup(path);
		if (!copy)
			return -ENOMEM;
	}
	free(d->agent_path);
	d->agent_path = copy;
	return 0;
}

void dom_domain_select(struct dom_domain *d, const char *const *names)
{
	d->selected = !names;
	for (; names && *names; names++)
		if (!strcmp(*names, d->name) || !strcasecmp(*names, d->uuid))
			d->selected = true;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

bool dom_domain_set_helpers(struct dom_domain *d, const pid_t *tids, unsigned int n)
{
	pid_t set[DOM_HELPER_MAX];
	unsigned int m = 0;

	for (unsigned int i = 0; i < n && m < DOM_HELPER_MAX; i++)
		if (tids[i] > 0)
			set[m++] = tids[i];
	qsort(set, m, sizeof(set[0]), cmp_pid);
	if (m == d->nr_helpers && !memcmp(set, d->helper, m * sizeof(set[0])))
		return false;
	memcpy(d->helper, set, m * sizeof(set[0]));
	d->nr_helpers = m;
	return true;
}

unsigned int dom_domain_helpers(const struct dom_domain *d, const pid_t **tids)
{
	*tids = d->helper;
	return d->nr_helpers;
}

/* ---- the vCPU map ---------------------------------------------------------- */

size_t dom_hash_id(pid_t id)
{
	uint32_t x = (uint32_t)id;

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

int dom_vcpu_map_add(pid_t **map, unsigned int *cap, unsigned int *nr, unsigned int v,
		     pid_t tid)
{
	if (v >= *cap) {
		unsigned int ncap = *cap ? *cap : 8;
		pid_t *nm;

		while (ncap <= v)
			ncap *= 2;
		nm = realloc(*map, ncap * sizeof(**map));
		if (!nm)
			return -ENOMEM;
		for (unsigned int i = *cap; i < ncap; i++)
			nm[i] = -1;
		*map = nm;
		*cap = ncap;
	}
	if ((*map)[v] < 0 || tid < (*map)[v])
		(*map)[v] = tid;
	if (v + 1 > *nr)
		*nr = v + 1;
	return 0;
}

int dom_domain_set_vcpus(struct dom_domain *d, const pid_t *tids, unsigned int n)
{
	unsigned int i, used = 0, size = 8;
	unsigned int *vcpus;
	pid_t *ht, *map = NULL;

	if (n > DOM_VCPU_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		used += tids[i] > 0;
	while (size < 2 * used)
		size <<= 1;
	ht = calloc(size, sizeof(*ht));
	vcpus = calloc(size, sizeof(*vcpus));
	if (n)
		map = malloc(n * sizeof(*map));
	if (!ht || !vcpus || (n && !map)) {
		free(ht);
		free(vcpus);
		free(map);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		size_t h;

		map[i] = tids[i];
		if (tids[i] <= 0)
			continue;
		for (h = dom_hash_id(tids[i]) & (size - 1); ht[h]; h = (h + 1) & (size - 1))
			;
		ht[h] = tids[i];
		vcpus[h] = i;
	}
	free(d->vcpu_tid);
	free(d->ht_tid);
	free(d->ht_vcpu);
	d->vcpu_tid = map;
	d->nr_vcpus = n;
	d->ht_tid = ht;
	d->ht_vcpu = vcpus;
	d->ht_mask = size - 1;
	return 0;
}

int dom_domain_vcpu_of_tid(const struct dom_domain *d, pid_t tid)
{
	if (tid <= 0 || !d->ht_tid)
		return -1;
	for (size_t h = dom_hash_id(tid) & d->ht_mask; d->ht_tid[h]; h = (h + 1) & d->ht_mask)
		if (d->ht_tid[h] == tid)
			return (int)d->ht_vcpu[h];
	return -1;
}

/* ---- accessors ------------------------------------------------------------- */

const char *dom_domain_name(const struct dom_domain *d)
{
	return d->name;
}

int dom_domain_safe_name(const struct dom_domain *d, char *buf, size_t size)
{
	return sfn_escape_component(d->name, strlen(d->name), buf, size);
}

const char *dom_domain_uuid(const struct dom_domain *d)
{
	return d->uuid;
}

bool dom_domain_has_uuid(const struct dom_domain *d)
{
	return d->has_uuid;
}

pid_t dom_domain_pid(const struct dom_domain *d)
{
	return d->pid;
}

const char *dom_domain_hypervisor(const struct dom_domain *d)
{
	return d->hypervisor;
}

uint64_t dom_domain_id(const struct dom_domain *d)
{
	return d->id;
}

uint32_t dom_domain_id_ns(const struct dom_domain *d)
{
	return d->id_ns;
}

bool dom_domain_vcpus_exact(const struct dom_domain *d)
{
	return d->vcpus_exact;
}

uint32_t dom_vcpu_limit(const struct dom_domain *d)
{
	return d->vcpus_exact ? d->nr_vcpus : DOM_VCPU_MAX;
}

enum dom_state dom_domain_state(const struct dom_domain *d)
{
	return d->state;
}

const char *dom_state_name(enum dom_state s)
{
	switch (s) {
	case DOM_STATE_RUNNING:
		return "running";
	case DOM_STATE_PAUSED:
		return "paused";
	case DOM_STATE_STOPPED:
		return "stopped";
	}
	return "unknown";
}

unsigned int dom_domain_nr_vcpus(const struct dom_domain *d)
{
	return d->nr_vcpus;
}

pid_t dom_domain_vcpu_tid(const struct dom_domain *d, unsigned int idx)
{
	return idx < d->nr_vcpus ? d->vcpu_tid[idx] : -1;
}

const char *dom_domain_agent_path(const struct dom_domain *d)
{
	return d->agent_path;
}

bool dom_domain_selected(const struct dom_domain *d)
{
	return d->selected;
}

void dom_vcpu_recorded(uint32_t vcpu, uint32_t limit, int *vcpu_out)
{
	if (vcpu == DP_RAW_VCPU_UNKNOWN)
		return;
	*vcpu_out = vcpu < limit ? (int)vcpu : -1;
}
