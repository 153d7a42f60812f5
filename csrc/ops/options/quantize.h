/* options/quantize.h -- options structs for quantizeLinear dequantizeLinear (included by ops/options.h).
 * Both take MLOperatorOptions only (wnn_no_options). */
#pragma once
