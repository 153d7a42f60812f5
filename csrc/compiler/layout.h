/* layout.h -- layout planning (compiler/layout.c): convolutions of an nchw
 * graph run in nhwc on a backend that declares WNN_PLAN_NHWC (backend.h),
 * with transposes only at the edges of the nhwc regions.  The pipeline
 * (core/compile.c) runs it first, before fusion and the memory plan; it
 * rewrites the graph's IR and order in place. */
#ifndef WNN_LAYOUT_H
#define WNN_LAYOUT_H
#include "../core/internal.h"

wnn_status wnn_layout_plan(wnn_graph *g, wnn_error *err);

#endif
