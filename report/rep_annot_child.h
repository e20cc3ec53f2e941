/*
 * opannotate's parse of one binary, in a confined parser child
 * (rep_child.h): its debug info found (rep_debug.h), its disassembly
 * written, and the source file and line of each sampled address read from
 * its DWARF.  The parent gets text and a table back, and opens no ELF.
 */
#ifndef REP_ANNOT_CHILD_H
#define REP_ANNOT_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rep_child_cfg;
struct rep_debug_opts;
struct bfd;
struct rep_annot_marks;

/*
 * Mixed mode (opannotate -a -s): the disassembly calls this before it
 * writes each instruction; when @vma's source line is not the previous
 * instruction's, the line is noted at the current end of the text, and the
 * parent prints that source line there.  @mk NULL (no mixed mode, or no
 * line table): nothing.
 */
void rep_annot_mark(struct rep_annot_marks *mk, uint64_t vma);

struct rep_annot_req {
	const char *file;		/* for messages and debug links */
	int fd;				/* the binary, borrowed */
	const struct rep_debug_opts *dopts;
	/* the disassembly, run in the child on the binary: NULL for none;
	 * @mk for rep_annot_mark() */
	int (*asm_fn)(void *ctx, struct bfd *abfd, FILE *out, struct rep_annot_marks *mk);
	void *ctx;
	bool mixed;			/* source lines marked in the disassembly */
	const uint64_t *vmas;		/* sampled addresses whose lines are wanted */
	size_t nvmas;			/* 0: no lines */
	bool inlines;			/* and the frames inlined at each */
};

/* One frame of code inlined at an address, innermost first: the function
 * whose code it is, and where that function's own source stands.  The
 * outermost frame of a chain is the address's own function, at the line
 * of the call the first frame was inlined for. */
struct rep_annot_frame {
	char *func;			/* NULL: not named */
	char *file;			/* NULL: none */
	unsigned int line;		/* 0: none */
};

/* The most frames kept inlined at one address. */
#define REP_ANNOT_MAX_INLINE 8

/* Where the disassembly moves to another source line (mixed mode). */
struct rep_annot_mark {
	size_t off;			/* in the text, at the start of a line */
	char *file;
	unsigned int line;
};

struct rep_annot_res {
	char *text;			/* the disassembly, printable bytes and \n, \t only */
	size_t len;
	struct rep_annot_mark *marks;	/* mixed mode, by increasing offset */
	size_t nmarks;
	bool have_lines;		/* false: why in @note */
	char **files;			/* [nvmas]: source file of each address, NULL none */
	unsigned int *lines;		/* [nvmas]: its line, 0 none */
	/* with inlines asked: [nvmas] chains, innermost first ([0] the
	 * address's own file and line, its function named), nframes[i]
	 * frames long (0: no line, 1: nothing inlined there) */
	struct rep_annot_frame **frames;
	unsigned int *nframes;
	char note[256];
};

/* 0 with @res filled (free with rep_annot_res_free), or -errno with the
 * reason in @err. */
int rep_annot_run(const struct rep_child_cfg *cfg, const struct rep_annot_req *r,
		  struct rep_annot_res *res, char *err, size_t errlen);
void rep_annot_res_free(struct rep_annot_res *res, size_t nvmas);

#endif
