/*
 * A bounds-checked reader over untrusted bytes.  Every getter checks the
 * remaining length first; once a read fails the cursor is marked bad and
 * every later read fails too, so a decoder can read a whole record and
 * check once at the end (du_cur_end() also rejects trailing bytes).
 * The cursor borrows the buffer; it never allocates.
 */
#ifndef DU_CURSOR_H
#define DU_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct du_cursor {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
};

static inline void du_cur_init(struct du_cursor *c, const void *buf, size_t len)
{
	c->p = buf;
	c->end = c->p + len;
	c->bad = false;
}

static inline size_t du_cur_left(const struct du_cursor *c)
{
	return c->bad ? 0 : (size_t)(c->end - c->p);
}

/* Copy @n bytes out; false (and the cursor goes bad) if fewer are left. */
static inline bool du_cur_get(struct du_cursor *c, void *out, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	memcpy(out, c->p, n);
	c->p += n;
	return true;
}

/* Borrow @n bytes in place; NULL if fewer are left. */
static inline const uint8_t *du_cur_take(struct du_cursor *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return p;
}

static inline bool du_cur_skip(struct du_cursor *c, size_t n)
{
	return du_cur_take(c, n) != NULL;
}

/* The host is little-endian x86-64, as is the format (checked at build). */
static inline bool du_cur_u16(struct du_cursor *c, uint16_t *v) { return du_cur_get(c, v, 2); }
static inline bool du_cur_u32(struct du_cursor *c, uint32_t *v) { return du_cur_get(c, v, 4); }
static inline bool du_cur_u64(struct du_cursor *c, uint64_t *v) { return du_cur_get(c, v, 8); }

/* True when everything was read cleanly and nothing is left over. */
static inline bool du_cur_end(const struct du_cursor *c)
{
	return !c->bad && c->p == c->end;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "domprof formats are little-endian");

#endif
