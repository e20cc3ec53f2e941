/* The host images' identity record (opd_imgid.h). */
#include "config.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_image.h"
#include "opd_imgid.h"
#include "util/du_elfid.h"
#include "util/du_test.h"

static char dir[] = "/tmp/test_imgid.XXXXXX";

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* Copy this test program (an ELF file with a build id) to @dst. */
static void copy_self(const char *dst)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), dst);
	CU_ASSERT_FATAL(system(cmd) == 0);
}

static void test_note_once_and_recheck(void)
{
	char rec[256], bin[256], hex[DU_BUILD_ID_HEX], *s;
	struct opd_images *images = opd_images_new();
	struct opd_imgids *r;
	struct opd_image *img, *anon;
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	int fd;

	snprintf(rec, sizeof(rec), "%s/{images}", dir);
	snprintf(bin, sizeof(bin), "%s/prog", dir);
	copy_self(bin);
	fd = open(bin, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(du_elf_build_id_hex(fd, hex, sizeof(hex)) > 0);
	close(fd);
	r = opd_imgids_new(rec);
	CU_ASSERT_FATAL(r && images);
	img = opd_image_get(images, SFN_ROOT, bin, strlen(bin));
	anon = opd_image_get(images, SFN_ANON, "heap", 4);
	CU_ASSERT(opd_imgids_note(r, anon) == 0);
	CU_ASSERT(opd_imgids_note(r, img) == 1);
	CU_ASSERT(opd_imgids_note(r, img) == 0);	/* once per image */
	CU_ASSERT(opd_imgids_recheck(r) == 0);	/* unchanged */
	s = slurp(rec);
	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT(!strncmp(s, "domprof-images 1\nimage\t", 23));
	CU_ASSERT(strstr(s, hex) != NULL);
	CU_ASSERT(lines(s) == 2);
	/* the file changes while profiled: both identities kept */
	CU_ASSERT_FATAL(utimensat(AT_FDCWD, bin, later, 0) == 0);
	CU_ASSERT(opd_imgids_recheck(r) == 1);
	s = slurp(rec);
	CU_ASSERT(lines(s) == 3);
	CU_ASSERT(strstr(s, "\t1000000000.000000000\n") != NULL);
	opd_imgids_free(r);
	opd_images_free(images);
	/* the next daemon run appends, under the same header */
	images = opd_images_new();
	r = opd_imgids_new(rec);
	CU_ASSERT(opd_imgids_note(r, opd_image_get(images, SFN_ROOT, bin, strlen(bin))) == 1);
	opd_imgids_free(r);
	opd_images_free(images);
	s = slurp(rec);
	CU_ASSERT(lines(s) == 4);
	CU_ASSERT(strstr(s + 1, "domprof-images") == NULL);
}

static void test_no_build_id_and_escape(void)
{
	char rec[256], bin[256], esc[64], *s;
	struct opd_images *images = opd_images_new();
	struct opd_imgids *r;
	FILE *f;

	snprintf(rec, sizeof(rec), "%s/{images}2", dir);
	snprintf(bin, sizeof(bin), "%s/a b", dir);
	f = fopen(bin, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	r = opd_imgids_new(rec);
	CU_ASSERT(opd_imgids_note(r, opd_image_get(images, SFN_ROOT, bin, strlen(bin))) == 1);
	/* a path that is no regular file: nothing recorded */
	CU_ASSERT(opd_imgids_note(r, opd_image_get(images, SFN_ROOT, "/dev/null", 9)) == 0);
	opd_imgids_free(r);
	s = slurp(rec);
	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT(strstr(s, "/a\\x20b\t-\t10\t") != NULL);
	CU_ASSERT(lines(s) == 2);
	CU_ASSERT(opd_imgids_escape("x\\y\n", esc, sizeof(esc)) == 10);
	CU_ASSERT_STRING_EQUAL(esc, "x\\x5cy\\x0a");
	CU_ASSERT(opd_imgids_escape("abcdef", esc, 4) == -ENAMETOOLONG);
	opd_images_free(images);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "noted once, a changed file again", test_note_once_and_recheck },
		{ "no build id; escaped path", test_no_build_id_and_escape },
	};
	int rc;

	if (!mkdtemp(dir))
		return 1;
	rc = du_test_main("imgid", tests, DU_TEST_N(tests), NULL, NULL);
	if (!rc) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			return 1;
	}
	return rc;
}
