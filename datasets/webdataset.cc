#include "datasets/webdataset.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::datasets {

bool SplitSampleName(std::string_view name, std::string_view* key, std::string_view* ext) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::string_view last = name.substr(base);
  if (slash == std::string_view::npos && last.size() >= 4 && last.starts_with("__") &&
      last.ends_with("__")) {
    return false;  // WebDataset's metadata member
  }
  const size_t dot = last.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  *key = name.substr(0, base + dot);
  *ext = last.substr(dot + 1);
  return true;
}

absl::StatusOr<bool> TarSamples::ReadMember() {
  while (true) {
    SP_ASSIGN_OR_RETURN(bool more, tar_->Next(&member_));
    if (!more) return false;
    std::string_view key, ext;
    if (!SplitSampleName(member_.name, &key, &ext)) continue;
    key_.assign(key);
    ext_.assign(ext);
    absl::AsciiStrToLower(&ext_);
    return true;
  }
}

absl::StatusOr<bool> TarSamples::Next(TarSample* sample) {
  sample->size = 0;
  if (!pending_) {
    SP_ASSIGN_OR_RETURN(pending_, ReadMember());
    if (!pending_) return false;
  }
  // The sample starts at the member read ahead: keep its bytes and those of
  // the members that follow with its key.
  tar_->KeepFrom(member_.offset);
  sample->key = key_;
  do {
    for (size_t i = 0; i < sample->size; ++i) {
      if (sample->files[i].ext == ext_) {
        return common::DataLossAt(tar_->name(), member_.offset,
                                  absl::StrCat("sample '", common::Excerpt(sample->key),
                                               "' holds '", common::Excerpt(ext_), "' twice"));
      }
    }
    if (sample->size == sample->files.size()) sample->files.emplace_back();
    SampleFile& file = sample->files[sample->size++];
    file.ext.assign(ext_);
    file.member.name.assign(member_.name);
    file.member.offset = member_.offset;
    file.member.data_offset = member_.data_offset;
    file.member.size = member_.size;
    SP_ASSIGN_OR_RETURN(pending_, ReadMember());
  } while (pending_ && key_ == sample->key);
  return true;
}

}  // namespace shardpack::datasets
