/*
 * gm_blas_env.c - the shim's settings, read from the environment once,
 * and its log lines.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gm_blas.h"

/* A call gemmd has not answered in 10 s is the host BLAS's: see the
 * README's settings for why that is long enough. */
#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_RETRY_MS   5000
#define DEFAULT_REGION_MAX (1ull << 30)

static struct gm_blas_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static bool is_off(const char *v)
{
	return v != NULL &&
	       (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0 ||
		strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0);
}

/* A number with an optional K, M or G (powers of 1024); def when unset,
 * and when malformed, with a line saying so. */
static double number(const char *key, double def, bool sizes)
{
	const char *v = getenv(key);
	char *end;
	double x;

	if (v == NULL || *v == '\0')
		return def;
	errno = 0;
	x = strtod(v, &end);
	if (sizes && (*end == 'K' || *end == 'M' || *end == 'G'))
		x *= *end == 'K'   ? 1024.0
		     : *end == 'M' ? 1048576.0
				   : 1073741824.0,
		    end++;
	if (errno != 0 || end == v || *end != '\0' || x < 0) {
		fprintf(stderr,
			"gemmd_blas: %s='%s' is not a number >= 0; "
			"using %g\n",
			key, v, def);
		return def;
	}
	return x;
}

/* Milliseconds as number() reads them, in what an int holds: def when
 * more, with a line saying so; a fraction of one is one, not 0 (which
 * means no limit where it is a timeout). */
static int millis(const char *key, int def)
{
	double x = number(key, def, false);

	if (x > INT32_MAX) {
		fprintf(stderr,
			"gemmd_blas: %s=%g is more than %d ms; using %d\n", key,
			x, INT32_MAX, def);
		return def;
	}
	return x > 0 && x < 1 ? 1 : (int)x;
}

static void read_config(void)
{
	config.verbose = (int)number("GEMMD_BLAS_VERBOSE", 0, false);
	/* Never offload from inside gemmd itself: its CPU engine calls this
	 * very BLAS, and would be sending its jobs to itself. */
	config.enabled = !is_off(getenv("GEMMD_BLAS")) &&
			 strcmp(program_invocation_short_name, "gemmd") != 0;
	config.min_flops =
	    number("GEMMD_BLAS_MIN_FLOPS", GM_BLAS_DEFAULT_MIN_FLOPS, false);
	config.timeout_ms = millis("GEMMD_BLAS_TIMEOUT_MS", DEFAULT_TIMEOUT_MS);
	if (config.timeout_ms <= 0)
		config.timeout_ms = GEMMD_FOREVER;
	config.retry_ms = millis("GEMMD_BLAS_RETRY_MS", DEFAULT_RETRY_MS);
	config.region_max = (uint64_t)number("GEMMD_BLAS_REGION_MAX",
					     (double)DEFAULT_REGION_MAX, true);
	config.url = getenv("GEMMD_URL");
	gm_blas_log(1,
		    "%s; GEMM of at least %g flops to %s, timeout %d ms, "
		    "regions up to %llu bytes",
		    config.enabled ? "on" : "off", config.min_flops,
		    config.url ? config.url : GEMMD_DEFAULT_URL,
		    config.timeout_ms, (unsigned long long)config.region_max);
}

const struct gm_blas_config *gm_blas_config(void)
{
	pthread_once(&config_once, read_config);
	return &config;
}

void gm_blas_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (config.verbose < level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write, so that lines of several threads do not interleave. */
	fprintf(stderr, "gemmd_blas: %s\n", line);
}
