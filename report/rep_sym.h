/*
 * Symbol tables of binaries, and the mapping from a sample key to a symbol.
 * A struct rep_bin is built once per binary (ELF through libbfd, or a
 * kernel image from kallsyms, see rep_kernel.h) and then answers lookups
 * by binary search.
 */
#ifndef REP_SYM_H
#define REP_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rep_sym {
	uint64_t start;		/* vma */
	uint64_t end;		/* first vma past the symbol */
	const char *name;	/* owned by the rep_bin */
};

struct rep_bin;

/* How symbol names are written (opreport -D): as the binary has them, as
 * the C++ demangler writes them, or that with the standard library's
 * default template arguments taken out (rep_demangle_smart). */
enum rep_demangle { REP_DEMANGLE_NORMAL, REP_DEMANGLE_NONE, REP_DEMANGLE_SMART };

/*
 * Shorten demangled name @s in place as OProfile's smart demangling does:
 * std::basic_string<char, std::char_traits<char>, std::allocator<char> >
 * becomes std::string (wchar_t: std::wstring), and a container's default
 * allocator (", std::allocator<T> ") and a set's or map's default
 * comparator (", std::less<K> ") are dropped.
 */
void rep_demangle_smart(char *s);

/*
 * Read the function symbols of the ELF file @path with libbfd: the static
 * symbol table, or the dynamic one when the file is stripped.  Sample keys
 * are file offsets, converted to vmas through the loaded section holding
 * that offset.  NULL with errno set and a reason in @err.
 */
struct rep_bin *rep_bin_open_elf(const char *path, char *err, size_t errlen);

/*
 * The same with the names from a separate debug file: sections (sample
 * offsets to vmas) from the image at @fd, symbols from @dbg_fd's static
 * table (both fds taken over; @dbg_fd -1: the image's own tables), joined
 * with the image's dynamic table when @with_dyn (MiniDebugInfo).  A debug
 * file's symbols are vmas like the image's.
 */
struct rep_bin *rep_bin_open_split(const char *name, int fd, int dbg_fd, bool with_dyn,
				   enum rep_demangle dm, char *err, size_t errlen);

/* @b written to @fd (closed by the call) for rep_bin_read(): 0 or -errno. */
int rep_bin_write(const struct rep_bin *b, int fd);
/* A rep_bin from rep_bin_write()'s bytes, every count and length checked
 * and the tables sorted again (the writer may be a hostile parser child).
 * NULL with errno EBADMSG or ENOMEM. */
struct rep_bin *rep_bin_read(const void *buf, size_t len);

/*
 * A table whose keys are offsets from @base (kernel images).  Takes a copy
 * of @syms (names copied too); need not be sorted; ends of 0 are filled in
 * up to the next symbol.  NULL with errno set.
 */
struct rep_bin *rep_bin_from_syms(const struct rep_sym *syms, size_t n, uint64_t base);

void rep_bin_free(struct rep_bin *b);	/* NULL accepted */

size_t rep_bin_nr_syms(const struct rep_bin *b);
const struct rep_sym *rep_bin_sym(const struct rep_bin *b, size_t i);

/* vma of sample @key; false when no loaded section holds it. */
bool rep_bin_key_to_vma(const struct rep_bin *b, uint64_t key, uint64_t *vma);
/* Index of the symbol containing @vma, or -1. */
long rep_bin_find_vma(const struct rep_bin *b, uint64_t vma);
/* Both of the above: the symbol for sample @key, or -1. */
long rep_bin_lookup_key(const struct rep_bin *b, uint64_t key);

#endif
