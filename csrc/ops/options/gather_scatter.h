/* options/gather_scatter.h -- options structs for gather gatherElements gatherND scatterElements scatterND (included by ops/options.h). */
#pragma once

/* MLGatherOptions -- #api-mlgraphbuilder-gather (also gatherElements) */
#define WNN_GATHER_OPTIONS(S, F, E, X)                                        \
    /* [EnforceRange] unsigned long, default 0 */                             \
    F(S, axis, "axis", WNN_F_U32, 0)
WNN_OPTIONS_STRUCT(wnn_gather_options, WNN_GATHER_OPTIONS)

/* MLScatterOptions -- #api-mlgraphbuilder-scatterelements */
#define WNN_SCATTER_OPTIONS(S, F, E, X)                                       \
    /* [EnforceRange] unsigned long, default 0 */                             \
    F(S, axis, "axis", WNN_F_U32, 0)
WNN_OPTIONS_STRUCT(wnn_scatter_options, WNN_SCATTER_OPTIONS)
