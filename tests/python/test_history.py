"""The tamper-evident history as docs/protocol.md section 17 describes it, against a real
item-service: every change appended with who and what, a chain a client can check itself by
re-hashing each entry, and VerifyHistory finding an entry edited in items.db directly.
"""

from __future__ import annotations

import hashlib
import importlib
import sqlite3

import pytest

from homepwner_client import RpcError
from test_inventory import Api, inv, service  # noqa: F401  (fixtures)
from test_items import put_photo

HISTORY = "/homepwner.v1.HistoryService/"
INVALID_ARGUMENT = 3


@pytest.fixture(scope="session")
def hist(pb):
    return importlib.import_module("homepwner.v1.history_pb2")


@pytest.fixture
def api(service, pb, inv, zmq_context):  # noqa: F811
    from homepwner_client import Client
    with Client(service.rpc, pb, context=zmq_context) as dealer:
        yield Api(dealer, pb, inv)


def entries(api: Api, hist, subject: str = "") -> list:
    found, token = [], ""
    while True:
        page = api.client.call(HISTORY + "GetHistory", hist.GetHistoryRequest(subject_key=subject, page_size=2, page_token=token),
                               hist.GetHistoryResponse)
        found += list(page.entries)
        token = page.next_page_token
        if not token:
            return found


def sha256_of(entry, hist) -> str:
    unhashed = hist.HistoryEntry()
    unhashed.CopyFrom(entry)
    unhashed.ClearField("hash")
    return "sha256:" + hashlib.sha256(unhashed.SerializeToString()).hexdigest()


def test_changes_form_a_chain_a_client_checks_by_rehashing(api, pb, inv, hist, image_client, service):
    room = api.location("Study")
    lamp = api.item(name="Lamp", serial_number="L-1", location_key=room.key)
    api("UpdateItem", pb.items.UpdateItemRequest(key=lamp.key, update_mask=["brand"], brand="Anglepoise"))
    photo = put_photo(image_client, pb, owner=lamp.key)
    stored = image_client.call("/homepwner.v1.ImageService/StatImage", pb.images.StatImageRequest(key=photo), pb.images.ImageInfo)
    api("AttachPhoto", pb.items.AttachPhotoRequest(item_key=lamp.key, image_key=photo, role=pb.items.PHOTO_ROLE_RECEIPT))
    api("UpdatePolicy", inv.UpdatePolicyRequest(update_mask=["insurer"], policy=inv.Policy(insurer="Acme Mutual")))
    api("DeleteItem", pb.items.DeleteItemRequest(key=lamp.key))

    chain = entries(api, hist)
    assert [e.action for e in chain] == [
        "location.created", "item.created", "item.updated", "photo.attached", "policy.updated", "item.deleted"]
    assert [e.seq for e in chain] == list(range(1, len(chain) + 1))
    assert all(e.actor == "local" for e in chain)  # no CURVE keys
    previous = ""
    for entry in chain:
        assert entry.previous_hash == previous
        assert entry.hash == sha256_of(entry, hist), f"entry {entry.seq} does not hash as section 17 says"
        previous = entry.hash
    assert chain[1].item.name == "Lamp" and chain[1].item.location_key == room.key
    assert chain[2].item.brand == "Anglepoise" and chain[2].item.version == 2
    assert (chain[3].photo_key, chain[3].photo_checksum) == (photo, stored.checksum)
    assert chain[4].policy.insurer == "Acme Mutual" and chain[4].subject_key == ""
    assert chain[5].item.key == lamp.key
    assert [e.action for e in entries(api, hist, lamp.key)] == ["item.created", "item.updated", "photo.attached", "item.deleted"]
    page = api.client.call(HISTORY + "GetHistory", hist.GetHistoryRequest(page_size=2), hist.GetHistoryResponse)
    assert (page.head.seq, page.head.hash) == (chain[-1].seq, chain[-1].hash)

    verified = api.client.call(HISTORY + "VerifyHistory", hist.VerifyHistoryRequest(), hist.VerifyHistoryResponse)
    assert verified.intact and verified.entries_checked == len(chain) and verified.first_break_seq == 0
    assert verified.head.hash == chain[-1].hash

    with pytest.raises(RpcError) as caught:
        api.client.call(HISTORY + "GetHistory", hist.GetHistoryRequest(page_size=1001), hist.GetHistoryResponse)
    assert caught.value.code == INVALID_ARGUMENT
    assert caught.value.message == "page_size must be 0…1000 (got 1001); 0 means 100"


def test_an_entry_edited_in_the_database_is_found(api, pb, inv, hist, service):
    chair = api.item(name="Chair")
    api.item(name="Table")
    api("UpdateItem", pb.items.UpdateItemRequest(key=chair.key, update_mask=["notes"], notes="oak"))
    # conftest starts each service with --data-dir beside its log.
    database = service.log_path.parent / "data" / "items" / "items.db"
    assert database.exists(), database
    with sqlite3.connect(database) as db:
        (blob,) = db.execute("SELECT entry FROM history WHERE seq = 2").fetchone()
        entry = hist.HistoryEntry.FromString(blob)
        entry.item.name = "Antique table"
        db.execute("UPDATE history SET entry = ? WHERE seq = 2", (entry.SerializeToString(),))
    verified = api.client.call(HISTORY + "VerifyHistory", hist.VerifyHistoryRequest(), hist.VerifyHistoryResponse)
    assert not verified.intact and verified.first_break_seq == 2
    assert verified.problem.startswith("entry 2 was changed after it was written")
