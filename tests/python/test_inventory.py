"""The claim inventory of ItemService as docs/protocol.md section 10 describes it (claim fields,
Money, Evidence, ListItems' filters and search, locations, categories and the policy, valuation,
readiness, SetPhotoRole) and section 16's roles, against real item-service processes.

Locations, categories, the policy and the valuation are global to an installation, so each test
here starts an item-service of its own (fresh data dir, its --image-service pointing at the
session's image-service) and may count everything it sees. Expected figures are computed here
from the documented rules, never copied from a reply.
"""

from __future__ import annotations

import importlib
import itertools
import os
import subprocess
import time
import uuid
from dataclasses import dataclass

import pytest
import zmq
import zmq.auth

from conftest import _executable, _start, _stop, free_port
from homepwner_client import Client, RpcError
from test_curve import _homepwner
from test_items import put_photo

ITEMS = "/homepwner.v1.ItemService/"

INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, ABORTED = 3, 5, 7, 9, 10


# -- plumbing ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def inv(pb):
    """inventory_pb2 (compile_protos generated it with the rest; conftest only imports its list)."""
    return importlib.import_module("homepwner.v1.inventory_pb2")


@pytest.fixture
def service(image_service, pb, zmq_context, tmp_path_factory):
    """An item-service of this test's own, stopped with SIGTERM at the end (exit 0)."""
    running = _start("item-service", ["--image-service", image_service.rpc], pb, zmq_context, tmp_path_factory)
    yield running
    _stop("item-service", running)


@dataclass
class Api:
    """Calls ItemService with the response type of section 9's table."""

    client: Client
    pb: object
    inv: object

    def response_type(self, method: str):
        items, inv = self.pb.items, self.inv
        return {
            "CreateItem": items.Item, "GetItem": items.Item, "ListItems": items.ListItemsResponse,
            "UpdateItem": items.Item, "DeleteItem": items.DeleteItemResponse,
            "AttachPhoto": items.Item, "DetachPhoto": items.Item, "SetPhotoRole": items.Item,
            "CreateLocation": inv.Location, "GetLocation": inv.Location,
            "ListLocations": inv.ListLocationsResponse, "UpdateLocation": inv.Location,
            "DeleteLocation": inv.DeleteLocationResponse,
            "CreateCategory": inv.Category, "ListCategories": inv.ListCategoriesResponse,
            "UpdateCategory": inv.Category, "DeleteCategory": inv.DeleteCategoryResponse,
            "GetPolicy": inv.Policy, "UpdatePolicy": inv.Policy,
            "GetValuation": inv.GetValuationResponse, "GetReadiness": inv.GetReadinessResponse,
        }[method]

    def __call__(self, method: str, request):
        return self.client.call(ITEMS + method, request, self.response_type(method))

    def refused(self, method: str, request, code: int) -> str:
        """Calls, expects RpcError with `code`; returns its message."""
        with pytest.raises(RpcError) as caught:
            self(method, request)
        assert caught.value.code == code, f"expected {code}, got {caught.value.code}: {caught.value.message}"
        return caught.value.message

    # Shorthands.
    def item(self, **fields):
        return self("CreateItem", self.pb.items.CreateItemRequest(**fields))

    def location(self, name: str, parent=None, kind=0, **fields):
        parent_key = parent.key if parent is not None else ""
        return self("CreateLocation", self.inv.CreateLocationRequest(name=name, parent_key=parent_key, kind=kind, **fields))

    def category(self, name: str, **fields):
        return self("CreateCategory", self.inv.CreateCategoryRequest(name=name, **fields))

    def get(self, key: str, as_of: str = ""):
        return self("GetItem", self.pb.items.GetItemRequest(key=key, as_of=as_of))

    def keys(self, **filters) -> list[str]:
        """Every matching item key, in the reply's order, paging as the doc says."""
        keys, token = [], ""
        while True:
            page = self("ListItems", self.pb.items.ListItemsRequest(page_size=1000, page_token=token, **filters))
            keys += [item.key for item in page.items]
            token = page.next_page_token
            if not token:
                return keys

    def money(self, currency: str, minor_units: int):
        return self.inv.Money(currency=currency, minor_units=minor_units)


@pytest.fixture
def api(service, pb, inv, zmq_context):
    with Client(service.rpc, pb, context=zmq_context) as dealer:
        yield Api(dealer, pb, inv)


def names_of(api: Api, keys: list[str]) -> list[str]:
    return [api.get(key).name for key in keys]


# -- 1. locations --------------------------------------------------------------------------------


def test_locations_tree_counts_order_and_refusals(api, inv):
    home = api.location("Home", kind=inv.LOCATION_KIND_HOME)
    ground = api.location("Ground floor", home, kind=inv.LOCATION_KIND_FLOOR)
    kitchen = api.location("Kitchen", ground, kind=inv.LOCATION_KIND_ROOM, notes="tiles\nand a window")
    hall = api.location("Hall", ground, kind=inv.LOCATION_KIND_ROOM)
    attic = api.location("attic", home)  # lower case: siblings sort by name ignoring case
    garage = api.location("Garage")      # top level, sorts before Home
    assert (kitchen.path, kitchen.depth, kitchen.parent_key, kitchen.kind) == (
        "Home / Ground floor / Kitchen", 2, ground.key, inv.LOCATION_KIND_ROOM)
    assert kitchen.notes == "tiles\nand a window" and kitchen.version == 1
    assert (home.path, home.depth, home.parent_key) == ("Home", 0, "")

    api.item(name="Kettle", location_key=kitchen.key)
    api.item(name="Toaster", location_key=kitchen.key.upper())  # keys in any case, as for items
    api.item(name="Rug", location_key=ground.key)
    api.item(name="Bike", location_key=hall.key)
    api.item(name="Loose thing")

    listed = api("ListLocations", inv.ListLocationsRequest())
    assert [loc.path for loc in listed.locations] == [
        "Garage", "Home", "Home / attic", "Home / Ground floor", "Home / Ground floor / Hall",
        "Home / Ground floor / Kitchen"]
    assert [loc.depth for loc in listed.locations] == [0, 0, 1, 1, 2, 2]
    counts = {loc.path: (loc.item_count, loc.subtree_item_count) for loc in listed.locations}
    assert counts == {
        "Garage": (0, 0), "Home": (0, 4), "Home / attic": (0, 0), "Home / Ground floor": (1, 4),
        "Home / Ground floor / Hall": (1, 1), "Home / Ground floor / Kitchen": (2, 2)}
    assert listed.unplaced_item_count == 1

    # A subtree: itself first.
    sub = api("ListLocations", inv.ListLocationsRequest(root_key=ground.key))
    assert [loc.path for loc in sub.locations] == [
        "Home / Ground floor", "Home / Ground floor / Hall", "Home / Ground floor / Kitchen"]
    unknown = str(uuid.uuid4())
    api.refused("ListLocations", inv.ListLocationsRequest(root_key=unknown), NOT_FOUND)
    got = api("GetLocation", inv.GetLocationRequest(key=kitchen.key.upper()))
    assert (got.key, got.path, got.item_count, got.subtree_item_count) == (kitchen.key, kitchen.path, 2, 2)

    # CreateLocation with a client key is idempotent: a repeat answers the first location.
    key = str(uuid.uuid4())
    cupboard = api.location("Cupboard", kitchen, kind=inv.LOCATION_KIND_CONTAINER, key=key)
    assert cupboard.key == key and cupboard.path == "Home / Ground floor / Kitchen / Cupboard"
    again = api.location("Something else", home, key=key)
    assert (again.key, again.name, again.parent_key, again.version) == (key, "Cupboard", kitchen.key, 1)

    # A move under its own subtree, or under itself.
    message = api.refused("UpdateLocation", inv.UpdateLocationRequest(
        key=home.key, update_mask=["parent_key"], parent_key=cupboard.key), FAILED_PRECONDITION)
    assert message == f"location {home.key} cannot move under Home / Ground floor / Kitchen / Cupboard, which is inside it"
    message = api.refused("UpdateLocation", inv.UpdateLocationRequest(
        key=kitchen.key, update_mask=["parent_key"], parent_key=kitchen.key), FAILED_PRECONDITION)
    assert message == f"location {kitchen.key} cannot be its own parent"

    # A sibling's name in another case, by create and by rename; at the top too.
    message = api.refused("CreateLocation", inv.CreateLocationRequest(name="KITCHEN", parent_key=ground.key),
                          FAILED_PRECONDITION)
    assert message == f'Home / Ground floor has a location named "Kitchen" already ({kitchen.key}); choose another name'
    message = api.refused("UpdateLocation", inv.UpdateLocationRequest(
        key=hall.key, update_mask=["name"], name="kitchen"), FAILED_PRECONDITION)
    assert message == f'Home / Ground floor has a location named "Kitchen" already ({kitchen.key}); choose another name'
    message = api.refused("CreateLocation", inv.CreateLocationRequest(name="home"), FAILED_PRECONDITION)
    assert message == f'the top level has a location named "Home" already ({home.key}); choose another name'

    # An unknown parent; an item in an unknown location.
    message = api.refused("CreateLocation", inv.CreateLocationRequest(name="Shed", parent_key=unknown), NOT_FOUND)
    assert message == f"parent_key: no location with key {unknown}"
    message = api.refused("CreateItem", api.pb.items.CreateItemRequest(name="x", location_key=unknown), NOT_FOUND)
    assert message == f"location_key: no location with key {unknown}; see ListLocations"

    # Delete: only an empty location.
    message = api.refused("DeleteLocation", inv.DeleteLocationRequest(key=hall.key), FAILED_PRECONDITION)
    assert message == f"location {hall.key} still holds 1 item; move or delete them first"
    message = api.refused("DeleteLocation", inv.DeleteLocationRequest(key=ground.key), FAILED_PRECONDITION)
    assert message == f"location {ground.key} still holds 1 item and 2 sublocations; move or delete them first"
    api("DeleteLocation", inv.DeleteLocationRequest(key=attic.key))
    api.refused("GetLocation", inv.GetLocationRequest(key=attic.key), NOT_FOUND)
    api.refused("CreateLocation", inv.CreateLocationRequest(name="attic", parent_key=home.key, key=attic.key),
                FAILED_PRECONDITION)  # the key of a deleted location

    # A move to the top (empty parent_key); a stale expected_version.
    moved = api("UpdateLocation", inv.UpdateLocationRequest(key=hall.key, update_mask=["parent_key"]))
    assert (moved.path, moved.depth, moved.parent_key, moved.version) == ("Hall", 0, "", 2)
    message = api.refused("UpdateLocation", inv.UpdateLocationRequest(
        key=hall.key, update_mask=["notes"], notes="x", expected_version=1), ABORTED)
    assert message == f"location {hall.key} is at version 2, not expected_version 1; read it again and retry"  # as UpdateItem's
    listed = api("ListLocations", inv.ListLocationsRequest())
    counts = {loc.path: (loc.item_count, loc.subtree_item_count) for loc in listed.locations}
    assert counts["Hall"] == (1, 1) and counts["Home"] == (0, 3) and counts["Home / Ground floor"] == (1, 3)
    assert garage.key in [loc.key for loc in listed.locations]

    # At most 16 levels deep: Garage is level 1, so 15 more fit and the next is 9.
    parent = garage
    for level in range(2, 17):
        parent = api.location(f"Level {level}", parent)
    assert parent.depth == 15
    message = api.refused("CreateLocation", inv.CreateLocationRequest(name="Too deep", parent_key=parent.key),
                          FAILED_PRECONDITION)
    assert "16" in message, message


# -- 2. claim fields -----------------------------------------------------------------------------


def test_claim_fields_round_trip_and_update_by_mask(api, pb, inv):
    room = api.location("Kitchen")
    appliances = api.category("Appliances", depreciation=inv.DEPRECIATION_METHOD_STRAIGHT_LINE, useful_life_years=10)
    fields = dict(
        name="Dishwasher", serial_number="SN-1", value_in_dollars=7,
        location_key=room.key, quantity=2, brand="Bosch", model="SMS6ZCI42E",
        notes="Bought with the kitchen.\n\tInstalled by the shop.", purchase_date="2021-03-15",
        purchase_price=api.money("usd", 64999),      # lower case is raised
        purchase_place="Kitchen shop", replacement_value=api.money("", 79900),  # empty: the policy's currency
        replacement_source="https://example.com/sms6", replacement_as_of="2025-01-31",
        warranty_expires="2026-03-15", tags=["Kitchen", "appliance", "KITCHEN", "  Warranty  "],
        category_key=appliances.key,
        custom_fields=[pb.items.CustomField(name="Colour", value="White"),
                       pb.items.CustomField(name="Energy", value="A++\nquiet")])
    made = api.item(**fields)
    assert made.version == 1
    assert (made.location_key, made.quantity, made.brand, made.model) == (room.key, 2, "Bosch", "SMS6ZCI42E")
    assert made.notes == fields["notes"]
    assert (made.purchase_date, made.replacement_as_of, made.warranty_expires) == ("2021-03-15", "2025-01-31", "2026-03-15")
    assert (made.purchase_price.currency, made.purchase_price.minor_units) == ("USD", 64999)
    assert made.replacement_value.minor_units == 79900
    # "empty means the policy's currency": kept empty or filled with the policy's (USD) both mean it.
    assert made.replacement_value.currency in ("", "USD")
    assert (made.purchase_place, made.replacement_source) == ("Kitchen shop", "https://example.com/sms6")
    assert list(made.tags) == ["Kitchen", "appliance", "Warranty"]  # the case repeat dropped, spaces trimmed
    assert made.category_key == appliances.key
    assert [(f.name, f.value) for f in made.custom_fields] == [("Colour", "White"), ("Energy", "A++\nquiet")]
    assert not made.HasField("valuation")
    assert api.get(made.key) == made

    # Other currencies and exponents; quantity 0 is stored as 1; an item with no claim fields.
    yen = api.item(name="Rice cooker", purchase_price=api.money("jpy", 12999), quantity=0)
    assert (yen.purchase_price.currency, yen.purchase_price.minor_units, yen.quantity) == ("JPY", 12999, 1)
    plain = api.item(name="Plain")
    assert (plain.quantity, plain.location_key, list(plain.tags), plain.category_key) == (1, "", [], "")
    assert not plain.HasField("purchase_price") or plain.purchase_price.minor_units == 0

    # UpdateItem: named-but-unset fields clear (quantity to 1); unnamed fields stay even if set;
    # JSON names are accepted.
    updated = api("UpdateItem", pb.items.UpdateItemRequest(
        key=made.key, update_mask=["brand", "quantity", "purchasePrice", "tags", "location_key", "custom_fields"],
        brand="Siemens", tags=["Built-in"], model="IGNORED", notes="IGNORED", expected_version=1))
    assert updated.version == 2
    assert (updated.brand, updated.quantity, list(updated.tags), updated.location_key) == ("Siemens", 1, ["Built-in"], "")
    assert not updated.HasField("purchase_price") or updated.purchase_price.minor_units == 0
    assert list(updated.custom_fields) == []
    assert (updated.model, updated.notes, updated.purchase_date) == (made.model, made.notes, made.purchase_date)
    assert updated.replacement_value == made.replacement_value and updated.category_key == appliances.key
    assert api.get(made.key) == updated
    updated = api("UpdateItem", pb.items.UpdateItemRequest(
        key=made.key, update_mask=["replacement_value", "category_key", "purchase_date", "quantity"], quantity=6))
    assert updated.quantity == 6 and updated.category_key == "" and updated.purchase_date == ""
    assert not updated.HasField("replacement_value") or updated.replacement_value.minor_units == 0

    # Refusals with the documented texts, from CreateItem and UpdateItem alike.
    def bad(code: int, expected: str, **claim):
        message = api.refused("CreateItem", pb.items.CreateItemRequest(name="Bad", **claim), code)
        assert message == expected, message
        message = api.refused("UpdateItem", pb.items.UpdateItemRequest(
            key=plain.key, update_mask=list(claim), **claim), code)
        assert message == expected, message

    bad(INVALID_ARGUMENT, 'purchase_date must be a date as YYYY-MM-DD, like 2024-03-17 (got "2023-02-30")',
        purchase_date="2023-02-30")
    bad(INVALID_ARGUMENT, 'replacement_value.currency must be an ISO 4217 code of three letters, like USD or EUR (got "dollars")',
        replacement_value=api.money("dollars", 100))
    bad(INVALID_ARGUMENT, "purchase_price.minor_units must be ≥ 0 (got -1)", purchase_price=api.money("USD", -1))
    bad(INVALID_ARGUMENT, 'custom_fields names "Colour" more than once',
        custom_fields=[pb.items.CustomField(name="Colour", value="a"), pb.items.CustomField(name="Colour", value="b")])
    unknown = str(uuid.uuid4())
    bad(NOT_FOUND, f"category_key: no category with key {unknown}; see ListCategories", category_key=unknown)
    bad(NOT_FOUND, f"location_key: no location with key {unknown}; see ListLocations", location_key=unknown)
    # The other date fields, named in their messages; custom field names unique ignoring case.
    message = api.refused("CreateItem", pb.items.CreateItemRequest(name="Bad", warranty_expires="2024-3-1"), INVALID_ARGUMENT)
    assert message == 'warranty_expires must be a date as YYYY-MM-DD, like 2024-03-17 (got "2024-3-1")'
    message = api.refused("CreateItem", pb.items.CreateItemRequest(name="Bad", replacement_as_of="0999-12-31"), INVALID_ARGUMENT)
    assert "replacement_as_of" in message and '"0999-12-31"' in message
    message = api.refused("CreateItem", pb.items.CreateItemRequest(name="Bad", custom_fields=[
        pb.items.CustomField(name="Colour", value="a"), pb.items.CustomField(name="colour", value="b")]), INVALID_ARGUMENT)
    assert message in ('custom_fields names "Colour" more than once', 'custom_fields names "colour" more than once'), message
    # A NUL is refused, in any text field, before the request is decoded (protobuf-c would cut the
    # text at it): section 4.1.
    for request in (pb.items.CreateItemRequest(name="Bad", notes="a\x00b"), pb.items.CreateItemRequest(name="a\x00b"),
                    pb.items.CreateItemRequest(name="Bad", custom_fields=[pb.items.CustomField(name="x", value="\x00")])):
        message = api.refused("CreateItem", request, INVALID_ARGUMENT)
        assert "holds a NUL character (U+0000)" in message, message
    # Other bad values name their field.
    for claim in (dict(quantity=100001), dict(quantity=-1), dict(tags=[f"t{i}" for i in range(33)]),
                  dict(tags=["   "]), dict(tags=["a" * 65]), dict(brand="a\x07b"), dict(notes="a\x1bb"),
                  dict(purchase_price=api.money("USD", 10**15 + 1))):
        message = api.refused("CreateItem", pb.items.CreateItemRequest(name="Bad", **claim), INVALID_ARGUMENT)
        assert next(iter(claim)) in message, message
    message = api.refused("UpdateItem", pb.items.UpdateItemRequest(key=plain.key, update_mask=["nam"]), INVALID_ARGUMENT)
    assert message.startswith('update_mask names an unknown field "nam"; use name, serial_number, value_in_dollars '
                              "or one of location_key, quantity, "), message
    assert api.get(plain.key).version == 1  # nothing refused changed it


# -- 3. ListItems' filters and search --------------------------------------------------------------


def test_list_items_filters_and_search(api, pb, inv):
    E = inv  # Evidence values
    home = api.location("Home")
    ground = api.location("Ground floor", home)
    kitchen = api.location("Kitchen", ground)
    tools = api.category("Tools")
    fridge = api.item(name="Fridge", serial_number="FR-1", location_key=kitchen.key, tags=["Appliance"],
                      category_key=tools.key, replacement_value=api.money("USD", 80000), purchase_date="2020-01-01")
    dishwasher = api.item(name="Dishwasher", brand="Bosch", model="DW-778", location_key=kitchen.key,
                          tags=["appliance"], purchase_price=api.money("", 50000))
    torch = api.item(name="Crème brûlée torch", location_key=ground.key, tags=["Tools"], value_in_dollars=30,
                     quantity=2, purchase_date="2022-05-05")
    samovar = api.item(name="Самовар", notes="Медный, от бабушки", replacement_value=api.money("EUR", 10000))
    sofa = api.item(name="Sofa", location_key=home.key)

    def names(**filters) -> list[str]:
        return sorted(names_of(api, api.keys(**filters)))

    # Locations: a subtree, or directly in it; unplaced.
    assert names(location_key=home.key) == ["Crème brûlée torch", "Dishwasher", "Fridge", "Sofa"]
    assert names(location_key=home.key, exclude_sublocations=True) == ["Sofa"]
    assert names(location_key=ground.key) == ["Crème brûlée torch", "Dishwasher", "Fridge"]
    assert names(location_key=ground.key, exclude_sublocations=True) == ["Crème brûlée torch"]
    assert names(location_key=kitchen.key) == ["Dishwasher", "Fridge"]
    assert names(unplaced=True) == ["Самовар"]
    api.refused("ListItems", pb.items.ListItemsRequest(unplaced=True, location_key=home.key), INVALID_ARGUMENT)
    api.refused("ListItems", pb.items.ListItemsRequest(location_key=str(uuid.uuid4())), NOT_FOUND)

    # Tag (any case), category.
    assert names(tag="APPLIANCE") == ["Dishwasher", "Fridge"]
    assert names(tag="tools") == ["Crème brûlée torch"]
    assert names(category_key=tools.key) == ["Fridge"]

    # Value: the line's replacement cost (per unit × quantity); another currency never matches.
    assert names(min_value=api.money("USD", 50000)) == ["Dishwasher", "Fridge"]
    assert names(min_value=api.money("USD", 5000), max_value=api.money("", 60000)) == ["Crème brûlée torch", "Dishwasher"]
    assert names(min_value=api.money("USD", 6000), max_value=api.money("USD", 6000)) == ["Crème brûlée torch"]  # 2 × $30
    assert names(min_value=api.money("usd", 1)) == ["Crème brûlée torch", "Dishwasher", "Fridge"]
    message = api.refused("ListItems", pb.items.ListItemsRequest(min_value=api.money("EUR", 1)), INVALID_ARGUMENT)
    assert "min_value" in message, message

    # Missing: items lacking every evidence listed (AND); with another filter.
    assert names(missing=[E.EVIDENCE_SERIAL, E.EVIDENCE_PURCHASE_DATE]) == ["Dishwasher", "Sofa", "Самовар"]
    assert names(missing=[E.EVIDENCE_VALUE]) == ["Sofa"]
    assert names(missing=[E.EVIDENCE_SERIAL]) == ["Crème brûlée torch", "Dishwasher", "Sofa", "Самовар"]
    assert len(api.keys(missing=[E.EVIDENCE_PHOTO, E.EVIDENCE_RECEIPT])) == 5
    assert names(missing=[E.EVIDENCE_SERIAL], location_key=kitchen.key) == ["Dishwasher"]
    api.refused("ListItems", pb.items.ListItemsRequest(missing=[99]), INVALID_ARGUMENT)
    page = api("ListItems", pb.items.ListItemsRequest(missing=[E.EVIDENCE_SERIAL], location_key=kitchen.key))
    assert page.total_count == 1

    # Search: word starts, any case, accents ignored, Cyrillic, the location path, every word.
    assert names(search="fri") == ["Fridge"]
    assert names(search="dw-778") == ["Dishwasher"]
    assert names(search="bosch") == ["Dishwasher"]
    assert names(search="creme") == ["Crème brûlée torch"]
    assert names(search="BRULEE tor") == ["Crème brûlée torch"]
    assert names(search="самов") == ["Самовар"]
    assert names(search="МЕДН") == ["Самовар"]      # notes, another case
    assert names(search="appli") == ["Dishwasher", "Fridge"]  # tags
    assert names(search="fr-1") == ["Fridge"]        # serial number
    assert names(search="kitchen") == ["Dishwasher", "Fridge"]
    assert names(search="ground") == ["Crème brûlée torch", "Dishwasher", "Fridge"]
    assert names(search="home kitchen fri") == ["Fridge"]
    assert names(search="ridge") == []               # not the start of a word
    assert names(search="fridge sofa") == []         # every word must match
    message = api.refused("ListItems", pb.items.ListItemsRequest(search="--"), INVALID_ARGUMENT)
    assert message == 'search must hold at least one word of letters or digits (got "--")'
    api.refused("ListItems", pb.items.ListItemsRequest(sort=pb.items.ITEM_SORT_RELEVANCE), INVALID_ARGUMENT)
    # A rename of a location changes what search finds for the items below it.
    api("UpdateLocation", inv.UpdateLocationRequest(key=kitchen.key, update_mask=["name"], name="Galley"))
    assert names(search="galley") == ["Dishwasher", "Fridge"]
    assert names(search="kitchen") == []

    # Relevance pages, one item each: every match once, then a token with another filter is 3.
    seen, token, pages = [], "", 0
    while True:
        page = api("ListItems", pb.items.ListItemsRequest(search="ground", page_size=1, page_token=token))
        assert page.total_count == 3 and len(page.items) <= 1
        seen += [item.key for item in page.items]
        pages += 1
        token = page.next_page_token
        if not token or pages > 5:
            break
    assert sorted(seen) == sorted([fridge.key, dishwasher.key, torch.key]) and len(seen) == 3
    first = api("ListItems", pb.items.ListItemsRequest(search="ground", page_size=1))
    for other in (dict(search="ground", tag="appliance"), dict(search="ground", location_key=kitchen.key),
                  dict(search="ground fridge")):
        message = api.refused("ListItems", pb.items.ListItemsRequest(page_size=1, page_token=first.next_page_token, **other),
                              INVALID_ARGUMENT)
        assert message == ("page_token was issued for another sort, direction, query or filter; "
                           "repeat the first page's request with it"), message
    assert sofa.key and samovar.key


# -- 4. categories and the policy ------------------------------------------------------------------


def test_categories_and_the_policy(api, pb, inv):
    message = api.refused("CreateCategory", inv.CreateCategoryRequest(
        name="Electronics", depreciation=inv.DEPRECIATION_METHOD_STRAIGHT_LINE), INVALID_ARGUMENT)
    assert message == "useful_life_years must be 1…100 for DEPRECIATION_METHOD_STRAIGHT_LINE (got 0)"
    message = api.refused("CreateCategory", inv.CreateCategoryRequest(
        name="Electronics", depreciation=inv.DEPRECIATION_METHOD_STRAIGHT_LINE, useful_life_years=101), INVALID_ARGUMENT)
    assert message == "useful_life_years must be 1…100 for DEPRECIATION_METHOD_STRAIGHT_LINE (got 101)"
    electronics = api.category("Electronics", depreciation=inv.DEPRECIATION_METHOD_STRAIGHT_LINE,
                               useful_life_years=5, floor_percent=20)
    assert (electronics.useful_life_years, electronics.floor_percent, electronics.version) == (5, 20, 1)
    jewellery = api.category("Jewellery", useful_life_years=7, floor_percent=30, limit=api.money("USD", 1000000))
    assert (jewellery.depreciation, jewellery.useful_life_years, jewellery.floor_percent) == (
        inv.DEPRECIATION_METHOD_NONE, 0, 0)  # stored as 0 with NONE
    assert (jewellery.limit.currency, jewellery.limit.minor_units) == ("USD", 1000000)
    art = api.category("Art")
    message = api.refused("CreateCategory", inv.CreateCategoryRequest(name="Jewellery"), FAILED_PRECONDITION)
    assert message == f'a category named "Jewellery" exists already ({jewellery.key}); choose another name'
    # Unique ignoring case. The doc's text does not say whose spelling it quotes when the cases
    # differ; the server quotes the name asked for (a location clash quotes the sibling's).
    for method, request in (("CreateCategory", inv.CreateCategoryRequest(name="JEWELLERY")),
                            ("UpdateCategory", inv.UpdateCategoryRequest(key=art.key, update_mask=["name"], name="jewellery"))):
        message = api.refused(method, request, FAILED_PRECONDITION)
        assert message.lower() == f'a category named "jewellery" exists already ({jewellery.key}); choose another name'

    key = str(uuid.uuid4())
    keyed = api.category("Tools", key=key)
    assert keyed.key == key and api.category("Other name", key=key.upper()) == keyed

    for _ in range(3):
        api.item(name="Ring", category_key=jewellery.key)
    api.item(name="Laptop", category_key=electronics.key)
    listed = api("ListCategories", inv.ListCategoriesRequest())
    assert [(c.name, c.item_count) for c in listed.categories] == [
        ("Art", 0), ("Electronics", 1), ("Jewellery", 3), ("Tools", 0)]

    message = api.refused("DeleteCategory", inv.DeleteCategoryRequest(key=jewellery.key), FAILED_PRECONDITION)
    assert message == f"category {jewellery.key} still has 3 items; change their category_key first"
    message = api.refused("DeleteCategory", inv.DeleteCategoryRequest(key=electronics.key), FAILED_PRECONDITION)
    assert "still has 1 item" in message and electronics.key in message, message
    api("DeleteCategory", inv.DeleteCategoryRequest(key=art.key))
    assert [c.name for c in api("ListCategories", inv.ListCategoriesRequest()).categories] == [
        "Electronics", "Jewellery", "Tools"]
    api.refused("CreateItem", pb.items.CreateItemRequest(name="x", category_key=art.key), NOT_FOUND)

    updated = api("UpdateCategory", inv.UpdateCategoryRequest(
        key=electronics.key, update_mask=["useful_life_years", "limit"], useful_life_years=8, floor_percent=99,
        limit=api.money("", 250000)))
    assert (updated.useful_life_years, updated.floor_percent, updated.version) == (8, 20, 2)
    assert updated.limit.minor_units == 250000

    # The policy: defaults, a masked update, a stale version.
    policy = api("GetPolicy", inv.GetPolicyRequest())
    assert (policy.currency, policy.warn_at_percent, policy.version) == ("USD", 80, 0)
    assert not policy.HasField("contents_limit") or policy.contents_limit.minor_units == 0
    assert (policy.policyholder, policy.insurer, policy.policy_number, policy.address) == ("", "", "", "")
    updated = api("UpdatePolicy", inv.UpdatePolicyRequest(
        update_mask=["contents_limit", "policyholder", "warn_at_percent"],
        policy=inv.Policy(contents_limit=api.money("USD", 5000000), policyholder="A. Owner", warn_at_percent=90,
                          insurer="not in the mask", currency="EUR")))
    assert updated.version == 1
    assert (updated.currency, updated.policyholder, updated.insurer, updated.warn_at_percent) == ("USD", "A. Owner", "", 90)
    assert updated.contents_limit.minor_units == 5000000
    assert api("GetPolicy", inv.GetPolicyRequest()) == updated
    updated = api("UpdatePolicy", inv.UpdatePolicyRequest(
        update_mask=["insurer", "policy_number"], policy=inv.Policy(insurer="Acme", policy_number="P-1"), expected_version=1))
    assert (updated.version, updated.insurer, updated.policy_number, updated.policyholder) == (2, "Acme", "P-1", "A. Owner")
    message = api.refused("UpdatePolicy", inv.UpdatePolicyRequest(
        update_mask=["address"], policy=inv.Policy(address="1 Road"), expected_version=1), ABORTED)
    assert message.endswith("is at version 2, not expected_version 1; read it again and retry"), message  # as UpdateItem's
    assert api("GetPolicy", inv.GetPolicyRequest()).address == ""
    message = api.refused("UpdatePolicy", inv.UpdatePolicyRequest(
        update_mask=["currency"], policy=inv.Policy(currency="dollars")), INVALID_ARGUMENT)
    assert "currency" in message, message
    api.refused("UpdatePolicy", inv.UpdatePolicyRequest(update_mask=["nope"], policy=inv.Policy()), INVALID_ARGUMENT)


# -- 5. valuation --------------------------------------------------------------------------------

AS_OF = "2025-06-15"


def test_location_category_and_policy_changes_are_published(api, pb, inv, service, zmq_context):
    """Section 12: location.*, category.* and policy.updated, each with its message type."""
    subscriber = zmq_context.socket(zmq.SUB)
    subscriber.setsockopt(zmq.LINGER, 0)
    for prefix in (b"location.", b"category.", b"policy."):
        subscriber.setsockopt(zmq.SUBSCRIBE, prefix)
    subscriber.connect(service.events)
    try:
        def heard() -> list[tuple[bytes, bytes]]:
            frames = []
            while subscriber.poll(0, zmq.POLLIN):
                frames.append(tuple(subscriber.recv_multipart()[:2]))
            return frames

        # A subscription takes effect once it reaches the publisher: update until one is heard.
        deadline, got = time.monotonic() + 15, []
        for n in itertools.count():
            api("UpdatePolicy", inv.UpdatePolicyRequest(update_mask=["insurer"], policy=inv.Policy(insurer=f"Insurer {n}")))
            if subscriber.poll(100, zmq.POLLIN):
                got = heard()
                break
            assert time.monotonic() < deadline, "no policy.updated heard"
        assert got[-1][0] == b"policy.updated"
        assert pb.events.PolicyEvent.FromString(got[-1][1]).policy.insurer == f"Insurer {n}"

        key = str(uuid.uuid4())
        garage = api.location("Garage", key=key)
        api.location("Garage", key=key)  # a repeat: nothing published
        api("UpdateLocation", inv.UpdateLocationRequest(key=garage.key, update_mask=["name"], name="Workshop"))
        api("DeleteLocation", inv.DeleteLocationRequest(key=garage.key))
        tools = api.category("Tools", key=str(uuid.uuid4()))
        api("UpdateCategory", inv.UpdateCategoryRequest(key=tools.key, update_mask=["name"], name="Hand tools"))
        api("DeleteCategory", inv.DeleteCategoryRequest(key=tools.key))
        events, deadline = [], time.monotonic() + 10
        while len(events) < 6 and time.monotonic() < deadline:
            subscriber.poll(100, zmq.POLLIN)
            events += heard()
        assert [topic for topic, _ in events] == [
            b"location.created", b"location.updated", b"location.deleted",
            b"category.created", b"category.updated", b"category.deleted"]
        locations = [pb.events.LocationEvent.FromString(body) for _, body in events[:3]]
        assert [(e.key, e.location.name, e.location.version) for e in locations] == [
            (key, "Garage", 1), (key, "Workshop", 2), (key, "Workshop", 2)]
        categories = [pb.events.CategoryEvent.FromString(body) for _, body in events[3:]]
        assert [(e.key, e.category.name) for e in categories] == [
            (tools.key, "Tools"), (tools.key, "Hand tools"), (tools.key, "Hand tools")]
        assert all(e.at_ms > 0 for e in locations + categories)
    finally:
        subscriber.close()


def whole_months(start: str, end: str) -> int:
    """Whole months from start to end, a month complete on the same day of the month; 0 when start is after end."""
    sy, sm, sd = map(int, start.split("-"))
    ey, em, ed = map(int, end.split("-"))
    months = (ey - sy) * 12 + (em - sm) - (1 if ed < sd else 0)
    return max(0, months)


def acv_of(rcv: int, purchase_date: str, years: int, floor_percent: int) -> int:
    """The doc's straight line: max(1 − age / (years × 12), floor / 100) of the RCV, rounded to the minor unit."""
    age = whole_months(purchase_date, AS_OF)
    left = max(1 - age / (years * 12), floor_percent / 100)
    return round(rcv * left)


def dollars(minor_units: int) -> str:
    return f"${minor_units // 100:,}.{minor_units % 100:02d}"


def test_valuation_totals_groups_and_warnings(api, pb, inv):
    api("UpdatePolicy", inv.UpdatePolicyRequest(update_mask=["contents_limit"],
                                                 policy=inv.Policy(contents_limit=api.money("USD", 500000))))
    electronics = api.category("Electronics", depreciation=inv.DEPRECIATION_METHOD_STRAIGHT_LINE,
                               useful_life_years=5, floor_percent=20)
    jewellery = api.category("Jewellery", limit=api.money("USD", 100000))
    home = api.location("Home")
    ground = api.location("Ground floor", home)
    kitchen = api.location("Kitchen", ground)
    garage = api.location("Garage")

    laptop = api.item(name="Laptop", category_key=electronics.key, location_key=ground.key, tags=["Work"],
                      replacement_value=api.money("USD", 150000), purchase_price=api.money("USD", 120000),
                      purchase_date="2023-06-15")
    phone = api.item(name="Phone", category_key=electronics.key, location_key=kitchen.key, tags=["work", "gadgets"],
                     purchase_price=api.money("USD", 99999), quantity=2, purchase_date="2024-01-20")
    ring = api.item(name="Ring", category_key=jewellery.key, location_key=kitchen.key, tags=["WORK"],
                    replacement_value=api.money("", 85000), purchase_date="2010-01-01")
    chair = api.item(name="Old chair", location_key=garage.key, value_in_dollars=40, quantity=3)
    box = api.item(name="Mystery box")
    souvenir = api.item(name="Souvenir", replacement_value=api.money("EUR", 5000))
    drill = api.item(name="Drill", category_key=electronics.key, location_key=garage.key,
                     replacement_value=api.money("USD", 20000), purchase_date="2015-01-01")
    tv = api.item(name="TV", category_key=electronics.key, location_key=home.key,
                  replacement_value=api.money("USD", 100000), purchase_date="2026-01-01")  # after as_of: age 0

    # Expected, from the doc's rules.
    rcv = {laptop.key: 150000, phone.key: 2 * 99999, ring.key: 85000, chair.key: 3 * 40 * 100, box.key: 0,
           drill.key: 20000, tv.key: 100000}
    acv = {laptop.key: acv_of(150000, "2023-06-15", 5, 20), phone.key: acv_of(2 * 99999, "2024-01-20", 5, 20),
           ring.key: 85000, chair.key: 12000, box.key: 0, drill.key: acv_of(20000, "2015-01-01", 5, 20),
           tv.key: acv_of(100000, "2026-01-01", 5, 20)}
    assert (acv[laptop.key], acv[phone.key], acv[drill.key], acv[tv.key]) == (90000, 146665, 4000, 100000)
    quantity = {laptop.key: 1, phone.key: 2, ring.key: 1, chair.key: 3, box.key: 1, souvenir.key: 1, drill.key: 1, tv.key: 1}

    def totals(keys):
        usd = [k for k in keys if k in rcv]
        return dict(item_count=len(keys), quantity=sum(quantity[k] for k in keys),
                    replacement_cost=sum(rcv[k] for k in usd), actual_cash_value=sum(acv[k] for k in usd),
                    unvalued_count=int(box.key in keys), other_currency_count=int(souvenir.key in keys))

    def seen(t):
        return dict(item_count=t.item_count, quantity=t.quantity, replacement_cost=t.replacement_cost.minor_units,
                    actual_cash_value=t.actual_cash_value.minor_units, unvalued_count=t.unvalued_count,
                    other_currency_count=t.other_currency_count)

    everything = list(quantity)
    reply = api("GetValuation", inv.GetValuationRequest(as_of=AS_OF))
    assert (reply.as_of, reply.currency) == (AS_OF, "USD")
    assert seen(reply.total) == totals(everything)
    assert reply.total.replacement_cost.currency == "USD"
    assert reply.total.purchase_price.minor_units == 120000 + 2 * 99999

    in_garage, in_kitchen = [chair.key, drill.key], [phone.key, ring.key]
    in_ground = [laptop.key] + in_kitchen
    in_home = [tv.key] + in_ground
    assert [(g.key, g.name) for g in reply.by_location] == [
        (garage.key, "Garage"), (home.key, "Home"), (ground.key, "Home / Ground floor"),
        (kitchen.key, "Home / Ground floor / Kitchen"), ("", "No location")]
    assert [seen(g.totals) for g in reply.by_location] == [
        totals(in_garage), totals(in_home), totals(in_ground), totals(in_kitchen), totals([box.key, souvenir.key])]

    assert [(g.key, g.name) for g in reply.by_category] == [
        (electronics.key, "Electronics"), (jewellery.key, "Jewellery"), ("", "No category")]
    assert [seen(g.totals) for g in reply.by_category] == [
        totals([laptop.key, phone.key, drill.key, tv.key]), totals([ring.key]), totals([chair.key, box.key, souvenir.key])]
    assert reply.by_category[1].limit.minor_units == 100000
    assert not reply.by_category[0].HasField("limit") or reply.by_category[0].limit.minor_units == 0

    tags = {g.name: (g.key, seen(g.totals)) for g in reply.by_tag}
    assert set(tags) == {"Work", "gadgets"}  # grouped ignoring case, named as first seen
    assert tags["Work"][1] == totals([laptop.key, phone.key, ring.key])
    assert tags["gadgets"][1] == totals([phone.key])

    # Warnings: each category at or past 80 % of its limit, then the contents limit.
    whole = totals(everything)["replacement_cost"]
    assert [(w.scope, w.key, w.name) for w in reply.warnings] == [
        ("category", jewellery.key, "Jewellery"), ("contents", "", "Contents")]
    jw, contents = reply.warnings
    assert (jw.total.minor_units, jw.limit.minor_units, jw.percent) == (85000, 100000, 85)
    assert jw.message == f"Jewellery: {dollars(85000)} of its {dollars(100000)} limit (85 %)"
    percent = whole * 100 // 500000
    assert (contents.total.minor_units, contents.limit.minor_units, contents.percent) == (whole, 500000, percent)
    assert contents.message == f"Contents: {dollars(whole)} is over its {dollars(500000)} limit ({percent} %)"

    # A subtree's valuation: its totals, no contents warning; an unknown location; a bad date.
    scoped = api("GetValuation", inv.GetValuationRequest(as_of=AS_OF, location_key=ground.key))
    assert seen(scoped.total) == totals(in_ground)
    assert [g.name for g in scoped.by_location][:2] == ["Home / Ground floor", "Home / Ground floor / Kitchen"]
    assert "contents" not in [w.scope for w in scoped.warnings]
    api.refused("GetValuation", inv.GetValuationRequest(location_key=str(uuid.uuid4())), NOT_FOUND)
    api.refused("GetValuation", inv.GetValuationRequest(as_of="2025-13-01"), INVALID_ARGUMENT)
    assert api("GetValuation", inv.GetValuationRequest()).as_of == time.strftime("%Y-%m-%d", time.gmtime())

    # GetItem and ListItems with as_of fill the item's valuation.
    assert not api.get(phone.key).HasField("valuation")
    item = api.get(phone.key, as_of=AS_OF)
    v = item.valuation
    assert (v.as_of, v.basis, v.age_months, v.remaining_percent) == (AS_OF, inv.VALUE_BASIS_PURCHASE_PRICE, 16, 73)
    assert (v.replacement_cost.currency, v.replacement_cost.minor_units, v.actual_cash_value.minor_units) == (
        "USD", 199998, 146665)
    v = api.get(laptop.key, as_of=AS_OF).valuation
    assert (v.basis, v.age_months, v.remaining_percent, v.actual_cash_value.minor_units) == (
        inv.VALUE_BASIS_REPLACEMENT_VALUE, 24, 60, 90000)
    v = api.get(chair.key, as_of=AS_OF).valuation
    assert (v.basis, v.age_months, v.remaining_percent, v.replacement_cost.minor_units) == (
        inv.VALUE_BASIS_VALUE_IN_DOLLARS, -1, 100, 12000)
    assert v.replacement_cost.currency == "USD"
    v = api.get(drill.key, as_of=AS_OF).valuation
    assert (v.age_months, v.remaining_percent, v.actual_cash_value.minor_units) == (whole_months("2015-01-01", AS_OF), 20, 4000)
    v = api.get(tv.key, as_of=AS_OF).valuation
    assert (v.age_months, v.remaining_percent) == (0, 100)
    v = api.get(ring.key, as_of=AS_OF).valuation
    assert (v.age_months, v.remaining_percent, v.actual_cash_value.minor_units) == (whole_months("2010-01-01", AS_OF), 100, 85000)
    v = api.get(box.key, as_of=AS_OF).valuation
    assert (v.basis, v.replacement_cost.minor_units) == (inv.VALUE_BASIS_NONE, 0)
    v = api.get(souvenir.key, as_of=AS_OF).valuation
    assert (v.replacement_cost.currency, v.replacement_cost.minor_units) == ("EUR", 5000)
    api.refused("GetItem", pb.items.GetItemRequest(key=phone.key, as_of="yesterday"), INVALID_ARGUMENT)
    # "A month is complete on the same day of the month", at a month's end too.
    for bought, on in (("2024-01-31", "2024-02-29"), ("2024-01-31", "2024-03-01"), ("2024-02-29", "2025-02-28")):
        item = api("UpdateItem", pb.items.UpdateItemRequest(key=tv.key, update_mask=["purchase_date"], purchase_date=bought))
        v = api.get(item.key, as_of=on).valuation
        age = whole_months(bought, on)
        assert (v.age_months, v.actual_cash_value.minor_units) == (age, round(100000 * max(1 - age / 60, 0.2))), (bought, on)
    assert api.get(phone.key, as_of="today").valuation.as_of == time.strftime("%Y-%m-%d", time.gmtime())
    page = api("ListItems", pb.items.ListItemsRequest(as_of=AS_OF, location_key=kitchen.key))
    assert {i.name: i.valuation.actual_cash_value.minor_units for i in page.items} == {"Phone": 146665, "Ring": 85000}


# -- 6. readiness and photo roles ----------------------------------------------------------------


def test_readiness_overall_per_location_and_photo_roles(api, pb, inv, image_client):
    E = inv
    ALL = [E.EVIDENCE_PHOTO, E.EVIDENCE_RECEIPT, E.EVIDENCE_SERIAL, E.EVIDENCE_VALUE, E.EVIDENCE_PURCHASE_DATE]
    home = api.location("Home")
    attic = api.location("Attic", home)
    kitchen = api.location("Kitchen", home)
    camera = api.item(name="Camera", serial_number="C1", replacement_value=api.money("USD", 50000),
                      purchase_date="2024-01-01", location_key=kitchen.key)
    vase = api.item(name="Vase", location_key=home.key)
    lamp = api.item(name="Lamp", value_in_dollars=10)
    book = api.item(name="Book", value_in_dollars=5, purchase_date="2020-02-02", location_key=kitchen.key)

    def lacks(item, photo=False, receipt=False, serial=False):
        """What the doc's Evidence table says `item` lacks, given its photos' evidence."""
        has = {E.EVIDENCE_PHOTO: photo, E.EVIDENCE_RECEIPT: receipt,
               E.EVIDENCE_SERIAL: bool(item.serial_number) or serial,
               E.EVIDENCE_VALUE: item.replacement_value.minor_units > 0 or item.purchase_price.minor_units > 0
               or item.value_in_dollars > 0,
               E.EVIDENCE_PURCHASE_DATE: bool(item.purchase_date)}
        return [e for e in ALL if not has[e]]

    def expected_group(items_lacking):
        """(item_count, missing counts in Evidence order, score, gaps as (key, missing)) for {item: lacks}."""
        n = len(items_lacking)
        missing = [sum(e in lacking for lacking in items_lacking.values()) for e in ALL]
        score = 100 if n == 0 else (5 * n - sum(missing)) * 100 // (5 * n)
        order = [camera.key, vase.key, lamp.key, book.key]  # creation order
        gaps = sorted((k for k, lacking in items_lacking.items() if lacking), key=lambda k: (-len(items_lacking[k]), order.index(k)))
        return n, [(e, m) for e, m in zip(ALL, missing)], score, [(k, items_lacking[k]) for k in gaps]

    def observed(group):
        return (group.item_count, [(c.evidence, c.missing) for c in group.missing], group.score_percent,
                [(g.item_key, list(g.missing)) for g in group.gaps])

    def check(extra_camera: dict):
        lacking = {camera.key: lacks(camera, **extra_camera), vase.key: lacks(vase), lamp.key: lacks(lamp),
                   book.key: lacks(book)}
        reply = api("GetReadiness", inv.GetReadinessRequest())
        assert (reply.overall.key, reply.overall.name) == ("", "Everything")
        assert observed(reply.overall) == expected_group(lacking)
        assert [(g.key, g.name) for g in reply.locations] == [
            (home.key, "Home"), (attic.key, "Home / Attic"), (kitchen.key, "Home / Kitchen"), ("", "No location")]
        pick = lambda keys: {k: lacking[k] for k in keys}  # noqa: E731
        assert [observed(g) for g in reply.locations] == [
            expected_group(pick([camera.key, vase.key, book.key])), expected_group({}),
            expected_group(pick([camera.key, book.key])), expected_group(pick([lamp.key]))]
        return lacking

    lacking = check({})
    # The figures worked by hand too: 14 of 20 pairs missing.
    reply = api("GetReadiness", inv.GetReadinessRequest())
    assert reply.overall.score_percent == 30
    assert [c.missing for c in reply.overall.missing] == [4, 4, 3, 1, 2]
    assert [g.name for g in reply.overall.gaps] == ["Vase", "Lamp", "Book", "Camera"]
    assert reply.locations[1].score_percent == 100 and reply.locations[1].item_count == 0
    # One location's subtree only.
    scoped = api("GetReadiness", inv.GetReadinessRequest(location_key=kitchen.key))
    assert observed(scoped.overall)[:3] == expected_group({k: lacking[k] for k in (camera.key, book.key)})[:3]
    api.refused("GetReadiness", inv.GetReadinessRequest(location_key=str(uuid.uuid4())), NOT_FOUND)

    # SetPhotoRole of a photo that is not attached; a bad role; an unknown item.
    stray = str(uuid.uuid4())
    message = api.refused("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=camera.key, image_key=stray,
                                                                         role=pb.items.PHOTO_ROLE_RECEIPT), FAILED_PRECONDITION)
    assert message == f"image {stray} is not attached to item {camera.key}; attach it before giving it a role"
    api.refused("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=str(uuid.uuid4()), image_key=stray), NOT_FOUND)

    # A real receipt (the session's image-service holds it): evidence and readiness change.
    receipt = put_photo(image_client, pb, owner=camera.key, gray=77)
    attached = api("AttachPhoto", pb.items.AttachPhotoRequest(item_key=camera.key, image_key=receipt,
                                                              role=pb.items.PHOTO_ROLE_RECEIPT))
    assert [(p.image_key, p.role) for p in attached.photos] == [(receipt, pb.items.PHOTO_ROLE_RECEIPT)]
    assert list(attached.photo_keys) == [receipt] and attached.version == 2
    check({"receipt": True})
    assert camera.key not in api.keys(missing=[E.EVIDENCE_RECEIPT])
    assert camera.key in api.keys(missing=[E.EVIDENCE_PHOTO])
    api.refused("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=camera.key, image_key=receipt, role=6), INVALID_ARGUMENT)
    # A serial plate is a picture and a serial; a manual is neither a picture nor a receipt.
    changed = api("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=camera.key, image_key=receipt,
                                                                 role=pb.items.PHOTO_ROLE_SERIAL_PLATE))
    assert changed.photos[0].role == pb.items.PHOTO_ROLE_SERIAL_PLATE and changed.version == 3
    check({"photo": True, "serial": True})
    assert camera.key in api.keys(missing=[E.EVIDENCE_RECEIPT])
    api("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=camera.key, image_key=receipt, role=pb.items.PHOTO_ROLE_MANUAL))
    check({})
    # Readiness of a plate on an item with no serial number.
    plate = put_photo(image_client, pb, owner=vase.key, gray=99)
    api("AttachPhoto", pb.items.AttachPhotoRequest(item_key=vase.key, image_key=plate, role=pb.items.PHOTO_ROLE_SERIAL_PLATE))
    assert vase.key not in api.keys(missing=[E.EVIDENCE_SERIAL])
    assert vase.key not in api.keys(missing=[E.EVIDENCE_PHOTO])
    assert vase.key in api.keys(missing=[E.EVIDENCE_VALUE])


# -- 7. roles (section 16) -----------------------------------------------------------------------


def test_a_reader_key_reads_the_inventory_and_may_not_change_it(pb, inv, tmp_path):
    keys = tmp_path / "keys"
    _homepwner("keys", "init", str(keys))
    _homepwner("keys", "gen", "dashboard", "--dir", str(keys))
    _homepwner("keys", "allow", "reader", str(keys / "dashboard.key"), "--file", str(keys / "allowed_keys"))
    rpc = f"tcp://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    log = open(tmp_path / "item.log", "wb")
    process = subprocess.Popen(
        [str(_executable("item-service")), "--rpc", rpc, "--events", f"tcp://127.0.0.1:{free_port()}",
         "--data-dir", str(tmp_path / "data"), "--image-service", f"tcp://127.0.0.1:{free_port()}",
         "--server-secret-key", str(keys / "server.key_secret"), "--allowed-keys", str(keys / "allowed_keys")],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    context = zmq.Context()
    sockets = {}
    request_ids = itertools.count(1)
    server_public, _ = zmq.auth.load_certificate(str(keys / "server.key"))

    def call(name: str, method: str, request, response_type=None):
        if name not in sockets:
            public, secret = zmq.auth.load_certificate(str(keys / f"{name}.key_secret"))
            socket = context.socket(zmq.DEALER)
            socket.curve_publickey, socket.curve_secretkey, socket.curve_serverkey = public, secret, server_public
            socket.setsockopt(zmq.LINGER, 0)
            socket.connect(rpc)
            sockets[name] = socket
        socket = sockets[name]
        path = method if method.startswith("/") else ITEMS + method
        header = pb.rpc.RequestHeader(method=path, request_id=next(request_ids), timeout_ms=5000)
        socket.send_multipart([b"", header.SerializeToString(), request.SerializeToString()])
        assert socket.poll(15000, zmq.POLLIN), f"no reply to {method} by {name}:\n" + (tmp_path / "item.log").read_text()
        frames = socket.recv_multipart()
        reply = pb.rpc.ResponseHeader.FromString(frames[1])
        return reply, (response_type.FromString(frames[2]) if response_type and reply.code == 0 else None)

    try:
        deadline = time.monotonic() + 20
        while True:  # the admin's first call waits for the service to be up
            reply, home = call("admin", "CreateLocation", inv.CreateLocationRequest(name="Home"), inv.Location)
            if reply.code == 0 or time.monotonic() > deadline or process.poll() is not None:
                break
            time.sleep(0.2)
        assert reply.code == 0, reply.message
        reply, _ = call("admin", "CreateItem", pb.items.CreateItemRequest(
            name="Kettle", location_key=home.key, value_in_dollars=20))
        assert reply.code == 0, reply.message

        for method, request, response_type in (
                ("ListLocations", inv.ListLocationsRequest(), inv.ListLocationsResponse),
                ("GetLocation", inv.GetLocationRequest(key=home.key), inv.Location),
                ("ListCategories", inv.ListCategoriesRequest(), inv.ListCategoriesResponse),
                ("GetPolicy", inv.GetPolicyRequest(), inv.Policy),
                ("GetValuation", inv.GetValuationRequest(as_of=AS_OF), inv.GetValuationResponse),
                ("GetReadiness", inv.GetReadinessRequest(), inv.GetReadinessResponse),
                ("ListItems", pb.items.ListItemsRequest(search="kettle"), pb.items.ListItemsResponse)):
            reply, body = call("dashboard", method, request, response_type)
            assert reply.code == 0, f"{method}: {reply.code} {reply.message}"
            if method == "ListLocations":
                assert [loc.path for loc in body.locations] == ["Home"] and body.locations[0].item_count == 1
            if method == "GetValuation":
                assert body.total.replacement_cost.minor_units == 2000
        # Section 17: the history names the key that made each change; a reader may read it.
        history = importlib.import_module("homepwner.v1.history_pb2")
        reply, page = call("dashboard", "/homepwner.v1.HistoryService/GetHistory", history.GetHistoryRequest(),
                           history.GetHistoryResponse)
        assert reply.code == 0, reply.message
        assert [(e.action, e.actor) for e in page.entries] == [("location.created", "admin"), ("item.created", "admin")]

        for method, request in (
                ("CreateLocation", inv.CreateLocationRequest(name="Shed")),
                ("UpdateLocation", inv.UpdateLocationRequest(key=home.key, update_mask=["name"], name="House")),
                ("DeleteLocation", inv.DeleteLocationRequest(key=home.key)),
                ("CreateCategory", inv.CreateCategoryRequest(name="Art")),
                ("UpdatePolicy", inv.UpdatePolicyRequest(update_mask=["insurer"], policy=inv.Policy(insurer="x"))),
                ("SetPhotoRole", pb.items.SetPhotoRoleRequest(item_key=str(uuid.uuid4()), image_key=str(uuid.uuid4())))):
            reply, _ = call("dashboard", method, request)
            assert reply.code == PERMISSION_DENIED, f"{method}: {reply.code} {reply.message}"
            assert "reader" in reply.message and "admin" in reply.message, reply.message
        reply, listed = call("admin", "ListLocations", inv.ListLocationsRequest(), inv.ListLocationsResponse)
        assert [loc.path for loc in listed.locations] == ["Home"]  # nothing the reader asked for was done
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
        for socket in sockets.values():
            socket.close()
        context.term()
