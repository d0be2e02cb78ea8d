#!/usr/bin/env bash
# Fetches the official CIFAR-10 binary archive, checks its published MD5,
# extracts it and packs the train and test splits with `shardpack cifar`.
#
#   datasets/scripts/cifar10.sh -o data/cifar10                 # download, then pack
#   datasets/scripts/cifar10.sh --archive ~/cifar-10-binary.tar.gz -o data/cifar10
#   datasets/scripts/cifar10.sh -o data/cifar10 -- --pad 4 --overwrite
#
# Result: OUT/train (50,000 records) and OUT/test (10,000 records), each a
# shardpack dataset of raw 32x32 RGB pixels (no JPEG re-encode) with the ten
# class names from batches.meta.txt. Needs bash, tar, md5sum, and curl or
# wget when it downloads. Run with -h for the options.
set -euo pipefail

readonly NAME="cifar-10"
readonly URL_DEFAULT="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
# Published on https://www.cs.toronto.edu/~kriz/cifar.html beside the link.
readonly MD5_DEFAULT="c32a1d4ab5d03f1284b67883e8d87530"
readonly ARCHIVE_NAME="cifar-10-binary.tar.gz"
readonly FOLDER="cifar-10-batches-bin"
readonly VARIANT=10

# shellcheck source=datasets/scripts/cifar_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cifar_common.sh"
