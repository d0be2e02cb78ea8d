#include "reader/field_columns.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "reader/field_plan.h"
#include "reader/transform.h"

namespace shardpack::reader {
namespace {

// At least `bytes` bytes of values, doubling: amortized, and kept.
uint8_t* Reserve(ColumnBuffer& b, size_t bytes) {
  if (b.values.size() < bytes) b.values.resize(std::max(bytes, 2 * b.values.size()));
  return b.values.data();
}

void CopyRow(std::vector<uint8_t>& v, size_t row_bytes, int to, int from) {
  std::memcpy(v.data() + row_bytes * size_t(to), v.data() + row_bytes * size_t(from), row_bytes);
}

// Column `b`'s rows rebuilt in the order `from` gives, through `scratch`:
// the rows' lengths first, then their bytes.
void CompactVariable(const ColumnPlan& c, std::span<const int> from, int size, ColumnBuffer& b,
                     std::vector<uint8_t>& scratch) {
  const int64_t* off = b.offsets.data();
  size_t total = 0;
  for (int i = 0; i < size; ++i) total += size_t(off[from[i] + 1] - off[from[i]]);
  const size_t head = sizeof(int64_t) * size_t(size);
  if (scratch.size() < head + total * c.row_bytes) scratch.resize(head + total * c.row_bytes);
  uint8_t* bytes = scratch.data() + head;
  for (int i = 0; i < size; ++i) {
    const int64_t rows = off[from[i] + 1] - off[from[i]];
    std::memcpy(scratch.data() + sizeof(int64_t) * size_t(i), &rows, sizeof(rows));
    if (rows == 0) continue;
    std::memcpy(bytes, b.values.data() + size_t(off[from[i]]) * c.row_bytes,
                size_t(rows) * c.row_bytes);
    bytes += size_t(rows) * c.row_bytes;
  }
  for (int i = 0; i < size; ++i) {
    int64_t rows;
    std::memcpy(&rows, scratch.data() + sizeof(int64_t) * size_t(i), sizeof(rows));
    b.offsets[size_t(i) + 1] = b.offsets[size_t(i)] + rows;
  }
  if (total != 0) {
    std::memcpy(Reserve(b, total * c.row_bytes), scratch.data() + head, total * c.row_bytes);
  }
}

}  // namespace

void SlotFields::Size(const FieldPlan& plan, int batch) {
  if (!plan.active()) return;  // a classic read: no columns, no windows
  const size_t n = static_cast<size_t>(batch);
  crops.assign(4 * n, 0.f);
  sizes.assign(2 * n, 0);
  flips.assign(n, 0);
  columns.assign(plan.columns().size(), ColumnBuffer{});
  for (size_t k = 0; k < columns.size(); ++k) {
    const ColumnPlan& c = plan.columns()[k];
    ColumnBuffer& b = columns[k];
    b.present.assign(n, 0);
    if (c.kind == ColumnKind::kVariable) b.offsets.assign(n + 1, 0);
    // Fixed: a row a sample, for good; variable: a row a sample (at most
    // 1 MiB) to start with, grown by the batches that need more.
    const size_t start = n * c.row_bytes;
    if (c.kind == ColumnKind::kVariable) b.values.assign(std::min<size_t>(start, 1 << 20), 0);
    if (c.kind != ColumnKind::kVariable && c.kind != ColumnKind::kImages) b.values.assign(start, 0);
    if (c.image_shapes) b.shapes.assign(3 * n, 0);
  }
}

uint64_t SlotFields::fixed_bytes() const {
  uint64_t bytes = crops.size() * sizeof(float) + sizes.size() * sizeof(int32_t) + flips.size();
  for (const ColumnBuffer& b : columns) {
    bytes += b.present.size() + b.offsets.size() * sizeof(int64_t) +
             b.shapes.size() * sizeof(int32_t) + (b.offsets.empty() ? b.values.size() : 0);
  }
  return bytes;
}

void BeginFields(const FieldPlan& plan, SlotFields& slot) {
  for (size_t k = 0; k < slot.columns.size(); ++k) {
    if (plan.columns()[k].kind == ColumnKind::kVariable) slot.columns[k].offsets[0] = 0;
  }
}

void SetWindow(SlotFields& slot, int i, const CropWindow* w) {
  const CropWindow none;
  if (w == nullptr) w = &none;
  const size_t at = static_cast<size_t>(i);
  float* crop = &slot.crops[4 * at];
  crop[0] = w->y, crop[1] = w->x, crop[2] = w->h, crop[3] = w->w;
  slot.sizes[2 * at] = w->height;
  slot.sizes[2 * at + 1] = w->width;
  slot.flips[at] = w->flip ? 1 : 0;
}

void CollateRow(const FieldPlan& plan, std::span<const FieldValue> values,
                const int64_t* labels, int i, SlotFields& slot) {
  const size_t at = static_cast<size_t>(i);
  for (size_t k = 0; k < slot.columns.size(); ++k) {
    const ColumnPlan& c = plan.columns()[k];
    ColumnBuffer& b = slot.columns[k];
    // A label the mixture adds (label_space source) is no field of a record.
    const size_t f = static_cast<size_t>(c.field);
    const FieldValue* v = f < values.size() ? &values[f] : nullptr;
    const bool have = v == nullptr || v->present;
    b.present[at] = have ? 1 : 0;
    switch (c.kind) {
      case ColumnKind::kImages:
      case ColumnKind::kTransformed:
        break;
      case ColumnKind::kLabel:
        std::memcpy(b.values.data() + sizeof(int64_t) * at, &labels[c.label], sizeof(int64_t));
        break;
      case ColumnKind::kFixed: {
        uint8_t* row = b.values.data() + c.row_bytes * at;
        // The schema check let through only values of the field's shape.
        SP_DCHECK(!have || v->bytes.size() == c.row_bytes);
        if (have && v->bytes.size() == c.row_bytes) {
          std::memcpy(row, v->bytes.data(), c.row_bytes);
        } else {
          std::memset(row, 0, c.row_bytes);
        }
        break;
      }
      case ColumnKind::kVariable: {
        const size_t rows = have ? v->bytes.size() / c.row_bytes : 0;
        const int64_t start = b.offsets[at];
        uint8_t* out = Reserve(b, (size_t(start) + rows) * c.row_bytes);
        if (rows != 0) std::memcpy(out + size_t(start) * c.row_bytes, v->bytes.data(), rows * c.row_bytes);
        b.offsets[at + 1] = start + int64_t(rows);
        if (c.image_shapes) {
          int32_t* s = &b.shapes[3 * at];
          s[0] = have ? int32_t(v->image.height) : 0;
          s[1] = have ? int32_t(v->image.width) : 0;
          s[2] = have ? int32_t(v->image.channels) : 0;
        }
        break;
      }
    }
  }
}

void ClearRow(const FieldPlan& plan, int i, SlotFields& slot) {
  const size_t at = static_cast<size_t>(i);
  for (size_t k = 0; k < slot.columns.size(); ++k) {
    ColumnBuffer& b = slot.columns[k];
    b.present[at] = 0;
    if (plan.columns()[k].kind == ColumnKind::kVariable) b.offsets[at + 1] = b.offsets[at];
  }
  SetWindow(slot, i, nullptr);
}

void CopyRows(const FieldPlan& plan, std::span<const int> from, int size, SlotFields& slot,
              std::vector<uint8_t>& scratch) {
  for (size_t k = 0; k < slot.columns.size(); ++k) {
    const ColumnPlan& c = plan.columns()[k];
    ColumnBuffer& b = slot.columns[k];
    if (c.kind == ColumnKind::kVariable) CompactVariable(c, from, size, b, scratch);
    for (int i = 0; i < size; ++i) {
      const int j = from[size_t(i)];
      if (j == i) continue;
      CopyRow(b.present, 1, i, j);
      if (c.kind == ColumnKind::kLabel || c.kind == ColumnKind::kFixed ||
          c.kind == ColumnKind::kTransformed) {
        CopyRow(b.values, c.row_bytes, i, j);
      }
      if (c.image_shapes) std::copy_n(&b.shapes[3 * size_t(j)], 3, &b.shapes[3 * size_t(i)]);
    }
  }
  for (int i = 0; i < size; ++i) {
    const size_t to = size_t(i), j = size_t(from[to]);
    if (j == to) continue;
    std::copy_n(&slot.crops[4 * j], 4, &slot.crops[4 * to]);
    std::copy_n(&slot.sizes[2 * j], 2, &slot.sizes[2 * to]);
    slot.flips[to] = slot.flips[j];
  }
}

BatchField FieldView(const FieldPlan& plan, const SlotFields& slot, int k, int size) {
  const ColumnPlan& c = plan.columns()[size_t(k)];
  const ColumnBuffer& b = slot.columns[size_t(k)];
  const Field& f = plan.fields()[size_t(c.field)];
  BatchField out;
  out.name = f.name;
  out.type = f.type;
  out.variable = c.kind == ColumnKind::kVariable;
  out.dtype = c.dtype;
  out.rank = c.rank;
  out.shape = c.shape;
  out.shape[0] = out.variable ? b.offsets[size_t(size)] : size;
  out.values = c.kind == ColumnKind::kImages ? nullptr : b.values.data();
  out.offsets = out.variable ? b.offsets.data() : nullptr;
  out.present = b.present.data();
  out.image_shapes = c.image_shapes ? b.shapes.data() : nullptr;
  out.transformed = c.kind == ColumnKind::kImages || c.kind == ColumnKind::kTransformed;
  out.optional = f.optional;
  return out;
}

}  // namespace shardpack::reader
