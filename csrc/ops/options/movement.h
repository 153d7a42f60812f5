/* options/movement.h -- options structs for concat expand transpose slice split tile reverse triangular pad (included by ops/options.h). */
#pragma once
