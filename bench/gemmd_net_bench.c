/*
 * gemmd_net_bench - the raw rates the socket path is bounded by, on this
 * host: one connection of each kind carrying IN MiB one way and OUT MiB
 * back (nng's byte stream for ipc:// and tcp://, gemmd's TLS stream for
 * tls+tcp://), and memcpy of the same bytes on 1, 2, 4, ... threads, up
 * to the cores online.
 *
 *   gemmd_net_bench [IN_MIB [OUT_MIB [REPS]]]      (default 1024 512 5)
 *
 * With --echo, the raw nng ipc:// echo between two processes (this one
 * and a child it starts) of IN bytes one way and OUT back, p50 of REPS
 * round trips: the floor of a small job's round trip through gemmd
 * (default 192 and 64, a 64^3 job's frames from a region).
 *
 *   gemmd_net_bench --echo [IN_BYTES [OUT_BYTES [REPS]]] (default 192 64 2000)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gm_rawrate.h"

/* The --echo mode: a child serves, this process times. */
static int echo(int argc, char **argv)
{
	uint64_t in = argc > 2 ? strtoull(argv[2], NULL, 10) : 192;
	uint64_t out = argc > 3 ? strtoull(argv[3], NULL, 10) : 64;
	int reps = argc > 4 ? atoi(argv[4]) : 2000, st, rv;
	char url[96], msg[256] = "";
	double ms = 0;
	pid_t pid;

	snprintf(url, sizeof(url), "ipc:///tmp/gemmd-net-echo-%d.sock",
		 (int)getpid());
	if ((pid = fork()) == 0)
		_exit(gm_rawecho_serve(url, in, out, msg, sizeof(msg)) ? 1 : 0);
	if (pid < 0)
		return 1;
	for (int i = 0; i < 5000 && access(url + 6, F_OK) != 0; i++)
		usleep(1000);
	/* The socket's file comes at its bind, before its listen: a dial
	 * refused then is tried again (the child accepts one connection). */
	for (int i = 0; i < 50; i++) {
		if ((rv = gm_rawecho(url, in, out, reps, &ms, msg,
				     sizeof(msg))) == 0 ||
		    strstr(msg, "connecting") == NULL)
			break;
		usleep(10000);
	}
	if (rv != 0) {
		fprintf(stderr, "gemmd_net_bench: %s\n", msg);
		kill(pid, SIGKILL);
	}
	waitpid(pid, &st, 0);
	unlink(url + 6);
	if (rv == 0)
		printf("raw nng ipc echo, %llu B in, %llu B out: p50 %.1f us "
		       "between two processes\n",
		       (unsigned long long)in, (unsigned long long)out,
		       ms * 1e3);
	return rv ? 1 : 0;
}

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
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (argc > 1 && strcmp(argv[1], "--echo") == 0)
		return echo(argc, argv);

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
	for (unsigned threads = 1; threads <= (unsigned)cores; threads *= 2) {
		char what[32];

		cp = gm_memcpy_ms(in + out, threads, reps);
		snprintf(what, sizeof(what), "memcpy, %u thread%s", threads,
			 threads > 1 ? "s" : "");
		printf("%-24s %10.1f %8.2f\n", what, cp,
		       (double)(in + out) / cp / 1e6);
	}
	return 0;
}
