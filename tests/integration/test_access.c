/*
 * test_access.c - who may talk to gemmd. The ipc:// socket and the
 * directory gemmd makes for it have modes 0660 and 0750 whatever the
 * umask; allow_uids and allow_gids refuse other peers (one EACCES ERROR,
 * counted in stats, read over tcp://, which the lists do not cover) and
 * let the named ones
 * in; plain tcp:// off the loopback is warned about; tls+tcp:// serves a
 * client whose certificate the configured CA signed and no other, with
 * certificates made by the openssl command; and a broken TLS file stops
 * startup with exit status 1 and a message naming that file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest.h"

static void test_socket_modes(void **state)
{
	struct stat st;
	char run[160];
	it_daemon d;
	mode_t old = umask(0077); /* gemmd inherits it */

	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, NULL), 0);
	umask(old);
	snprintf(run, sizeof(run), "%s/run", d.dir);
	assert_int_equal(stat(run, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(stat(d.path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

/* A uid (or gid) that is not id. */
static unsigned other_id(unsigned id)
{
	return id == 12345 ? 12346 : 12345;
}

static void test_allow_list_refuses(void **state)
{
	char uids[32], gids[32];
	const char *args[] = {"--set", uids, "--set", gids, NULL};
	gemmd_client *c, *mon;
	gemmd_job j;
	it_daemon d;
	rc_frame f;
	char msg[97];
	int fd;

	snprintf(uids, sizeof(uids), "allow_uids=%u", other_id(getuid()));
	snprintf(gids, sizeof(gids), "allow_gids=%u", other_id(getgid()));
	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, args), 0);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	/* The connection is answered EACCES and closed as soon as it is
	 * made ... */
	fd = rc_connect(d.ipc, NULL);
	assert_true(fd >= 0);
	assert_int_equal(rc_read_frame(fd, &f, 5000), 0);
	assert_int_equal(f.id, 0);
	assert_int_equal(rc_error(&f, msg), GM_EACCES);
	rc_frame_free(&f);
	assert_true(it_closed_by_peer(fd, 2000));
	close(fd);
	/* ... so a client's calls fail and run nothing. */
	assert_int_equal(
	    gemmd_open(d.ipc, &(gemmd_open_opts){.flags = GEMMD_OPEN_LAZY}, &c),
	    GM_OK);
	assert_int_not_equal(gemmd_ping(c, NULL, 1000), GM_OK);
	it_job(&j, 16, 16, 16, 1);
	assert_int_not_equal(gemmd_submit(c, &j, 1, NULL, 1000), GM_OK);
	assert_true(it_job_untouched(&j));
	gemmd_close(c);
	assert_true(it_stat(mon, "connections.refused") >= 2);
	assert_int_equal(it_stat(mon, "requests.total"), 0);
	assert_int_equal(it_stat(mon, "jobs.ok"), 0);
	/* tcp:// is not subject to the lists: the stats came over it. */
	assert_int_equal(gemmd_ping(mon, NULL, 1000), GM_OK);
	gemmd_close(mon);
	it_job_free(&j);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "refused an ipc connection from uid"));
	it_cleanup(&d);
}

/* Runs a job over url and checks it; the refusal count must stay 0. */
static void admitted(const it_daemon *d, const char *url)
{
	gemmd_client *c;
	gemmd_job j;

	assert_int_equal(gemmd_open(url, NULL, &c), GM_OK);
	assert_int_equal(gemmd_ping(c, NULL, 2000), GM_OK);
	it_job(&j, 20, 30, 40, 2);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	assert_int_equal(it_stat(c, "connections.refused"), 0);
	it_job_free(&j);
	gemmd_close(c);
}

static void test_allow_list_admits(void **state)
{
	char uids[32], gids[32], conf[200];
	const char *by_uid[] = {"--config", conf, NULL};
	const char *by_gid[] = {"--set", uids, "--set", gids, NULL};
	it_daemon d;
	FILE *f;

	/* By uid, from a configuration file. */
	assert_int_equal(it_setup(&d), 0);
	snprintf(conf, sizeof(conf), "%s/gemmd.json", d.dir);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "{\"allow_uids\": [%u, %u], \"allow_gids\": []}\n",
		other_id(getuid()), (unsigned)getuid());
	fclose(f);
	assert_int_equal(it_start(&d, by_uid), 0);
	admitted(&d, d.ipc);
	assert_int_equal(it_stop(&d), 0);
	/* By gid alone: a peer is let in when either list names it. */
	snprintf(uids, sizeof(uids), "allow_uids=%u", other_id(getuid()));
	snprintf(gids, sizeof(gids), "allow_gids=%u,%u", other_id(getgid()),
		 (unsigned)getgid());
	assert_int_equal(it_start(&d, by_gid), 0);
	admitted(&d, d.ipc);
	assert_int_equal(it_stop(&d), 0);
	assert_false(it_file_has(d.log, "refused"));
	it_cleanup(&d);
}

static void test_allow_list_config_errors(void **state)
{
	const char *neg[] = {"--set", "allow_uids=-1", NULL};
	const char *twice[] = {"--set", "allow_gids=7,7", NULL};
	char err[1024];

	assert_int_equal(it_run_gemmd(neg, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "config key \"allow_uids\": -1 is out of "
				    "range 0..4294967294"));
	assert_int_equal(it_run_gemmd(twice, err, sizeof(err)), 1);
	assert_non_null(
	    strstr(err, "config key \"allow_gids\": 7 is listed twice"));
}

static void test_plain_tcp_warning(void **state)
{
	const char *args[] = {"--listen", "tcp://0.0.0.0:0", NULL};
	char loopback[96];
	it_daemon d;

	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, args), 0);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "tcp://0.0.0.0:0 is plain TCP off the "
				       "loopback"));
	snprintf(loopback, sizeof(loopback), "%s is plain TCP", d.tcp);
	assert_false(it_file_has(d.log, loopback));
	it_cleanup(&d);
}

/* ---- TLS ---- */

/* Certificates for one test run, made by the openssl command. */
typedef struct pki {
	char dir[96];
	char ca[128], cert[128], key[128]; /* the daemon's */
	char ccert[128], ckey[128];	   /* a client the CA signed */
	char rcert[128], rkey[128];	   /* a client another CA signed */
} pki;

/* Makes a CA, a server certificate for "localhost", a client certificate
 * it signed, and a client certificate from an unrelated CA, in dir;
 * openssl's output goes to dir/openssl.log. Returns 0, or -1 when there
 * is no openssl command (the caller skips). */
static int make_pki(pki *p, const char *dir)
{
	static const char script[] =
	    "set -e; cd '%s'; exec >openssl.log 2>&1\n"
	    "key() { openssl genpkey -algorithm EC "
	    "-pkeyopt ec_paramgen_curve:P-256 -out \"$1\"; }\n"
	    "ca() { key $1.key; openssl req -x509 -new -key $1.key -out "
	    "$1.crt -days 2 -subj /CN=$1 "
	    "-addext basicConstraints=critical,CA:TRUE "
	    "-addext keyUsage=critical,keyCertSign,cRLSign; }\n"
	    "leaf() { key $1.key; openssl req -new -key $1.key -out $1.csr "
	    "-subj /CN=$3; printf '%%s\\n' \"$4\" >$1.ext; "
	    "openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key "
	    "-CAcreateserial -out $1.crt -days 2 -extfile $1.ext; }\n"
	    "ca ca; ca other-ca\n"
	    "leaf server ca localhost "
	    "'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth'\n"
	    "leaf client ca gemmd-client extendedKeyUsage=clientAuth\n"
	    "leaf rogue other-ca rogue-client extendedKeyUsage=clientAuth\n";
	char cmd[2048];

	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	snprintf(p->ca, sizeof(p->ca), "%s/ca.crt", dir);
	snprintf(p->cert, sizeof(p->cert), "%s/server.crt", dir);
	snprintf(p->key, sizeof(p->key), "%s/server.key", dir);
	snprintf(p->ccert, sizeof(p->ccert), "%s/client.crt", dir);
	snprintf(p->ckey, sizeof(p->ckey), "%s/client.key", dir);
	snprintf(p->rcert, sizeof(p->rcert), "%s/rogue.crt", dir);
	snprintf(p->rkey, sizeof(p->rkey), "%s/rogue.key", dir);
	if (system("openssl version >/dev/null 2>&1") != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), script, dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "cat '%s/openssl.log' >&2", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "no %s/openssl.log\n", dir);
		fail_msg("openssl could not make the test certificates");
	}
	return 0;
}

/* "--set" "KEY=VALUE" pairs for the three TLS files, and a tls+tcp://
 * listener on a free port. */
typedef struct tls_args {
	char url[64], cert[160], key[160], ca[160];
	const char *argv[10];
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

/* Whether a client showing cert/key (NULL: none) gets a ping through. */
static int tls_ping(const tls_args *t, const pki *p, const char *cert,
		    const char *key)
{
	gemmd_open_opts o = {.tls_ca_file = p->ca,
			     .tls_cert_file = cert,
			     .tls_key_file = key,
			     .tls_server_name = "localhost"};
	gemmd_client *c;
	int rv;

	if (gemmd_open(t->url, &o, &c) != GM_OK)
		return 0;
	rv = gemmd_ping(c, NULL, 2000);
	gemmd_close(c);
	return rv == GM_OK;
}

static void test_tls(void **state)
{
	gemmd_open_opts o;
	gemmd_client *c, *mon;
	gemmd_job j;
	tls_args t;
	it_daemon d;
	pki p;

	assert_int_equal(it_setup(&d), 0);
	if (make_pki(&p, d.dir) != 0) {
		it_cleanup(&d);
		skip(); /* no openssl command */
	}
	tls_args_make(&t, p.cert, p.key, p.ca);
	assert_int_equal(it_start(&d, t.argv), 0);
	o = (gemmd_open_opts){.tls_ca_file = p.ca,
			      .tls_cert_file = p.ccert,
			      .tls_key_file = p.ckey,
			      .tls_server_name = "localhost"};
	assert_int_equal(gemmd_open(t.url, &o, &c), GM_OK);
	it_job(&j, 31, 29, 37, 3);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	it_job_free(&j);
	gemmd_close(c);
	/* No client certificate, or one the CA did not sign: refused. */
	assert_false(tls_ping(&t, &p, NULL, NULL));
	assert_false(tls_ping(&t, &p, p.rcert, p.rkey));
	assert_true(tls_ping(&t, &p, p.ccert, p.ckey));
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_int_equal(it_stat(mon, "jobs.ok"), 1);
	assert_int_equal(it_stat(mon, "requests.total"), 1);
	gemmd_close(mon);
	assert_int_equal(it_stop(&d), 0);
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
	pki p;

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
	    cmocka_unit_test(test_socket_modes),
	    cmocka_unit_test(test_allow_list_refuses),
	    cmocka_unit_test(test_allow_list_admits),
	    cmocka_unit_test(test_allow_list_config_errors),
	    cmocka_unit_test(test_plain_tcp_warning),
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_tls_broken_files),
	};

	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
