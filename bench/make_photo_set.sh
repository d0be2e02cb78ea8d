#!/usr/bin/env bash
# Makes an ImageFolder of JPEG photographs for the JPEG benchmarks, from
# photographs that Debian ships (nothing here is a generated scene):
#
#   plasma-workspace-wallpapers  12 photographs, 2560x1600 and 3200x2000
#   python3-sklearn              china.jpg, flower.jpg (640x427)
#   python3-skimage              rocket.jpg, and astronaut, chelsea, coffee,
#                                motorcycle_left (lossless PNG photographs)
#
# The packages are fetched with `apt-get download` (no root needed) into a
# cache folder and only the listed files are taken out of them. Each output
# image is a random crop of one photograph, downscaled (Lanczos) as
# ImageNet's web photos were, to 500x375 (landscape 4:3, 60%), 375x500
# (portrait, 20%) or 500x333 (3:2, 20%), and written once by libjpeg-turbo
# (Pillow) at a quality drawn from 70 to 95, 4:2:0, standard Huffman tables:
# JPEGs as a camera or a web site leaves them, not re-coded afterwards. One
# class folder per photograph (19). bench/photo_crops.py does the cropping
# (the same files for a seed, on any number of cores).
#
#   bench/make_photo_set.sh OUT_DIR [--count N] [--seed S] [--cache DIR]
#
# --count: images in all (default 2000), spread over the classes.
# --cache: where the .deb files are kept between runs (default
#   ${XDG_CACHE_HOME:-$HOME/.cache}/shardpack-photos).
# Needs /usr/bin/python3 with Debian's python3-pil (installed with apt-get
# when missing; that needs root or sudo).
set -euo pipefail

usage() { sed -n '2,/^set -euo pipefail$/p' "$0" | sed '$d'; }
out=""
count=2000
seed=1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/shardpack-photos"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "make_photo_set.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    *) [[ -z "$out" ]] || { echo "make_photo_set.sh: one OUT_DIR only" >&2; exit 2; }
       out="$1"; shift ;;
  esac
done
[[ -n "$out" ]] || { usage >&2; exit 2; }
[[ "$count" =~ ^[1-9][0-9]*$ ]] || { echo "make_photo_set.sh: --count must be a positive integer" >&2; exit 2; }

python=/usr/bin/python3
if ! "$python" -c 'import PIL' 2>/dev/null; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y python3-pil >&2
fi

# package, then the photographs in it (paths inside the package).
wallpapers=usr/share/wallpapers
sources=(
  "plasma-workspace-wallpapers"
  "$wallpapers/Autumn/contents/images/2560x1600.jpg"
  "$wallpapers/BytheWater/contents/images/2560x1600.jpg"
  "$wallpapers/ColdRipple/contents/images/2560x1600.jpg"
  "$wallpapers/ColorfulCups/contents/images/2560x1600.jpg"
  "$wallpapers/DarkestHour/contents/images/2560x1600.jpg"
  "$wallpapers/EveningGlow/contents/images/2560x1600.jpg"
  "$wallpapers/FallenLeaf/contents/images/2560x1600.jpg"
  "$wallpapers/Grey/contents/images/2560x1600.jpg"
  "$wallpapers/Kite/contents/images/2560x1600.jpg"
  "$wallpapers/OneStandsOut/contents/images/2560x1600.jpg"
  "$wallpapers/Path/contents/images/2560x1600.jpg"
  "$wallpapers/summer_1am/contents/images/2560x1600.jpg"
  "python3-sklearn"
  "usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg"
  "usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg"
  "python3-skimage"
  "usr/lib/python3/dist-packages/skimage/data/rocket.jpg"
  "usr/lib/python3/dist-packages/skimage/data/astronaut.png"
  "usr/lib/python3/dist-packages/skimage/data/chelsea.png"
  "usr/lib/python3/dist-packages/skimage/data/coffee.png"
  "usr/lib/python3/dist-packages/skimage/data/motorcycle_left.png"
)

mkdir -p "$cache/files"
photos=()
package=""
for s in "${sources[@]}"; do
  if [[ "$s" != */* ]]; then package="$s"; continue; fi
  photos+=("$cache/files/$s")
  [[ -f "$cache/files/$s" ]] && continue
  deb=$(ls "$cache/${package}"_*.deb 2>/dev/null | head -n 1 || true)
  if [[ -z "$deb" ]]; then
    echo "make_photo_set.sh: downloading $package" >&2
    (cd "$cache" && apt-get download "$package" >&2)
    deb=$(ls "$cache/${package}"_*.deb | head -n 1)
  fi
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache/files" "./$s"
done

mkdir -p "$out"
"$python" "$(dirname "$0")/photo_crops.py" "$out" "${photos[@]}" --count "$count" --seed "$seed"
