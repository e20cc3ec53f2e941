#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rep_child.h"
#include "rep_hash.h"
#include "rep_verify.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_hex.h"
#include "util/du_log.h"

struct rep_idrec {
	struct rep_strmap *by_path;	/* path -> index in ent */
	struct ent {
		struct rep_ident *ids;
		size_t n;
	} *ent;
	size_t nent;
};

struct rep_idrec *rep_idrec_new(void)
{
	struct rep_idrec *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->by_path = rep_strmap_new();
	if (!r->by_path) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void rep_idrec_free(struct rep_idrec *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nent; i++)
		free(r->ent[i].ids);
	free(r->ent);
	rep_strmap_free(r->by_path);
	free(r);
}

static bool same_ident(const struct rep_ident *a, const struct rep_ident *b)
{
	return !strcmp(a->build_id, b->build_id) && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

int rep_idrec_add(struct rep_idrec *r, const char *path, const struct rep_ident *id)
{
	long i = rep_strmap_get(r->by_path, path);
	struct rep_ident *nv;
	struct ent *e;

	if (i < 0) {
		struct ent *ne = realloc(r->ent, (r->nent + 1) * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		r->ent = ne;
		ne[r->nent] = (struct ent){ NULL, 0 };
		if (rep_strmap_put(r->by_path, path, r->nent))
			return -ENOMEM;
		i = (long)r->nent++;
	}
	e = &r->ent[i];
	for (size_t k = 0; k < e->n; k++)
		if (same_ident(&e->ids[k], id))
			return 0;
	nv = realloc(e->ids, (e->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	e->ids = nv;
	nv[e->n++] = *id;
	return 0;
}

size_t rep_idrec_find(const struct rep_idrec *r, const char *path, const struct rep_ident **ids)
{
	long i = r ? rep_strmap_get(r->by_path, path) : -1;

	if (i < 0)
		return 0;
	*ids = r->ent[i].ids;
	return r->ent[i].n;
}

/* Undo \xHH in place; false on a bad or NUL escape. */
static bool unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		int hi, lo;

		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		if (s[1] != 'x' || (hi = du_hexval(s[2])) < 0 || (lo = du_hexval(s[3])) < 0 ||
		    !(hi | lo))
			return false;
		*o++ = (char)(hi << 4 | lo);
		s += 3;
	}
	*o = '\0';
	return true;
}

static bool valid_bid(const char *s)
{
	size_t n = strlen(s);

	if (!strcmp(s, "-") || !strcmp(s, "?"))
		return true;
	if (!n || n % 2 || n >= DU_BUILD_ID_HEX)
		return false;
	return strspn(s, "0123456789abcdef") == n;
}

/* A decimal number that fits 63 bits, all of @s. */
static bool parse_dec(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v <= INT64_MAX;
}

/* One "image" line's fields after its type, split at tabs, into @path
 * (unescaped in place) and @id.  The reason or NULL. */
static const char *parse_image(char *f[4], struct rep_ident *id)
{
	uint64_t size, sec, nsec;
	char *dot;

	if (!unescape(f[0]) || f[0][0] != '/')
		return "bad path";
	if (!valid_bid(f[1]))
		return "bad build id";
	snprintf(id->build_id, sizeof(id->build_id), "%s", f[1]);
	if (!parse_dec(f[2], &size))
		return "bad size";
	dot = strchr(f[3], '.');
	if (!dot || strlen(dot + 1) != 9)
		return "bad mtime";
	*dot = '\0';
	if (!parse_dec(f[3], &sec) || !parse_dec(dot + 1, &nsec) || sec > INT64_MAX / 1000000000 - 1)
		return "bad mtime";
	id->size = size;
	id->mtime_ns = (int64_t)(sec * 1000000000 + nsec);
	return NULL;
}

struct rep_idrec *rep_idrec_parse(FILE *f, char *err, size_t errlen)
{
	struct rep_idrec *r = rep_idrec_new();
	char *line = NULL, *fl[5];
	const char *why = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;

	if (!r)
		return NULL;
	while (!why && (n = getline(&line, &cap, f)) > 0) {
		struct rep_ident id;
		size_t nf = 0;
		char *s = line;

		lineno++;
		if (line[n - 1] != '\n') {
			why = "truncated line";
			break;
		}
		line[n - 1] = '\0';
		if (lineno == 1) {
			if (strcmp(line, "domprof-images 1"))
				why = "not a domprof-images 1 record";
			continue;
		}
		if (strncmp(line, "image\t", 6))
			continue;	/* a later version's line */
		for (s = line + 6; nf < 5 && s; nf++) {
			fl[nf] = s;
			s = strchr(s, '\t');
			if (s)
				*s++ = '\0';
		}
		if (nf != 4 || s)
			why = "not 4 fields after \"image\"";
		else if (!(why = parse_image(fl, &id)) && rep_idrec_add(r, fl[0], &id))
			why = "out of memory";
	}
	free(line);
	if (!why && !lineno)
		why = "empty";
	if (!why)
		return r;
	snprintf(err, errlen, "line %zu: %s", lineno, why);
	rep_idrec_free(r);
	errno = strcmp(why, "out of memory") ? EBADMSG : ENOMEM;
	return NULL;
}

struct rep_idrec *rep_idrec_load(const char *dir, const char *rel, char *err, size_t errlen)
{
	struct rep_idrec *r;
	FILE *f = du_fopen_beneath(dir, rel);
	int e;

	if (!f) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	r = rep_idrec_parse(f, err, errlen);
	e = errno;
	fclose(f);
	errno = e;
	return r;
}

int rep_idrec_add_guest(struct rep_idrec *r, const char *dir, const char *map, const char *path,
			const char *key)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	FILE *f = du_fopen_beneath(dir, map);

	if (!f)
		return -errno;
	while (!rc && (n = getline(&line, &cap, f)) > 0) {
		char *tab = strchr(line, '\t'), *slash;
		struct rep_ident id = { .mtime_ns = -1 };

		line[strcspn(line, "\n")] = '\0';
		if (!tab || strncmp(line, "images/b", 8))
			continue;
		*tab = '\0';
		slash = strchr(line + 8, '/');
		if (!slash || !unescape(tab + 1) || strcmp(tab + 1, path))
			continue;
		*slash = '\0';
		if (!valid_bid(line + 8) || line[8] == '-' || line[8] == '?')
			continue;
		snprintf(id.build_id, sizeof(id.build_id), "%s", line + 8);
		rc = rep_idrec_add(r, key, &id);
	}
	free(line);
	fclose(f);
	return rc;
}

/* What a probe child sends: fixed size, checked field by field. */
struct probe_reply {
	int32_t n;			/* du_elf_build_id_hex(), -errno */
	int32_t has_load;		/* du_elf_exec_load() */
	char hex[DU_BUILD_ID_HEX];
	struct du_elf_load load;
};

/* The child: confined first, then the bounded reader on its one fd. */
static int probe_child(void *ctx, int out, int in)
{
	const int *fd = ctx;
	struct probe_reply r;

	(void)in;
	memset(&r, 0, sizeof(r));
	if (rep_child_confine())
		return 3;
	r.n = du_elf_build_id_hex(*fd, r.hex, sizeof(r.hex));
	r.has_load = du_elf_exec_load(*fd, &r.load);
	return write(out, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3;
}

/* A reply the parent believes: its sizes agree and its hex is hex. */
static bool probe_ok(const struct probe_reply *r, size_t len)
{
	size_t n;

	if (len != sizeof(*r) || r->n > DU_BUILD_ID_MAX || r->has_load < -4095 || r->has_load > 1 ||
	    !memchr(r->hex, '\0', sizeof(r->hex)))
		return false;
	n = strlen(r->hex);
	if (r->n <= 0)
		return n == 0;
	return n == 2 * (size_t)r->n && valid_bid(r->hex);
}

int rep_elf_probe(int fd, char *hex, size_t hexlen, struct du_elf_load *load, int *has_load)
{
	static struct rep_child_cfg cfg;
	static int ready;	/* 0 not tried, 1 ready, -errno failed */
	struct probe_reply *r;
	char *reply = NULL, err[256];
	size_t len;
	int rc;

	if (!ready) {
		ready = rep_child_cfg_init(&cfg);
		if (!ready)
			ready = 1;
		else
			du_warn("cannot check what images are: no user %s for the report's parser "
				"children (make install creates it)", REP_CHILD_USER);
	}
	if (ready < 0)
		return ready;
	rc = rep_child_run(&cfg, fd, probe_child, &fd, 10000, &reply, &len, err, sizeof(err));
	r = (struct probe_reply *)reply;
	if (!rc && !probe_ok(r, len))
		rc = -EBADMSG;
	if (!rc) {
		snprintf(hex, hexlen, "%s", r->n < 0 ? "?" : r->hex);
		if (load && r->has_load == 1)
			*load = r->load;
		if (has_load)
			*has_load = r->has_load == 1;
	}
	free(reply);
	return rc;
}

/*
 * Build ids probed in this process, by the file's device, inode, size and
 * mtime (what fstat says, no byte read): fifty domains that map one image
 * cache entry cost one probe child, not fifty.
 */
static struct rep_strmap *probed;
static char (*probed_hex)[DU_BUILD_ID_HEX];
static size_t nprobed;

static const char *probed_get(const char *key)
{
	long i = probed ? rep_strmap_get(probed, key) : -1;

	return i >= 0 ? probed_hex[i] : NULL;
}

static void probed_put(const char *key, const char *hex)
{
	char (*nv)[DU_BUILD_ID_HEX];

	if (!probed && !(probed = rep_strmap_new()))
		return;
	nv = realloc(probed_hex, (nprobed + 1) * sizeof(*nv));
	if (!nv)
		return;
	probed_hex = nv;
	snprintf(probed_hex[nprobed], sizeof(*nv), "%s", hex);
	if (!rep_strmap_put(probed, key, nprobed))
		nprobed++;
}

int rep_ident_of_file(const char *file, struct rep_ident *out)
{
	struct stat st;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), rc = 0;
	char key[128];
	const char *seen;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	out->size = (uint64_t)st.st_size;
	out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	snprintf(key, sizeof(key), "%ju:%ju:%ju:%jd", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		 (uintmax_t)st.st_size, (intmax_t)out->mtime_ns);
	seen = probed_get(key);
	if (seen) {
		snprintf(out->build_id, sizeof(out->build_id), "%s", seen);
	} else {
		rc = rep_elf_probe(fd, out->build_id, sizeof(out->build_id), NULL, NULL);
		if (!rc && !out->build_id[0])
			snprintf(out->build_id, sizeof(out->build_id), "-");
		if (!rc)
			probed_put(key, out->build_id);
	}
	close(fd);
	return rc;
}

static bool has_bid(const struct rep_ident *id)
{
	return id->build_id[0] && strcmp(id->build_id, "-") && strcmp(id->build_id, "?");
}

bool rep_ident_match(const struct rep_ident *rec, const struct rep_ident *now)
{
	if (has_bid(rec))
		return !strcmp(rec->build_id, now->build_id);
	return rec->mtime_ns >= 0 && rec->size == now->size && rec->mtime_ns == now->mtime_ns;
}

char *rep_verify_bid_path(const char *dir, const char *hex, const char *suffix)
{
	struct rep_ident id;
	char *p = NULL;

	snprintf(id.build_id, sizeof(id.build_id), "%s", hex);
	if (strlen(hex) < 4 || !valid_bid(hex) || !has_bid(&id))
		return NULL;
	if (asprintf(&p, "%s/.build-id/%.2s/%s%s", dir, hex, hex + 2, suffix ? suffix : "") < 0)
		return NULL;
	return p;
}

/* "build-id X" or "size S, mtime T" of @id, for messages. */
static void describe(const struct rep_ident *id, char *buf, size_t size)
{
	if (has_bid(id))
		snprintf(buf, size, "build-id %s", id->build_id);
	else if (id->mtime_ns < 0)
		snprintf(buf, size, "no build-id");
	else
		snprintf(buf, size, "size %" PRIu64 ", mtime %" PRId64 ".%09" PRId64, id->size,
			 id->mtime_ns / 1000000000, id->mtime_ns % 1000000000);
}

/* The identity @now as @rec's kind is compared: its build id when @rec
 * has one, else its size and mtime. */
static void describe_as(const struct rep_ident *rec, const struct rep_ident *now, char *buf,
			size_t size)
{
	if (has_bid(rec))
		snprintf(buf, size, "%s", has_bid(now) ? now->build_id : "none");
	else
		describe(now, buf, size);
}

/* The first candidate matching a recorded identity: its index, or -1;
 * the first existing one in *@first (-1: none) with its identity. */
static long first_match(const struct rep_ident *ids, size_t nids, char *const *cands,
			size_t ncands, long *first, struct rep_ident *first_id)
{
	*first = -1;
	for (size_t i = 0; i < ncands; i++) {
		struct rep_ident now;

		if (!cands[i] || rep_ident_of_file(cands[i], &now))
			continue;
		if (*first < 0) {
			*first = (long)i;
			*first_id = now;
		}
		for (size_t k = 0; k < nids; k++)
			if (rep_ident_match(&ids[k], &now))
				return (long)i;
	}
	return -1;
}

/* The fetch hook's file for each recorded build id, when it matches. */
static char *fetched(const struct rep_ident *ids, size_t nids, rep_verify_fetch_fn fetch,
		     void *ctx)
{
	for (size_t k = 0; fetch && k < nids; k++) {
		char *p = has_bid(&ids[k]) ? fetch(ctx, ids[k].build_id) : NULL;
		struct rep_ident now;

		if (p && !rep_ident_of_file(p, &now) && rep_ident_match(&ids[k], &now))
			return p;
		free(p);
	}
	return NULL;
}

static void say_mixed(const char *path, const struct rep_ident *ids, size_t nids,
		      struct rep_vpick *out)
{
	size_t o = (size_t)snprintf(out->why, sizeof(out->why),
				    "%s changed while it was profiled (", path);

	for (size_t k = 0; k < nids && o < sizeof(out->why); k++) {
		char d[160];

		describe(&ids[k], d, sizeof(d));
		o += (size_t)snprintf(out->why + o, sizeof(out->why) - o, "%s%s", k ? "; " : "", d);
	}
	if (o < sizeof(out->why))
		snprintf(out->why + o, sizeof(out->why) - o,
			 "): samples of all its versions are named from one of them");
}

int rep_verify_pick(const char *path, const struct rep_ident *ids, size_t nids,
		    char *const *cands, size_t ncands, rep_verify_fetch_fn fetch, void *fetch_ctx,
		    struct rep_vpick *out)
{
	struct rep_ident first_id;
	char was[160], now[160];
	long m, first;

	memset(out, 0, sizeof(*out));
	m = first_match(ids, nids, cands, ncands, &first, &first_id);
	if (!nids) {
		out->state = REP_V_UNCHECKED;
		m = first;
	} else if (m >= 0 || (out->file = fetched(ids, nids, fetch, fetch_ctx))) {
		out->state = nids > 1 ? REP_V_MIXED : REP_V_VERIFIED;
		if (nids > 1)
			say_mixed(path, ids, nids, out);
	} else if (first >= 0) {
		m = first;
		out->state = REP_V_UNVERIFIED;
		describe(&ids[nids - 1], was, sizeof(was));
		describe_as(&ids[nids - 1], &first_id, now, sizeof(now));
		snprintf(out->why, sizeof(out->why),
			 "%s changed since profiling (%s, now %s%s%s): its symbols may be wrong", path,
			 was, now, strcmp(cands[first], path) ? " in " : "",
			 strcmp(cands[first], path) ? cands[first] : "");
	}
	if (!out->file && m >= 0) {
		out->file = strdup(cands[m]);
		if (!out->file)
			return -ENOMEM;
	}
	return 0;
}

struct rep_vstore {
	const char *session_dir;
	char *samples_dir;		/* owned */
	struct rep_idrec *host;		/* NULL: none recorded (or unreadable) */
	bool host_tried;
	struct rep_idrec *guest;	/* by "domain\1path" */
	struct rep_strmap *guest_tried;
	struct rep_strmap *verdicts;	/* "owner\1path" -> enum rep_vstate */
	char **notes;
	size_t nnotes;
};

struct rep_vstore *rep_vstore_new(const char *session_dir, const char *samples_dir)
{
	struct rep_vstore *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->session_dir = session_dir;
	v->samples_dir = strdup(samples_dir);
	v->guest = rep_idrec_new();
	v->guest_tried = rep_strmap_new();
	v->verdicts = rep_strmap_new();
	if (!v->samples_dir || !v->guest || !v->guest_tried || !v->verdicts) {
		rep_vstore_free(v);
		errno = ENOMEM;
		return NULL;
	}
	return v;
}

void rep_vstore_free(struct rep_vstore *v)
{
	if (!v)
		return;
	free(v->samples_dir);
	rep_idrec_free(v->host);
	rep_idrec_free(v->guest);
	rep_strmap_free(v->guest_tried);
	rep_strmap_free(v->verdicts);
	for (size_t i = 0; i < v->nnotes; i++)
		free(v->notes[i]);
	free(v->notes);
	free(v);
}

static void add_note(struct rep_vstore *v, const char *msg)
{
	char **nv = realloc(v->notes, (v->nnotes + 1) * sizeof(*nv));

	du_warn("%s", msg);
	if (!nv)
		return;
	v->notes = nv;
	nv[v->nnotes] = strdup(msg);
	if (nv[v->nnotes])
		v->nnotes++;
}

static void load_host(struct rep_vstore *v)
{
	char *path = NULL, err[256], msg[768];

	v->host_tried = true;
	if (asprintf(&path, "%s/{images}", v->samples_dir) < 0)
		return;
	v->host = rep_idrec_load(v->samples_dir, "{images}", err, sizeof(err));
	if (!v->host && errno != ENOENT) {
		snprintf(msg, sizeof(msg), "the image identity record %s is unreadable (%s): "
			 "host binaries were not checked against it", path, err);
		add_note(v, msg);
	}
	free(path);
}

/* "owner\1path": host and vmm images are one. */
static char *vkey(const char *domain, bool vmm, const char *path)
{
	char *k = NULL;

	if (asprintf(&k, "%s%c%s", domain && !vmm ? domain : "", 1, path) < 0)
		return NULL;
	return k;
}

size_t rep_vstore_recorded(struct rep_vstore *v, const char *domain, bool vmm, const char *path,
			   const struct rep_ident **ids)
{
	char safe[512], *key, *map = NULL;
	size_t n = 0;

	if (!domain || vmm) {
		if (!v->host_tried)
			load_host(v);
		return rep_idrec_find(v->host, path, ids);
	}
	key = vkey(domain, vmm, path);
	if (!key)
		return 0;
	if (rep_strmap_get(v->guest_tried, key) < 0 && !rep_strmap_put(v->guest_tried, key, 0) &&
	    sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) >= 0 &&
	    asprintf(&map, "domains/%s/images", safe) >= 0)
		rep_idrec_add_guest(v->guest, v->session_dir, map, path, key);
	free(map);
	n = rep_idrec_find(v->guest, key, ids);
	free(key);
	return n;
}

int rep_vstore_pick(struct rep_vstore *v, const char *path, const struct rep_ident *ids,
		    size_t nids, char *const *cands, size_t ncands, struct rep_vpick *out)
{
	return rep_verify_pick(path, ids, nids, cands, ncands, NULL, NULL, out);
}

void rep_vstore_verdict(struct rep_vstore *v, const char *domain, bool vmm, const char *path,
			const struct rep_vpick *pick)
{
	char *key = vkey(domain, vmm, path);

	if (!key || rep_strmap_get(v->verdicts, key) >= 0) {
		free(key);
		return;
	}
	if (!rep_strmap_put(v->verdicts, key, (size_t)pick->state) &&
	    (pick->state == REP_V_UNVERIFIED || pick->state == REP_V_MIXED))
		add_note(v, pick->why);
	free(key);
}

int rep_vstore_state(const struct rep_vstore *v, const char *domain, bool vmm, const char *path)
{
	char *key = vkey(domain, vmm, path);
	long st = key ? rep_strmap_get(v->verdicts, key) : -1;

	free(key);
	return (int)st;
}

char *const *rep_vstore_notes(const struct rep_vstore *v, size_t *n)
{
	*n = v->nnotes;
	return v->notes;
}

