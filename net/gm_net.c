/*
 * gm_net.c - URL schemes and nng's errors; see gm_net.h.
 */
#include "gm_net.h"

#include <nng/nng.h>
#include <stdio.h>
#include <string.h>

#include "gm_error.h"

const char gm_url_schemes[] = "ipc://, tcp://, tls+tcp://";

static const struct {
	const char *prefix;
	int kind;
} schemes[] = {
    {"ipc://", GM_URL_IPC},
    {"tcp://", GM_URL_TCP},
    {"tls+tcp://", GM_URL_TLS},
};

int gm_url_kind(const char *url)
{
	for (size_t i = 0;
	     url != NULL && i < sizeof(schemes) / sizeof(*schemes); i++) {
		size_t n = strlen(schemes[i].prefix);

		if (strncmp(url, schemes[i].prefix, n) == 0 && url[n] != '\0')
			return schemes[i].kind;
	}
	return GM_URL_BAD;
}

int gm_url_transport(const char *url, char *out, size_t len)
{
	int n;

	switch (gm_url_kind(url)) {
	case GM_URL_IPC:
	case GM_URL_TCP:
		n = snprintf(out, len, "%s", url);
		break;
	case GM_URL_TLS:
		n = snprintf(out, len, "%s", url + strlen("tls+"));
		break;
	default:
		return GM_EINVAL;
	}
	return n >= 0 && (size_t)n < len ? GM_OK : GM_EINVAL;
}

int gm_url_is_loopback(const char *url)
{
	const char *host = strstr(url, "://");

	if (host == NULL)
		return 0;
	host += 3;
	return strncmp(host, "127.", 4) == 0 ||
	       strncmp(host, "localhost:", 10) == 0 ||
	       strncmp(host, "[::1]:", 6) == 0;
}

int gm_net_err(int nng_rv)
{
	switch (nng_rv) {
	case 0:
		return GM_OK;
	case NNG_ETIMEDOUT:
		return GM_ETIMEDOUT;
	case NNG_ENOMEM:
		return GM_ENOMEM;
	case NNG_ECLOSED:
	case NNG_ECANCELED:
		return GM_ECANCELED;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
	case NNG_ENOTSUP:
		return GM_EINVAL;
	case NNG_EPERM:
		return GM_EACCES;
	default:
		return GM_ETRANSPORT;
	}
}
