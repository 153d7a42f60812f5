/* options/normalization.h -- options structs for batchNormalization instanceNormalization layerNormalization (included by ops/options.h). */
#pragma once
