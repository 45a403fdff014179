/*
 * config_fx.h - what the tests of config/gm_config share: gm_config's
 * calls with one message buffer, a document loaded from text, configurations
 * compared key by key, and the document that changes every key with its check.
 */
#ifndef CONFIG_FX_H
#define CONFIG_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gm_config.h"
#include "gm_ooc.h"
#include "gm_error.h"

#define GIB (UINT64_C(1) << 30)

/* The message of the last call below; each passes it to gm_config. */
extern char msg[256];

int load(gm_config *c, const char *doc);

int load_file(gm_config *c, const char *path);

int set(gm_config *c, const char *key, const char *value);

int add_listen(gm_config *c, const char *url, int replace);

int check(const gm_config *c);

void assert_same_string(const char *a, const char *b);

/* Field by field, so that the check does not lean on gm_config_to_json. */
void assert_config_equal(const gm_config *a, const gm_config *b);

/* Every key away from its default. */
extern const char *const all_changed;

void assert_all_changed(const gm_config *c);

#endif
