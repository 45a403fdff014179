/*
 * it_case.h - what every C test of this folder includes: the C library
 * headers they all use, cmocka with the headers it needs before it, and
 * the daemon fixture (itest.h). A test adds only what is its own.
 */
#ifndef IT_CASE_H
#define IT_CASE_H

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest.h"

#endif
