"""Requests built by storage.base.expressions: placeholders only, conditions composed."""

from __future__ import annotations

import pytest

from storage.base.expressions import (
    Attr,
    Placeholders,
    Update,
    all_of,
    delete_request,
    get_request,
    put_request,
    query_request,
    wire,
)


def test_values_go_to_the_wire_form_by_python_type() -> None:
    assert wire("x") == {"S": "x"}
    assert wire(3) == {"N": "3"}
    assert wire(True) == {"BOOL": True}  # not {"N": "1"}: bool is checked before int
    assert wire({"SS": ["a"]}) == {"SS": ["a"]}


def test_no_name_or_value_is_spliced_into_expression_text() -> None:
    hostile = "count_5) OR (attribute_exists(PK"
    update = Update()
    update.set(hostile, "x = :v9")
    update.condition(Attr(hostile).eq("y") | Attr("rating").is_in([4, 5]))
    request = update.request("t", {"PK": {"S": "k"}})
    for text in (request["UpdateExpression"], request["ConditionExpression"]):
        assert hostile not in text
        assert "x = :v9" not in text
    assert request["ExpressionAttributeNames"] == {"#n0": hostile, "#n1": "rating"}
    assert request["UpdateExpression"] == "SET #n0 = :v0"
    assert request["ConditionExpression"] == "(#n0 = :v1) OR (#n1 IN (:v2, :v3))"
    assert request["ExpressionAttributeValues"] == {
        ":v0": {"S": "x = :v9"},
        ":v1": {"S": "y"},
        ":v2": {"N": "4"},
        ":v3": {"N": "5"},
    }


def test_update_conditions_all_hold_and_clauses_keep_their_order() -> None:
    update = Update()
    update.add("count_1", -1)
    update.set("productId", "p")
    update.remove("GSIPK")
    update.condition(Attr("count_1").ge(1))
    update.condition(~Attr("version").exists())
    request = update.request("t", {"PK": {"S": "k"}}, return_old=True)
    assert request["UpdateExpression"] == "SET #n1 = :v1 ADD #n0 :v0 REMOVE #n2"
    assert request["ConditionExpression"] == "(#n0 >= :v2) AND (NOT (attribute_exists(#n3)))"
    assert request["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_an_update_that_changes_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="must change something"):
        Update().request("t", {})


def test_requests_without_names_or_values_carry_no_maps() -> None:
    assert put_request("t", {"PK": {"S": "k"}}) == {"TableName": "t", "Item": {"PK": {"S": "k"}}}
    assert delete_request("t", {"PK": {"S": "k"}}, Attr("PK").exists()) == {
        "TableName": "t",
        "Key": {"PK": {"S": "k"}},
        "ConditionExpression": "attribute_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK"},
    }
    assert get_request("t", {}, projection=["count_5"], consistent=True) == {
        "TableName": "t",
        "Key": {},
        "ConsistentRead": True,
        "ProjectionExpression": "#n0",
        "ExpressionAttributeNames": {"#n0": "count_5"},
    }


def test_a_query_renders_key_filter_and_projection_into_one_set_of_placeholders() -> None:
    key = Attr("GSIPK").eq("P#1") & Attr("GSISK").between("a", "b")
    params = query_request(
        "t",
        index="byRating",
        key=key,
        filter=Attr("rating").is_in([5]),
        projection=["GSISK"],
        forward=False,
        limit=21,
    )
    assert params["KeyConditionExpression"] == "(#n0 = :v0) AND (#n1 BETWEEN :v1 AND :v2)"
    assert params["FilterExpression"] == "#n2 IN (:v3)"
    assert params["ProjectionExpression"] == "#n1"  # the same attribute, the same name
    assert (params["IndexName"], params["ScanIndexForward"], params["Limit"]) == (
        "byRating",
        False,
        21,
    )


def test_in_needs_values_and_all_of_nothing_is_none() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        Attr("rating").is_in([])
    assert all_of([]) is None
    single = Attr("a").eq(1)
    assert all_of([single]) is single
    p = Placeholders()
    assert p.name("a") == p.name("a") == "#n0"


def test_an_update_asked_for_again_is_the_same_request() -> None:
    # A retry renders the request again: placeholders of the first rendering left unused
    # would make DynamoDB refuse it ("unused in expressions").
    u = Update()
    u.set("helpful", 3)
    u.condition(Attr("PK").exists() & Attr("entryOf").lt(2))
    key = {"PK": {"S": "a"}, "SK": {"S": "b"}}
    first = u.request("t", key)
    assert u.request("t", key) == first
    assert set(first["ExpressionAttributeValues"]) == {":v0", ":v1"}
