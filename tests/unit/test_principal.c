/*
 * test_principal.c - gm_principal, who a connection speaks for: the uid
 * of an ipc:// peer with credentials, the subject of a tls+tcp:// peer's
 * verified certificate, anonymous for plain tcp:// and for a peer whose
 * identity is unknown; equality by value; admin only as admin_uids and
 * admin_subjects say, never anonymous, with a reason naming the key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gm_principal.h"

static gm_principal *make(int kind, int has_cred, uint64_t uid,
			  const char *subject)
{
	gm_peer p = {.kind = kind, .has_cred = has_cred, .uid = uid};
	gm_principal *pr;

	snprintf(p.addr, sizeof(p.addr), "127.0.0.1");
	snprintf(p.subject, sizeof(p.subject), "%s", subject);
	assert_non_null(pr = gm_principal_new(&p));
	return pr;
}

static void test_kinds_and_names(void **state)
{
	static const struct {
		int kind, has_cred;
		uint64_t uid;
		const char *subject;
		int want;
		const char *name;
	} rows[] = {
	    {GM_URL_IPC, 1, 1000, "", GM_PRINCIPAL_UID, "uid 1000"},
	    {GM_URL_IPC, 1, 0, "", GM_PRINCIPAL_UID, "uid 0"},
	    /* No credentials: nobody in particular. */
	    {GM_URL_IPC, 0, 0, "", GM_PRINCIPAL_ANONYMOUS, "anonymous"},
	    {GM_URL_TLS, 0, 0, "CN=svc,O=lab", GM_PRINCIPAL_SUBJECT,
	     "subject CN=svc,O=lab"},
	    /* A TLS peer without a verified certificate. */
	    {GM_URL_TLS, 0, 0, "", GM_PRINCIPAL_ANONYMOUS, "anonymous"},
	    /* Plain TCP, whatever the peer says or has. */
	    {GM_URL_TCP, 1, 0, "CN=root", GM_PRINCIPAL_ANONYMOUS, "anonymous"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		gm_principal *p = make(rows[i].kind, rows[i].has_cred,
				       rows[i].uid, rows[i].subject);

		assert_int_equal(gm_principal_kind(p), rows[i].want);
		assert_string_equal(gm_principal_name(p), rows[i].name);
		gm_principal_release(p);
	}
}

/* Equal by value: two connections of one uid, or one subject, are one
 * principal; every anonymous client is the same one. */
static void test_same(void **state)
{
	gm_principal *u1 = make(GM_URL_IPC, 1, 1000, ""),
		     *u1b = make(GM_URL_IPC, 1, 1000, ""),
		     *u2 = make(GM_URL_IPC, 1, 1001, ""),
		     *s1 = make(GM_URL_TLS, 0, 0, "CN=a"),
		     *s1b = make(GM_URL_TLS, 0, 0, "CN=a"),
		     *s2 = make(GM_URL_TLS, 0, 0, "CN=a,O=b"),
		     *a1 = make(GM_URL_TCP, 0, 0, ""),
		     *a2 = make(GM_URL_IPC, 0, 0, "");

	(void)state;
	assert_true(gm_principal_same(u1, u1b));
	assert_false(gm_principal_same(u1, u2));
	assert_true(gm_principal_same(s1, s1b));
	assert_false(gm_principal_same(s1, s2));
	assert_false(gm_principal_same(s1, u1));
	assert_true(gm_principal_same(a1, a2));
	assert_false(gm_principal_same(a1, u1));
	/* A reference held outlives the first. */
	assert_ptr_equal(gm_principal_hold(u1), u1);
	gm_principal_release(u1);
	assert_string_equal(gm_principal_name(u1), "uid 1000");
	gm_principal_release(u1);
	gm_principal_release(NULL);
	gm_principal_release(u1b);
	gm_principal_release(u2);
	gm_principal_release(s1);
	gm_principal_release(s1b);
	gm_principal_release(s2);
	gm_principal_release(a1);
	gm_principal_release(a2);
}

static void test_admin(void **state)
{
	gm_principal *root = make(GM_URL_IPC, 1, 0, ""),
		     *user = make(GM_URL_IPC, 1, 1000, ""),
		     *ops = make(GM_URL_TLS, 0, 0, "CN=ops,O=lab"),
		     *svc = make(GM_URL_TLS, 0, 0, "CN=svc"),
		     *anon = make(GM_URL_TCP, 1, 0, "CN=ops,O=lab");
	char why[300], msg[160];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	/* Root alone by default. */
	assert_true(gm_principal_is_admin(root, &c, why, sizeof(why)));
	assert_false(gm_principal_is_admin(user, &c, why, sizeof(why)));
	assert_string_equal(why, "uid 1000 is not in admin_uids");
	assert_false(gm_principal_is_admin(ops, &c, why, sizeof(why)));
	assert_string_equal(
	    why, "subject \"CN=ops,O=lab\" is not in admin_subjects");
	assert_false(gm_principal_is_admin(anon, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "anonymous"));
	assert_non_null(strstr(why, "never admin"));
	assert_int_equal(
	    gm_config_set(&c, "admin_uids", "1000", msg, sizeof(msg)), 0);
	assert_int_equal(gm_config_set(&c, "admin_subjects", "CN=ops,O=lab",
				       msg, sizeof(msg)),
			 0);
	assert_false(gm_principal_is_admin(root, &c, NULL, 0));
	assert_true(gm_principal_is_admin(user, &c, NULL, 0));
	assert_true(gm_principal_is_admin(ops, &c, NULL, 0));
	assert_false(gm_principal_is_admin(svc, &c, NULL, 0));
	/* Plain TCP is never admin, whatever it claims. */
	assert_false(gm_principal_is_admin(anon, &c, NULL, 0));
	gm_config_free(&c);
	gm_principal_release(root);
	gm_principal_release(user);
	gm_principal_release(ops);
	gm_principal_release(svc);
	gm_principal_release(anon);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kinds_and_names),
	    cmocka_unit_test(test_same),
	    cmocka_unit_test(test_admin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
