/*
 * Finding an image's debug information as gdb and perf find it: the
 * image's own .symtab, the build-id directory, .gnu_debuglink (CRC
 * checked), .gnu_debugdata (MiniDebugInfo) and debuginfod.  Every found
 * file must carry the image's build-id.  Meant to run in a report parser
 * child (rep_child.h): it opens and reads untrusted files.
 */
#ifndef REP_DEBUG_H
#define REP_DEBUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The system's debug-file directory (gdb's debug-file-directory). */
#define REP_DEBUG_DIR "/usr/lib/debug"
/* The longest build-id kept, in bytes (sha1 ids are 20). */
#define REP_DEBUG_ID_MAX 64

struct rep_debug_opts {
	const char *debug_dir;		/* NULL: REP_DEBUG_DIR */
	const char *first_dir;		/* NULL, or a debug dir asked before it
					 * (an archive's copy) */
	bool need_lines;		/* DWARF lines wanted, not only symbols */
	unsigned int debuginfod_ms;	/* 0: debuginfod not asked */
};

enum rep_debug_src {
	REP_DEBUG_NONE,		/* nothing found: the dynamic symbols only */
	REP_DEBUG_SELF,		/* the image's own .symtab (or DWARF) */
	REP_DEBUG_BUILD_ID,	/* DIR/.build-id/NN/REST.debug */
	REP_DEBUG_LINK,		/* .gnu_debuglink */
	REP_DEBUG_MINI,		/* .gnu_debugdata, decompressed into a memfd */
	REP_DEBUG_DEBUGINFOD,
};

struct rep_debug_found {
	enum rep_debug_src src;
	int fd;			/* the debug file; -1 for NONE and SELF; the caller closes */
	char path[512];		/* where it was found; "" for NONE, SELF, MINI */
	char build_id[2 * REP_DEBUG_ID_MAX + 1];	/* the image's, hex; "" none */
	unsigned int refused;	/* candidates refused (CRC, build-id, not ELF) */
	bool debuginfod_asked;
	bool debuginfod_timeout;	/* gave up at the time bound */
	unsigned int debuginfod_spent_ms;
	char why[512];		/* for NONE: why each step found nothing; else refusals */
};

/*
 * Look up the debug information of the ELF image open at @fd (borrowed;
 * its file offset is left alone), whose path @path names the directory
 * searched for debug links.  0 with @f filled (src NONE is a result, with
 * its reasons in @f->why); -errno when @fd is not a readable ELF file.
 */
int rep_debug_find(int fd, const char *path, const struct rep_debug_opts *o,
		   struct rep_debug_found *f);

/* The image's build-id as lowercase hex in @buf ("" none): 0 or -errno. */
int rep_debug_build_id(int fd, char *buf, size_t size);

/* The CRC32 of the whole file at @fd, as .gnu_debuglink records it. */
int rep_debug_crc32(int fd, uint32_t *crc);

/* A short name of @src for messages ("build-id directory", ...). */
const char *rep_debug_src_name(enum rep_debug_src src);

#endif
