"""Movie posters through the real executables (docs/protocol.md, GetRendition and the
`thumbnails` queue): a portrait phone-style movie made by ffmpeg is stored untouched, has no
rendition until the thumbnail worker made its poster, then has upright JPEG thumbnails of its
frame at 1 s, and GetRendition serves them."""

from __future__ import annotations

import signal
import subprocess

import pytest

from homepwner_client import RpcError
from test_jobs import IMAGES, images, put, start_worker, thumbnails_of, wait_for  # noqa: F401 (images: a fixture)

# Black for the first second, then red over the top half and blue under it.
SCENE = ("drawbox=x=0:y=0:w=iw:h=ih/2:color=red:t=fill:enable='gte(t,1)',"
         "drawbox=x=0:y=ih/2:w=iw:h=ih/2:color=blue:t=fill:enable='gte(t,1)'")


def ffmpeg(*arguments: str, data: bytes = b"") -> bytes:
    done = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", *arguments], input=data, capture_output=True, check=True)
    return done.stdout


def rgb(jpeg: bytes) -> tuple[int, int, bytes]:
    """The JPEG's size and RGB pixels, decoded by ffmpeg."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", "-"],
                           input=jpeg, capture_output=True, check=True).stdout.decode().strip()
    width, height = (int(v) for v in probe.split(","))
    return width, height, ffmpeg("-f", "image2pipe", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-", data=jpeg)


def test_a_portrait_movie_gets_upright_poster_thumbnails_from_the_worker(images, pb, tmp_path):  # noqa: F811
    service, client = images
    movie_path = tmp_path / "portrait.mp4"
    ffmpeg("-f", "lavfi", "-i", "color=c=black:s=320x240:r=25:d=3", "-vf", SCENE, "-c:v", "libx264", "-pix_fmt", "yuv420p",
           "-f", "mp4", str(tmp_path / "landscape.mp4"))
    ffmpeg("-i", str(tmp_path / "landscape.mp4"), "-c", "copy", "-metadata:s:v", "rotate=90", str(movie_path))
    movie = movie_path.read_bytes()
    info = put(client, pb, movie)
    assert (info.media_type, info.content_type) == (pb.images.MOVIE, "video/mp4")
    stored = client.call(IMAGES + "GetImage", pb.images.GetImageRequest(key=info.key), pb.images.GetImageResponse)
    assert stored.data == movie

    # No worker yet: no poster, and GetRendition says how to get one.
    with pytest.raises(RpcError) as refused:
        client.call(IMAGES + "GetRendition", pb.images.GetRenditionRequest(key=info.key, width=64, height=64),
                    pb.images.GetRenditionResponse)
    assert refused.value.code == 9
    assert f"image {info.key} is video/mp4, a movie whose poster has not been made yet" in refused.value.message

    worker, log = start_worker("thumbnail-worker", service.rpc, tmp_path)
    try:
        wait_for(lambda: len(thumbnails_of(client, pb, info.key)) == 3)
        # Upright (the display matrix turns it a quarter: 240×320), never enlarged past it.
        sizes = sorted((t.width, t.height) for t in thumbnails_of(client, pb, info.key))
        assert sizes == [(48, 64), (192, 256), (240, 320)]
        rendition = client.call(IMAGES + "GetRendition", pb.images.GetRenditionRequest(key=info.key, width=256, height=256),
                                pb.images.GetRenditionResponse)
        assert rendition.info.kind == pb.images.THUMBNAIL and (rendition.info.width, rendition.info.height) == (192, 256)
        assert rendition.source.key == info.key and rendition.source.media_type == pb.images.MOVIE
        width, height, pixels = rgb(rendition.data)
        assert (width, height) == (192, 256)

        def colour(x: int, y: int) -> tuple[int, ...]:
            return tuple(pixels[(y * width + x) * 3:(y * width + x) * 3 + 3])
        # The scene's top (red) is on the left, as ffmpeg shows the movie; its bottom (blue) on the right.
        left, right = colour(48, 128), colour(144, 128)
        assert left[0] > 200 and left[2] < 60, left
        assert right[2] > 200 and right[0] < 60, right
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=20)
    assert code == 0, log.read_text(errors="replace")
