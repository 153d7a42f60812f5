/* options/resample2d.h -- options structs for resample2d -- #api-mlgraphbuilder-resample2d-method (included by ops/options.h). */
#pragma once
