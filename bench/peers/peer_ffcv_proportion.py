"""FFCV as its ImageNet recipe writes the images: half of them raw pixels,
half JPEGs, at most 500 px on the long side (ffcv-imagenet's
write_imagenet.sh: RGBImageField(write_mode="proportion",
compress_probability=0.50, max_resolution=500, jpeg_quality=90)). A raw
image costs no decode, so the loader does less work an image than with
every image a JPEG (peer_ffcv.py), for a larger file; images above 500 px
are stored smaller than the source (the crop is 224 px either way). The
loader is peer_ffcv's. Imagefolder only: CIFAR is stored raw by both."""

import peer_ffcv
import peers_shared as shared

NAME = "ffcv-proportion"
VERSION = peer_ffcv.VERSION
KINDS = ("imagefolder",)
SETTINGS = peer_ffcv.SETTINGS.replace(
    "imagefolder RGBImageField(jpg, q90, no max_resolution)",
    "imagefolder RGBImageField(proportion, compress_probability=0.5, max_resolution=500, q90)")


def convert(kind, src, out_dir, workers):
    shared.require(NAME, kind, peer_ffcv.DatasetWriter, VERSION)
    field = peer_ffcv.RGBImageField(write_mode="proportion", compress_probability=0.5,
                                    max_resolution=500, jpeg_quality=90)
    peer_ffcv.convert(kind, src, out_dir, workers, image_field=field)


loader = peer_ffcv.loader
