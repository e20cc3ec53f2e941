#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rep_child.h"

/*
 * Limits of a child: CPU seconds, address space, and bytes it may send
 * back.  Its wall-clock time is the caller's.
 */
#define LIMIT_CPU_S	10
#define LIMIT_AS	(1024ull << 20)
/* what an unpacked MiniDebugInfo table may take in its memfd (rep_debug.c
 * stops at 64 MiB) */
#define MINI_FSIZE	(65ull << 20)
#define LIMIT_REPLY	(256u << 20)

/*
 * A debuginfod cache the children's user owns: REP_CHILD_CACHE_TOP/debuginfod.USER, made
 * by root in root's own directory (no other user can plant it), one per
 * user so that a change of user never meets another's files.
 */
static void root_cache(struct rep_child_cfg *cfg)
{
	char name[128];
	struct stat st;
	int top, fd;

	if (mkdir(REP_CHILD_CACHE_TOP, 0755) && errno != EEXIST)
		return;
	top = open(REP_CHILD_CACHE_TOP, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return;
	if (fstat(top, &st) || st.st_uid != 0 || (st.st_mode & 022))
		goto out;
	snprintf(name, sizeof(name), "debuginfod.%s", cfg->user);
	if (!mkdirat(top, name, 0700)) {
		fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchown(fd, cfg->uid, cfg->gid)) {
			if (fd >= 0)
				close(fd);
			goto out;
		}
	} else {
		fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			goto out;
	}
	if (!fstat(fd, &st) && st.st_uid == cfg->uid && !(st.st_mode & 077))
		snprintf(cfg->cache, sizeof(cfg->cache), "%s/%s", REP_CHILD_CACHE_TOP, name);
	close(fd);
out:
	close(top);
}

int rep_child_cfg_init(struct rep_child_cfg *cfg)
{
	struct passwd *pw;

	memset(cfg, 0, sizeof(*cfg));
	if (geteuid() != 0)
		return 0;
	cfg->drop = true;
	/* never nobody: what else runs as nobody could ptrace or signal
	 * a child that holds an image's bytes */
	pw = getpwnam(REP_CHILD_USER);
	if (!pw)
		return -ENOENT;
	cfg->uid = pw->pw_uid;
	cfg->gid = pw->pw_gid;
	snprintf(cfg->user, sizeof(cfg->user), "%s", pw->pw_name);
	if (getenv("DEBUGINFOD_CACHE_PATH"))
		return 0;	/* the user's choice */
	root_cache(cfg);
	return 0;
}

int rep_child_confine(void)
{
	static const int allowed[] = {
		SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(write),
		SCMP_SYS(writev), SCMP_SYS(lseek), SCMP_SYS(close), SCMP_SYS(fstat),
		SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(fcntl), SCMP_SYS(mmap),
		SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(mprotect), SCMP_SYS(brk),
		SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(sysinfo), SCMP_SYS(getrandom),
		SCMP_SYS(clock_gettime), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(getpid), SCMP_SYS(gettid),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc = -ENOMEM;

	if (!ctx)
		return rc;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
		if (rc)
			goto out;
	}
	/* libbfd asks how many files it may keep open: reading limits only */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_EQ, 0));
	/* a file it names itself (a dwz debug file's .gnu_debugaltlink) is
	 * refused, not fatal: the parse goes on without it */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(getrlimit), 0);
	if (!rc)
		rc = seccomp_load(ctx);
out:
	seccomp_release(ctx);
	return rc;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Every descriptor but @keep closed: a parser taken over by its input
 * must not write into the report's output or its other files. */
static int close_others(int keep0, int keep1, int keep2)
{
	int keep[4] = { keep0, keep1, keep2, -1 }, from = STDERR_FILENO + 1;

	qsort(keep, 3, sizeof(keep[0]), cmp_int);
	for (int i = 0; i < 3; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from && close_range((unsigned int)from, (unsigned int)keep[i] - 1, 0))
			return -1;
		from = keep[i] + 1;
	}
	return close_range((unsigned int)from, ~0u, 0) ? -1 : 0;
}

/* The child's start: limits, then root and what it could regain dropped. */
static int limit_self(const struct rep_child_cfg *cfg)
{
	struct rlimit cpu = { LIMIT_CPU_S, LIMIT_CPU_S + 1 }, as = { LIMIT_AS, LIMIT_AS };
	struct rlimit none = { 0, 0 }, fsize = { MINI_FSIZE, MINI_FSIZE };
	int null;

	/* it writes no file but the memfd a MiniDebugInfo table is unpacked
	 * into (a memfd counts against RLIMIT_FSIZE), and debuginfod's cache
	 * when it may ask */
	if (getenv("DEBUGINFOD_URLS"))
		fsize = as;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || setrlimit(RLIMIT_CPU, &cpu) ||
	    setrlimit(RLIMIT_AS, &as) || setrlimit(RLIMIT_FSIZE, &fsize) ||
	    setrlimit(RLIMIT_CORE, &none))
		return -1;
	if (cfg->drop && (setgroups(0, NULL) || setresgid(cfg->gid, cfg->gid, cfg->gid) ||
			  setresuid(cfg->uid, cfg->uid, cfg->uid)))
		return -1;
	if (geteuid() == 0 || (cfg->drop && getegid() == 0))
		return -1;
	if (cfg->cache[0] && setenv("DEBUGINFOD_CACHE_PATH", cfg->cache, 1))
		return -1;
	/* the parsers' own complaints about the files: not ours to print */
	null = open("/dev/null", O_RDWR);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
	    dup2(null, STDERR_FILENO) < 0)
		return -1;
	if (null > STDERR_FILENO)
		close(null);
	return 0;
}

/* The child's reply, read within @wall_ms and LIMIT_REPLY. */
static int read_reply(int rfd, pid_t pid, unsigned int wall_ms, char **reply, size_t *len,
		      char *err, size_t errlen)
{
	size_t cap = 0;

	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, (int)wall_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			snprintf(err, errlen, "its parser took over %u s: stopped", wall_ms / 1000);
			return -ETIMEDOUT;
		}
		if (*len == cap) {
			char *nv;

			if (cap >= LIMIT_REPLY) {
				kill(pid, SIGKILL);
				snprintf(err, errlen, "its symbol table is over %u MiB: ignored",
					 LIMIT_REPLY >> 20);
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 65536;
			nv = realloc(*reply, cap);
			if (!nv) {
				kill(pid, SIGKILL);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			*reply = nv;
		}
		n = read(rfd, *reply + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		*len += (size_t)n;
	}
}

int rep_child_ask(int out, int in, const char *q, size_t n)
{
	unsigned char len = n > 255 ? 255 : (unsigned char)n, a;

	if (write(out, &len, 1) != 1 || write(out, q, len) != len || read(in, &a, 1) != 1)
		return -1;
	return a;
}

/* The child's question, read within @wall_ms, and @ask's answer sent. */
static int answer(int rfd, int wfd, int (*ask)(void *actx, const char *q, size_t n), void *actx,
		  unsigned int wall_ms)
{
	char q[1 + 255 + 1];	/* length byte, at most 255 bytes, NUL */
	size_t got = 0, want = 1;

	while (got < want) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, (int)wall_ms) <= 0)
			return -ETIMEDOUT;
		n = read(rfd, q + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;	/* it died first: its status says why */
		got += (size_t)n;
		if (got == 1)
			want = 1 + (unsigned char)q[0];
	}
	q[got] = '\0';
	q[0] = (char)ask(actx, q + 1, got - 1);
	return write(wfd, q, 1) == 1 ? 0 : -EPIPE;
}

int rep_child_run(const struct rep_child_cfg *cfg, int fd, int (*fn)(void *ctx, int out, int in),
		  void *ctx, unsigned int wall_ms, char **reply, size_t *len, char *err,
		  size_t errlen)
{
	return rep_child_run_ask(cfg, fd, fn, ctx, NULL, NULL, wall_ms, reply, len, err, errlen);
}

int rep_child_run_ask(const struct rep_child_cfg *cfg, int fd,
		      int (*fn)(void *ctx, int out, int in), void *ctx,
		      int (*ask)(void *actx, const char *q, size_t n), void *actx,
		      unsigned int wall_ms, char **reply, size_t *len, char *err, size_t errlen)
{
	int p[2], a[2], status, rc;
	pid_t pid;

	*reply = NULL;
	*len = 0;
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	if (pipe2(a, O_CLOEXEC)) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return rc;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		close(a[0]);
		close(a[1]);
		return rc;
	}
	if (pid == 0) {
		close(p[0]);
		close(a[1]);
		_exit(limit_self(cfg) || close_others(fd, p[1], a[0]) ? 3 : fn(ctx, p[1], a[0]));
	}
	close(p[1]);
	close(a[0]);
	if (ask && answer(p[0], a[1], ask, actx, wall_ms) == -ETIMEDOUT)
		kill(pid, SIGKILL);
	close(a[1]);
	rc = read_reply(p[0], pid, wall_ms, reply, len, err, errlen);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc)
		goto out_free;
	rc = -EPROTO;
	if (WIFSIGNALED(status)) {
		snprintf(err, errlen, "its parser was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGXCPU ? ": over its CPU limit" :
			 WTERMSIG(status) == SIGSYS ? ": a system call outside its seccomp list" : "");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && *len && !(*reply)[0]) {
		size_t n = *len - 1 < 200 ? *len - 1 : 200;

		/* the reason, printable bytes only */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)(*reply)[1 + i] < 0x20 || (*reply)[1 + i] == 0x7f)
				(*reply)[1 + i] = '?';
		snprintf(err, errlen, "%.*s", (int)n, *reply + 1);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "its parser failed (exit %d)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	} else {
		return 0;
	}
out_free:
	free(*reply);
	*reply = NULL;
	*len = 0;
	return rc;
}
