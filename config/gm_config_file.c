/*
 * gm_config_file.c - reading the configuration file: a regular file no
 * larger than GM_CONFIG_MAX_FILE, read whole and loaded as one JSON
 * document (gm_config_load_string); see gm_config.h.
 */
#include "gm_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gm_config_value.h"
#include "gm_error.h"

#define fail gm_config_value_fail

/* Reads size bytes of fd into buf; returns 0 or an errno value. A file
 * that shrank meanwhile is read as far as it goes. */
static int read_all(int fd, char *buf, size_t size, size_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < size) {
		n = read(fd, buf + *got, size - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Reads the whole file at path into a NUL-terminated heap buffer, after
 * checking its size. Messages leave the path to the caller. */
static int read_file(const char *path, char **out, size_t *outlen, char *msg,
		     size_t len)
{
	struct stat st;
	char *buf;
	int fd, e;

	/* O_NONBLOCK: opening a FIFO would otherwise wait for a writer
	 * before the check below could refuse it; regular files ignore it. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return fail(msg, len, GM_EIO, "%s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(msg, len, GM_EIO, "%s",
			    S_ISDIR(st.st_mode) ? strerror(EISDIR)
						: "not a regular file");
	}
	if (st.st_size > GM_CONFIG_MAX_FILE) {
		close(fd);
		return fail(msg, len, GM_ECONFIG,
			    "%lld bytes is more than the %u a config file may "
			    "have",
			    (long long)st.st_size, GM_CONFIG_MAX_FILE);
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return fail(msg, len, GM_ENOMEM, "out of memory");
	}
	e = read_all(fd, buf, (size_t)st.st_size, outlen);
	close(fd);
	if (e != 0) {
		free(buf);
		return fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	buf[*outlen] = '\0';
	*out = buf;
	return 0;
}

int gm_config_load_file(gm_config *c, const char *path, char *msg,
			size_t msglen)
{
	char why[512] = "";
	char *text = NULL;
	size_t len = 0;
	int rv;

	if ((rv = read_file(path, &text, &len, why, sizeof(why))) == 0)
		rv = gm_config_load_string(c, text, len, why, sizeof(why));
	free(text);
	if (rv != 0)
		fail(msg, msglen, rv, "%s: %s", path, why);
	return rv;
}
