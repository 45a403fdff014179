/* gm_error.c - texts and names for the codes of GM_ERRNO_MAP. */
#include "gm_error.h"

#include <stddef.h>
#include <stdio.h>

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

const char *gm_size_text(uint64_t n, char buf[GM_SIZE_TEXT])
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	int u = -1;

	while (u < 3 && v >= 1024) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, GM_SIZE_TEXT, "%llu byte%s",
			 (unsigned long long)n, n == 1 ? "" : "s");
	else if (v == (double)(uint64_t)v)
		snprintf(buf, GM_SIZE_TEXT, "%.0f %s", v, units[u]);
	else /* one decimal, or three where one would look whole */
		snprintf(buf, GM_SIZE_TEXT, "%.*f %s",
			 (uint64_t)(v * 10 + 0.5) % 10 == 0 ? 3 : 1, v,
			 units[u]);
	return buf;
}
