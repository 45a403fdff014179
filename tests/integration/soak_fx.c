/*
 * soak_fx.c - what the tests in test_soak.c share; see soak_fx.h.
 */
#include "soak_fx.h"

bool running(const soak *s)
{
	return it_now_us() < s->until_us;
}

int connect_any(const soak *s, unsigned long i)
{
	return rc_connect(i % 2 ? s->d->tcp : s->d->ipc, NULL);
}

unsigned long refused;

bool got_error(int fd, uint32_t want, bool *was_refused)
{
	char msg[97];
	rc_frame f;
	uint32_t code;
	bool ok;

	*was_refused = false;
	if (rc_read_frame(fd, &f, WAIT_MS) != 0)
		return false;
	code = rc_error(&f, msg);
	*was_refused = f.type == RC_ERROR_T && code == W_EBUSY && f.id == 0;
	refused += *was_refused;
	ok = f.type == RC_ERROR_T && (code == want || *was_refused);
	if (!ok)
		fprintf(stderr, "soak: type %u, code %u, not ERROR %u\n",
			f.type, code, want);
	rc_frame_free(&f);
	return ok;
}

int connect_admitted(const soak *s, const char *url)
{
	int fd = -1;

	while (running(s) && (fd = rc_admitted(url, NULL, WAIT_MS)) == -2) {
		refused++;
		usleep(10000);
	}
	return fd;
}

bool one_job(int fd, unsigned seed)
{
	double *a, *b;
	uint8_t *req;
	size_t len;
	rc_frame f;
	rc_reply r;
	rc_job j;
	bool ok = false;

	rc_job_fp64(&j, 8, 9, 10, seed, &a, &b);
	req = rc_gemm(seed, 1, 0, 0, &j, 1, &len);
	if (req != NULL && rc_write(fd, req, len) == 0 &&
	    rc_read_frame(fd, &f, WAIT_MS) == 0) {
		ok = rc_reply_of(&f, &r) == 0 && r.status == 0 &&
		     rc_check_fp64(&j, r.result);
		rc_frame_free(&f);
	}
	free(req);
	free(a);
	free(b);
	return ok;
}

int malformed(const soak *s, unsigned long *ops)
{
	uint8_t hdr[RC_HDR], junk[200];
	unsigned seed = 1;

	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);
		uint8_t *req;
		size_t len;
		rc_job j;
		double *a, *b;
		bool no;

		if (fd < 0)
			return 1;
		switch (i % 4) {
		case 0:
			rc_put_hdr(hdr, RC_GEMM, i, 1, 64);
			hdr[0] ^= 0xff;
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_EMAGIC, &no) ||
			    (i % 32 == 0 && !rc_closed(fd, WAIT_MS)))
				return 2;
			break;
		case 1:
			rc_put_hdr(hdr, RC_GEMM, i, 1, 1ull << 40);
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_ETOOBIG, &no) ||
			    (i % 32 == 1 && !rc_closed(fd, WAIT_MS)))
				return 3;
			break;
		case 2:
			for (size_t k = 0; k < sizeof(junk); k++)
				junk[k] = (uint8_t)rand_r(&seed);
			rc_write(fd, junk, 1 + (size_t)rand_r(&seed) % 200);
			break;
		default:
			rc_job_fp64(&j, 4, 4, 4, (unsigned)i, &a, &b);
			req = rc_gemm(i, 1, 0, 0, &j, 1, &len);
			free(a);
			free(b);
			if (req == NULL)
				return 4;
			req[16] = MAX_JOBS + 1; /* the header's count */
			/* It may be refused before it is all sent. */
			rc_write(fd, req, len);
			if (!got_error(fd, W_ETOOMANY, &no) ||
			    (!no && !one_job(fd, (unsigned)i))) {
				free(req);
				return 5;
			}
			free(req);
		}
		close(fd);
		usleep(PAUSE_US);
	}
	return 0;
}

int storms(const soak *s, unsigned long *ops)
{
	static const uint8_t half[16] = {0x47, 0x45, 0x4d, 0x4d, 2};

	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);

		if (fd < 0)
			return 1;
		if (i % 3 == 0)
			rc_write(fd, half, sizeof(half));
		close(fd);
		usleep(PAUSE_US / 4);
	}
	return 0;
}

int non_readers(const soak *s, unsigned long *ops)
{
	double *a, *b;
	uint8_t *req;
	size_t len;
	rc_job j;

	rc_job_fp64(&j, 64, 64, 64, 3, &a, &b);
	if ((req = rc_gemm(1, 1, 0, 0, &j, 1, &len)) == NULL)
		return 1;
	for (unsigned long i = 0; running(s); i++) {
		int fd = connect_any(s, i);
		double t0 = it_now_us();

		if (fd < 0)
			return 2;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		/* Whole requests only: a frame cut short would be a stall,
		 * another test's matter. */
		for (int k = 0; k < 256 && running(s); k++) {
			size_t off = 0;

			while (off < len && it_now_us() < t0 + 1e6) {
				ssize_t n = send(fd, req + off, len - off,
						 MSG_NOSIGNAL);

				if (n > 0)
					off += (size_t)n;
				else if (n < 0 && errno == EAGAIN)
					usleep(1000);
				else
					break;
			}
			if (off < len)
				break;
			(*ops)++;
		}
		while (running(s) && it_now_us() < t0 + 1e6)
			usleep(10000);
		close(fd);
	}
	free(req);
	free(a);
	free(b);
	return 0;
}

int big_ctrl(const soak *s, unsigned long *ops)
{
	static char body[MAX_CTRL];
	uint8_t hdr[RC_HDR];

	memset(body, 'x', sizeof(body));
	body[0] = '{';
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);
		char *doc = NULL, msg[97];
		rc_frame f;
		bool no;

		if (fd < 0)
			return 1;
		if (i % 2) {
			rc_put_hdr(hdr, RC_CTRL, i, 0, (uint64_t)MAX_CTRL + 1);
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_ETOOBIG, &no) ||
			    (i % 16 == 1 && !rc_closed(fd, WAIT_MS)))
				return 2;
		} else {
			rc_put_hdr(hdr, RC_CTRL, i, 0, MAX_CTRL);
			rc_write(fd, hdr, sizeof(hdr));
			rc_write(fd, body, sizeof(body));
			if (rc_read_frame(fd, &f, WAIT_MS) != 0)
				return 3;
			if (f.type == RC_ERROR_T && f.id == 0 &&
			    rc_error(&f, msg) == W_EBUSY) {
				refused++;
				rc_frame_free(&f);
				close(fd);
				continue;
			}
			/* Refused as a CTRL_REPLY that says why, or an
			 * ERROR; then a ping is answered. */
			if (f.type != RC_ERROR_T &&
			    (f.type != RC_CTRL_REPLY ||
			     strstr((char *)f.body, "\"ok\":false") == NULL)) {
				rc_frame_free(&f);
				return 4;
			}
			rc_frame_free(&f);
			if (rc_ctrl(fd, i + 1, "{\"op\":\"ping\"}", &doc,
				    WAIT_MS) != 0)
				return 5;
			free(doc);
		}
		close(fd);
		usleep(PAUSE_US);
	}
	return 0;
}

bool unknown(int fd, uint64_t id, uint64_t *req)
{
	static const char *const ops[] = {"status", "wait", "cancel"};
	char json[128], want[160], *doc;

	snprintf(want, sizeof(want),
		 "{\"ok\":false,\"code\":27,\"error\":\"ENOTFOUND\","
		 "\"message\":\"no detached job %" PRIu64 "\"}",
		 id);
	for (int i = 0; i < 3; i++) {
		bool same;

		snprintf(json, sizeof(json),
			 "{\"op\":\"%s\",\"job\":%" PRIu64 "%s}", ops[i], id,
			 i == 1 ? ",\"timeout_ms\":0" : "");
		if (rc_ctrl(fd, ++*req, json, &doc, WAIT_MS) != 0)
			return false;
		same = strcmp(doc, want) == 0;
		if (!same)
			fprintf(stderr, "soak: %s of %" PRIu64 ": %s\n", ops[i],
				id, doc);
		free(doc);
		if (!same)
			return false;
	}
	return true;
}

int probes(const soak *s, unsigned long *ops)
{
	int fd[2] = {connect_admitted(s, s->d->tcp),
		     s->as_nobody ? connect_admitted(s, s->d->ipc) : -1};
	unsigned seed = 7;
	uint64_t req = 0;

	if (fd[0] < 0 || (s->as_nobody && fd[1] < 0))
		return 1;
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int64_t k = (int64_t)(i % 129) - 64;
		uint64_t id = i % 5 == 4 ? ((uint64_t)rand_r(&seed) << 31) ^
					       (uint64_t)rand_r(&seed)
					 : s->owned + (uint64_t)k;
		int c = fd[1] >= 0 && i % 2 ? fd[1] : fd[0];

		if (!unknown(c, id, &req))
			return 2;
		usleep(PAUSE_US);
	}
	close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	return 0;
}

int admin(const soak *s, unsigned long *ops)
{
	int fd = connect_admitted(s, s->d->ipc);
	uint64_t req = 0;

	if (fd < 0)
		return 1;
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		char json[64], *doc;
		bool denied;

		snprintf(json, sizeof(json), "{\"op\":\"%s\"}",
			 i % 2 ? "resume" : "drain");
		if (rc_ctrl(fd, ++req, json, &doc, WAIT_MS) != 0)
			return 2;
		denied = strstr(doc, "\"error\":\"EACCES\"") != NULL &&
			 strstr(doc, "admin_uids") != NULL;
		if (!denied)
			fprintf(stderr, "soak: %s: %s\n", json, doc);
		free(doc);
		if (!denied)
			return 3;
		usleep(PAUSE_US);
	}
	close(fd);
	return 0;
}

const struct hostile_proc hostile[] = {
    {"malformed frames", malformed},
    {"connect/close storms", storms},
    {"requests never read", non_readers},
    {"control bodies at and over the cap", big_ctrl},
    {"id probes", probes},
    {"admin attempts", admin},
};
_Static_assert(sizeof(hostile) / sizeof(hostile[0]) == NHOSTILE,
	       "NHOSTILE counts the rows of hostile[]");

void hostile_child(const soak *s, size_t i, int out)
{
	unsigned long ops = 0;
	int rv;

	if (s->as_nobody && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
			     setuid(NOBODY) != 0 || getuid() != NOBODY))
		_exit(100);
	rv = hostile[i].run(s, &ops);
	if (write(out, &ops, sizeof(ops)) != (ssize_t)sizeof(ops) ||
	    write(out, &refused, sizeof(refused)) != (ssize_t)sizeof(refused))
		rv = 101;
	_exit(rv);
}
