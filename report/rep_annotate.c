#include "config.h"

#include <bfd.h>
#include <dis-asm.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "rep_annot_child.h"
#include "rep_annot_int.h"
#include "rep_annotate.h"
#include "rep_child.h"
#include "rep_debug.h"
#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_spec.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "util/du_log.h"
#include "util/du_cli.h"

/* An instruction or a line gets the hot mark at this share of its block. */
#define HOT_PCT 10.0

static void free_imgs(struct annot *a)
{
	for (size_t i = 0; i < a->nimgs; i++) {
		struct img *m = &a->imgs[i];

		for (size_t k = 0; k < m->na; k++)
			free(m->a[k].counts);
		free(m->a);
		free(m->total);
		free(m->domain);
		free(m->dep.name);
		rep_u64map_free(m->byvma);
	}
	free(a->imgs);
}

/* Host and vmm work share binaries (and rep_bins); they are still
 * annotated apart, per domain, as opreport lists them. */
static bool same_owner(const struct img *m, const struct rep_group *g, const struct rep_bin *bin)
{
	if (m->bin != bin || m->vmm != g->vmm || !m->domain != !g->domain)
		return false;
	return !m->domain || !strcmp(m->domain, g->domain);
}

static long find_img(struct annot *a, const struct rep_group *g, const struct rep_bin *bin)
{
	struct img *m;

	if (a->last >= 0 && same_owner(&a->imgs[a->last], g, bin))
		return a->last;
	for (size_t i = 0; i < a->nimgs; i++)
		if (same_owner(&a->imgs[i], g, bin))
			return a->last = (long)i;
	m = realloc(a->imgs, (a->nimgs + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	a->imgs = m;
	m = &a->imgs[a->nimgs];
	memset(m, 0, sizeof(*m));
	m->bin = bin;
	m->vmm = g->vmm;
	m->dep.kind = g->dep.kind;
	m->dep.name = strdup(g->dep.name);
	m->domain = g->domain ? strdup(g->domain) : NULL;
	m->byvma = rep_u64map_new();
	m->total = calloc(a->nclasses, sizeof(*m->total));
	a->nimgs++;
	if (!m->dep.name || (g->domain && !m->domain) || !m->byvma || !m->total)
		return -ENOMEM;
	return a->last = (long)(a->nimgs - 1);
}

static int on_key(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		  const struct rep_bin *bin, long sym, uint64_t key, uint64_t count)
{
	struct annot *a = ctx;
	struct img *m;
	uint64_t vma;
	long i, k;
	int created;

	if (!bin || !rep_bin_key_to_vma(bin, key, &vma))
		return 0;
	a->nclasses = p->nclasses;
	i = find_img(a, &p->groups[group], bin);
	if (i < 0)
		return (int)i;
	m = &a->imgs[i];
	k = rep_u64map_get_or_put(m->byvma, vma, m->na, &created);
	if (k < 0)
		return -ENOMEM;
	if (created) {
		struct addr *na = realloc(m->a, (m->na + 1) * sizeof(*na));

		if (!na)
			return -ENOMEM;
		m->a = na;
		na[m->na].vma = vma;
		na[m->na].sym = sym;
		na[m->na].counts = calloc(p->nclasses, sizeof(uint64_t));
		if (!na[m->na].counts)
			return -ENOMEM;
		m->na++;
	}
	m->a[k].counts[cls] += count;
	m->total[cls] += count;
	return 0;
}

static int cmp_addr(const void *x, const void *y)
{
	const struct addr *a = x, *b = y;

	return a->vma < b->vma ? -1 : a->vma > b->vma;
}

static int cmp_img(const void *x, const void *y)
{
	const struct img *a = x, *b = y;

	if (a->total[0] != b->total[0])
		return a->total[0] > b->total[0] ? -1 : 1;
	return strcmp(a->dep.name, b->dep.name);
}

static const char *owner_label(const struct img *m, char *buf, size_t size)
{
	if (!m->domain)
		return "host";
	snprintf(buf, size, "domain %s%s", m->domain, m->vmm ? " {vmm}" : "");
	return buf;
}

static double pct_of(uint64_t x, uint64_t total)
{
	return total ? 100.0 * (double)x / (double)total : 0.0;
}

bool rep_annot_counts(FILE *f, const struct annot *a, const uint64_t *c, const uint64_t *block)
{
	bool any = false, hot = false;
	char pct[16];

	for (size_t k = 0; k < a->nclasses; k++)
		any |= c[k] != 0;
	for (size_t k = 0; k < a->nclasses; k++) {
		if (!any) {
			fprintf(f, "%10s %-8s ", "", "");
			continue;
		}
		rep_format_pct(pct, sizeof(pct), pct_of(c[k], a->p->totals[k]));
		fprintf(f, "%10" PRIu64 " %-8s ", c[k], pct);
		if (block && pct_of(c[k], block[k]) >= HOT_PCT)
			hot = true;
	}
	return hot;
}

/* --- assembly ---------------------------------------------------------- */

struct insn_buf {
	char text[512];
	size_t len;
	const struct rep_bin *bin;
	struct rep_annot_marks *mk;	/* mixed mode: source lines marked */
};

static int buf_vprintf(struct insn_buf *b, const char *fmt, va_list ap)
{
	int n;

	if (b->len >= sizeof(b->text) - 1)
		return 0;
	n = vsnprintf(b->text + b->len, sizeof(b->text) - b->len, fmt, ap);
	if (n > 0)
		b->len += (size_t)n < sizeof(b->text) - b->len ? (size_t)n : sizeof(b->text) - 1 - b->len;
	return n;
}

static int dis_printf(void *stream, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = buf_vprintf(stream, fmt, ap);
	va_end(ap);
	return n;
}

static int dis_styled(void *stream, enum disassembler_style style, const char *fmt, ...)
{
	va_list ap;
	int n;

	(void)style;
	va_start(ap, fmt);
	n = buf_vprintf(stream, fmt, ap);
	va_end(ap);
	return n;
}

/* Branch and call targets with their symbol, as objdump shows them. */
static void dis_address(bfd_vma vma, struct disassemble_info *info)
{
	struct insn_buf *b = info->stream;
	long s = b->bin ? rep_bin_find_vma(b->bin, vma) : -1;

	if (s >= 0) {
		const struct rep_sym *sym = rep_bin_sym(b->bin, (size_t)s);

		if (vma == sym->start)
			dis_printf(b, "0x%" PRIx64 " <%s>", (uint64_t)vma, sym->name);
		else
			dis_printf(b, "0x%" PRIx64 " <%s+0x%" PRIx64 ">", (uint64_t)vma,
				   sym->name, (uint64_t)(vma - sym->start));
	} else {
		dis_printf(b, "0x%" PRIx64, (uint64_t)vma);
	}
}

/* The code section of @abfd holding @vma, its contents read once. */
struct sect_cache {
	asection *sec;
	bfd_byte *data;
};

static asection *code_section(bfd *abfd, uint64_t vma)
{
	for (asection *s = abfd->sections; s; s = s->next) {
		flagword fl = bfd_section_flags(s);

		if ((fl & SEC_CODE) && (fl & SEC_HAS_CONTENTS) && vma >= bfd_section_vma(s) &&
		    vma - bfd_section_vma(s) < bfd_section_size(s))
			return s;
	}
	return NULL;
}

static int print_symbol_asm(FILE *f, struct annot *a, struct img *m, bfd *abfd,
			    disassembler_ftype dis, struct disassemble_info *info,
			    struct sect_cache *sc, const struct rep_sym *sym, size_t first,
			    size_t last, const uint64_t *symtot)
{
	struct insn_buf *b = info->stream;
	asection *sec = code_section(abfd, sym->start);
	uint64_t pc, end, secend;
	size_t k = first;
	uint64_t *c = calloc(a->nclasses, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (!sec) {
		fprintf(f, "  (no code section holds %s in this file)\n", sym->name);
		goto out;
	}
	if (sc->sec != sec) {
		free(sc->data);
		sc->data = NULL;
		sc->sec = NULL;
		if (!bfd_malloc_and_get_section(abfd, sec, &sc->data)) {
			fprintf(f, "  (cannot read section %s)\n", bfd_section_name(sec));
			goto out;
		}
		sc->sec = sec;
	}
	info->buffer = sc->data;
	info->buffer_vma = bfd_section_vma(sec);
	info->buffer_length = bfd_section_size(sec);
	info->section = sec;
	secend = bfd_section_vma(sec) + bfd_section_size(sec);
	end = sym->end < secend ? sym->end : secend;
	for (pc = sym->start; pc < end;) {
		int len;
		bool hot;

		b->len = 0;
		b->text[0] = '\0';
		rep_annot_mark(b->mk, pc);
		len = dis(pc, info);
		if (len <= 0)
			len = 1;
		memset(c, 0, a->nclasses * sizeof(*c));
		while (k < last && m->a[k].vma < pc + (uint64_t)len) {
			for (size_t j = 0; j < a->nclasses; j++)
				c[j] += m->a[k].counts[j];
			k++;
		}
		fputs("  ", f);
		hot = rep_annot_counts(f, a, c, symtot);
		fprintf(f, "%s %8" PRIx64 ":\t%s\n", hot ? "*" : ":", pc, b->text);
		pc += (uint64_t)len;
	}
out:
	free(c);
	return 0;
}

/* Sampled addresses of @m sorted; [first,last) ranges per symbol. */
struct symblock {
	long sym;
	size_t first, last;
	uint64_t *tot;
};

static int cmp_block(const void *x, const void *y)
{
	const struct symblock *a = x, *b = y;

	if (a->tot[0] != b->tot[0])
		return a->tot[0] > b->tot[0] ? -1 : 1;
	return a->first < b->first ? -1 : 1;
}

static struct symblock *make_blocks(struct annot *a, struct img *m, size_t *nb)
{
	struct symblock *bl = calloc(m->na ? m->na : 1, sizeof(*bl));
	size_t n = 0;

	if (!bl)
		return NULL;
	qsort(m->a, m->na, sizeof(*m->a), cmp_addr);
	for (size_t i = 0; i < m->na; i++) {
		long s = rep_bin_find_vma(m->bin, m->a[i].vma);

		if (!n || bl[n - 1].sym != s || s < 0) {
			bl[n].sym = s;
			bl[n].first = i;
			bl[n].tot = calloc(a->nclasses, sizeof(uint64_t));
			if (!bl[n].tot) {
				*nb = n;
				return bl;
			}
			n++;
		}
		bl[n - 1].last = i + 1;
		for (size_t j = 0; j < a->nclasses; j++)
			bl[n - 1].tot[j] += m->a[i].counts[j];
	}
	qsort(bl, n, sizeof(*bl), cmp_block);
	*nb = n;
	return bl;
}

static void free_blocks(struct symblock *bl, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(bl[i].tot);
	free(bl);
}

bool rep_annot_above(const struct annot *a, const uint64_t *c)
{
	if (a->o.threshold <= 0)
		return true;
	for (size_t k = 0; k < a->nclasses; k++)
		if (pct_of(c[k], a->p->totals[k]) >= a->o.threshold)
			return true;
	return false;
}

/* The disassembly of @m's sampled symbols from @abfd (in a parser child). */
static int annotate_asm(struct annot *a, struct img *m, bfd *abfd, const char *file,
			struct rep_annot_marks *mk)
{
	FILE *f = a->out;
	struct insn_buf ib = { .bin = m->bin, .mk = mk };
	struct disassemble_info info;
	struct sect_cache sc = { 0 };
	disassembler_ftype dis;
	struct symblock *bl;
	size_t nb = 0;
	int rc = 0;

	init_disassemble_info(&info, &ib, dis_printf, dis_styled);
	info.arch = bfd_get_arch(abfd);
	info.mach = bfd_get_mach(abfd);
	info.endian = bfd_big_endian(abfd) ? BFD_ENDIAN_BIG : BFD_ENDIAN_LITTLE;
	info.print_address_func = dis_address;
	disassemble_init_for_target(&info);
	dis = disassembler(info.arch, bfd_big_endian(abfd), info.mach, abfd);
	if (!dis) {
		fprintf(f, "(no disassembler for the architecture of %s)\n\n", file);
		return 0;
	}
	bl = make_blocks(a, m, &nb);
	if (!bl)
		return -ENOMEM;
	for (size_t i = 0; i < nb && !rc; i++) {
		const struct rep_sym *sym = bl[i].sym >= 0 ? rep_bin_sym(m->bin, (size_t)bl[i].sym) : NULL;

		if (!rep_annot_above(a, bl[i].tot))
			continue;
		if (!sym) {
			fputs("  ", f);
			rep_annot_counts(f, a, bl[i].tot, NULL);
			fputs(": (no symbol)\n\n", f);
			continue;
		}
		fputs("  ", f);
		rep_annot_counts(f, a, bl[i].tot, NULL);
		fprintf(f, ": %016" PRIx64 " <%s>: /* total */\n", sym->start, sym->name);
		rc = print_symbol_asm(f, a, m, abfd, dis, &info, &sc, sym, bl[i].first, bl[i].last,
				      bl[i].tot);
		fputc('\n', f);
	}
	free_blocks(bl, nb);
	free(sc.data);
	return rc;
}

struct asm_job {
	struct annot *a;
	struct img *m;
	const char *file;
};

static int asm_in_child(void *ctx, struct bfd *abfd, FILE *out, struct rep_annot_marks *mk)
{
	struct asm_job *j = ctx;

	j->a->out = out;
	return annotate_asm(j->a, j->m, abfd, j->file, mk);
}

/*
 * One binary, parsed by a confined child: the disassembly comes back as
 * text, the lines as a table; this process reads no ELF.
 */
static int annotate_image(struct annot *a, struct img *m, const char *file)
{
	struct asm_job job = { a, m, file };
	struct rep_debug_opts dopts = { .debug_dir = a->o.debug_dir, .first_dir = a->archive_debug,
					.need_lines = true };
	struct rep_annot_req r = { .file = file, .dopts = &dopts };
	struct rep_annot_res res;
	uint64_t *vmas = NULL;
	char err[256];
	int rc = 0;

	struct timespec t0, t1;
	const char *t = getenv("DEBUGINFOD_TIMEOUT");
	unsigned long secs = t ? strtoul(t, NULL, 10) : 0;

	/* debuginfod as opreport asks it (doc/naming.md): 15 s an image at
	 * most, and not again once a server let one image wait that long */
	if (getenv("DEBUGINFOD_URLS") && !a->dbgd_gave_up)
		dopts.debuginfod_ms = secs && secs < 15 ? (unsigned int)secs * 1000 : 15000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	/* not one byte of it read here: the child finds out what it is */
	if (r.fd < 0) {
		fprintf(a->out, "(cannot read %s: %s)\n\n", file, strerror(errno));
		goto out;
	}
	/* in the order the child's disassembly leaves them: its lines follow */
	qsort(m->a, m->na, sizeof(*m->a), cmp_addr);
	if (a->source && !a->assembly) {
		vmas = calloc(m->na ? m->na : 1, sizeof(*vmas));
		if (!vmas) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < m->na; i++)
			vmas[i] = m->a[i].vma;
		r.vmas = vmas;
		r.nvmas = m->na;
	}
	if (a->assembly) {
		r.asm_fn = asm_in_child;
		r.ctx = &job;
		r.mixed = a->source;
	}
	rc = rep_annot_run(&a->cfg, &r, &res, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (dopts.debuginfod_ms && (t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000 >= dopts.debuginfod_ms) {
		a->dbgd_gave_up = true;
		du_warn("debuginfod did not answer in time: not asked again in this report");
	}
	if (rc) {
		fprintf(a->out, "(cannot read %s: %s)\n\n", file, err);
		rc = 0;
		goto out;
	}
	if (r.mixed && !res.have_lines)
		fprintf(a->out, "(no source lines to interleave: %s)\n",
			res.note[0] ? res.note : "no debug line information");
	if (r.mixed)
		rep_asrc_print_mixed(a, m, &res);
	else
		fwrite(res.text, 1, res.len, a->out);
	if (a->source && !a->assembly)
		rc = rep_asrc_annotate(a, m, &res);
	rep_annot_res_free(&res, r.nvmas);
out:
	if (r.fd >= 0)
		close(r.fd);
	free(vmas);
	return rc;
}

/* --- the program ------------------------------------------------------- */

static int annotate(struct annot *a)
{
	FILE *f = a->out;
	char own[600];
	struct rep_progress pr;
	int rc = 0;

	qsort(a->imgs, a->nimgs, sizeof(*a->imgs), cmp_img);
	for (size_t c = 0; c < a->nclasses; c++)
		fprintf(f, "Counted %s events with a unit mask of 0x%02x count %" PRIu64 "\n",
			a->p->classes[c].event, a->p->classes[c].unit_mask, a->p->classes[c].count);
	fputs("Columns: samples and % of all samples reported, per event; '*' marks\n"
	      "an instruction or line with at least 10% of its symbol's or file's samples.\n\n",
	      f);
	rep_progress_begin(&pr, "opannotate", a->nimgs);
	for (size_t i = 0; i < a->nimgs && !rc; i++) {
		struct img *m = &a->imgs[i];
		char *file = NULL;

		rep_progress_step(&pr, i);
		if (!rep_annot_above(a, m->total))
			continue;
		fputs("  ", f);
		rep_annot_counts(f, a, m->total, NULL);
		fprintf(f, ": image %s%s (%s)%s\n", m->dep.kind == SFN_KERN ? "kernel " : "",
			m->dep.name, owner_label(m, own, sizeof(own)),
			rep_images_unverified(a->images, m->domain, m->vmm, &m->dep) ?
				" " REP_UNVERIFIED : "");
		if (m->dep.kind != SFN_ROOT) {
			fputs("(no binary to annotate: kernel symbols come from kallsyms; use opreport -l)\n\n", f);
			continue;
		}
		file = rep_images_locate(a->images, m->domain, m->vmm, m->dep.name);
		if (!file) {
			fputs("(binary not found)\n\n", f);
			continue;
		}
		fprintf(f, "  file %s\n\n", file);
		rc = annotate_image(a, m, file);
		free(file);
	}
	rep_progress_end(&pr);
	if (!rc && a->tree)
		rc = rep_asrc_tree_write(a);
	if (!rc && (fflush(f) || ferror(f)))
		rc = -EIO;
	return rc;
}

static void usage(FILE *f)
{
	fputs("Usage: opannotate --assembly|--source [OPTION]... [PROFILE SPECIFICATION]...\n"
	      "Show the samples of a domprof session on the instructions or source lines\n"
	      "of the binaries they fell in (host and guest binaries alike).\n"
	      "\n"
	      "Options:\n"
	      "  -a, --assembly          disassembly, samples per instruction\n"
	      "  -s, --source            source lines, samples per line (needs debug info);\n"
	      "                          with --assembly: the source lines interleaved\n"
	      "  -o, --output-dir=DIR    write each sampled source file, annotated, below DIR\n"
	      "                          (implies --source; not with --assembly)\n"
	      "  -d, --search-dirs=DIRS  comma-separated directories a host binary's source\n"
	      "                          files are looked for in first\n"
	      "  -b, --base-dirs=DIRS    comma-separated prefixes taken off the source paths\n"
	      "                          the debug info names, before --search-dirs and\n"
	      "                          --source-dir look them up\n"
	      "  -t, --threshold=PERCENT hide images and symbols below PERCENT of the total\n"
	      "      --source-dir=DIR    where a guest's source files are (never opened as its\n"
	      "                          debug info names them)\n", f);
	fputs(rep_view_common_usage, f);
}

enum { OPT_SOURCE_DIR = REP_OPT_FREE };

/* OProfile's rules, and the guest's --source-dir as a place to look. */
static int check_opts(struct annot *a, char *err, size_t errlen)
{
	if (a->output_dir && a->assembly) {
		snprintf(err, errlen, "--output-dir writes source files: not with --assembly");
		return -EINVAL;
	}
	if (a->so.nbase && !a->so.nsearch && !a->so.source_dir) {
		snprintf(err, errlen, "--base-dirs needs --search-dirs or --source-dir"
			 " (where the shortened paths are looked up)");
		return -EINVAL;
	}
	a->source |= a->output_dir != NULL;
	if (a->assembly || a->source)
		return 0;
	snprintf(err, errlen, "give --assembly or --source (or both), or --output-dir");
	return -EINVAL;
}

static int annotate_opt(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct annot *a = ctx;
	char *end;

	switch (c) {
	case 'a':
		a->assembly = true;
		return 0;
	case 's':
		a->source = true;
		return 0;
	case OPT_SOURCE_DIR:
		a->so.source_dir = arg;
		return 0;
	case 'o':
		a->output_dir = arg;
		return 0;
	case 'd':
		return rep_view_add_list(&a->so.search_dirs, &a->so.nsearch, arg) ? -ENOMEM : 0;
	case 'b':
		return rep_view_add_list(&a->so.base_dirs, &a->so.nbase, arg) ? -ENOMEM : 0;
	case 't':
		a->o.threshold = strtod(arg, &end);
		if (end == arg || *end || a->o.threshold < 0 || a->o.threshold > 100) {
			snprintf(err, errlen, "bad --threshold \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case 0:
		return check_opts(a, err, errlen);
	default:
		snprintf(err, errlen, "unknown option");
		return -EINVAL;
	}
}

static int parse(struct annot *a, int argc, char **argv)
{
	static const struct option extra[] = {
		{ "assembly", no_argument, NULL, 'a' },
		{ "source", no_argument, NULL, 's' },
		{ "threshold", required_argument, NULL, 't' },
		{ "source-dir", required_argument, NULL, OPT_SOURCE_DIR },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "search-dirs", required_argument, NULL, 'd' },
		{ "base-dirs", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	size_t len = 0;

	/* the command line, for the annotated files' closing comment */
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	a->cmdline = calloc(1, len + 1);
	for (int i = 0; a->cmdline && i < argc; i++)
		strcat(strcat(a->cmdline, i ? " " : ""), argv[i]);
	return rep_view_parse("opannotate", &a->o, argc, argv, extra, "ast:o:d:b:", annotate_opt,
			      a, usage);
}

int rep_annotate_main(int argc, char **argv)
{
	struct annot a = { .last = -1, .out = stdout, .out_dfd = -1 };
	struct rep_key_sink sink = { .key = on_key, .ctx = &a };
	struct rep_profile *p = NULL;
	int rc, status = 1;

	du_log_set_prog("opannotate");
	rc = parse(&a, argc, argv);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out;
	}
	a.images = rep_images_new(&a.o);
	if (rep_child_cfg_init(&a.cfg)) {
		du_err("no unprivileged user to parse binaries as");
		goto out;
	}
	if (asprintf(&a.archive_debug, "%s/" REP_ARCHIVE_DIR REP_DEBUG_DIR, a.o.session_dir) < 0)
		a.archive_debug = NULL;
	if (!a.images) {
		du_err("out of memory");
		goto out;
	}
	if (a.output_dir && rep_asrc_tree_begin(&a))
		goto out;
	if (rep_collect_keys(&a.o, a.images, &sink, &p))
		goto out;
	a.p = p;
	a.nclasses = p->nclasses;
	a.zero = calloc(a.nclasses, sizeof(*a.zero));
	rc = a.zero ? annotate(&a) : -ENOMEM;
	if (rc) {
		du_err("%s", rc == -ENOMEM ? "out of memory" :
		       "cannot write the annotation (or a file of it)");
		goto out;
	}
	status = 0;
out:
	free_imgs(&a);
	rep_asrc_release(&a);
	free(a.archive_debug);
	free(a.zero);
	rep_profile_free(p);
	rep_images_free(a.images);
	rep_opts_release(&a.o);
	return status;
}
