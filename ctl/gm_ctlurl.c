/*
 * gm_ctlurl.c - the check of a daemon URL before gemmctl dials it; see
 * gm_ctlurl.h. nng alone answers "Not supported" for an http:// URL and
 * "Address invalid" both for a missing port and for a host name that
 * does not resolve, which gemmctl could only report as one kind of
 * failure; here each gets its own message and status.
 */
#include "gm_ctlurl.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "gm_error.h"

#define SUPPORTED "ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT"

/* The schemes gemmd listens on, and the address family of each TCP one
 * (nng's tcp4:// and tcp6:// pin one). */
static const struct {
	const char *name;
	int family; /* -1: ipc:// */
} schemes[] = {
    {"ipc", -1},
    {"tcp", AF_UNSPEC},
    {"tcp4", AF_INET},
    {"tcp6", AF_INET6},
    {"tls+tcp", AF_UNSPEC},
    {"tls+tcp4", AF_INET},
    {"tls+tcp6", AF_INET6},
};

/* The family of the scheme of url (its length n), or -2 if gemmd does
 * not serve it. */
static int scheme_family(const char *url, size_t n)
{
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].name) == n &&
		    strncmp(url, schemes[i].name, n) == 0)
			return schemes[i].family;
	return -2;
}

/* Splits "HOST:PORT" or "[V6]:PORT" (up to a '/') into host and port. */
static int split_address(const char *addr, char *host, size_t hostlen,
			 char *port, size_t portlen)
{
	size_t end = strcspn(addr, "/"), hl;
	const char *colon, *h = addr;

	if (*addr == '[') {
		colon = memchr(addr, ']', end);
		if (colon == NULL || colon[1] != ':')
			return GM_EINVAL;
		h = addr + 1;
		hl = (size_t)(colon - h);
		colon++;
	} else {
		colon = memrchr(addr, ':', end);
		if (colon == NULL)
			return GM_EINVAL;
		hl = (size_t)(colon - addr);
	}
	if (hl == 0 || hl >= hostlen || colon + 1 == addr + end ||
	    (size_t)(addr + end - colon - 1) >= portlen)
		return GM_EINVAL;
	snprintf(host, hostlen, "%.*s", (int)hl, h);
	snprintf(port, portlen, "%.*s", (int)(addr + end - colon - 1),
		 colon + 1);
	return GM_OK;
}

static int resolve(const char *url, const char *host, const char *port,
		   int family, char *msg, size_t msglen)
{
	struct addrinfo hints = {.ai_family = family,
				 .ai_socktype = SOCK_STREAM},
			*res;
	int e = getaddrinfo(host, port, &hints, &res);

	if (e == 0) {
		freeaddrinfo(res);
		return GM_OK;
	}
	if (e == EAI_SERVICE) {
		snprintf(msg, msglen, "%s: port '%s': %s", url, port,
			 gai_strerror(e));
		return GM_EINVAL;
	}
	snprintf(msg, msglen, "%s: host '%s' not found: %s", url, host,
		 gai_strerror(e));
	return GM_ETRANSPORT;
}

int gm_ctlurl_check(const char *url, char *msg, size_t msglen)
{
	const char *sep = strstr(url, "://");
	char host[256], port[32];
	int family;

	family = sep ? scheme_family(url, (size_t)(sep - url)) : -2;
	if (family == -2) {
		snprintf(msg, msglen,
			 "%s: unsupported URL%s%.*s%s; gemmd listens on "
			 "" SUPPORTED,
			 url, sep ? " scheme '" : "",
			 sep ? (int)(sep - url + 3) : 0, url, sep ? "'" : "");
		return GM_EINVAL;
	}
	if (family == -1) {
		if (sep[3] != '\0')
			return GM_OK;
		snprintf(msg, msglen, "%s: no socket path; want ipc://PATH",
			 url);
		return GM_EINVAL;
	}
	if (split_address(sep + 3, host, sizeof(host), port, sizeof(port))) {
		snprintf(msg, msglen, "%s: want %.*sHOST:PORT", url,
			 (int)(sep - url + 3), url);
		return GM_EINVAL;
	}
	return resolve(url, host, port, family, msg, msglen);
}
