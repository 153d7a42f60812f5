/* options/gather_scatter.h -- options structs for gather gatherElements gatherND scatterElements scatterND (included by ops/options.h). */
#pragma once
