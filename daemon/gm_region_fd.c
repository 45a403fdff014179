/*
 * gm_region_fd.c - the hand-off socket's path and listener, and the
 * checks a memfd passes before it is mapped; see gm_region_fd.h.
 */
#include "gm_region_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gm_error.h"
#include "gm_proto_region.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1 */
#endif

#define BACKLOG 128

int gm_region_fd_path(const gm_config *cfg, char path[GM_REGION_PATH_MAX],
		      char *msg, size_t msglen)
{
	const char *url = NULL;
	int n;

	if (!cfg->regions)
		return 0;
	for (unsigned i = 0; i < cfg->nlisten && url == NULL; i++)
		if (strncmp(cfg->listen[i], "ipc://", 6) == 0)
			url = cfg->listen[i] + 6;
	if (cfg->region_socket != NULL)
		n = snprintf(path, GM_REGION_PATH_MAX, "%s",
			     cfg->region_socket);
	else if (url == NULL)
		return 0;
	else
		n = gm_handoff_path(url, path, GM_REGION_PATH_MAX);
	if (n < 0 || n >= GM_REGION_PATH_MAX || path[0] == '\0') {
		snprintf(msg, msglen,
			 "region socket path \"%s%s\" is empty or longer "
			 "than %d bytes; set region_socket",
			 cfg->region_socket ? cfg->region_socket : url,
			 cfg->region_socket ? "" : " (beside it)",
			 GM_REGION_PATH_MAX - 1);
		return -GM_ECONFIG;
	}
	return 1;
}

static int addr_of(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/* Whether some process accepts connections of type on path. */
static int accepts(const char *path, int type)
{
	struct sockaddr_un sa;
	int fd, rv;

	if (addr_of(path, &sa) != 0 ||
	    (fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	rv = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return rv;
}

/* Whether path is served: another gemmd's hand-off socket, or any
 * stream socket (another daemon's ipc:// one), which the rename below
 * would otherwise take from it. */
static int in_use(const char *path)
{
	return accepts(path, SOCK_SEQPACKET) || accepts(path, SOCK_STREAM);
}

int gm_region_fd_listen(const char *path, char *msg, size_t msglen)
{
	char tmp[GM_REGION_PATH_MAX + 16];
	struct sockaddr_un sa;
	int fd;

	if (in_use(path)) {
		snprintf(msg, msglen,
			 "region socket %s: another process serves on it; set "
			 "region_socket to a path of this daemon's own",
			 path);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	if (addr_of(tmp, &sa) != 0) {
		snprintf(msg, msglen, "region socket %s: path too long", path);
		return -1;
	}
	unlink(tmp);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    chmod(tmp, 0660) != 0 || listen(fd, BACKLOG) != 0 ||
	    rename(tmp, path) != 0) {
		snprintf(msg, msglen, "region socket %s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return -1;
	}
	return fd;
}

int gm_region_fd_check(int fd, uint64_t size, char *msg, size_t msglen)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(msg, msglen, "the descriptor is not a memfd");
		return GM_EINVAL;
	}
	if ((seals = fcntl(fd, F_GET_SEALS)) < 0) {
		snprintf(msg, msglen,
			 "the descriptor has no seals: make it with "
			 "memfd_create(MFD_ALLOW_SEALING)");
		return GM_EINVAL;
	}
	if (!(seals & F_SEAL_SHRINK)) {
		snprintf(msg, msglen,
			 "memfd is not sealed against shrinking: add "
			 "F_SEAL_SHRINK with fcntl(F_ADD_SEALS)");
		return GM_EINVAL;
	}
	if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
		snprintf(msg, msglen,
			 "memfd is sealed against writing; gemmd writes "
			 "results into it");
		return GM_EINVAL;
	}
	if ((uint64_t)st.st_size != size) {
		snprintf(
		    msg, msglen, "memfd holds %llu bytes, the record says %llu",
		    (unsigned long long)st.st_size, (unsigned long long)size);
		return GM_EINVAL;
	}
	return GM_OK;
}

int gm_region_fd_map(int fd, uint64_t size, void **base, char *msg,
		     size_t msglen)
{
	void *p;

	*base = NULL;
	if (size > SIZE_MAX) {
		snprintf(msg, msglen, "%llu bytes cannot be mapped here",
			 (unsigned long long)size);
		return GM_ENOMEM;
	}
	p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(msg, msglen, "cannot map the memfd read-write: %s",
			 strerror(errno));
		return errno == EACCES || errno == EPERM ? GM_EACCES
							 : GM_ENOMEM;
	}
	*base = p;
	return GM_OK;
}
