/* options/gather_scatter.h -- options structs for gather gatherElements gatherND scatterElements scatterND (included by ops/options.h). */
#pragma once

/* MLGatherOptions -- #api-mlgraphbuilder-gather (also gatherElements) */
typedef struct wnn_gather_options {
    uint32_t axis; /* [EnforceRange] unsigned long, default 0 */
} wnn_gather_options;

/* MLScatterOptions -- #api-mlgraphbuilder-scatterelements */
typedef struct wnn_scatter_options {
    uint32_t axis; /* [EnforceRange] unsigned long, default 0 */
} wnn_scatter_options;
