// NumPy's .npy files (format versions 1.0, 2.0 and 3.0), as WebDataset
// samples carry arrays: the header parsed and checked, the data viewed.
#ifndef SHARDPACK_DATASETS_NPY_H_
#define SHARDPACK_DATASETS_NPY_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/record.h"

namespace shardpack::datasets {

struct NpyArray {
  ArrayDType dtype = ArrayDType::kU8;
  std::vector<uint64_t> shape;  // () is a scalar: one element
  ByteSpan data;                // little-endian elements, C order; views the file's bytes
};

// Parses the bytes of a .npy file. InvalidArgumentError "<name>: ..." for
// what is not a .npy file or holds what a field cannot: a dtype other than
// u8/i32/i64/f16/f32/f64 (u1 and i1 bytes are u8; "|b1" bools too),
// big-endian data, Fortran order (for more than one dimension), more than
// kMaxArrayDims dimensions, data of another size than the shape says.
absl::StatusOr<NpyArray> ParseNpy(ByteSpan bytes, std::string_view name);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_NPY_H_
