/* options/conv2d.h -- options structs for conv2d convTranspose2d -- #api-mlgraphbuilder-conv2d, #api-mlgraphbuilder-convtranspose2d (included by ops/options.h). */
#pragma once
