/*
 * test_statview.c - gm_statview, gemmctl's stats table: a full document
 * with the values where they belong and in their units; device shares
 * since the start and over a refresh interval; every line within 80
 * columns at the widest values, long device names abbreviated, and
 * --wide with them whole and each stream's share; an empty and an older
 * document shown with "-" rather than refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_statview.h"

/* One device with four streams; uptime 1 d 1 h 1 min 1 s = 90061 s. */
static const char full[] =
    "{\"version\":\"0.1.0\",\"engine\":\"cuda\",\"uptime_s\":90061.5,"
    "\"draining\":false,"
    "\"requests\":{\"total\":1234,\"refused\":5,\"ctrl\":10},"
    "\"jobs\":{\"ok\":1200,\"failed\":3,\"rejected\":12,\"queued\":4,"
    "\"inflight\":8,\"by_dtype\":{\"fp64\":1203,\"fp32\":0}},"
    "\"bytes\":{\"in\":2048,\"out\":1048576,\"h2d\":1,\"d2h\":2},"
    "\"flops\":2.5e15,"
    "\"queue\":{\"depth\":4,\"limit\":4096,\"by_priority\":[0,4,0,0]},"
    "\"pool\":{\"used\":536870912,\"size\":1073741824,\"slabs\":12},"
    "\"contexts\":{\"total\":64,\"busy\":3},"
    "\"connections\":{\"open\":2,\"refused\":0},"
    "\"errors\":{\"EBUSY\":12,\"ETIMEDOUT\":3},"
    "\"latency_us\":{\"kernel\":{\"count\":1200,\"mean\":1600,"
    "\"p50\":1500,\"p90\":2500,\"p99\":12345,\"max\":2500000}},"
    "\"devices\":[{\"index\":0,\"name\":\"NVIDIA H200\",\"jobs\":1200,"
    "\"mem_used\":1073741824,\"mem_total\":85899345920,"
    "\"busy_s\":45030.75,\"kernel_s\":40000,\"copy_s\":30000,"
    "\"overlap_s\":20000,\"overlap_ratio\":0.5,"
    "\"stream_busy_s\":[9006.15,18012.3,27018.45,36024.6],"
    "\"stream_busy\":[0.1,0.2,0.3,0.4]}],"
    "\"dtypes\":{\"fp64\":{\"jobs\":1203,\"ok\":1200,\"failed\":3},"
    "\"fp32\":{\"jobs\":0,\"ok\":0,\"failed\":0}},"
    "\"rates\":{\"1s\":{\"jobs_per_s\":123,\"gflops_per_s\":4567.8,"
    "\"h2d_gb_per_s\":12.345,\"d2h_gb_per_s\":4.5},"
    "\"10s\":{\"jobs_per_s\":0.5,\"gflops_per_s\":0,"
    "\"h2d_gb_per_s\":0,\"d2h_gb_per_s\":0}}}";

/* The same device ten seconds later: busy 8 of them, its kernels 4 of
 * which 3 overlapped a copy, stream 0 busy all ten. */
static const char later[] =
    "{\"uptime_s\":90071.5,\"devices\":[{\"index\":0,\"busy_s\":45038.75,"
    "\"kernel_s\":40004,\"copy_s\":30005,\"overlap_s\":20003,"
    "\"stream_busy_s\":[9016.15,18012.3,27018.45,36024.6]}]}";

/* Every count at its widest (5 characters), eight streams, two
 * devices with long names, every dtype failing and many error codes. */
static const char widest[] =
    "{\"version\":\"0.1.0\",\"engine\":\"cuda\",\"uptime_s\":8639999,"
    "\"draining\":true,"
    "\"requests\":{\"total\":12345,\"refused\":12345,\"ctrl\":12345},"
    "\"jobs\":{\"ok\":12345,\"failed\":12345,\"rejected\":12345,"
    "\"inflight\":12345},"
    "\"bytes\":{\"in\":1073741823,\"out\":1073741823},"
    "\"flops\":1.2345e20,"
    "\"queue\":{\"depth\":12345,\"limit\":12345,"
    "\"by_priority\":[12345,12345,12345,12345]},"
    "\"pool\":{\"used\":1073741823,\"size\":1073741823,\"slabs\":12345},"
    "\"contexts\":{\"total\":12345,\"busy\":12345},"
    "\"connections\":{\"open\":12345,\"refused\":12345},"
    "\"errors\":{\"EBUSY\":12345,\"ETIMEDOUT\":12345,\"EUNSUPPORTED\":1,"
    "\"ETOOBIG\":12345,\"EDRAINING\":12345,\"ESHUTDOWN\":12345,"
    "\"EGPUFAULT\":12345},"
    "\"latency_us\":{\"total\":{\"count\":12345,\"p50\":999999,"
    "\"p90\":12345678,\"p99\":1e9,\"max\":1e10}},"
    "\"devices\":[{\"index\":0,\"name\":\"NVIDIA H100 80GB HBM3\","
    "\"jobs\":12345,\"mem_used\":1073741823,\"mem_total\":1073741823,"
    "\"busy_s\":8639999,\"kernel_s\":1,\"copy_s\":1,\"overlap_s\":1,"
    "\"stream_busy_s\":[1,2,3,4,5,6,7,8639999]},"
    "{\"index\":1,\"name\":\"cpu (OpenBLAS, 2 threads)\"},"
    "{\"index\":2,\"name\":\"A device with a very long name\"}],"
    "\"dtypes\":{\"fp64\":{\"jobs\":12345,\"failed\":12345},"
    "\"fp32\":{\"jobs\":12345,\"failed\":12345},"
    "\"tf32\":{\"jobs\":12345,\"failed\":12345},"
    "\"fp16\":{\"jobs\":12345,\"failed\":12345},"
    "\"bf16\":{\"jobs\":12345,\"failed\":12345}},"
    "\"rates\":{\"1s\":{\"jobs_per_s\":1.2345e9,\"gflops_per_s\":1.2345e9,"
    "\"h2d_gb_per_s\":99999,\"d2h_gb_per_s\":99999}}}";

/* The table of the document text, with prev's text when not NULL. */
static char *render(const char *text, const char *prev_text, unsigned flags)
{
	cJSON *doc = cJSON_Parse(text);
	cJSON *prev = prev_text ? cJSON_Parse(prev_text) : NULL;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(doc);
	assert_non_null(f);
	gm_statview_print(f, doc, prev, flags);
	fclose(f);
	cJSON_Delete(doc);
	cJSON_Delete(prev);
	return out;
}

/* The longest line of t, in characters (all ASCII). */
static size_t longest_line(const char *t)
{
	size_t most = 0;

	while (*t != '\0') {
		size_t n = strcspn(t, "\n");

		most = n > most ? n : most;
		t += n + (t[n] == '\n');
	}
	return most;
}

/* A document (with the one before it, when not NULL) rendered with flags
 * must hold each line of has; all but --wide fit in 80 columns. */
static const struct view_case {
	const char *name, *doc, *prev;
	unsigned flags;
	const char *has[16];
} cases[] = {
    {"full",
     full,
     NULL,
     0,
     {"gemmd 0.1.0  engine cuda  up 1d 01:01:01  ready\n",
      "requests 1234 (refused 5, ctrl 10)  in flight 3 (room for 64)\n",
      "jobs ok 1200  failed 3  rejected 12  inflight 8\n",
      "queue 4 of 4096 (p3 0  p2 0  p1 4  p0 0)\n",
      "pool 512.0 MiB of 1.0 GiB (12 slabs)  connections 2 (refused 0)\n",
      "work 2.50P FLOP  2.0 KiB in  1.0 MiB out\n",
      "1s            123.0     4567.8      12.35       4.50\n",
      "10s            0.50       0.00       0.00       0.00\n",
      "60s               -          -          -          -\n",
      "kernel         1200     1.50ms     2.50ms     12.3ms      2.50s\n",
      "queue             -          -          -          -          -\n",
      /* Since the start: busy 45030.75 of 90061.5 s, overlap 20000 of
       * 40000 kernel seconds, streams 10..40% of the uptime. */
      "0   NVIDIA H200        1200    1.0 GiB/80.0 GiB     50%     50%  "
      "4: 10%-40%\n",
      "dtypes  fp64 1203 (3 failed)\n", "errors  EBUSY 12  ETIMEDOUT 3\n"}},
    {"interval", later, full, 0, {"  80%     75%  4: 0%-100%\n"}},
    /* Abbreviated: the vendor dropped, then the parenthesis, then cut.
     * Wrapped lists continue under their label's end. */
    {"fits 80 columns",
     widest,
     NULL,
     0,
     {"0   H100 80GB HBM3    12345 1024.0 MiB/1024.0 MiB  100%",
      "1   cpu                   -", "2   A device with a~      -",
      "  8: 0%-100%\n",
      "dtypes  fp64 12345 (12345 failed)  fp32 12345 (12345 failed)\n"
      "        tf32 ",
      "errors  EBUSY 12345"}},
    {"wide",
     widest,
     NULL,
     GM_STATVIEW_WIDE,
     {"0   NVIDIA H100 80GB HBM3           12345 1024.0 MiB / 1024.0 MiB",
      "1   cpu (OpenBLAS, 2 threads)           -",
      "2   A device with a very long name      -",
      "  0% 0% 0% 0% 0% 0% 0% 100%\n",
      "(12345 failed)  bf16 12345 (12345 failed)\n"}},
    /* Nothing known: every value is "-", nothing is refused. */
    {"empty",
     "{}",
     "{}",
     0,
     {"gemmd -  engine -  up -  -\n",
      "jobs ok -  failed -  rejected -  inflight -\n", "queue - of -\n",
      "total             -", "dtypes  none\n", "errors  none\n"}},
    /* A daemon from before "dtypes": the per-dtype counts of jobs. */
    {"older document",
     "{\"draining\":true,\"jobs\":{\"by_dtype\":"
     "{\"fp64\":5,\"fp16\":0,\"bf16\":2}}}",
     NULL,
     0,
     {"  draining\n", "dtypes  fp64 5  bf16 2\n"}},
};

static void test_views(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct view_case *c = &cases[i];
		char *t = render(c->doc, c->prev, c->flags);

		assert_non_null(t);
		if (!(c->flags & GM_STATVIEW_WIDE) && longest_line(t) > 80)
			fail_msg("a line of %zu columns in:\n%s",
				 longest_line(t), t);
		for (int k = 0; k < 16 && c->has[k] != NULL; k++)
			if (strstr(t, c->has[k]) == NULL)
				fail_msg("%s: no \"%s\" in:\n%s", c->name,
					 c->has[k], t);
		free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
