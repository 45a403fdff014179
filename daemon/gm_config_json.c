/*
 * gm_config_json.c - the configuration as JSON: loading a document from
 * a string or a file, all or nothing, and rendering every key back in
 * table order.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gm_config_impl.h"
#include "gm_error.h"

/* Line and column (from 1) of the byte at pos, for JSON errors. */
static int json_error(const char *text, const char *pos, char *msg, size_t len)
{
	unsigned line = 1, col = 1;

	for (const char *p = text; p < pos; p++) {
		col = (*p == '\n') ? 1 : col + 1;
		line += (*p == '\n');
	}
	return gm_config_fail(msg, len, GM_EJSON,
			      "bad JSON at line %u, column %u", line, col);
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int gm_config_load_string(gm_config *c, const char *text, size_t len, char *msg,
			  size_t msglen)
{
	const char *end = text;
	gm_config tmp;
	cJSON *doc;
	int rv;

	if ((doc = cJSON_ParseWithLengthOpts(text, len, &end, 0)) == NULL)
		return json_error(text, end, msg, msglen);
	/* cJSON stops after the first value; anything but space after it
	 * means the text is not the one document it looks like. */
	while (end < text + len && is_space(*end))
		end++;
	if (end < text + len)
		rv = json_error(text, end, msg, msglen);
	else if ((rv = gm_config_copy(&tmp, c)) != 0)
		gm_config_fail(msg, msglen, rv, "out of memory");
	else if ((rv = gm_config_apply(&tmp, doc, msg, msglen)) != 0)
		gm_config_free(&tmp);
	else {
		gm_config_free(c);
		*c = tmp;
	}
	cJSON_Delete(doc);
	return rv;
}

/* Reads size bytes of fd into buf; returns 0 or an errno value. A file
 * that shrank meanwhile is read as far as it goes. */
static int read_all(int fd, char *buf, size_t size, size_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < size) {
		n = read(fd, buf + *got, size - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Reads the whole file at path into a NUL-terminated heap buffer, after
 * checking its size. Messages leave the path to the caller. */
static int read_file(const char *path, char **out, size_t *outlen, char *msg,
		     size_t len)
{
	struct stat st;
	char *buf;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return gm_config_fail(msg, len, GM_EIO, "%s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return gm_config_fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return gm_config_fail(msg, len, GM_EIO, "%s",
				      S_ISDIR(st.st_mode)
					  ? strerror(EISDIR)
					  : "not a regular file");
	}
	if (st.st_size > GM_CONFIG_MAX_FILE) {
		close(fd);
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "%lld bytes is more than the %u a config file may "
		    "have",
		    (long long)st.st_size, GM_CONFIG_MAX_FILE);
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return gm_config_fail(msg, len, GM_ENOMEM, "out of memory");
	}
	e = read_all(fd, buf, (size_t)st.st_size, outlen);
	close(fd);
	if (e != 0) {
		free(buf);
		return gm_config_fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	buf[*outlen] = '\0';
	*out = buf;
	return 0;
}

int gm_config_load_file(gm_config *c, const char *path, char *msg,
			size_t msglen)
{
	char why[512] = "";
	char *text = NULL;
	size_t len = 0;
	int rv;

	if ((rv = read_file(path, &text, &len, why, sizeof(why))) == 0)
		rv = gm_config_load_string(c, text, len, why, sizeof(why));
	free(text);
	if (rv != 0)
		gm_config_fail(msg, msglen, rv, "%s: %s", path, why);
	return rv;
}

static const char *choice_name(const struct row *r, int value)
{
	for (const struct choice *ch = r->choices; ch->name != NULL; ch++)
		if (ch->value == value)
			return ch->name;
	return NULL;
}

static cJSON *render_ids(const uint32_t *ids, unsigned n)
{
	cJSON *a = cJSON_CreateArray();

	for (unsigned i = 0; a != NULL && i < n; i++) {
		cJSON *x = cJSON_CreateNumber(ids[i]);

		if (x == NULL || !cJSON_AddItemToArray(a, x)) {
			cJSON_Delete(x);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* One key's value as a JSON item, or NULL when out of memory. */
static cJSON *render(const gm_config *c, const struct row *r)
{
	const void *p = gm_config_cfield(c, r);
	const char *s;

	switch (r->kind) {
	case K_UINT:
		return cJSON_CreateNumber(*(const unsigned *)p);
	case K_SIZE:
		return cJSON_CreateNumber((double)*(const uint64_t *)p);
	case K_BOOL:
		return cJSON_CreateBool(*(const int *)p);
	case K_ENUM:
		/* A value set outside this module shows as its number. */
		s = choice_name(r, *(const int *)p);
		return s ? cJSON_CreateString(s)
			 : cJSON_CreateNumber(*(const int *)p);
	case K_STRING:
		s = *(char *const *)p;
		return s ? cJSON_CreateString(s) : cJSON_CreateNull();
	case K_URLS:
		return cJSON_CreateStringArray(*(const char *const *const *)p,
					       (int)gm_config_count_of(c, r));
	case K_IDS:
		return render_ids(*(const uint32_t *const *)p,
				  gm_config_count_of(c, r));
	case K_PRIOS:
		return render_ids(p, NPRIO);
	}
	return NULL;
}

char *gm_config_to_json(const gm_config *c)
{
	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;
	size_t i;

	for (i = 0; doc != NULL && i < gm_config_nkeys; i++) {
		cJSON *item = render(c, &gm_config_keys[i]);

		if (item == NULL ||
		    !cJSON_AddItemToObject(doc, gm_config_keys[i].name, item)) {
			cJSON_Delete(item);
			break;
		}
	}
	if (doc != NULL && i == gm_config_nkeys)
		text = cJSON_Print(doc);
	cJSON_Delete(doc);
	return text;
}
