#!/usr/bin/env bash
# Packs what a GPU machine without package registries needs to run the GPU checks
# (benchmarks/gpu_check.sh), on a machine that reaches them. From the repository root:
#
#     bash benchmarks/gpu_pack.sh            # writes .whl/site.tar.xz (about 39 MB), ignored by git
#
# The wheels of benchmarks/gpu_wheels.txt (CPython 3.12, manylinux x86-64, no dependencies: the GPU
# machine's image has the rest) are unpacked into one folder, their compiled modules stripped of
# symbols (270 MB -> 138 MB) and the folder compressed with xz, so that the repository and the pack
# travel together under a 64 MiB limit. When ../shared/gpu/host_check.py exists it is copied beside
# the pack. Needs pip, unzip, strip and xz.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platforms=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms="$platforms --platform $p"
done
# shellcheck disable=SC2086  # the platform options are words
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  $platforms -d "$work/wheels" -r benchmarks/gpu_wheels.txt

mkdir -p "$work/site"
for wheel in "$work"/wheels/*.whl; do
  unzip -q -o "$wheel" -d "$work/site"
done
find "$work/site" -name __pycache__ -prune -exec rm -rf {} +
find "$work/site" -name "*.so" -exec strip --strip-unneeded {} +

mkdir -p .whl
tar -C "$work/site" -cf - . | xz -T0 -6 >.whl/site.tar.xz.part
mv .whl/site.tar.xz.part .whl/site.tar.xz
if [ -f ../shared/gpu/host_check.py ]; then
  cp ../shared/gpu/host_check.py .whl/host_check.py
fi
echo "wrote .whl/site.tar.xz ($(du -h .whl/site.tar.xz | cut -f1)): $(ls "$work"/wheels | wc -l) wheels"
