/* options/quantize.h -- options structs for quantizeLinear dequantizeLinear (included by ops/options.h). */
#pragma once
