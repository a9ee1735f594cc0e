#!/usr/bin/env python3
"""Cross-checks `ops/bench sharpness` against known implementations, once, by hand.

    homepwner-bench sharpness --save DIR --only TEXT     (writes STEM-SIZE.jpg and STEM-SIZE-reference.ppm)
    python ops/thumbs/crosscheck.py DIR ORIGINAL...      (in a venv with pillow and scikit-image)

For each thumbnail in DIR: scikit-image's structural_similarity of its luma (BT.601, float) and
its reference's, with the Gaussian window the bench uses (sigma 1.5, no sample covariance,
data range 255), to set beside the SSIM the bench printed; and for each reference whose original
is given, Pillow's LANCZOS resize of the upright original to the same size, with how far the
bench's Lanczos-3 is from it (max and mean absolute difference per sample).
"""
import pathlib
import sys

import numpy as np
from PIL import Image, ImageOps
from skimage.metrics import structural_similarity


def luma(image):
    rgb = np.asarray(image.convert("RGB"), dtype=np.float64)
    return 0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]


def main():
    folder = pathlib.Path(sys.argv[1])
    originals = {pathlib.Path(p).stem: p for p in sys.argv[2:]}
    for thumbnail in sorted(folder.glob("*.jpg")):
        reference_path = thumbnail.with_name(thumbnail.stem + "-reference.ppm")
        with Image.open(thumbnail) as t, Image.open(reference_path) as r:
            ssim = structural_similarity(
                luma(t), luma(r), gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255)
            line = f"{thumbnail.name}: scikit-image SSIM {ssim:.6f}"
            stem = thumbnail.stem.rsplit("-", 1)[0]
            if stem in originals:
                with Image.open(originals[stem]) as original:
                    upright = ImageOps.exif_transpose(original).convert("RGB")
                    pillow = np.asarray(upright.resize(r.size, Image.LANCZOS), dtype=np.int16)
                    ours = np.asarray(r.convert("RGB"), dtype=np.int16)
                    diff = np.abs(pillow - ours)
                    line += f"; Lanczos vs Pillow LANCZOS: max {diff.max()}, mean {diff.mean():.4f} levels"
            print(line)


if __name__ == "__main__":
    main()
