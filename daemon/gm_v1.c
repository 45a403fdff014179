/*
 * gm_v1.c - the version-1 framing gemmd answers v1 clients in; see
 * gm_v1.h. SP integers are big-endian; gemmd's own, little-endian.
 */
#include "gm_v1.h"

#include <string.h>

#include "gm_error.h"
#include "gm_proto.h"

#define V1_HDR	    24
#define V1_TYPE_ERR 5
#define SP_REP0	    0x31

const uint8_t gm_v1_hello[GM_V1_HELLO_SIZE] = {0, 'S',	   'P', 0,
					       0, SP_REP0, 0,	0};

static const char v1_message[] =
    "gemmd speaks protocol v2 on byte streams; upgrade the client";

size_t gm_v1_frame_size(int ipc)
{
	return ipc ? 9 : 8;
}

uint64_t gm_v1_frame_length(const uint8_t *p, int ipc)
{
	uint64_t v = 0;

	p += ipc ? 1 : 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

size_t gm_v1_reply(uint8_t *out, int ipc, const uint8_t *head, size_t have)
{
	size_t fs = gm_v1_frame_size(ipc), len = 4 + V1_HDR + GM_ERROR_SIZE;
	uint8_t *p = out;
	uint8_t err[GM_HDR_SIZE + GM_ERROR_SIZE];

	if (ipc)
		*p++ = 0x01;
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)((uint64_t)len >> (8 * i));
	memcpy(p, head, 4); /* the REQ id, echoed as REP must */
	p += 4;
	memset(p, 0, V1_HDR);
	put_le(p, GM_PROTO_MAGIC, 4);
	put_le(p + 4, 1, 2);
	put_le(p + 6, V1_TYPE_ERR, 2);
	if (have >= GM_V1_REQ_HEAD)
		memcpy(p + 8, head + 4 + 8, 8); /* the v1 request's id */
	put_le(p + 16, GM_ERROR_SIZE, 4);
	p += V1_HDR;
	/* The ERROR body is the same in both versions. */
	gm_proto_put_error(err, 0, GM_EVERSION, v1_message);
	memcpy(p, err + GM_HDR_SIZE, GM_ERROR_SIZE);
	return fs + len;
}
