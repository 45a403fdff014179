/*
 * gm_statview.c - the stats document as a compact table; see
 * gm_statview.h. Every value goes through num() or str(), which turn a
 * missing key into NAN or "-", and every formatter prints NAN as "-".
 */
#include "gm_statview.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#define COLUMNS	   80 /* of every line, but with --wide */
#define NAME_WIDTH 16 /* of a device's name, but with --wide */

/* The item at a dotted path of objects, or NULL. */
static const cJSON *get(const cJSON *o, const char *path)
{
	char key[64];

	while (o != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

double gm_statview_num(const cJSON *stats, const char *path)
{
	const cJSON *v = get(stats, path);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static double num(const cJSON *o, const char *path)
{
	return gm_statview_num(o, path);
}

static const char *str(const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);

	return cJSON_IsString(v) ? v->valuestring : "-";
}

/* A buffer for one formatted value; a printf may use up to 16. */
static char *buf(void)
{
	static char ring[16][32];
	static unsigned next;

	return ring[next++ % 16];
}

/* Counts: exact up to 99999, then three digits and k, M, G, T. */
static const char *count(double v)
{
	static const char units[] = "kMGTPE";
	char *b = buf();
	int u = -1;

	if (isnan(v))
		return "-";
	if (fabs(v) < 1e5) {
		snprintf(b, 32, "%.0f", v);
		return b;
	}
	while (fabs(v) >= 1e3 && u < 5) {
		v /= 1e3;
		u++;
	}
	snprintf(b, 32, "%.*f%c", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u]);
	return b;
}

/* Rates: one decimal, or count()'s suffixes when large. */
static const char *rate(double v)
{
	char *b = buf();

	if (isnan(v))
		return "-";
	if (fabs(v) >= 1e5)
		return count(v);
	snprintf(b, 32, "%.*f", fabs(v) < 100 ? 2 : 1, v);
	return b;
}

static const char *bytes(double v)
{
	static const char *const units[] = {"B",   "KiB", "MiB",
					    "GiB", "TiB", "PiB"};
	char *b = buf();
	int u = 0;

	if (isnan(v))
		return "-";
	while (fabs(v) >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(b, 32, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return b;
}

/* Microseconds in the unit that keeps three digits or so. */
static const char *duration(double us)
{
	char *b = buf();

	if (isnan(us))
		return "-";
	if (us < 10)
		snprintf(b, 32, "%.1fus", us);
	else if (us < 1e3)
		snprintf(b, 32, "%.0fus", us);
	else if (us < 1e6)
		snprintf(b, 32, "%.*fms",
			 us < 1e4   ? 2
			 : us < 1e5 ? 1
				    : 0,
			 us / 1e3);
	else
		snprintf(b, 32, "%.2fs", us / 1e6);
	return b;
}

static const char *percent(double frac)
{
	char *b = buf();

	if (isnan(frac) || isinf(frac))
		return "-";
	snprintf(b, 32, "%.0f%%", frac * 100);
	return b;
}

static const char *uptime(double s)
{
	char *b = buf();
	long t;

	if (isnan(s) || s < 0)
		return "-";
	t = (long)s;
	if (t >= 86400)
		snprintf(b, 32, "%ldd %02ld:%02ld:%02ld", t / 86400,
			 t / 3600 % 24, t / 60 % 60, t % 60);
	else
		snprintf(b, 32, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60,
			 t % 60);
	return b;
}

/* "p3 0  p2 4  p1 0  p0 0": highest priority first, as they start. */
static void print_priorities(FILE *out, const cJSON *s)
{
	const cJSON *a = get(s, "queue.by_priority");
	int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;

	if (n == 0)
		return;
	fputs(" (", out);
	for (int p = n - 1; p >= 0; p--) {
		const cJSON *v = cJSON_GetArrayItem(a, p);

		fprintf(out, "%sp%d %s", p == n - 1 ? "" : "  ", p,
			count(cJSON_IsNumber(v) ? v->valuedouble : NAN));
	}
	fputc(')', out);
}

/* Each line fits 80 columns with every count at its widest (5
 * characters, count()). */
static void print_header(FILE *out, const cJSON *s)
{
	const cJSON *dr = get(s, "draining");

	fprintf(out, "gemmd %s  engine %s  up %s  %s\n", str(s, "version"),
		str(s, "engine"), uptime(num(s, "uptime_s")),
		cJSON_IsTrue(dr)    ? "draining"
		: cJSON_IsFalse(dr) ? "ready"
				    : "-");
	/* contexts.busy of contexts.total: requests in the daemon now, of
	 * what all connections may have in flight (the keys are nng's
	 * word, kept; the label says what they count). */
	fprintf(out,
		"requests %s (refused %s, ctrl %s)  in flight %s (room for "
		"%s)\n",
		count(num(s, "requests.total")),
		count(num(s, "requests.refused")),
		count(num(s, "requests.ctrl")), count(num(s, "contexts.busy")),
		count(num(s, "contexts.total")));
	fprintf(out, "jobs ok %s  failed %s  rejected %s  inflight %s\n",
		count(num(s, "jobs.ok")), count(num(s, "jobs.failed")),
		count(num(s, "jobs.rejected")), count(num(s, "jobs.inflight")));
	fprintf(out, "queue %s of %s", count(num(s, "queue.depth")),
		count(num(s, "queue.limit")));
	print_priorities(out, s);
	fprintf(out,
		"\npool %s of %s (%s slabs)  connections %s (refused %s)\n",
		bytes(num(s, "pool.used")), bytes(num(s, "pool.size")),
		count(num(s, "pool.slabs")), count(num(s, "connections.open")),
		count(num(s, "connections.refused")));
	fprintf(out, "work %s FLOP  %s in  %s out\n", count(num(s, "flops")),
		bytes(num(s, "bytes.in")), bytes(num(s, "bytes.out")));
}

static void print_rates(FILE *out, const cJSON *s)
{
	static const char *const windows[] = {"1s", "10s", "60s"};

	fprintf(out, "\n%-8s %10s %10s %10s %10s\n", "rate", "jobs/s",
		"GFLOP/s", "H2D GB/s", "D2H GB/s");
	for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
		const cJSON *w = get(get(s, "rates"), windows[i]);

		fprintf(
		    out, "%-8s %10s %10s %10s %10s\n", windows[i],
		    rate(num(w, "jobs_per_s")), rate(num(w, "gflops_per_s")),
		    rate(num(w, "h2d_gb_per_s")), rate(num(w, "d2h_gb_per_s")));
	}
}

static void print_latency(FILE *out, const cJSON *s)
{
	static const char *const phases[] = {"queue", "h2d", "kernel", "d2h",
					     "total"};

	fprintf(out, "\n%-8s %10s %10s %10s %10s %10s\n", "latency", "count",
		"p50", "p90", "p99", "max");
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		const cJSON *h = get(get(s, "latency_us"), phases[i]);

		fprintf(out, "%-8s %10s %10s %10s %10s %10s\n", phases[i],
			count(num(h, "count")), duration(num(h, "p50")),
			duration(num(h, "p90")), duration(num(h, "p99")),
			duration(num(h, "max")));
	}
}

/* The i-th number of the array at key of o, or NAN. */
static double nth(const cJSON *o, const char *key, int i)
{
	const cJSON *v = cJSON_GetArrayItem(get(o, key), i);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Share of dt that the seconds counter key grew by since prev, or of
 * the whole uptime without prev. */
static double share(const cJSON *d, const cJSON *pd, const char *key, int idx,
		    double dt, double up)
{
	double now = idx < 0 ? num(d, key) : nth(d, key, idx);
	double then = idx < 0 ? num(pd, key) : nth(pd, key, idx);

	if (pd != NULL && dt > 0)
		return (now - then) / dt;
	return up > 0 ? now / up : NAN;
}

/*
 * A device's name in width columns: as it is when it fits; else without
 * the vendor every device shares ("NVIDIA "), then without a closing
 * parenthesis ("cpu (OpenBLAS, 2 threads)" is "cpu": the engine is in
 * the first line), then cut, ending in '~'. --wide shows it whole.
 */
static const char *short_name(const char *name, int width)
{
	static const char vendor[] = "NVIDIA ";
	char *b = buf();
	const char *paren;
	int len;

	if ((int)strlen(name) <= width)
		return name;
	if (strncmp(name, vendor, sizeof(vendor) - 1) == 0)
		name += sizeof(vendor) - 1;
	len = (int)strlen(name);
	paren = strstr(name, " (");
	if (len > width && paren != NULL && name[len - 1] == ')')
		len = (int)(paren - name);
	if (len > width) {
		snprintf(b, 32, "%.*s~", width - 1, name);
		return b;
	}
	snprintf(b, 32, "%.*s", len, name);
	return b;
}

/* The streams' busy shares: each one (--wide), or how many there are
 * and the least and most busy. */
static void print_streams(FILE *out, const cJSON *d, const cJSON *pd, double dt,
			  double up, bool wide)
{
	int n = cJSON_GetArraySize(get(d, "stream_busy_s"));
	double lo = INFINITY, hi = -INFINITY;

	for (int i = 0; i < n; i++) {
		double v = share(d, pd, "stream_busy_s", i, dt, up);

		if (wide)
			fprintf(out, "%s%s", i ? " " : "", percent(v));
		lo = fmin(lo, v);
		hi = fmax(hi, v);
	}
	if (n == 0)
		fputc('-', out);
	else if (!wide)
		fprintf(out, "%d: %s-%s", n, percent(lo), percent(hi));
	fputc('\n', out);
}

/* Overlap is a share of kernel time; an engine with no copies (the
 * CPU) has none to show. */
static void print_device(FILE *out, const cJSON *d, const cJSON *pd, double dt,
			 double up, int name_width, bool wide)
{
	double kernel = num(d, "kernel_s"), overlap = num(d, "overlap_s");

	if (pd != NULL && dt > 0) {
		kernel -= num(pd, "kernel_s");
		overlap -= num(pd, "overlap_s");
	}
	if (!(num(d, "copy_s") > 0))
		overlap = NAN;
	fprintf(out,
		wide ? "%-3s %-*s %6s %10s / %-10s %5s %7s  "
		     : "%-3s %-*s %6s %10s/%-10s %5s %7s  ",
		count(num(d, "index")), name_width,
		wide ? str(d, "name") : short_name(str(d, "name"), name_width),
		count(num(d, "jobs")), bytes(num(d, "mem_used")),
		bytes(num(d, "mem_total")),
		percent(share(d, pd, "busy_s", -1, dt, up)),
		percent(kernel > 0 ? overlap / kernel : NAN));
	print_streams(out, d, pd, dt, up, wide);
}

/* --wide: the longest name; else what keeps a line in 80 columns. */
static int name_width(const cJSON *devs, bool wide)
{
	const cJSON *d;
	int w = 4;

	if (!wide)
		return NAME_WIDTH;
	cJSON_ArrayForEach(d, devs)
	{
		int len = (int)strlen(str(d, "name"));

		w = len > w ? len : w;
	}
	return w;
}

static void print_devices(FILE *out, const cJSON *s, const cJSON *prev,
			  bool wide)
{
	const cJSON *devs = get(s, "devices");
	double up = num(s, "uptime_s");
	double dt = prev ? up - num(prev, "uptime_s") : NAN;
	int n = cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : 0;
	int w = name_width(devs, wide);

	fprintf(out, "\n%-3s %-*s %6s %*s %5s %7s  %s\n", "dev", w, "name",
		"jobs", wide ? 23 : 21, "memory used / total", "busy",
		"overlap", "streams busy");
	for (int i = 0; i < n; i++)
		print_device(out, cJSON_GetArrayItem(devs, i),
			     prev ? cJSON_GetArrayItem(get(prev, "devices"), i)
				  : NULL,
			     dt, up, w, wide);
}

/* A line of a label and "  item"s: wrapped before COLUMNS, under the
 * label's end, unless wide. */
struct items {
	FILE *out;
	int col, indent;
	bool wide, any;
};

static void items_start(struct items *it, FILE *out, const char *label,
			bool wide)
{
	*it = (struct items){out, (int)strlen(label), (int)strlen(label), wide,
			     false};
	fputs(label, out);
}

static void item(struct items *it, const char *fmt, ...)
{
	char text[96];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!it->wide && it->any && it->col + 2 + len > COLUMNS) {
		fprintf(it->out, "\n%*s", it->indent, "");
		it->col = it->indent;
	}
	fprintf(it->out, "  %s", text);
	it->col += 2 + len;
	it->any = true;
}

static void items_end(struct items *it)
{
	fputs(it->any ? "\n" : "  none\n", it->out);
}

/* Finished jobs per dtype, the failed ones in brackets; older daemons
 * send only jobs.by_dtype. */
static void print_dtypes(FILE *out, const cJSON *s, bool wide)
{
	const cJSON *dt = get(s, "dtypes"), *t;
	struct items it;

	if (!cJSON_IsObject(dt))
		dt = get(s, "jobs.by_dtype");
	fputc('\n', out);
	items_start(&it, out, "dtypes", wide);
	cJSON_ArrayForEach(t, dt)
	{
		double jobs =
		    cJSON_IsNumber(t) ? t->valuedouble : num(t, "jobs");
		double failed = num(t, "failed");

		if (!(jobs > 0))
			continue;
		if (failed > 0)
			item(&it, "%s %s (%s failed)", t->string, count(jobs),
			     count(failed));
		else
			item(&it, "%s %s", t->string, count(jobs));
	}
	items_end(&it);
}

static void print_errors(FILE *out, const cJSON *s, bool wide)
{
	const cJSON *e;
	struct items it;

	items_start(&it, out, "errors", wide);
	cJSON_ArrayForEach(e, get(s, "errors"))
	    item(&it, "%s %s", e->string,
		 count(cJSON_IsNumber(e) ? e->valuedouble : NAN));
	items_end(&it);
}

void gm_statview_print(FILE *out, const cJSON *stats, const cJSON *prev,
		       unsigned flags)
{
	bool wide = flags & GM_STATVIEW_WIDE;

	print_header(out, stats);
	print_rates(out, stats);
	print_latency(out, stats);
	print_devices(out, stats, prev, wide);
	print_dtypes(out, stats, wide);
	print_errors(out, stats, wide);
}
