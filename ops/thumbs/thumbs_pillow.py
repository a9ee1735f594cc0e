"""The Pillow baseline of `ops/bench thumbs`: the Thumbnailer's work with Pillow.

Each JPEG is opened with draft mode (libjpeg's DCT scaling) to at least twice the largest FIT
size, as Image.thumbnail does with its reducing_gap of 2, then each size is resized from those
pixels with the BOX filter (area averaging, as RGBImage.resized) and saved at the quality asked
for, 4:2:0. One process per worker, files split as the C loop splits them.

With --cascade, the sizes are made largest first, each from the smallest one made already that
has at least twice its pixels in each dimension (else from the decode), as the Thumbnailer and
the C loop do: Pillow given the same shortcut.

python thumbs_pillow.py [--cascade] WORKERS ROUNDS QUALITY SIZES(64,256,1024) FILE...
  → "images <n> seconds <s> bytes <b>"
"""
import io
import multiprocessing
import sys
import time

from PIL import Image


CASCADE = False


def thumbnails(data, sizes, quality):
    written = 0
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        largest = max(sizes)
        scale = min(1, 2 * min(largest / width, largest / height))
        image.draft("RGB", (int(width * scale + 0.999), int(height * scale + 0.999)))
        decoded = image.convert("RGB")
    made = []
    for size in sorted(sizes, reverse=True) if CASCADE else sizes:
        fit = min(1, min(size / width, size / height))
        box = (max(1, round(width * fit)), max(1, round(height * fit)))
        source = decoded
        for image in made:
            if image.size[0] >= 2 * box[0] and image.size[1] >= 2 * box[1] and image.size[0] * image.size[1] < source.size[0] * source.size[1]:
                source = image
        small = source if box == source.size else source.resize(box, Image.Resampling.BOX)
        if CASCADE and small is not source:
            made.append(small)
        output = io.BytesIO()
        small.save(output, "JPEG", quality=quality, subsampling="4:2:0")
        written += output.tell()
    return written


def work(arguments):
    index, workers, rounds, quality, sizes, paths = arguments
    datas = [open(path, "rb").read() for path in paths[index::workers]]
    ready.wait()
    written = 0
    for _ in range(rounds):
        for data in datas:
            written += thumbnails(data, sizes, quality)
    return written


def start(barrier):
    global ready
    ready = barrier


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments and arguments[0] == "--cascade":
        CASCADE = True
        arguments = arguments[1:]
    workers, rounds, quality = int(arguments[0]), int(arguments[1]), int(arguments[2])
    sizes = [int(size) for size in arguments[3].split(",")]
    paths = arguments[4:]
    barrier = multiprocessing.Barrier(workers + 1)
    with multiprocessing.Pool(workers, initializer=start, initargs=(barrier,)) as pool:
        pending = pool.map_async(work, [(i, workers, rounds, quality, sizes, paths) for i in range(workers)])
        # Timed from when every worker has read its files.
        barrier.wait()
        began = time.monotonic()
        written = sum(pending.get())
        elapsed = time.monotonic() - began
    print(f"images {len(paths) * rounds} seconds {elapsed:.3f} bytes {written}")
