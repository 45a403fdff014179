/*
 * gm_ctrlreq.c - strict reading of a CTRL request's JSON; see
 * gm_ctrlreq.h.
 *
 * Two passes. The first (gm_ctrlreq_json.c) validates the whole body as
 * JSON and notes the top object's members; only then does the second,
 * here, look at what they say, so that a body that is not JSON is
 * always EJSON, whatever its members.
 */
#include "gm_ctrlreq.h"

#include <inttypes.h>
#include <string.h>

#include "gm_ctrlreq_json.h"
#include "gm_error.h"
#include "gm_proto_impl.h"

_Static_assert(GM_CTRLREQ_JSON_DEPTH_MAX == GM_CTRLREQ_DEPTH_MAX,
	       "the JSON pass reads the nesting that gm_ctrlreq.h promises");

static const struct {
	const char *name;
	unsigned members;
	int admin;
} ops[] = {[GM_CTRLREQ_NONE] = {NULL, 0, 0},
#define GM_CTRLREQ_ROW(name, wire, m, admin) \
	[GM_CTRLREQ_##name] = {wire, m, admin},
	   GM_CTRLREQ_OP_MAP(GM_CTRLREQ_ROW)
#undef GM_CTRLREQ_ROW
};

const char gm_ctrlreq_ops[] =
#define GM_CTRLREQ_LIST(name, wire, m, admin) wire ", "
    GM_CTRLREQ_OP_MAP(GM_CTRLREQ_LIST)
#undef GM_CTRLREQ_LIST
	"(and no more)";

const char *gm_ctrlreq_op_name(int op)
{
	if (op <= GM_CTRLREQ_NONE || op >= GM_CTRLREQ_OP_COUNT)
		return NULL;
	return ops[op].name;
}

int gm_ctrlreq_op_admin(int op)
{
	if (op <= GM_CTRLREQ_NONE || op >= GM_CTRLREQ_OP_COUNT)
		return 0;
	return ops[op].admin;
}

static int find_op(const gm_ctrlreq_member *m)
{
	if (m->type != GM_CTRLREQ_V_STRING || m->long_s)
		return GM_CTRLREQ_NONE;
	for (int op = 1; op < GM_CTRLREQ_OP_COUNT; op++)
		if (strcmp(ops[op].name, m->s) == 0)
			return op;
	return GM_CTRLREQ_NONE;
}

static int take_int(const gm_ctrlreq_member *m, uint64_t min, uint64_t max,
		    uint64_t *out, char *msg, size_t msglen)
{
	if (m->type != GM_CTRLREQ_V_INT || m->overflow || m->u < min ||
	    m->u > max)
		return gm_proto_fail(GM_EINVAL, msg, msglen,
				     "\"%s\" must be an integer from %" PRIu64
				     " to %" PRIu64,
				     m->name, min, max);
	*out = m->u;
	return GM_OK;
}

static int members(const gm_ctrlreq_member *top, unsigned n, gm_ctrlreq *q,
		   char *msg, size_t msglen)
{
	const gm_ctrlreq_member *op = NULL;
	int rv;

	for (unsigned i = 0; i < n; i++)
		if (!top[i].long_name && strcmp(top[i].name, "op") == 0)
			op = &top[i];
	if (op == NULL || op->type != GM_CTRLREQ_V_STRING)
		return gm_proto_fail(GM_EINVAL, msg, msglen,
				     "missing string member \"op\"");
	if ((q->op = find_op(op)) == GM_CTRLREQ_NONE)
		return gm_proto_fail(GM_EINVAL, msg, msglen,
				     "unknown op; known: %s", gm_ctrlreq_ops);
	for (unsigned i = 0; i < n; i++) {
		const gm_ctrlreq_member *m = &top[i];
		unsigned bit = 0;

		if (m == op)
			continue;
		if (!m->long_name && strcmp(m->name, "job") == 0)
			bit = GM_CTRLREQ_M_JOB;
		else if (!m->long_name && strcmp(m->name, "timeout_ms") == 0)
			bit = GM_CTRLREQ_M_TIMEOUT;
		if (bit == 0 || !(ops[q->op].members & bit))
			return gm_proto_fail(
			    GM_EFIELD, msg, msglen,
			    "op \"%s\" takes no member \"%s%s\"",
			    ops[q->op].name, m->name,
			    m->long_name ? "..." : "");
		rv = bit == GM_CTRLREQ_M_JOB
			 ? take_int(m, 1, UINT64_MAX, &q->job, msg, msglen)
			 : take_int(m, 0, GM_CTRLREQ_TIMEOUT_MAX,
				    &q->timeout_ms, msg, msglen);
		if (rv != 0)
			return rv;
		q->members |= bit;
	}
	if ((ops[q->op].members & GM_CTRLREQ_M_JOB) &&
	    !(q->members & GM_CTRLREQ_M_JOB))
		return gm_proto_fail(GM_EINVAL, msg, msglen,
				     "op \"%s\" needs member \"job\"",
				     ops[q->op].name);
	return GM_OK;
}

int gm_ctrlreq_parse(const uint8_t *body, size_t len, gm_ctrlreq *q, char *msg,
		     size_t msglen)
{
	gm_ctrlreq_member top[GM_CTRLREQ_MEMBERS_MAX];
	unsigned n;
	int rv;

	memset(q, 0, sizeof(*q));
	if ((rv = gm_ctrlreq_read_json(body, len, top, &n, msg, msglen)) != 0)
		return rv;
	return members(top, n, q, msg, msglen);
}
