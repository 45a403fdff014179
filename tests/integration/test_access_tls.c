/*
 * test_access_tls.c - tls+tcp:// serves a client whose certificate the
 * configured CA signed and no other, with certificates made by the
 * openssl command, its principal the certificate's subject; and a broken
 * TLS file stops startup with exit status 1 and a message naming that
 * file.
 */
#include "access_fx.h"
#include "gm_testpki.h"

/* ---- TLS ---- */

/* The certificates of gm_testpki.h in dir. Returns 0, or -1 when there
 * is no openssl command (the caller skips); fails the test when openssl
 * failed. */
static int make_pki(gm_testpki *p, const char *dir)
{
	int r = gm_testpki_make(p, dir);

	if (r == -2)
		fail_msg("openssl could not make the test certificates");
	return r;
}

/* "--set" "KEY=VALUE" pairs for the three TLS files, and a tls+tcp://
 * listener on a free port. */
typedef struct tls_args {
	char url[64], cert[160], key[160], ca[160];
	const char *argv[12];
} tls_args;

static void tls_args_make(tls_args *t, const char *cert, const char *key,
			  const char *ca)
{
	int n = 0;

	snprintf(t->url, sizeof(t->url), "tls+tcp://127.0.0.1:%d",
		 it_free_port());
	snprintf(t->cert, sizeof(t->cert), "tls_cert=%s", cert);
	snprintf(t->key, sizeof(t->key), "tls_key=%s", key);
	snprintf(t->ca, sizeof(t->ca), "tls_ca=%s", ca);
	t->argv[n++] = "--listen";
	t->argv[n++] = t->url;
	t->argv[n++] = "--set";
	t->argv[n++] = t->cert;
	t->argv[n++] = "--set";
	t->argv[n++] = t->key;
	t->argv[n++] = "--set";
	t->argv[n++] = t->ca;
	t->argv[n] = NULL;
}

/* Opens a client over t's tls+tcp:// URL showing cert and key (NULL:
 * none) into *c; gemmd_open's code. */
static int tls_dial(const tls_args *t, const gm_testpki *p, const char *cert,
		    const char *key, gemmd_client **c)
{
	gemmd_open_opts o = {.tls_ca_file = p->ca,
			     .tls_cert_file = cert,
			     .tls_key_file = key,
			     .tls_server_name = "localhost"};

	return gemmd_open(t->url, &o, c);
}

/* Whether a client showing cert/key (NULL: none) gets a ping through. */
static int tls_ping(const tls_args *t, const gm_testpki *p, const char *cert,
		    const char *key)
{
	gemmd_client *c;
	int rv;

	if (tls_dial(t, p, cert, key, &c) != GM_OK)
		return 0;
	rv = gemmd_ping(c, NULL, 2000);
	gemmd_close(c);
	return rv == GM_OK;
}

/* A client over t's tls+tcp:// URL showing cert and key. */
static gemmd_client *tls_open(const tls_args *t, const gm_testpki *p,
			      const char *cert, const char *key)
{
	gemmd_client *c;

	assert_int_equal(tls_dial(t, p, cert, key, &c), GM_OK);
	return c;
}

/* A client whose certificate the CA signed is served, and is the
 * principal its subject names: with admin_subjects naming it, it drains
 * and resumes; another certificate of the same CA is refused them,
 * naming admin_subjects, and does not find the first one's detached
 * job, which the first finds again on a new connection. */
static void test_tls(void **state)
{
	gemmd_client *c, *c2, *mon;
	gemmd_job_info in;
	gemmd_job j, det;
	uint64_t id;
	tls_args t;
	it_daemon d;
	gm_testpki p;

	assert_int_equal(it_setup(&d), 0);
	if (make_pki(&p, d.dir) != 0) {
		it_cleanup(&d);
		skip(); /* no openssl command */
	}
	tls_args_make(&t, p.cert, p.key, p.ca);
	t.argv[8] = "--set";
	t.argv[9] = "admin_subjects=CN=gemmd-client";
	t.argv[10] = NULL;
	assert_int_equal(it_start(&d, t.argv), 0);
	c = tls_open(&t, &p, p.ccert, p.ckey);
	it_job(&j, 31, 29, 37, 3);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	it_job_free(&j);
	it_job(&det, 17, 19, 23, 4);
	assert_int_equal(gemmd_submit_detached(c, &det, 1, NULL, &id, 5000),
			 GM_OK);
	assert_int_equal(gemmd_drain(c, 5000), GM_OK);
	assert_int_equal(gemmd_resume(c, 5000), GM_OK);
	gemmd_close(c);
	c2 = tls_open(&t, &p, p.c2cert, p.c2key);
	assert_int_equal(gemmd_drain(c2, 5000), GM_EACCES);
	assert_non_null(strstr(gemmd_last_error(),
			       "subject \"CN=other-client\" is not in "
			       "admin_subjects"));
	not_found_to(c2, id);
	gemmd_close(c2);
	c = tls_open(&t, &p, p.ccert, p.ckey);
	assert_int_equal(gemmd_job_status(c, id, &in, 5000), GM_OK);
	assert_int_equal(gemmd_wait(c, id, &det, GEMMD_FOREVER), GM_OK);
	assert_true(it_job_ok(&det));
	it_job_free(&det);
	gemmd_close(c);
	/* No client certificate, or one the CA did not sign: refused. */
	assert_false(tls_ping(&t, &p, NULL, NULL));
	assert_false(tls_ping(&t, &p, p.rcert, p.rkey));
	assert_true(tls_ping(&t, &p, p.ccert, p.ckey));
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_int_equal(it_stat(mon, "jobs.ok"), 2);
	assert_int_equal(it_stat(mon, "requests.total"), 2);
	gemmd_close(mon);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "draining (drain request from subject "
				       "CN=gemmd-client)"));
	it_cleanup(&d);
}

/* Writes text to dir/name; returns the path (static). */
static const char *write_file(const char *dir, const char *name,
			      const char *text)
{
	static char path[4][160];
	static int next;
	char *at = path[next++ % 4];
	FILE *f;

	snprintf(at, sizeof(path[0]), "%s/%s", dir, name);
	assert_non_null(f = fopen(at, "w"));
	fputs(text, f);
	fclose(f);
	return at;
}

/* Starts gemmd with the given TLS files; it must exit 1 and name
 * blamed in its message. */
static void refused_at_start(const char *cert, const char *key, const char *ca,
			     const char *blamed)
{
	char err[2048];
	tls_args t;

	tls_args_make(&t, cert, key, ca);
	assert_int_equal(it_run_gemmd(t.argv, err, sizeof(err)), 1);
	if (strstr(err, blamed) == NULL)
		fail_msg("no \"%s\" in: %s", blamed, err);
}

/* The PEM text of path with one base64 character in its middle changed
 * to '!', so the markers stay and the body does not decode. */
static char *corrupt(const char *path)
{
	static char text[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	text[n / 2] = '!';
	return text;
}

static void test_tls_broken_files(void **state)
{
	const char *garbage, *bad_cert, *bad_key, *missing;
	it_daemon d;
	gm_testpki p;

	assert_int_equal(it_setup(&d), 0);
	if (make_pki(&p, d.dir) != 0) {
		it_cleanup(&d);
		skip();
	}
	garbage = write_file(d.dir, "garbage.pem", "not a certificate\n");
	bad_cert = write_file(d.dir, "bad-cert.pem", corrupt(p.cert));
	bad_key = write_file(d.dir, "bad-key.pem", corrupt(p.key));
	missing = "/nonexistent/ca.pem";
	refused_at_start(garbage, p.key, p.ca, garbage);
	refused_at_start(bad_cert, p.key, p.ca, bad_cert);
	refused_at_start(p.cert, garbage, p.ca, garbage);
	refused_at_start(p.cert, bad_key, p.ca, bad_key);
	refused_at_start(p.cert, p.key, missing, missing);
	refused_at_start(p.cert, p.key, garbage, garbage);
	it_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_tls_broken_files),
	};

	return IT_RUN(tests);
}
