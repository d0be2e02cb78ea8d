// Moved to common/rng.h (issue 17: the packer uses it too, without the
// reader). Kept only until reader/epoch_plan.cc and reader/pipeline.cc
// include common/rng.h; delete it then.
#ifndef SHARDPACK_READER_RNG_H_
#define SHARDPACK_READER_RNG_H_

#include "common/rng.h"

#endif  // SHARDPACK_READER_RNG_H_
