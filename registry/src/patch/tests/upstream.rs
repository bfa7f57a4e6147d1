//! Cases from upstream's strategicpatch tests (their MergeItem type), applied with our code.

use serde_json::{json, Value};

use crate::patch::{apply_patch, Field, PatchSchema, PatchType, Strategy};

static MERGE_ITEM: PatchSchema = PatchSchema {
    name: "MergeItem",
    fields: &[
        Field::merge_of("mergingList", "name", &MERGE_ITEM),
        Field::set("mergingIntList"),
        Field {
            ty: Some(&MERGE_ITEM),
            ..Field::retain("retainKeysMap")
        },
        Field {
            ty: Some(&MERGE_ITEM),
            ..Field::merge_retain("retainKeysMergingList", "name")
        },
        Field {
            name: "replacingItem",
            strategy: Strategy::Replace,
            merge_key: None,
            retain_keys: false,
            ty: None,
        },
    ],
};

fn apply(original: &Value, patch: &Value) -> crate::error::Result<Value> {
    apply_patch(
        PatchType::Strategic,
        original,
        patch.to_string().as_bytes(),
        Some(&MERGE_ITEM),
    )
}

#[test]
fn upstream_cases() {
    let cases = [
        (
            json!({"mergingIntList": [1, 2]}),
            json!({"mergingIntList": [2, 3]}),
            json!({"mergingIntList": [1, 2, 3]}),
        ),
        (
            json!({"simpleMap": {"key1": 1, "key2": 1}}),
            json!({"simpleMap": {"$patch": "delete"}}),
            json!({"simpleMap": {}}),
        ),
        (
            json!({"mergingList": [{"name": 1}, {"name": 2}]}),
            json!({"mergingList": [{"$patch": "replace"}]}),
            json!({"mergingList": []}),
        ),
        (
            json!({"mergingList": []}),
            json!({"mergingList": []}),
            json!({"mergingList": []}),
        ),
        (
            json!({"name": 1, "value": 1}),
            json!({"$patch": "replace"}),
            json!({}),
        ),
        (
            json!({"name": 1, "value": 1}),
            json!({"other": "a", "$patch": "replace"}),
            json!({"other": "a"}),
        ),
        (
            json!({"mergingList": [{"name": 1}, {"name": 1}, {"name": 2, "value": "a"}, {"name": 3}, {"name": 3}]}),
            json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 3, "$patch": "delete"}]}),
            json!({"mergingList": [{"name": 2, "value": "a"}]}),
        ),
        (
            json!({"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}),
            json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}, {"name": 2, "other": "x"}]}),
            json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}, {"name": 2, "value": "b", "other": "x"}]}),
        ),
        (
            json!({"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}),
            json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}),
            json!({"mergingList": [{"name": 2, "value": "b"}, {"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}),
        ),
        (
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"mergingIntList": [3, 1, 2]}),
            json!({"mergingIntList": [3, 1, 2]}),
        ),
        (
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"mergingIntList": [3, 1]}),
            json!({"mergingIntList": [2, 3, 1]}),
        ),
        (
            json!({"mergingList": [{"name": 1}, {"name": 3}]}),
            json!({"$setElementOrder/mergingList": [{"name": 3}, {"name": 2}, {"name": 1}],
                   "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}),
            json!({"mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}),
        ),
        (
            json!({"mergingIntList": [1, 3]}),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
            json!({"mergingIntList": [3, 1]}),
        ),
        (
            json!({"mergingIntList": [1, 2, 3, 3, 4]}),
            json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
            json!({"mergingIntList": [1, 2, 4]}),
        ),
        (
            json!({"mergingIntList": [1, 2, 3, 4]}),
            json!({"$setElementOrder/mergingIntList": [1, 2, 4], "$deleteFromPrimitiveList/mergingIntList": [3],
                   "mergingIntList": [4]}),
            json!({"mergingIntList": [1, 2, 4]}),
        ),
        (
            json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]}),
            json!({"$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
                   "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]}),
            json!({"mergingList": [{"name": 4, "value": 4}, {"name": 1, "other": "a"},
                                   {"name": 2, "value": 2, "other": "b"}, {"name": 3, "value": 3}]}),
        ),
        (
            json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}),
            json!({"retainKeysMergingList": [{"name": "foo", "value": null}]}),
            json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]}),
        ),
        (
            json!({"retainKeysMap": {"name": "foo", "value": "a"}}),
            json!({"retainKeysMap": {}}),
            json!({"retainKeysMap": {"name": "foo", "value": "a"}}),
        ),
        (
            json!({"replacingItem": {"a": 1, "b": 2}}),
            json!({"replacingItem": {"b": 3, "c": null}}),
            json!({"replacingItem": {"b": 3}}),
        ),
        // The design proposal's example: the server-only item keeps its place before the
        // items it preceded in the object.
        (
            json!({"mergingList": [{"name": "B"}, {"name": "C"}, {"name": "A"}]}),
            json!({"mergingList": [{"name": "A", "v": 1}, {"name": "B", "v": 1}, {"name": "D"}]}),
            json!({"mergingList": [{"name": "C"}, {"name": "A", "v": 1}, {"name": "B", "v": 1}, {"name": "D"}]}),
        ),
    ];
    for (original, patch, expected) in cases {
        match apply(&original, &patch) {
            Ok(got) => assert_eq!(got, expected, "patch {patch} on {original}"),
            Err(e) => panic!("patch {patch} on {original}: {e}"),
        }
    }
}

#[test]
fn upstream_error_cases() {
    for (original, patch, expected) in [
        (
            json!({"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]}),
            json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
                   "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}),
            "doesn't match",
        ),
        (
            json!({"mergingIntList": [1, 3, 2]}),
            json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]}),
            "doesn't match",
        ),
        (
            json!({"mergingList": [{"name": 1, "value": "a"}]}),
            json!({"mergingList": [{"value": "b"}]}),
            "does not contain declared merge key",
        ),
    ] {
        let err = apply(&original, &patch).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(err.to_string().contains(expected), "{err}");
    }
}
