// The opener: Reader::Open checks and resolves the options, opens the
// dataset, makes the transform, the pipeline and, for a device, the GPU
// staging.
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "dataset/view.h"
#include "reader/epoch_share.h"
#include "reader/reader_impl.h"
#include "reader/reader_mix.h"
#include "reader/storage_handle.h"
#include "remote/storage.h"

namespace shardpack {

using reader::CheckOptions;
using reader::Pipeline;
using reader::PlanOptionsOf;
using reader::ResolveRank;

namespace {


// The element type of a reader's batches, built on the host with `host`
// (HostOptions) and, when `staged`, copied to a device whose kernel may
// convert them (options.device_dtype).
ElementType BatchDType(const ReaderOptions& host, bool staged) {
  if (staged && host.device_dtype == DeviceDType::kFloat16) return ElementType::kFloat16;
  if (staged && host.device_dtype == DeviceDType::kFloat32) return ElementType::kFloat32;
  return host.dtype == DType::kFloat32 ? ElementType::kFloat32 : ElementType::kUint8;
}

// The CUDA engine for `device`, or null with why batches stay in host
// memory in `why` (Reader::device_fallback(): the tools print it).
std::unique_ptr<reader::CopyEngine> DeviceEngine(const ReaderOptions& o, std::string* why) {
  absl::StatusOr<std::unique_ptr<reader::CopyEngine>> engine =
      reader::MakeCudaCopyEngine(o.device, o.consumer_stream);
  if (engine.ok()) return *std::move(engine);
  *why = absl::StrCat("no CUDA device ", o.device, " (", engine.status().message(),
                      "): batches stay in host memory");
  return nullptr;
}

}  // namespace


absl::Status Reader::Impl::HostOptions(ReaderOptions* host) {
  *host = options_;
  if (options_.device_dtype == DeviceDType::kAsHost) return absl::OkStatus();
  if (engine_ != nullptr) {
    host->layout = OutputLayout::kNHWC;
    return absl::OkStatus();
  }
  if (options_.device_dtype == DeviceDType::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_dtype float16 needs CUDA device ", options_.device, ": ", no_device_));
  }
  host->dtype = DType::kFloat32;
  return absl::OkStatus();
}

absl::Status Reader::Impl::Init(const ReaderOptions& options,
                                std::unique_ptr<reader::CopyEngine> engine) {
  options_ = options;
  SP_RETURN_IF_ERROR(CheckOptions(options_));
  SP_RETURN_IF_ERROR(ResolveRank(&options_));
  engine_ = std::move(engine);
  if (engine_ == nullptr && options_.device >= 0) engine_ = DeviceEngine(options_, &no_device_);
  ReaderOptions host;
  SP_RETURN_IF_ERROR(HostOptions(&host));
  dtype_ = BatchDType(host, engine_ != nullptr);
  plan_ = PlanOptionsOf(options_);
  SP_RETURN_IF_ERROR(OpenSources());
  host.shuffle_bytes = options_.shuffle_bytes;  // chosen with the dataset open
  SP_RETURN_IF_ERROR(MakeTransforms(host));
  if (engine_ != nullptr && transform_->shape().sample_bytes == 0) {
    return absl::InvalidArgumentError(
        "device: no image field is transformed, so there are no images to stage");
  }
  // The one place the worker count is resolved: the pipeline and the ring's
  // default take it from here.
  host.threads = options_.threads = reader::WorkerThreads(options_.threads);
  int workers = options_.threads;
  if (engine_ != nullptr) {
    device_sample_bytes_ = DeviceSampleBytes();
    options_.device_buffers = reader::DeviceBuffersFor(
        options_.device_buffers, uint64_t(options_.batch_size) * device_sample_bytes_);
    // A host slot stays with the staging chain from its build to its copy's
    // end: up to a device buffer's worth more slots than workers are in use.
    workers += options_.device_buffers;
  }
  host.ring_slots = options_.ring_slots = reader::RingSlotsFor(
      options_.ring_slots, uint64_t(options_.batch_size) * transform_->shape().sample_bytes,
      workers);
  epoch_batches_ = planner_->batches_per_epoch();
  if (epoch_batches_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(), ": ", dataset_.records, " records give rank ", options_.rank, " of ",
        options_.world_size, " no batch of ", options_.batch_size));
  }
  int num_labels = std::max<int>(1, static_cast<int>(schema_.labels.size()));
  const reader::BatchSpec spec{transform_.get(), &followers_, &fields_, num_labels};
  pipeline_ = std::make_unique<Pipeline>(reader::PipelineConfigOf(host), &dataset_, spec,
                                         planner_.get(), engine_.get());
  SP_RETURN_IF_ERROR(pipeline_->CheckRing(options_.path));
  ring_ = &pipeline_->host_ring();
  sample_bytes_ = transform_->shape().sample_bytes;
  if (engine_ != nullptr) SP_RETURN_IF_ERROR(InitStaging(num_labels));
  ResizeSlots(ring_->slots());
  return absl::OkStatus();
}

absl::Status Reader::Impl::MakeTransforms(const ReaderOptions& host) {
  SP_ASSIGN_OR_RETURN(fields_, reader::FieldPlan::Make(schema_, options_));
  if (!fields_.active()) {
    SP_ASSIGN_OR_RETURN(reader::SampleTransform t,
                        reader::SampleTransform::Make(host, dataset_.source->image()));
    transform_ = std::make_unique<reader::SampleTransform>(std::move(t));
    return absl::OkStatus();
  }
  // No transformed field: images() is empty (shape [batch, 0, 0, 0]).
  transform_ = std::make_unique<reader::SampleTransform>();
  const std::vector<reader::TransformedField>& transformed = fields_.transformed();
  if (transformed.empty()) return absl::OkStatus();
  const Field& lead = fields_.fields()[size_t(transformed[0].field)];
  absl::StatusOr<reader::SampleTransform> t =
      reader::SampleTransform::Make(host, lead.image, transformed[0].interpolation);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("image field '", lead.name, "': ", t.status().message()));
  }
  transform_ = std::make_unique<reader::SampleTransform>(*std::move(t));
  for (size_t k = 1; k < transformed.size(); ++k) {
    SP_RETURN_IF_ERROR(MakeFollower(host, static_cast<int>(k)));
  }
  return absl::OkStatus();
}

// A follower is made with the leader's options, but a label map (nearest)
// stays uint8: its values are classes, not intensities to normalize.
absl::Status Reader::Impl::MakeFollower(const ReaderOptions& host, int k) {
  const reader::TransformedField& t = fields_.transformed()[size_t(k)];
  const Field& f = fields_.fields()[size_t(t.field)];
  const Field& lead = fields_.fields()[size_t(fields_.transformed()[0].field)];
  ReaderOptions o = host;
  if (t.interpolation == reader::Interpolation::kNearest) o.dtype = DType::kUint8;
  const bool resized = o.transform.kind == Transform::Kind::kRandomResizedCrop ||
                       o.transform.kind == Transform::Kind::kCenterCrop;
  if (!resized && (f.image.height != lead.image.height || f.image.width != lead.image.width)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image field '", f.name, "' is ", f.image.height, "x", f.image.width, ", '", lead.name,
        "' ", lead.image.height, "x", lead.image.width,
        ": a crop without a resize takes the same pixels of both, so they need one size"));
  }
  absl::StatusOr<reader::SampleTransform> made =
      reader::SampleTransform::Make(o, f.image, t.interpolation);
  if (!made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("image field '", f.name, "': ", made.status().message()));
  }
  fields_.SetOutput(k, made->shape(), o.layout, o.dtype);
  followers_.push_back(*std::move(made));
  return absl::OkStatus();
}

absl::Status Reader::Impl::OpenSources() {
  // What a dataset in an object store is read through: the Storage the
  // options share, else one of the reader's own from their cache (else the
  // environment's, read when a URL is opened).
  SP_ASSIGN_OR_RETURN(storage_, reader::ResolveStorage(options_.storage, options_.cache_dir,
                                                       options_.cache_bytes));
  return OpenDatasetOrMixture();
}

// kAutoShuffleBytes: chosen from the dataset's units, before any plan.
void Reader::Impl::ResolveShuffleBytes() {
  if (options_.shuffle_bytes != kAutoShuffleBytes) return;
  options_.shuffle_bytes = reader::ChosenShuffleBytes(dataset_.units(), options_.world_size);
  plan_.budget_bytes = options_.shuffle_bytes;
}

absl::Status Reader::Impl::OpenDatasetOrMixture() {
  // The window the I/O engine is chosen for, before the units are known.
  const uint64_t window = options_.shuffle_bytes == kAutoShuffleBytes
                              ? reader::kWholeShareBytes
                              : options_.shuffle_bytes;
  ReaderOptions mixed = options_;
  mixed.shuffle_bytes = window;
  if (options_.sources.empty()) {
    SP_ASSIGN_OR_RETURN(const bool view, dataset::IsViewFile(options_.path));
    // A view is read as a mixture of one source, drawn whole each epoch.
    if (view) mixed.sources = {{std::exchange(mixed.path, ""), 0, 1.0, 0}};
  }
  if (mixed.sources.empty()) {
    SP_ASSIGN_OR_RETURN(dataset_,
                        reader::OpenStreamDataset(options_.path, options_.io, storage_, window));
    ResolveShuffleBytes();
    schema_ = dataset_.manifest().schema;
    fingerprint_ = reader::MemberFingerprint(dataset_.members[0], dataset_.units());
    planner_ = std::make_unique<reader::DatasetPlanner>(dataset_.units(), plan_);
    sources_ = {{options_.path, dataset_.records, dataset_.records,
                 reader::SamplesPerRank(dataset_.records, plan_)}};
    return absl::OkStatus();
  }
  SP_ASSIGN_OR_RETURN(reader::OpenedMix mix, reader::OpenMix(mixed, storage_));
  dataset_ = std::move(mix.dataset);
  ResolveShuffleBytes();
  schema_ = std::move(mix.schema);
  fingerprint_ = mix.fingerprint;
  sources_ = std::move(mix.sources);
  auto planner = std::make_unique<reader::MixPlanner>(std::move(mix.plans), plan_);
  for (size_t s = 0; s < sources_.size(); ++s) sources_[s].per_rank = planner->per_rank()[s];
  planner_ = std::move(planner);
  source_samples_.assign(sources_.size(), 0);
  return absl::OkStatus();
}

std::string Reader::Impl::Describe() const {
  if (options_.sources.empty()) return options_.path;  // a dataset or a view
  return absl::StrCat("the mixture of ", options_.sources.size(), " sources ('",
                      common::Excerpt(options_.sources[0].path), "', ...)");
}

// Bytes of a sample in a device buffer: the host's, or the finish's output.
size_t Reader::Impl::DeviceSampleBytes() const {
  const reader::OutputShape& shape = transform_->shape();
  if (options_.device_dtype == DeviceDType::kAsHost) return shape.sample_bytes;
  const size_t element = ElementBytes(dtype_);  // what the device kernel makes
  return size_t(shape.height) * shape.width * shape.channels * element;
}

absl::Status Reader::Impl::InitStaging(int num_labels) {
  const reader::OutputShape& shape = transform_->shape();
  reader::FinishParams finish;
  finish.enabled = options_.device_dtype != DeviceDType::kAsHost;
  finish.half = options_.device_dtype == DeviceDType::kFloat16;
  finish.nchw = options_.layout == OutputLayout::kNCHW;
  finish.height = shape.height;
  finish.width = shape.width;
  finish.channels = shape.channels;
  if (finish.enabled && shape.channels > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_dtype: images of ", shape.channels, " channels (at most 3)"));
  }
  finish.Normalize(options_.mean, options_.std);
  const size_t batch = static_cast<size_t>(options_.batch_size);
  SP_RETURN_IF_ERROR(engine_->Init(options_.device_buffers, batch * shape.sample_bytes,
                                   batch * device_sample_bytes_, finish));
  stager_ = std::make_unique<reader::Stager>(&pipeline_->host_ring(), engine_.get(),
                                               options_.device_buffers, shape.sample_bytes,
                                               options_.batch_size, num_labels, options_.keys,
                                               fields_);
  ring_ = stager_.get();
  sample_bytes_ = device_sample_bytes_;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Reader>> Reader::Open(const ReaderOptions& options) {
  return reader::OpenReaderWithEngine(options, nullptr);
}

absl::StatusOr<std::unique_ptr<Reader>> reader::OpenReaderWithEngine(
    const ReaderOptions& options, std::unique_ptr<CopyEngine> engine) {
  return ::shardpack::ReaderAccess::Open(options, std::move(engine));
}

absl::StatusOr<std::unique_ptr<Reader>> ReaderAccess::Open(
    const ReaderOptions& options, std::unique_ptr<reader::CopyEngine> engine) {
  auto impl = std::make_unique<Reader::Impl>();
  SP_RETURN_IF_ERROR(impl->Init(options, std::move(engine)));
  return Reader::Impl::Wrap(std::move(impl));
}

}  // namespace shardpack
