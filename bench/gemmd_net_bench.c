/*
 * gemmd_net_bench - the raw rates the socket path is bounded by, on this
 * host: one connection of each kind carrying IN MiB one way and OUT MiB
 * back (nng's byte stream for ipc:// and tcp://, gemmd's TLS stream for
 * tls+tcp://), and one-thread memcpy of the same bytes.
 *
 *   gemmd_net_bench [IN_MIB [OUT_MIB [REPS]]]      (default 1024 512 5)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gm_rawrate.h"

int main(int argc, char **argv)
{
	uint64_t in = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1024) << 20;
	uint64_t out = (argc > 2 ? strtoull(argv[2], NULL, 10) : 512) << 20;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	char dir[] = "/tmp/gemmd-net-bench.XXXXXX", ipc[128], msg[256];
	const char *urls[] = {ipc, "tcp://127.0.0.1:0",
			      "tls+tcp://127.0.0.1:0"};
	gm_rawrate_tls tls;
	double ms, cp;

	if (mkdtemp(dir) == NULL || gm_rawrate_make_certs(dir, &tls) != 0) {
		fprintf(stderr,
			"gemmd_net_bench: cannot make certificates in "
			"%s (openssl missing?)\n",
			dir);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(ipc, sizeof(ipc), "ipc://%s/s.sock", dir);
	printf("%-24s %10s %8s\n", "raw stream", "ms", "GB/s");
	for (size_t i = 0; i < sizeof(urls) / sizeof(*urls); i++) {
		if (gm_rawrate(urls[i], &tls, in, out, reps, &ms, msg,
			       sizeof(msg)) != 0) {
			fprintf(stderr, "gemmd_net_bench: %s\n", msg);
			return 1;
		}
		printf("%-24.24s %10.1f %8.2f\n", urls[i], ms,
		       (double)(in + out) / ms / 1e6);
	}
	cp = gm_memcpy_ms(in + out, reps);
	printf("%-24s %10.1f %8.2f\n", "memcpy, one thread", cp,
	       (double)(in + out) / cp / 1e6);
	return 0;
}
