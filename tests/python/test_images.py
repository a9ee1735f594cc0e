"""ImageService as docs/protocol.md section 11 describes it, against a real image-service
(and item-service for the delete cascade)."""

from __future__ import annotations

import hashlib
import os
import struct
import time
import uuid
import zlib
from pathlib import Path

import pytest

from homepwner_client import RpcError

IMAGES = "/homepwner.v1.ImageService/"
ITEMS = "/homepwner.v1.ItemService/"
REPO_ROOT = Path(__file__).resolve().parents[2]
# The photos the repository carries (Tests/Fixtures/README.md), MIT licensed.
PORTRAIT_6 = REPO_ROOT / "Tests" / "Fixtures" / "exif-orientation" / "Portrait_6.jpg"


@pytest.fixture(scope="module")
def jpeg() -> bytes:
    if not PORTRAIT_6.exists():
        pytest.fail(f"{PORTRAIT_6} is missing from the checkout")
    return PORTRAIT_6.read_bytes()


def call(client, pb, method, request):
    images = pb.images
    response = {
        "PutImage": images.ImageInfo, "BeginUpload": images.BeginUploadResponse,
        "AppendUpload": images.AppendUploadResponse, "CommitUpload": images.ImageInfo,
        "AbortUpload": images.AbortUploadResponse, "GetImage": images.GetImageResponse,
        "StatImage": images.ImageInfo, "ListImages": images.ListImagesResponse,
        "DeleteImage": images.DeleteImageResponse, "DeleteImagesForOwner": images.DeleteImagesForOwnerResponse,
        "GetRendition": images.GetRenditionResponse, "CacheStats": images.CacheStatsResponse,
        "PurgeCache": images.PurgeCacheResponse,
    }[method]
    return client.call(IMAGES + method, request, response, timeout_ms=15000)


def error_of(client, pb, method, request) -> RpcError:
    with pytest.raises(RpcError) as caught:
        call(client, pb, method, request)
    return caught.value


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a JPEG's SOF marker."""
    assert data[:3] == b"\xff\xd8\xff", "not a JPEG"
    at = 2
    while at < len(data):
        assert data[at] == 0xFF
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2:at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    raise AssertionError("no SOF marker")


def padded_jpeg(jpeg: bytes, total: int) -> bytes:
    """The JPEG grown to `total` bytes with COM (comment) segments after its APPn segments: still a valid JPEG."""
    at = 2
    while jpeg[at] == 0xFF and 0xE0 <= jpeg[at + 1] <= 0xEF:
        at += 2 + struct.unpack(">H", jpeg[at + 2:at + 4])[0]
    padding = bytearray()
    need = total - len(jpeg)
    while need > 0:
        body = min(need - 4, 65533)
        assert body >= 0
        padding += b"\xff\xfe" + struct.pack(">H", body + 2) + os.urandom(body)
        need -= body + 4
    data = jpeg[:at] + bytes(padding) + jpeg[at:]
    assert len(data) == total
    return data


def test_put_and_get_a_real_jpeg_whole_and_in_a_range(image_client, pb, jpeg):
    owner = str(uuid.uuid4())
    info = call(image_client, pb, "PutImage", pb.images.PutImageRequest(owner_key=owner, data=jpeg))
    assert info.key == str(uuid.UUID(info.key))
    assert (info.owner_key, info.kind, info.parent_key) == (owner, pb.images.ORIGINAL, "")
    assert (info.media_type, info.content_type) == (pb.images.IMAGE, "image/jpeg")
    assert info.size_bytes == len(jpeg)
    assert (info.width, info.height, info.orientation) == (1800, 1200, 6)  # as stored, before orientation
    assert info.checksum == sha256(jpeg)

    whole = call(image_client, pb, "GetImage", pb.images.GetImageRequest(key=info.key))
    assert whole.data == jpeg and whole.info == info
    assert sha256(whole.data) == info.checksum

    part = call(image_client, pb, "GetImage", pb.images.GetImageRequest(key=info.key, offset=1000, length=4096))
    assert part.data == jpeg[1000:5096] and part.info.size_bytes == len(jpeg)
    tail = call(image_client, pb, "GetImage", pb.images.GetImageRequest(key=info.key, offset=len(jpeg) - 10))
    assert tail.data == jpeg[-10:]  # length 0: to the end

    assert call(image_client, pb, "StatImage", pb.images.StatImageRequest(key=info.key.upper())) == info

    # The same client key again returns the stored image.
    keyed = call(image_client, pb, "PutImage", pb.images.PutImageRequest(owner_key=owner, data=jpeg, key=info.key))
    assert keyed == info


def test_ranges_outside_the_image(image_client, pb, jpeg):
    info = call(image_client, pb, "PutImage", pb.images.PutImageRequest(owner_key="ranges", data=jpeg))
    size = len(jpeg)
    for offset, length, code in [(size, 0, 11), (size - 10, 11, 11), (-1, 0, 3), (0, -1, 3)]:
        error = error_of(image_client, pb, "GetImage", pb.images.GetImageRequest(key=info.key, offset=offset, length=length))
        assert error.code == code, f"offset {offset} length {length}: {error.code} {error.message}"
    missing = str(uuid.uuid4())
    assert error_of(image_client, pb, "GetImage", pb.images.GetImageRequest(key=missing)).code == pb.rpc.NOT_FOUND
    assert error_of(image_client, pb, "GetImage", pb.images.GetImageRequest(key="zz")).code == pb.rpc.INVALID_ARGUMENT


def test_not_a_jpeg_is_invalid_argument(image_client, pb, jpeg):
    images = pb.images
    for request, fragment in [
        (images.PutImageRequest(data=b"hello, I am plain text and no image at all"), "not a JPEG"),
        (images.PutImageRequest(data=b""), "empty"),
        (images.PutImageRequest(data=jpeg[: len(jpeg) // 2]), "truncated"),
        (images.PutImageRequest(data=jpeg, content_type="image/png"), "content_type"),
        (images.PutImageRequest(data=jpeg, kind=images.EDITED), "parent_key"),
    ]:
        error = error_of(image_client, pb, "PutImage", request)
        assert error.code == pb.rpc.INVALID_ARGUMENT == 3
        assert fragment in error.message, error.message


def test_chunked_upload_of_three_chunks_with_checksum(image_client, pb, jpeg):
    images = pb.images
    data = padded_jpeg(jpeg, 3 * 1024 * 1024 + 17)
    begun = call(image_client, pb, "BeginUpload", images.BeginUploadRequest(
        owner_key="uploads", total_size=len(data), checksum=sha256(data)))
    assert begun.upload_id and begun.max_chunk_bytes >= len(data) // 3 + 1
    assert begun.expires_at_ms > time.time() * 1000

    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    for n in range(3):
        reply = call(image_client, pb, "AppendUpload", images.AppendUploadRequest(
            upload_id=begun.upload_id, offset=cut[n], data=data[cut[n]:cut[n + 1]]))
        assert reply.received_bytes == cut[n + 1]
        if n == 0:
            # A chunk at the wrong offset: 9, and the upload stays where it was.
            wrong = error_of(image_client, pb, "AppendUpload", images.AppendUploadRequest(
                upload_id=begun.upload_id, offset=0, data=data[: cut[1]]))
            assert wrong.code == pb.rpc.FAILED_PRECONDITION == 9
            assert f"append at offset {cut[1]}" in wrong.message
            # Past the declared total_size: 11.
            past = error_of(image_client, pb, "AppendUpload", images.AppendUploadRequest(
                upload_id=begun.upload_id, offset=cut[1], data=data[cut[1]:] + b"xx"))
            assert past.code == pb.rpc.OUT_OF_RANGE == 11

    info = call(image_client, pb, "CommitUpload", images.CommitUploadRequest(upload_id=begun.upload_id, checksum=sha256(data)))
    assert (info.size_bytes, info.checksum, info.content_type) == (len(data), sha256(data), "image/jpeg")
    assert (info.width, info.height) == (1800, 1200)
    stored = call(image_client, pb, "GetImage", images.GetImageRequest(key=info.key))
    assert stored.data == data

    gone = error_of(image_client, pb, "AppendUpload", images.AppendUploadRequest(
        upload_id=begun.upload_id, offset=len(data), data=b"x"))
    assert gone.code == pb.rpc.NOT_FOUND


def test_upload_errors(image_client, pb, jpeg):
    images = pb.images
    assert error_of(image_client, pb, "BeginUpload", images.BeginUploadRequest(total_size=0)).code == 3
    assert error_of(image_client, pb, "BeginUpload", images.BeginUploadRequest(total_size=10, checksum="md5:x")).code == 3
    # A checksum that does not match at commit discards the upload.
    begun = call(image_client, pb, "BeginUpload", images.BeginUploadRequest(
        total_size=len(jpeg), checksum="sha256:" + "0" * 64))
    early = error_of(image_client, pb, "CommitUpload", images.CommitUploadRequest(upload_id=begun.upload_id))
    assert early.code == pb.rpc.FAILED_PRECONDITION  # nothing received yet
    call(image_client, pb, "AppendUpload", images.AppendUploadRequest(upload_id=begun.upload_id, offset=0, data=jpeg))
    mismatch = error_of(image_client, pb, "CommitUpload", images.CommitUploadRequest(upload_id=begun.upload_id))
    assert mismatch.code == pb.rpc.INVALID_ARGUMENT and "discarded" in mismatch.message
    again = error_of(image_client, pb, "CommitUpload", images.CommitUploadRequest(upload_id=begun.upload_id))
    assert again.code == pb.rpc.NOT_FOUND
    # Abort drops it; a second abort is 5.
    begun = call(image_client, pb, "BeginUpload", images.BeginUploadRequest(total_size=5))
    call(image_client, pb, "AbortUpload", images.AbortUploadRequest(upload_id=begun.upload_id))
    assert error_of(image_client, pb, "AbortUpload", images.AbortUploadRequest(upload_id=begun.upload_id)).code == 5


def test_rendition_fit_200_is_an_upright_jpeg_within_the_box(image_client, pb, jpeg):
    images = pb.images
    info = call(image_client, pb, "PutImage", images.PutImageRequest(owner_key="renditions", data=jpeg))
    fit = call(image_client, pb, "GetRendition", images.GetRenditionRequest(
        key=info.key, width=200, height=200, mode=images.FIT))
    width, height = jpeg_size(fit.data)
    assert width <= 200 and height <= 200
    # Orientation 6 is applied: the 1800×1200 stored image displays as 1200×1800.
    assert (width, height) == (133, 200)
    assert (fit.info.width, fit.info.height, fit.info.orientation) == (width, height, 1)
    assert (fit.info.kind, fit.info.parent_key, fit.info.content_type) == (images.THUMBNAIL, info.key, "image/jpeg")
    assert fit.info.checksum == sha256(fit.data) and fit.info.size_bytes == len(fit.data)
    # `source` is the image it was made from, as StatImage answers it.
    stat = call(image_client, pb, "StatImage", images.StatImageRequest(key=info.key))
    assert fit.source == stat
    assert (fit.source.key, fit.source.checksum, fit.source.kind) == (info.key, sha256(jpeg), images.ORIGINAL)

    fill = call(image_client, pb, "GetRendition", images.GetRenditionRequest(
        key=info.key, width=200, height=100, mode=images.FILL))
    assert jpeg_size(fill.data) == (200, 100)
    big = call(image_client, pb, "GetRendition", images.GetRenditionRequest(key=info.key, width=5000, height=5000))
    assert jpeg_size(big.data) == (1200, 1800)  # FIT never enlarges

    bad = error_of(image_client, pb, "GetRendition", images.GetRenditionRequest(key=info.key, width=0, height=10))
    assert bad.code == pb.rpc.INVALID_ARGUMENT
    movie = call(image_client, pb, "PutImage", images.PutImageRequest(
        owner_key="renditions", data=b"\x00\x00\x00\x18ftypisom" + bytes(200)))
    assert (movie.media_type, movie.content_type) == (images.MOVIE, "video/mp4")
    refused = error_of(image_client, pb, "GetRendition", images.GetRenditionRequest(key=movie.key, width=10, height=10))
    assert refused.code == pb.rpc.FAILED_PRECONDITION == 9


def test_list_filters_and_pages_in_created_order(image_client, pb, jpeg):
    images = pb.images
    owner = str(uuid.uuid4())
    made = [call(image_client, pb, "PutImage", images.PutImageRequest(owner_key=owner, data=jpeg)) for _ in range(3)]
    edited = call(image_client, pb, "PutImage", images.PutImageRequest(kind=images.EDITED, parent_key=made[0].key, data=jpeg))
    assert edited.owner_key == owner  # copied from the parent
    made.append(edited)
    keys, token = [], ""
    while True:
        page = call(image_client, pb, "ListImages", images.ListImagesRequest(owner_key=owner, page_size=3, page_token=token))
        keys += [image.key for image in page.images]
        token = page.next_page_token
        if not token:
            break
    assert keys == [image.key for image in made]
    only_edited = call(image_client, pb, "ListImages", images.ListImagesRequest(owner_key=owner, kind=images.EDITED))
    assert [image.key for image in only_edited.images] == [edited.key]
    assert error_of(image_client, pb, "ListImages", images.ListImagesRequest(page_token="abc")).code == 3
    assert error_of(image_client, pb, "ListImages", images.ListImagesRequest(page_size=-1)).code == 3

    # DeleteImage takes the image's EDITED child with it.
    call(image_client, pb, "DeleteImage", images.DeleteImageRequest(key=made[0].key))
    assert error_of(image_client, pb, "StatImage", images.StatImageRequest(key=edited.key)).code == pb.rpc.NOT_FOUND
    assert error_of(image_client, pb, "DeleteImage", images.DeleteImageRequest(key=made[0].key)).code == pb.rpc.NOT_FOUND
    # DeleteImagesForOwner: the rest, then 0 on a repeat.
    first = call(image_client, pb, "DeleteImagesForOwner", images.DeleteImagesForOwnerRequest(owner_key=owner))
    assert first.deleted_count == 2
    assert not first.owner_deleted_recorded  # no owner_deleted asked: the owner may store again
    assert call(image_client, pb, "DeleteImagesForOwner", images.DeleteImagesForOwnerRequest(owner_key=owner)).deleted_count == 0
    assert error_of(image_client, pb, "DeleteImagesForOwner", images.DeleteImagesForOwnerRequest()).code == 3


def test_item_delete_cascades_to_the_items_images(client, image_client, pb, jpeg):
    item = client.call(ITEMS + "CreateItem", pb.items.CreateItemRequest(name="Cascading Mac"), pb.items.Item)
    image = call(image_client, pb, "PutImage", pb.images.PutImageRequest(owner_key=item.key, data=jpeg))
    client.call(ITEMS + "AttachPhoto", pb.items.AttachPhotoRequest(item_key=item.key, image_key=image.key), pb.items.Item)
    client.call(ITEMS + "DeleteItem", pb.items.DeleteItemRequest(key=item.key), pb.items.DeleteItemResponse)

    deadline = time.monotonic() + 20
    while call(image_client, pb, "ListImages", pb.images.ListImagesRequest(owner_key=item.key)).images:
        assert time.monotonic() < deadline, "the item's images were not deleted within 20 s"
        time.sleep(0.05)
    assert error_of(image_client, pb, "StatImage", pb.images.StatImageRequest(key=image.key)).code == pb.rpc.NOT_FOUND
    while client.call(ITEMS + "Stats", pb.items.ItemStatsRequest(), pb.items.ItemStatsResponse).pending_cascades:
        assert time.monotonic() < deadline, "pending_cascades did not return to 0 within 20 s"
        time.sleep(0.05)


def test_cache_stats_and_purge(image_client, pb, jpeg):
    images = pb.images
    info = call(image_client, pb, "PutImage", images.PutImageRequest(owner_key="cache", data=jpeg))
    call(image_client, pb, "GetImage", images.GetImageRequest(key=info.key))
    stats = call(image_client, pb, "CacheStats", images.CacheStatsRequest())
    assert stats.budget_bytes > 0 and stats.bytes <= stats.budget_bytes
    purged = call(image_client, pb, "PurgeCache", images.PurgeCacheRequest())
    assert (purged.entries, purged.bytes) == (0, 0)
    reasons = {p.reason: p.count for p in call(image_client, pb, "CacheStats", images.CacheStatsRequest()).purges}
    assert reasons.get("manual", 0) >= 1 and reasons.get("critical", 0) >= 1
    # Reads still work after a purge.
    assert call(image_client, pb, "GetImage", images.GetImageRequest(key=info.key)).data == jpeg
    assert error_of(image_client, pb, "PurgeCache", images.PurgeCacheRequest(level=5)).code == 3


def exif_app1(date: str, offset: str | None = None) -> bytes:
    """An APP1 Exif segment (big-endian TIFF) whose Exif IFD (IFD0's tag 0x8769) holds
    DateTimeOriginal (0x9003) and, if given, OffsetTimeOriginal (0x9011), ASCII as cameras
    write them."""
    values = [(0x9003, date.encode() + b"\0")] + ([(0x9011, offset.encode() + b"\0")] if offset else [])
    data_at = 26 + 2 + 12 * len(values) + 4  # the values follow the Exif IFD at 26
    entries, data = b"", b""
    for tag, value in values:
        entries += struct.pack(">HHII", tag, 2, len(value), data_at + len(data))
        data += value + (b"\0" if len(value) % 2 else b"")
    tiff = b"MM\0*" + struct.pack(">I", 8) + struct.pack(">HHHIII", 1, 0x8769, 4, 1, 26, 0)
    tiff += struct.pack(">H", len(values)) + entries + struct.pack(">I", 0) + data
    payload = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def test_taken_at_is_when_the_camera_took_the_photo(image_client, pb, jpeg):
    """Section 11, `taken_at`: EXIF DateTimeOriginal in ISO 8601, with OffsetTimeOriginal."""
    images = pb.images
    owner = "taken-" + uuid.uuid4().hex
    photo = jpeg[:2] + exif_app1("2024:05:07 09:33:04", "+08:00") + jpeg[2:]

    # A chunked upload of it.
    begun = call(image_client, pb, "BeginUpload", images.BeginUploadRequest(owner_key=owner, total_size=len(photo)))
    half = len(photo) // 2
    for start, end in ((0, half), (half, len(photo))):
        call(image_client, pb, "AppendUpload", images.AppendUploadRequest(
            upload_id=begun.upload_id, offset=start, data=photo[start:end]))
    uploaded = call(image_client, pb, "CommitUpload", images.CommitUploadRequest(upload_id=begun.upload_id))
    assert uploaded.taken_at == "2024-05-07T09:33:04+08:00"
    assert call(image_client, pb, "StatImage", images.StatImageRequest(key=uploaded.key)).taken_at == uploaded.taken_at

    # A real camera file with a date and no offset: local time alone.
    gps = (REPO_ROOT / "Tests" / "Fixtures" / "pillow" / "exif_gps.jpg").read_bytes()
    put = call(image_client, pb, "PutImage", images.PutImageRequest(owner_key=owner, data=gps))
    assert put.taken_at == "2099-09-29T10:10:10"

    # None: EXIF without a date, the zeros a camera writes for unknown, a date out of range.
    for data in (jpeg, jpeg[:2] + exif_app1("0000:00:00 00:00:00", "+08:00") + jpeg[2:],
                 jpeg[:2] + exif_app1("2024:13:07 09:33:04") + jpeg[2:]):
        assert call(image_client, pb, "PutImage", images.PutImageRequest(owner_key=owner, data=data)).taken_at == ""

    # An edit without EXIF of its own was taken when its photo was.
    rendition = call(image_client, pb, "GetRendition", images.GetRenditionRequest(key=uploaded.key, width=64, height=64))
    assert rendition.source.taken_at == uploaded.taken_at
    edited = call(image_client, pb, "PutImage", images.PutImageRequest(
        data=rendition.data, kind=images.EDITED, parent_key=uploaded.key))
    assert edited.owner_key == owner and edited.taken_at == uploaded.taken_at

    listed = call(image_client, pb, "ListImages", images.ListImagesRequest(owner_key=owner, page_size=100)).images
    assert [image.taken_at for image in listed if image.kind != images.THUMBNAIL] == [
        "2024-05-07T09:33:04+08:00", "2099-09-29T10:10:10", "", "", "", "2024-05-07T09:33:04+08:00"]
    # Thumbnails a worker may have made by now carry their image's.
    by_key = {image.key: image for image in listed}
    for image in listed:
        if image.kind == images.THUMBNAIL:
            assert image.taken_at == by_key[image.parent_key].taken_at


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, color_type: int, depth: int, rows: list[bytes], extra: bytes = b"") -> bytes:
    """A PNG from its rows as stored (no filter bytes): every row gets filter 0."""
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw, 9))
            + png_chunk(b"IEND", b""))


def test_png_originals_are_stored_untouched_and_rendered_as_jpeg(image_client, pb):
    images = pb.images
    # RGBA, left half transparent; 16-bit grey; a palette whose entry 0 is transparent (tRNS).
    rgba = png(64, 48, 6, 8, [bytes([0, 0, 0, 0]) * 32 + bytes([200, 30, 30, 255]) * 32 for _ in range(48)])
    grey16 = png(64, 48, 0, 16, [b"".join(struct.pack(">H", x * 1000) for x in range(64)) for _ in range(48)])
    palette = png(64, 48, 3, 8, [bytes([x // 16 for x in range(64)]) for _ in range(48)],
                  extra=png_chunk(b"PLTE", bytes([0, 0, 0, 250, 0, 0, 0, 250, 0, 0, 0, 250])) + png_chunk(b"tRNS", b"\x00"))
    for name, data in [("rgba", rgba), ("grey16", grey16), ("palette", palette)]:
        info = call(image_client, pb, "PutImage", images.PutImageRequest(owner_key="pngs", data=data, content_type="image/png"))
        assert (info.media_type, info.content_type, info.width, info.height, info.orientation) == (images.IMAGE, "image/png", 64, 48, 0), name
        assert info.checksum == sha256(data) and info.size_bytes == len(data), name
        assert call(image_client, pb, "GetImage", images.GetImageRequest(key=info.key)).data == data, name
        fit = call(image_client, pb, "GetRendition", images.GetRenditionRequest(key=info.key, width=32, height=32))
        assert jpeg_size(fit.data) == (32, 24), name
        assert (fit.info.content_type, fit.info.width, fit.info.height, fit.info.orientation) == ("image/jpeg", 32, 24, 1), name
        assert fit.source.content_type == "image/png", name


def test_hostile_pngs_are_invalid_argument_naming_what_is_wrong(image_client, pb):
    images = pb.images
    good = png(16, 16, 2, 8, [bytes(48) for _ in range(16)])
    claims = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0))
              + png_chunk(b"IDAT", zlib.compress(b"\x00")) + png_chunk(b"IEND", b""))
    # 8200 x 8200 grey of zeros: a small file, 268,960,000 bytes of decoded pixels.
    bomb = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 8200, 8200, 8, 0, 0, 0, 0))
            + png_chunk(b"IDAT", zlib.compress(bytes(8201 * 8200), 9)) + png_chunk(b"IEND", b""))
    assert len(bomb) < 200_000
    bad_crc = bytearray(good)
    bad_crc[45] ^= 0x01  # inside the IDAT data (the chunk starts at 33)
    for name, data, fragment in [
        ("claims", claims, "PNG of 100000×100000 = 10000000000 pixels is over the limit of 100000000 pixels (--max-pixels)"),
        ("bomb", bomb, "PNG of 8200×8200 decodes to 268960000 bytes of pixels (4 a pixel), over the limit of 268435456 bytes (--max-decoded-bytes)"),
        ("truncated", good[:50], "data: PNG is truncated"),
        ("bad crc", bytes(bad_crc), "data: PNG is damaged: a CRC does not match (chunk IDAT at offset 33"),
    ]:
        error = error_of(image_client, pb, "PutImage", images.PutImageRequest(owner_key="hostile-pngs", data=data))
        assert error.code == pb.rpc.INVALID_ARGUMENT == 3, name
        assert fragment in error.message, (name, error.message)
    listed = call(image_client, pb, "ListImages", images.ListImagesRequest(owner_key="hostile-pngs"))
    assert list(listed.images) == []


def heif_enc(source: Path, tmp_path: Path) -> bytes:
    """A HEIC made by heif-enc (libheif-examples) from a JPEG: its pixels as stored, its EXIF copied."""
    import subprocess
    out = tmp_path / (source.stem + ".heic")
    subprocess.run(["heif-enc", "-q", "60", "-o", str(out), str(source)], check=True, capture_output=True)
    return out.read_bytes()


def test_heic_originals_are_stored_untouched_rendered_as_jpeg_and_exif_orientation_is_ignored(image_client, pb, tmp_path):
    images = pb.images
    # Portrait_6.jpg: 1800 x 1200 as stored, EXIF Orientation 6. As a HEIC without irot it is shown
    # as stored: MIAF says a renderer ignores an EXIF orientation.
    heic = heif_enc(PORTRAIT_6, tmp_path)
    info = call(image_client, pb, "PutImage", images.PutImageRequest(owner_key="heics", data=heic))
    assert (info.media_type, info.content_type, info.width, info.height) == (images.IMAGE, "image/heic", 1800, 1200)
    assert info.checksum == sha256(heic) and info.size_bytes == len(heic)
    assert call(image_client, pb, "GetImage", images.GetImageRequest(key=info.key)).data == heic
    fit = call(image_client, pb, "GetRendition", images.GetRenditionRequest(key=info.key, width=240, height=240))
    assert jpeg_size(fit.data) == (240, 160)
    assert (fit.info.content_type, fit.info.width, fit.info.height, fit.info.orientation) == ("image/jpeg", 240, 160, 1)
    assert fit.source.content_type == "image/heic"
    assert b"Exif\x00\x00" not in fit.data


def test_hostile_heics_are_invalid_argument_naming_what_is_wrong(image_client, pb, tmp_path):
    images = pb.images
    good = heif_enc(REPO_ROOT / "Tests" / "Fixtures" / "pillow" / "hopper.jpg", tmp_path)
    ispe = good.index(b"ispe")
    claims = good[:ispe + 8] + struct.pack(">II", 100000, 100000) + good[ispe + 16:]
    garbage = good[:good[3]] + bytes((i * 97 + 13) % 251 for i in range(4000))
    for name, data, fragment in [
        ("claims", claims, "data: HEIC of 100000×100000 = 10000000000 pixels is over the limit of 100000000 pixels (--max-pixels)"),
        ("truncated", good[:len(good) - 300], "data: HEIC is "),
        ("garbage", garbage, "data: HEIC is damaged or unsupported ("),
    ]:
        error = error_of(image_client, pb, "PutImage", images.PutImageRequest(owner_key="hostile-heics", data=data))
        assert error.code == pb.rpc.INVALID_ARGUMENT == 3, name
        assert fragment in error.message, (name, error.message)
    listed = call(image_client, pb, "ListImages", images.ListImagesRequest(owner_key="hostile-heics"))
    assert list(listed.images) == []
    assert call(image_client, pb, "PutImage", images.PutImageRequest(owner_key="hostile-heics", data=good)).width == 128
