/* schedule.h -- the schedule stage (compiler/schedule.c): the last stage of
 * the pipeline (core/compile.c), after lowering.  It turns the plan's order,
 * the fused chains, the aliased reshapes and the linked conv pairs into the
 * list of steps a backend prepares and runs (g->schedule; the struct is in
 * backend/steps.h, which backends read). */
#ifndef WNN_SCHEDULE_H
#define WNN_SCHEDULE_H
#include "../core/internal.h"

/* g->plan, g->fusion and g->lowered must be made. */
wnn_status wnn_schedule_make(const wnn_graph *g, wnn_schedule *s,
                             wnn_error *err);
void wnn_schedule_free(wnn_schedule *s);

#endif
