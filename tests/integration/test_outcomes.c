/*
 * test_outcomes.c - every way a job can end, through every kind of
 * request, against a real gemmd on the CPU engine, through raw frames
 * (gm_rawc.h) only: the client library refuses some of these requests
 * itself, and the daemon must answer them whoever sends them.
 *
 * A job ends ok; fails at once, before the engine runs it (a dtype the
 * engine cannot run, alone or beside a job that runs); or its request is
 * refused whole before any of it runs (a field the wire checks refuse,
 * a region, the queue full, no room for detached results, the pool too
 * small, the daemon draining); or it is canceled, or its deadline passes
 * in the queue. A request is plain or detached, sent to an idle engine
 * or queued behind a "blocker" (one job sized, by a calibration run, to
 * keep one BLAS thread busy for about BLOCK_S seconds), then left alone,
 * canceled, or given a deadline that passes while it waits. The daemon
 * runs each job whole (pieces of cpu_piece_flops far over any job here), and a
 * small job is 72^3, over the 64^3 that OpenBLAS runs on one thread and the CPU
 * engine runs beside a piece: so a job behind the blocker really waits
 * for all of it. The table at the bottom says what each job of each
 * case must end with, and for each case the test checks that:
 *
 *  - the request gets exactly one answer: one GEMM_REPLY per job (each
 *    index once) or one ERROR; detached, one CTRL_REPLY with an id per
 *    job, or one ERROR; and nothing more comes on its connection;
 *  - a detached job's outcome is kept: a wait gets it once (a second
 *    wait finds it taken), and its status says the same;
 *  - the stats count each job once (ok, failed, or rejected with its
 *    request), and the daemon is back where it was: nothing queued,
 *    running, held in the pool or in pageable memory, no detached job
 *    pending, no request in flight but the stats request itself.
 *
 * The daemon must live through all of it and stop cleanly. No job can
 * fail inside the CPU engine from the wire (it checks nothing a request
 * can get wrong past the scheduler's checks), so an engine failure is
 * not among the outcomes here: such a job reaches the request layer
 * through the same callback, at the same moment, as a job that ran.
 *
 * The daemon, the frames and the checks are outcomes_fx.h's; the tests
 * of connections that close unread and of a stop with jobs queued are in
 * test_outcomes_conn.c.
 */
#include "outcomes_fx.h"

/* ---- the table ---- */

#define R(code) (REFUSED | (code))
#define EUNS	EUNSUPPORTED_

/* clang-format off */
/* What each job ends with, per kind of request: plain, detached, queued,
 * queued-detached, canceled, deadline, deadline-detached. A job that
 * fails in the scheduler fails before the engine runs it and before its
 * deadline or a cancel can reach it; a cancel then drops the kept
 * failure (PROTOCOL.md 7.1). Detached requests name no region: refused
 * before the lookup. */
static const outcome outcomes[] = {
    {.name = "ok", .jobs = {S_SMALL}, .njobs = 1, .expect = {
	{OK}, {OK}, {OK}, {OK}, {ECANCELED_}, {ETIMEDOUT_}, {ETIMEDOUT_}}},
    {.name = "unsupported dtype", .jobs = {S_FP16}, .njobs = 1, .expect = {
	{EUNS}, {EUNS}, {EUNS}, {EUNS}, {ECANCELED_}, {EUNS}, {EUNS}}},
    {.name = "unsupported beside ok", .jobs = {S_SMALL, S_FP16}, .njobs = 2,
     .expect = {{OK, EUNS}, {OK, EUNS}, {OK, EUNS}, {OK, EUNS},
	{ECANCELED_, ECANCELED_}, {ETIMEDOUT_, EUNS}, {ETIMEDOUT_, EUNS}}},
    {.name = "queue full", .jobs = {S_SMALL, S_SMALL, S_SMALL, S_SMALL},
     .njobs = 4, .expect = {
	{R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)},
	{R(EBUSY_)}, {R(EBUSY_)}}},
    {.name = "validation", .jobs = {S_DIM0}, .njobs = 1, .wire = 1,
     .expect = {{R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)},
	{R(EDIM_)}, {R(EDIM_)}}},
    {.name = "region", .jobs = {S_REGION}, .njobs = 1, .expect = {
	{R(ENOTFOUND_)}, {R(EUNS)}, {R(ENOTFOUND_)}, {R(EUNS)}, {R(EUNS)},
	{R(ENOTFOUND_)}, {R(EUNS)}}},
    /* Detached, its result does not fit in detach_max_bytes either,
     * checked first (PROTOCOL.md 8 step 23). */
    {.name = "pool too small", .jobs = {S_HUGE}, .njobs = 1, .expect = {
	{R(ETOOBIG_)}, {R(EBUSY_)}, {R(ETOOBIG_)}, {R(EBUSY_)}, {R(EBUSY_)},
	{R(ETOOBIG_)}, {R(EBUSY_)}}},
    {.name = "no room for detached results", .jobs = {S_WIDE}, .njobs = 1,
     .expect = {{OK}, {R(EBUSY_)}, {OK}, {R(EBUSY_)}, {R(EBUSY_)},
	{ETIMEDOUT_}, {R(EBUSY_)}}},
    {.name = "draining", .jobs = {S_SMALL}, .njobs = 1, .drain = 1,
     .expect = {{R(EDRAINING_)}, {R(EDRAINING_)}, {R(EDRAINING_)},
	{R(EDRAINING_)}, {R(EDRAINING_)}, {R(EDRAINING_)},
	{R(EDRAINING_)}}},
};
/* clang-format on */

static void test_every_outcome(void **state)
{
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		for (int kind = 0; kind < KINDS; kind++)
			run_case(&outcomes[i], kind);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_outcome),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
