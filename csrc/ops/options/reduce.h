/* options/reduce.h -- options structs for reduce* argMin argMax cumulativeSum softmax (included by ops/options.h). */
#pragma once
