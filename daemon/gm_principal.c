/*
 * gm_principal.c - who a connection speaks for; see gm_principal.h. A
 * principal is its name, kept whole: the kind and the uid beside it
 * only make comparisons and admin checks cheap.
 */
#include "gm_principal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUBJECT_PREFIX "subject "

struct gm_principal {
	unsigned refs;
	int kind;
	uint64_t uid;
	char name[]; /* "uid N", "subject S" or "anonymous" */
};

static int kind_of(const gm_peer *p)
{
	if (p->kind == GM_URL_IPC && p->has_cred)
		return GM_PRINCIPAL_UID;
	if (p->kind == GM_URL_TLS && p->subject[0] != '\0')
		return GM_PRINCIPAL_SUBJECT;
	return GM_PRINCIPAL_ANONYMOUS;
}

gm_principal *gm_principal_new(const gm_peer *p)
{
	int kind = kind_of(p);
	char name[GM_PRINCIPAL_NAME_MAX];
	gm_principal *pr;
	size_t n;

	if (kind == GM_PRINCIPAL_UID)
		snprintf(name, sizeof(name), "uid %" PRIu64, p->uid);
	else if (kind == GM_PRINCIPAL_SUBJECT)
		snprintf(name, sizeof(name), SUBJECT_PREFIX "%s", p->subject);
	else
		snprintf(name, sizeof(name), "anonymous");
	n = strlen(name) + 1;
	if ((pr = malloc(sizeof(*pr) + n)) == NULL)
		return NULL;
	pr->refs = 1;
	pr->kind = kind;
	pr->uid = kind == GM_PRINCIPAL_UID ? p->uid : 0;
	memcpy(pr->name, name, n);
	return pr;
}

gm_principal *gm_principal_hold(gm_principal *p)
{
	p->refs++;
	return p;
}

void gm_principal_release(gm_principal *p)
{
	if (p != NULL && --p->refs == 0)
		free(p);
}

bool gm_principal_same(const gm_principal *a, const gm_principal *b)
{
	return a == b || (a->kind == b->kind && a->uid == b->uid &&
			  strcmp(a->name, b->name) == 0);
}

int gm_principal_kind(const gm_principal *p)
{
	return p->kind;
}

const char *gm_principal_name(const gm_principal *p)
{
	return p->name;
}

bool gm_principal_is_admin(const gm_principal *p, const gm_config *cfg,
			   char *why, size_t len)
{
	const char *subject = p->name + strlen(SUBJECT_PREFIX);

	switch (p->kind) {
	case GM_PRINCIPAL_UID:
		if (gm_config_admin_uid(cfg, p->uid))
			return true;
		if (why != NULL)
			snprintf(why, len,
				 "uid %" PRIu64 " is not in admin_uids",
				 p->uid);
		return false;
	case GM_PRINCIPAL_SUBJECT:
		if (gm_config_admin_subject(cfg, subject))
			return true;
		if (why != NULL)
			snprintf(why, len,
				 "subject \"%s\" is not in admin_subjects",
				 subject);
		return false;
	default:
		if (why != NULL)
			snprintf(why, len,
				 "an anonymous client (plain tcp://) is never "
				 "admin; use ipc:// as a uid in admin_uids or "
				 "tls+tcp:// as a subject in admin_subjects");
		return false;
	}
}
