#!/usr/bin/env bash
# Fetches the official CIFAR-100 binary archive, checks its published MD5,
# extracts it and packs the train and test splits with `shardpack cifar`.
#
#   datasets/scripts/cifar100.sh -o data/cifar100               # download, then pack
#   datasets/scripts/cifar100.sh --archive ~/cifar-100-binary.tar.gz -o data/cifar100
#   datasets/scripts/cifar100.sh -o data/cifar100 -- --pad 4 --overwrite
#
# Result: OUT/train (50,000 records) and OUT/test (10,000 records), each a
# shardpack dataset of raw 32x32 RGB pixels (no JPEG re-encode) with two
# labels per record, "fine" (100 classes) then "coarse" (20 superclasses),
# named from fine_label_names.txt and coarse_label_names.txt. Needs bash,
# tar, md5sum, and curl or wget when it downloads. Run with -h for the options.
set -euo pipefail

readonly NAME="cifar-100"
readonly URL_DEFAULT="https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
# Published on https://www.cs.toronto.edu/~kriz/cifar.html beside the link.
readonly MD5_DEFAULT="03b5dce01913d631647c71ecec9e9cb8"
readonly ARCHIVE_NAME="cifar-100-binary.tar.gz"
readonly FOLDER="cifar-100-binary"
readonly VARIANT=100

# shellcheck source=datasets/scripts/cifar_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_common.sh"
