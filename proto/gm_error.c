/* gm_error.c - texts and names for the codes of GM_ERRNO_MAP. */
#include "gm_error.h"

#include <stddef.h>

static const char *const texts[] = {
#define GM_ERR_TEXT(name, val, text) [val] = text,
    GM_ERRNO_MAP(GM_ERR_TEXT)
#undef GM_ERR_TEXT
};

static const char *const names[] = {
#define GM_ERR_NAME(name, val, text) [val] = #name,
    GM_ERRNO_MAP(GM_ERR_NAME)
#undef GM_ERR_NAME
};

const char *gm_strerror(int code)
{
	if (code < 0 || (size_t)code >= sizeof(texts) / sizeof(texts[0]) ||
	    texts[code] == NULL)
		return "unknown error";
	return texts[code];
}

const char *gm_errname(int code)
{
	if (code < 0 || (size_t)code >= sizeof(names) / sizeof(names[0]) ||
	    names[code] == NULL)
		return "E?";
	return names[code];
}
