/*
 * The one reader of domprof's "key value" files: SESSION/stats,
 * SESSION/session.conf, domains/NAME/info and stats.  The daemon writes
 * them; opcontrol, opreport and the daemon itself read them through here,
 * so every reader agrees on what a line means and which duplicate wins.
 */
#ifndef DU_KV_H
#define DU_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct du_kv;

/*
 * Parse "key value" lines: key [a-z0-9_]+ (at most 64 bytes), then one
 * space or tab, then the value (rest of the line, a trailing '\r' dropped;
 * may be empty).  Lines that do not fit (and lines holding a NUL byte) are
 * ignored and counted; empty lines are skipped; at most 1024 entries.
 *
 * A key given more than once: the LAST line wins for du_kv_get and
 * du_kv_get_u64, as a later assignment overrides an earlier one in a
 * configuration file (a line appended by hand to session.conf takes
 * effect).  du_kv_entry still lists every line in file order.
 *
 * NULL with errno set on allocation failure only.
 */
struct du_kv *du_kv_parse(const char *text, size_t len);
/* Read (at most 1 MiB of) @path and parse it.  NULL with errno (ENOENT when absent). */
struct du_kv *du_kv_load(const char *path);
void du_kv_free(struct du_kv *kv);	/* NULL accepted */
/* Value of the last line with @key, NULL if absent.  Borrowed from @kv; NULL @kv accepted. */
const char *du_kv_get(const struct du_kv *kv, const char *key);
/*
 * Value of the last line with @key as a decimal unsigned integer (digits
 * only, no sign or space, fits 64 bits); false if absent or not one, and
 * then @v is untouched.
 */
bool du_kv_get_u64(const struct du_kv *kv, const char *key, uint64_t *v);
/* The i-th entry (in file order); false past the end. */
bool du_kv_entry(const struct du_kv *kv, size_t i, const char **key, const char **value);
size_t du_kv_count(const struct du_kv *kv);
/* Lines that were not "key value" (ignored). */
size_t du_kv_garbage(const struct du_kv *kv);

#endif
