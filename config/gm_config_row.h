/*
 * gm_config_row.h - private to config/: a row of the key table, and the
 * kind of value a row holds.
 *
 * A kind carries its own behaviour, the way a Redis config row carries
 * its type's interface: parse and store a value, store the default,
 * render the value as JSON, free and copy what it owns, write a bound.
 * The table and the code that walks it are in gm_config.c; the kinds in
 * gm_config_kind.c (numbers, booleans, enums, paths, per-priority
 * numbers) and gm_config_list.c (URL, string and id lists); what they share for
 * messages in gm_config_value.c. A kind sees only the row and where its
 * value is stored, never the whole configuration. Types only.
 */
#ifndef GM_CONFIG_ROW_H
#define GM_CONFIG_ROW_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_proto.h"

/* Values of a per-priority row. */
#define GM_CONFIG_NPRIO (GM_BATCH_PRIO_MAX + 1)

/* The most entries a list row may have (gm_config.c checks its rows
 * against it): lists are assembled on the stack before they are stored. */
#define GM_CONFIG_LIST_MAX 64

/* A name an enum row takes; a list of them ends with a NULL name. */
typedef struct gm_config_choice {
	const char *name;
	int value;
} gm_config_choice;

/* A value to set, as the user wrote it: an item of a JSON document, or
 * the text of a command-line override (json NULL). */
typedef struct gm_config_src {
	const cJSON *json;
	const char *text;
} gm_config_src;

typedef struct gm_config_kind gm_config_kind;

/* One key: its kind, bounds, default and where it is stored. */
typedef struct gm_config_row {
	const char *name;
	const gm_config_kind *kind;
	size_t off;	    /* the field in gm_config */
	size_t count_off;   /* lists: the entry count's field */
	uint64_t min, max;  /* numbers and ids: value; URL lists: entries */
	uint64_t def;	    /* default; lists: default entries */
	unsigned max_count; /* id and string lists: most entries */
	const gm_config_choice *choices; /* enums */
	char **strs_def;		 /* URL and string lists: the default */
	uint32_t *ids_def;		 /* id lists: the default list */
} gm_config_row;

/*
 * What a kind does with a row r whose value is stored at `at` (and, for
 * lists, whose entry count is at `count`; NULL for other kinds).
 */
struct gm_config_kind {
	/* Parses v and stores it: 0, GM_ECONFIG with msg naming the key
	 * and value, or GM_ENOMEM; nothing changes on error. */
	int (*set)(const gm_config_row *r, void *at, unsigned *count,
		   const gm_config_src *v, char *msg, size_t len);
	/* Stores the default, which owns nothing (old contents are not
	 * freed). */
	void (*init)(const gm_config_row *r, void *at, unsigned *count);
	/* The value as a JSON item that set accepts back; NULL when out of
	 * memory. */
	cJSON *(*get)(const gm_config_row *r, const void *at, unsigned count);
	/* Frees what the value owns (NULL: it never owns anything). */
	void (*release)(const gm_config_row *r, void *at, unsigned count);
	/* Replaces a shallow copy of another configuration's value with a
	 * copy of its own: 0 or GM_ENOMEM (NULL: nothing to copy). */
	int (*copy)(const gm_config_row *r, void *at, unsigned count);
	/* Writes bound x of the row as a value of this kind reads ("1G");
	 * NULL: in decimal. */
	void (*show)(uint64_t x, char *buf, size_t len);
};

#endif
