// libFuzzer target for the field section decoder (shardpack/fields.h): a
// fixed schema of every field type (testing::EveryFieldType()), arbitrary
// bytes as one record's labels, field section and payload (fields_input.h).
// RecordFields::Decode and CheckValues never crash and fail only with
// DataLossError; what Decode accepts holds what it promises: every value a
// view inside the record, an array a whole number of rows of its declared
// shape, a label within its classes; a stored CRC that matches passes the
// CRC check; CheckRecordAgainstSchema agrees with a Decode without the CRC.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/coding.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "tests/fuzz/fields_input.h"
#include "tests/testing/field_fixtures.h"

namespace {

using namespace shardpack;

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "fields_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void ExpectDataLoss(const absl::Status& s, std::string_view what) {
  Expect(s.ok() || s.code() == absl::StatusCode::kDataLoss, what, s.ToString());
}

bool Within(ByteSpan part, ByteSpan whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

const Schema& FuzzSchema() {
  static const Schema schema = *MakeSchema(testing::EveryFieldType());
  return schema;
}

void CheckDecoded(const Record& r, std::span<const FieldValue> values) {
  const std::vector<Field>& fields = FuzzSchema().fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    const FieldValue& v = values[i];
    if (!v.present) {
      Expect(f.optional, "a required field absent");
      continue;
    }
    Expect(Within(v.bytes, r.extra) || Within(v.bytes, r.payload), "a value outside the record");
    if (f.type == FieldType::kArray) {
      uint64_t row = static_cast<uint64_t>(ArrayDTypeSize(f.dtype));
      for (size_t d = 1; d < f.shape.size(); ++d) row *= f.shape[d];
      Expect(v.rows * row == v.bytes.size(), "array rows disagree with its bytes");
      Expect(f.shape[0] == 0 || v.rows == f.shape[0], "array rows disagree with its shape");
    }
    if (f.type == FieldType::kLabel && !f.classes.empty()) {
      Expect(v.label >= 0 && static_cast<uint64_t>(v.label) < f.classes.size(),
             "label outside its classes");
    }
    if (f.type == FieldType::kImage && v.image.encoding == Encoding::kRaw) {
      Expect(v.image.RawBytes() == v.bytes.size(), "raw image of other bytes than its shape");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FieldsInput in;
  if (!fuzz::ParseFieldsInput(data, size, &in)) return 0;
  if ((in.flags & fuzz::kRefreshCrc) != 0 && in.extra.size() >= 4) {
    common::StoreLE<uint32_t>(in.extra.data(), RecordCrc(in.record));
  }
  static const RecordFields fields(FuzzSchema());
  std::vector<FieldValue> values(fields.fields().size());
  const bool check_crc = (in.flags & fuzz::kCheckCrc) != 0;
  const absl::Status decoded = fields.Decode(in.record, values, check_crc);
  ExpectDataLoss(decoded, "Decode");
  const absl::Status plain = CheckRecordAgainstSchema(in.record, FuzzSchema());
  ExpectDataLoss(plain, "CheckRecordAgainstSchema");
  if (!check_crc) {
    Expect(decoded.ok() == plain.ok(), "Decode and CheckRecordAgainstSchema disagree");
  }
  if (!decoded.ok()) return 0;
  CheckDecoded(in.record, values);
  ExpectDataLoss(fields.CheckValues(values), "CheckValues");
  if (in.extra.size() >= 4 && common::LoadLE<uint32_t>(in.extra.data()) == RecordCrc(in.record)) {
    Expect(fields.Decode(in.record, values, true).ok(), "a matching CRC fails the CRC check");
  }
  return 0;
}
