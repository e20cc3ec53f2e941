/*
 * Which collectors opcontrol may start: the daemon's table says
 * (oprofiled --list-collectors, daemon/collect/opd_collector.h), so a collector
 * added there is one opcontrol takes without a change here.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"

/* Is @word one of the space-separated words of @line (up to its end)? */
static bool has_word(const char *line, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = line; p < line + len; p++)
		if ((p == line || p[-1] == ' ') && (size_t)(line + len - p) >= n &&
		    !memcmp(p, word, n) && (p + n == line + len || p[n] == ' '))
			return true;
	return false;
}

int ctl_collectors_parse(const char *text, const char *name, struct ctl_collector *c,
			 char *names, size_t nameslen)
{
	size_t off = 0;
	int ret = -ENOENT;

	if (nameslen)
		names[0] = '\0';
	memset(c, 0, sizeof(*c));
	for (const char *line = text; *line; ) {
		size_t len = strcspn(line, "\n"), nlen = strcspn(line, " \n");

		/* opcontrol starts live sessions: a replay is oprofiled's alone */
		if (nlen && has_word(line, len, "live")) {
			if (off < nameslen)
				off += (size_t)snprintf(names + off, nameslen - off, "%s%.*s",
							off ? ", " : "", (int)nlen, line);
			if (strlen(name) == nlen && !memcmp(line, name, nlen)) {
				c->events = has_word(line, len, "events");
				c->events_optional = has_word(line, len, "events-optional");
				ret = 0;
			}
		}
		line += len + (line[len] == '\n');
	}
	return ret;
}

/* Run "@daemon --list-collectors" into @buf: 0 or -errno (@err says). */
static int list_collectors(const char *daemon, char *buf, size_t size, char *err, size_t errlen)
{
	int pfd[2], status;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		const char *const argv[] = { daemon, "--list-collectors", NULL };

		if (dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(127);
		if (strchr(daemon, '/'))
			execv(daemon, (char *const *)argv);
		else
			execvp(daemon, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	while (len < size - 1 && ((n = read(pfd[0], buf + len, size - 1 - len)) > 0 ||
				  (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	buf[len] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	snprintf(err, errlen, "cannot ask %s which collectors it has (%s %d): is it a domprof "
		 "oprofiled of this version?", daemon,
		 WIFEXITED(status) ? "exit status" : "signal",
		 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return -ENOEXEC;
}

int ctl_collector_check(const char *daemon, const char *name, struct ctl_collector *c,
			char *err, size_t errlen)
{
	char list[4096], names[512];
	int ret = list_collectors(daemon, list, sizeof(list), err, errlen);

	if (ret)
		return ret;
	ret = ctl_collectors_parse(list, name, c, names, sizeof(names));
	if (ret)
		snprintf(err, errlen, "unknown collector '%.64s' (%s has %s)", name, daemon,
			 names[0] ? names : "none that opcontrol can start");
	return ret ? -EINVAL : 0;
}
