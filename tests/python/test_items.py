"""ItemService as docs/protocol.md section 10 describes it, against a real item-service.

The service is shared by the whole session, so every test makes its own items and never
assumes it is alone (lists are filtered by a query unique to the test, or searched for its keys).
"""

from __future__ import annotations

import re
import struct
import time
import uuid

import pytest

from homepwner_client import RpcError

ITEMS = "/homepwner.v1.ItemService/"
IMAGES = "/homepwner.v1.ImageService/"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def tiny_jpeg(gray: int) -> bytes:
    """An 8x8 baseline JPEG of one grey level, encoded here: a DC coefficient and no AC."""
    def segment(marker: int, body: bytes) -> bytes:
        return struct.pack(">HH", marker, len(body) + 2) + body
    value = (gray - 128) * 8  # the DC coefficient of a flat block (quantizer 1)
    size = abs(value).bit_length()
    extra = value if value >= 0 else value + (1 << size) - 1
    bits = "0" + (format(extra, f"0{size}b") if size else "") + "0"  # DC code and its bits, then EOB
    bits += "1" * (-len(bits) % 8)
    scan = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8)).replace(b"\xff", b"\xff\x00")
    one_code = bytes([1] + [0] * 15)  # a Huffman table of one code, "0"
    return (b"\xff\xd8"
            + segment(0xFFDB, b"\x00" + bytes([1] * 64))
            + segment(0xFFC0, struct.pack(">BHHB", 8, 8, 8, 1) + b"\x01\x11\x00")
            + segment(0xFFC4, b"\x00" + one_code + bytes([size]))
            + segment(0xFFC4, b"\x10" + one_code + b"\x00")
            + segment(0xFFDA, b"\x01\x01\x00\x00\x3f\x00")
            + scan + b"\xff\xd9")


def put_photo(image_client, pb, owner: str = "", gray: int = 128) -> str:
    """Stores a real JPEG in the image service; returns its key (AttachPhoto takes only stored images)."""
    request = pb.images.PutImageRequest(owner_key=owner, data=tiny_jpeg(gray))
    return image_client.call(IMAGES + "PutImage", request, pb.images.ImageInfo, timeout_ms=15000).key


def image_exists(image_client, pb, key: str) -> bool:
    try:
        image_client.call(IMAGES + "StatImage", pb.images.StatImageRequest(key=key), pb.images.ImageInfo)
        return True
    except RpcError as error:
        assert error.code == pb.rpc.NOT_FOUND, error
        return False


def call(client, pb, method, request):
    """An ItemService call; the response type follows section 9's table."""
    items = pb.items
    response = {
        "CreateItem": items.Item, "GetItem": items.Item, "ListItems": items.ListItemsResponse,
        "UpdateItem": items.Item, "DeleteItem": items.DeleteItemResponse, "MoveItem": items.MoveItemResponse,
        "AttachPhoto": items.Item, "DetachPhoto": items.Item, "SetPrimaryPhoto": items.Item,
        "ReorderPhotos": items.Item, "Stats": items.ItemStatsResponse,
    }[method]
    return client.call(ITEMS + method, request, response)


def error_of(client, pb, method, request) -> RpcError:
    with pytest.raises(RpcError) as caught:
        call(client, pb, method, request)
    return caught.value


def create(client, pb, **fields):
    return call(client, pb, "CreateItem", pb.items.CreateItemRequest(**fields))


def all_keys_in_manual_order(client, pb) -> list[str]:
    keys, token = [], ""
    while True:
        page = call(client, pb, "ListItems", pb.items.ListItemsRequest(page_size=1000, page_token=token))
        keys += [item.key for item in page.items]
        token = page.next_page_token
        if not token:
            return keys


def test_create_then_get_returns_every_field(client, pb):
    before = int(time.time() * 1000)
    item = create(client, pb, name="Rusty Spork", serial_number="4X7B", value_in_dollars=42)
    assert UUID_RE.match(item.key)
    assert (item.name, item.serial_number, item.value_in_dollars) == ("Rusty Spork", "4X7B", 42)
    assert item.version == 1
    assert item.created_at_ms == item.updated_at_ms >= before - 5000
    assert list(item.photo_keys) == [] and item.primary_photo_key == ""
    assert call(client, pb, "GetItem", pb.items.GetItemRequest(key=item.key)) == item
    # Keys are accepted in upper case and answered in lower case.
    assert call(client, pb, "GetItem", pb.items.GetItemRequest(key=item.key.upper())).key == item.key


def test_random_create_follows_the_seed(client, pb):
    item = create(client, pb, random=True)
    adjective, noun = item.name.split(" ")
    assert adjective in {"Fluffy", "Rusty", "Shiny"} and noun in {"Bear", "Spork", "Mac"}
    assert re.fullmatch(r"[0-9][A-Z][0-9][A-Z]", item.serial_number)
    assert 0 <= item.value_in_dollars <= 99
    error = error_of(client, pb, "CreateItem", pb.items.CreateItemRequest(random=True, name="x"))
    assert error.code == pb.rpc.INVALID_ARGUMENT and "random" in error.message


def test_client_key_creates_once_and_a_deleted_key_is_refused(client, pb):
    key = str(uuid.uuid4())
    first = create(client, pb, name="Keyed", key=key.upper())
    assert first.key == key
    again = create(client, pb, name="Another name", key=key)
    assert again == first  # the first item, unchanged
    call(client, pb, "DeleteItem", pb.items.DeleteItemRequest(key=key))
    error = error_of(client, pb, "CreateItem", pb.items.CreateItemRequest(name="Keyed", key=key))
    assert error.code == pb.rpc.FAILED_PRECONDITION == 9
    assert key in error.message and "deleted" in error.message


def test_list_pages_through_every_match_once(client, pb):
    tag = "pg" + uuid.uuid4().hex[:10]
    made = [create(client, pb, name=f"{tag} {letter}", value_in_dollars=value)
            for letter, value in zip("gcaefdb", [7, 3, 1, 5, 6, 4, 2])]
    seen, token, pages = [], "", 0
    while True:
        page = call(client, pb, "ListItems", pb.items.ListItemsRequest(query=tag.upper(), page_size=3, page_token=token))
        pages += 1
        assert page.total_count == 7
        assert len(page.items) <= 3
        seen += [item.key for item in page.items]
        token = page.next_page_token
        if not token:
            break
    assert pages == 3
    assert seen == [item.key for item in made]  # the manual order is the creation order here

    by_name = call(client, pb, "ListItems", pb.items.ListItemsRequest(
        query=tag, sort=pb.items.ITEM_SORT_NAME, descending=True))
    assert [item.name[-1] for item in by_name.items] == list("gfedcba")
    by_value = call(client, pb, "ListItems", pb.items.ListItemsRequest(query=tag, sort=pb.items.ITEM_SORT_VALUE))
    assert [item.value_in_dollars for item in by_value.items] == [1, 2, 3, 4, 5, 6, 7]

    # The token belongs to its sort, direction and query.
    first = call(client, pb, "ListItems", pb.items.ListItemsRequest(query=tag, page_size=2))
    for changed in (dict(sort=pb.items.ITEM_SORT_NAME), dict(descending=True), dict(query=tag + "x")):
        request = pb.items.ListItemsRequest(**{"query": tag, "page_token": first.next_page_token, **changed})
        assert error_of(client, pb, "ListItems", request).code == pb.rpc.INVALID_ARGUMENT
    # page_size may change between pages.
    rest = call(client, pb, "ListItems", pb.items.ListItemsRequest(query=tag, page_size=10, page_token=first.next_page_token))
    assert [item.key for item in first.items] + [item.key for item in rest.items] == [item.key for item in made]
    assert rest.next_page_token == ""


def test_update_changes_masked_fields_and_a_stale_version_is_aborted(client, pb):
    item = create(client, pb, name="Shiny Mac", serial_number="1A2B", value_in_dollars=10)
    updated = call(client, pb, "UpdateItem", pb.items.UpdateItemRequest(
        key=item.key, update_mask=["value_in_dollars"], value_in_dollars=99, name="ignored", expected_version=1))
    assert (updated.name, updated.serial_number, updated.value_in_dollars) == ("Shiny Mac", "1A2B", 99)
    assert updated.version == 2 and updated.updated_at_ms >= item.updated_at_ms

    stale = error_of(client, pb, "UpdateItem", pb.items.UpdateItemRequest(
        key=item.key, update_mask=["name"], name="Lost write", expected_version=1))
    assert stale.code == pb.rpc.ABORTED == 10
    assert "version 2" in stale.message
    assert call(client, pb, "GetItem", pb.items.GetItemRequest(key=item.key)).name == "Shiny Mac"

    renamed = call(client, pb, "UpdateItem", pb.items.UpdateItemRequest(
        key=item.key, update_mask=["name", "serial_number"], name="Fluffy Mac", serial_number="", expected_version=0))
    assert (renamed.name, renamed.serial_number, renamed.version) == ("Fluffy Mac", "", 3)


def test_move_item_removes_then_inserts(client, pb):
    mine = [create(client, pb, name=f"move {n}").key for n in range(3)]
    order = all_keys_in_manual_order(client, pb)
    a, c = order.index(mine[0]), order.index(mine[2])
    call(client, pb, "MoveItem", pb.items.MoveItemRequest(from_index=a, to_index=c))
    expected = list(order)
    expected.insert(c, expected.pop(a))
    assert all_keys_in_manual_order(client, pb) == expected
    # A move changes no version.
    assert call(client, pb, "GetItem", pb.items.GetItemRequest(key=mine[0])).version == 1

    count = len(expected)
    past = error_of(client, pb, "MoveItem", pb.items.MoveItemRequest(from_index=0, to_index=count))
    assert past.code == pb.rpc.OUT_OF_RANGE == 11
    assert str(count) in past.message
    negative = error_of(client, pb, "MoveItem", pb.items.MoveItemRequest(from_index=-1, to_index=0))
    assert negative.code == pb.rpc.INVALID_ARGUMENT


def test_delete_then_get_is_not_found(client, pb):
    item = create(client, pb, name="Doomed Bear")
    assert call(client, pb, "DeleteItem", pb.items.DeleteItemRequest(key=item.key)) == pb.items.DeleteItemResponse()
    for method, request in [("GetItem", pb.items.GetItemRequest(key=item.key)),
                            ("DeleteItem", pb.items.DeleteItemRequest(key=item.key))]:
        error = error_of(client, pb, method, request)
        assert error.code == pb.rpc.NOT_FOUND == 5
        assert item.key in error.message
    assert item.key not in all_keys_in_manual_order(client, pb)


def test_photos_attach_primary_reorder_detach(client, image_client, pb):
    items = pb.items
    item = create(client, pb, name="Photographed Spork")
    p1, p2, p3 = (put_photo(image_client, pb, item.key, gray) for gray in (10, 20, 30))
    one = call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=p1))
    assert list(one.photo_keys) == [p1] and one.primary_photo_key == p1 and one.version == 2
    # Attaching it again changes nothing: no new version.
    assert call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=p1)).version == 2
    two = call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=p2))
    assert list(two.photo_keys) == [p1, p2] and two.primary_photo_key == p1
    three = call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=p3, make_primary=True))
    assert three.primary_photo_key == p3
    reordered = call(client, pb, "ReorderPhotos", items.ReorderPhotosRequest(item_key=item.key, image_keys=[p3, p2, p1]))
    assert list(reordered.photo_keys) == [p3, p2, p1]
    primary = call(client, pb, "SetPrimaryPhoto", items.SetPrimaryPhotoRequest(item_key=item.key, image_key=p1))
    assert primary.primary_photo_key == p1
    detached = call(client, pb, "DetachPhoto", items.DetachPhotoRequest(item_key=item.key, image_key=p1))
    assert list(detached.photo_keys) == [p3, p2] and detached.primary_photo_key == p3
    assert call(client, pb, "GetItem", items.GetItemRequest(key=item.key)) == detached


def _bad_inputs(pb, item_key: str, photo_key: str):
    items, missing = pb.items, str(uuid.uuid4())
    return [
        ("CreateItem", items.CreateItemRequest(name="   "), 3, "name"),
        ("CreateItem", items.CreateItemRequest(name="a" * 257), 3, "256"),
        ("CreateItem", items.CreateItemRequest(name="x", value_in_dollars=-5), 3, "value_in_dollars must be ≥ 0 (got -5)"),
        ("CreateItem", items.CreateItemRequest(name="x", serial_number="s" * 65), 3, "serial_number"),
        ("CreateItem", items.CreateItemRequest(name="x", key="nope"), 3, '"nope"'),
        ("GetItem", items.GetItemRequest(key=""), 3, "key must be a UUID"),
        ("GetItem", items.GetItemRequest(key=missing), 5, missing),
        ("ListItems", items.ListItemsRequest(page_size=1001), 3, "page_size"),
        ("ListItems", items.ListItemsRequest(page_token="not-a-token"), 3, "page_token"),
        ("UpdateItem", items.UpdateItemRequest(key=item_key), 3, "update_mask"),
        ("UpdateItem", items.UpdateItemRequest(key=item_key, update_mask=["colour"]), 3, '"colour"'),
        ("UpdateItem", items.UpdateItemRequest(key=missing, update_mask=["name"], name="x"), 5, missing),
        ("DeleteItem", items.DeleteItemRequest(key="123"), 3, '"123"'),
        ("MoveItem", items.MoveItemRequest(from_index=1_000_000, to_index=0), 11, "from_index"),
        ("AttachPhoto", items.AttachPhotoRequest(item_key=item_key, image_key="x"), 3, "image_key"),
        ("AttachPhoto", items.AttachPhotoRequest(item_key=missing, image_key=photo_key), 5, missing),
        ("DetachPhoto", items.DetachPhotoRequest(item_key=item_key, image_key=missing), 5, "not attached"),
        ("SetPrimaryPhoto", items.SetPrimaryPhotoRequest(item_key=item_key, image_key=missing), 9, "not attached"),
        ("ReorderPhotos", items.ReorderPhotosRequest(item_key=item_key, image_keys=[photo_key, photo_key]), 3, "more than once"),
        ("ReorderPhotos", items.ReorderPhotosRequest(item_key=item_key, image_keys=[]), 3, "missing"),
    ]


def test_bad_input_gets_the_documented_code(client, image_client, pb):
    item = create(client, pb, name="Target")
    photo = put_photo(image_client, pb, item.key)
    call(client, pb, "AttachPhoto", pb.items.AttachPhotoRequest(item_key=item.key, image_key=photo))
    for method, request, code, fragment in _bad_inputs(pb, item.key, photo):
        error = error_of(client, pb, method, request)
        assert (error.code, fragment in error.message) == (code, True), f"{method}: {error.code} {error.message!r}"
    # Nothing above changed the item beyond the attach.
    assert call(client, pb, "GetItem", pb.items.GetItemRequest(key=item.key)).version == 2


def test_attach_photo_takes_only_a_stored_image_of_the_item_or_of_no_one(client, image_client, pb):
    items = pb.items
    item, other = create(client, pb, name="Checked Mac"), create(client, pb, name="Other Mac")
    own, ownerless = put_photo(image_client, pb, item.key, 40), put_photo(image_client, pb, "", 50)
    foreign, missing = put_photo(image_client, pb, other.key, 60), str(uuid.uuid4())
    assert list(call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=own)).photo_keys) == [own]
    attached = call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=ownerless))
    assert list(attached.photo_keys) == [own, ownerless]
    wrong_owner = error_of(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=foreign))
    assert wrong_owner.code == pb.rpc.FAILED_PRECONDITION == 9
    assert foreign in wrong_owner.message and other.key in wrong_owner.message
    unknown = error_of(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=missing))
    assert unknown.code == pb.rpc.NOT_FOUND == 5 and missing in unknown.message
    assert call(client, pb, "GetItem", items.GetItemRequest(key=item.key)) == attached


def wait_until_gone(image_client, pb, keys, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while any(image_exists(image_client, pb, key) for key in keys):
        assert time.monotonic() < deadline, f"images {keys} were not all deleted within {seconds} s"
        time.sleep(0.05)


def test_delete_cascades_to_photos_held_only_by_the_item_and_refuses_its_images_after(client, image_client, pb):
    items = pb.items
    doomed, keeper = create(client, pb, name="Doomed Spork"), create(client, pb, name="Keeper Spork")
    owned = put_photo(image_client, pb, doomed.key, 70)
    only_here, shared = put_photo(image_client, pb, "", 80), put_photo(image_client, pb, "", 90)
    for item, photo in [(doomed, owned), (doomed, only_here), (doomed, shared), (keeper, shared)]:
        call(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=item.key, image_key=photo))
    call(client, pb, "DeleteItem", items.DeleteItemRequest(key=doomed.key))
    # No item may take the doomed item's only photo while its cascade is on its way.
    taken = error_of(client, pb, "AttachPhoto", items.AttachPhotoRequest(item_key=keeper.key, image_key=only_here))
    assert taken.code == pb.rpc.FAILED_PRECONDITION and doomed.key in taken.message
    wait_until_gone(image_client, pb, [owned, only_here])
    assert image_exists(image_client, pb, shared)
    assert list(call(client, pb, "GetItem", items.GetItemRequest(key=keeper.key)).photo_keys) == [shared]
    # The cascade told the image service the item is gone: nothing more is stored for it.
    with pytest.raises(RpcError) as late:
        put_photo(image_client, pb, doomed.key)
    assert late.value.code == pb.rpc.FAILED_PRECONDITION and doomed.key in late.value.message
    with pytest.raises(RpcError) as late_upload:
        image_client.call(IMAGES + "BeginUpload", pb.images.BeginUploadRequest(owner_key=doomed.key, total_size=10),
                          pb.images.BeginUploadResponse)
    assert late_upload.value.code == pb.rpc.FAILED_PRECONDITION


def test_delete_images_for_owner_takes_attached_keys_and_retires_the_owner(image_client, pb):
    images = pb.images
    owner = str(uuid.uuid4())
    mine, attached, kept = put_photo(image_client, pb, owner, 100), put_photo(image_client, pb, "", 110), put_photo(image_client, pb, "", 120)
    request = images.DeleteImagesForOwnerRequest(owner_key=owner, attached_keys=[attached, str(uuid.uuid4())], owner_deleted=True)
    reply = image_client.call(IMAGES + "DeleteImagesForOwner", request, images.DeleteImagesForOwnerResponse)
    # owner_deleted_recorded: what the item delete cascade waits for (an older image service
    # ignores attached_keys and owner_deleted and leaves it false).
    assert reply.deleted_count == 2 and reply.owner_deleted_recorded
    assert not image_exists(image_client, pb, mine) and not image_exists(image_client, pb, attached)
    assert image_exists(image_client, pb, kept)
    again = image_client.call(IMAGES + "DeleteImagesForOwner", request, images.DeleteImagesForOwnerResponse)
    assert again.deleted_count == 0 and again.owner_deleted_recorded
    with pytest.raises(RpcError) as late:
        put_photo(image_client, pb, owner)
    assert late.value.code == pb.rpc.FAILED_PRECONDITION and owner in late.value.message
    bad = images.DeleteImagesForOwnerRequest(owner_key=owner, attached_keys=["nope"])
    with pytest.raises(RpcError) as invalid:
        image_client.call(IMAGES + "DeleteImagesForOwner", bad, images.DeleteImagesForOwnerResponse)
    assert invalid.value.code == pb.rpc.INVALID_ARGUMENT and "attached_keys[0]" in invalid.value.message


def test_stats_counts_items(client, pb):
    before = call(client, pb, "Stats", pb.items.ItemStatsRequest()).item_count
    create(client, pb, name="Counted Bear")
    assert call(client, pb, "Stats", pb.items.ItemStatsRequest()).item_count == before + 1
