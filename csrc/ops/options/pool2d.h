/* options/pool2d.h -- options structs for averagePool2d l2Pool2d maxPool2d -- #api-mlgraphbuilder-pool2d (included by ops/options.h). */
#pragma once
