#!/usr/bin/env bash
# The common part of cifar10.sh and cifar100.sh: fetch an official CIFAR
# binary archive (or take one given with --archive), check its published MD5,
# extract it and pack the train and test splits with shardpack. Not run
# directly: the two wrappers set NAME, URL_DEFAULT, MD5_DEFAULT, ARCHIVE_NAME,
# FOLDER and VARIANT and source this file.

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/../.." && pwd)"

usage() {
  cat <<EOF
usage: $(basename "$0") [-o OUT] [--archive FILE] [--work DIR] [--url URL] [--md5 SUM]
                  [--keep] [-- SHARDPACK_CIFAR_OPTIONS...]

  -o, --out OUT    where the datasets go: OUT/train and OUT/test (default: ./${NAME//-/})
  --archive FILE   an already-downloaded ${ARCHIVE_NAME}: nothing is downloaded
  --work DIR       where the archive is downloaded and extracted (default: OUT/source)
  --url URL        download from URL (default: ${URL_DEFAULT})
  --md5 SUM        expected MD5 of the archive (default: the published ${MD5_DEFAULT})
  --keep           keep the extracted folder (default: removed after packing)
  -h, --help       this text

Options after -- go to \`shardpack cifar\` for both splits, e.g. --pad 4,
--layout chw, --compress zstd, --shard-size 64MiB, --overwrite, --quiet.
The shardpack binary is \$SHARDPACK, else the shardpack on PATH (pip install .),
else ${repo_root}/build/tools/shardpack (a source build).
EOF
}

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

out="./${NAME//-/}"
archive=""
work=""
url="${URL_DEFAULT}"
md5="${MD5_DEFAULT}"
keep=0
extra=()
while (($#)); do
  case "$1" in
    -o | --out) out="${2:?$1 needs a value}"; shift 2 ;;
    --archive) archive="${2:?$1 needs a value}"; shift 2 ;;
    --work) work="${2:?$1 needs a value}"; shift 2 ;;
    --url) url="${2:?$1 needs a value}"; shift 2 ;;
    --md5) md5="${2:?$1 needs a value}"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) usage >&2; exit 2 ;;
  esac
done
work="${work:-${out}/source}"

shardpack="${SHARDPACK:-$(command -v shardpack || echo "${repo_root}/build/tools/shardpack")}"
[[ -x "${shardpack}" ]] ||
  die "no shardpack on PATH and no binary at ${shardpack}: pip install . (from the repository), build it (cmake -S . -B build && cmake --build build) or set SHARDPACK"
command -v md5sum >/dev/null || die "md5sum not found (coreutils)"
command -v tar >/dev/null || die "tar not found"

# Downloads $1 to $2 through a .partial name. Fails, rather than hangs, when
# there is no network: connections time out after 20 s and a transfer that
# stalls below 1 KiB/s for a minute is abandoned.
download() {
  local from="$1" to="$2"
  echo "downloading ${from}" >&2
  if command -v curl >/dev/null; then
    curl -fL --connect-timeout 20 --retry 2 --speed-limit 1024 --speed-time 60 \
      -o "${to}.partial" "${from}" || return 1
  elif command -v wget >/dev/null; then
    wget --connect-timeout=20 --read-timeout=60 --tries=2 -O "${to}.partial" "${from}" ||
      return 1
  else
    die "neither curl nor wget is installed; download ${from} yourself and pass --archive FILE"
  fi
  mv "${to}.partial" "${to}"
}

mkdir -p "${work}"
if [[ -z "${archive}" ]]; then
  archive="${work}/${ARCHIVE_NAME}"
  if [[ ! -f "${archive}" ]]; then
    if ! download "${url}" "${archive}"; then
      rm -f "${archive}.partial"
      die "could not download ${url} (no internet access?). Fetch ${ARCHIVE_NAME} on a" \
        "machine that has it, copy it here and run again with --archive FILE"
    fi
  fi
fi
[[ -f "${archive}" ]] || die "${archive}: no such file"

echo "checking MD5 of ${archive}" >&2
actual="$(md5sum "${archive}" | cut -d' ' -f1)"
[[ "${actual}" == "${md5}" ]] ||
  die "${archive}: MD5 ${actual} is not the published ${md5}: a damaged or different file" \
    "(delete it and download again)"

echo "extracting into ${work}" >&2
rm -rf "${work:?}/${FOLDER}"
tar -xzf "${archive}" -C "${work}" "${FOLDER}"
[[ -d "${work}/${FOLDER}" ]] || die "${archive}: no ${FOLDER}/ inside"

for split in train test; do
  echo "packing ${split} into ${out}/${split}" >&2
  "${shardpack}" cifar "${work}/${FOLDER}" --cifar "${VARIANT}" --split "${split}" \
    -o "${out}/${split}" "${extra[@]}"
done

if ((keep == 0)); then
  rm -rf "${work:?}/${FOLDER}"
  rmdir "${work}" 2>/dev/null || true  # only when empty: a downloaded archive stays
fi
echo "done: ${out}/train ${out}/test" >&2
