/* options/recurrent.h -- options structs for gru gruCell lstm lstmCell (included by ops/options.h). */
#pragma once
