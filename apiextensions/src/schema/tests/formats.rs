//! Formats: upstream's list is checked, other formats (int32 included) assert nothing.

use super::super::formats::checker;
use super::spec_errors;
use registry::go_fmt;
use serde_json::json;

fn check(format: &str, value: &str) -> bool {
    match checker(&format.replace('-', "")) {
        Some(check) => check(value),
        None => panic!("{format} is not a checked format"),
    }
}

#[test]
fn date_time() {
    for good in [
        "2024-02-29T10:00:00Z",
        "2024-01-01t23:59:59.123+02:00",
        "2024-01-01T00:00:00-07:30",
    ] {
        assert!(check("date-time", good), "{good}");
    }
    for bad in [
        "2023-02-29T10:00:00Z",
        "2024-01-01",
        "2024-01-01T24:00:00Z",
        "2024-01-01T10:00Z",
        "yesterday",
        "2024-01-01T10:00:00",
    ] {
        assert!(!check("date-time", bad), "{bad}");
    }
    assert_eq!(
        spec_errors(json!({"at": {"type": "string", "format": "date-time"}}), json!({"at": "noon"})),
        ["FieldValueTypeInvalid spec.at: Invalid value: \"noon\": spec.at in body must be of type date-time: \"noon\""]
    );
}

#[test]
fn byte_is_padded_standard_base64() {
    assert!(check("byte", "aGVsbG8="));
    assert!(check("byte", "YWJj"));
    for bad in ["", "aGVsbG8", "a===", "aGV-bG8=", "!!!!"] {
        assert!(!check("byte", bad), "{bad}");
    }
    assert_eq!(
        spec_errors(json!({"data": {"type": "string", "format": "byte"}}), json!({"data": "not base64"})),
        ["FieldValueTypeInvalid spec.data: Invalid value: \"not base64\": spec.data in body must be of type byte: \"not base64\""]
    );
}

#[test]
fn int32_and_unknown_formats_assert_nothing() {
    // Upstream strips formats outside its list before validating, int32 and int64 included.
    let props = json!({
        "small": {"type": "integer", "format": "int32"},
        "odd": {"type": "string", "format": "no-such-format"},
        "frac": {"type": "number", "format": "float"},
    });
    assert!(spec_errors(
        props,
        json!({"small": 4294967296_i64, "odd": "x", "frac": 1e300})
    )
    .is_empty());
}

#[test]
fn a_non_string_under_a_format_is_judged_by_the_format() {
    // kube-openapi's type check names the format and the Go type of the value.
    assert_eq!(
        spec_errors(json!({"at": {"type": "string", "format": "date"}}), json!({"at": 20240101})),
        ["FieldValueTypeInvalid spec.at: Invalid value: \"int64\": spec.at in body must be of type date: \"int64\""]
    );
}

#[test]
fn network_and_identifier_formats() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "uuid",
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "123E4567E89B12D3A456426614174000",
            ],
            &[
                "123e4567-e89b-12d3-a456",
                "zzze4567-e89b-12d3-a456-426614174000",
            ],
        ),
        (
            "uuid4",
            &["123e4567-e89b-42d3-a456-426614174000"],
            &["123e4567-e89b-12d3-a456-426614174000"],
        ),
        (
            "ipv4",
            &["10.0.0.1", "::ffff:10.0.0.1"],
            &["10.0.0", "010.0.0.1", "::1"],
        ),
        ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80:::1"]),
        (
            "cidr",
            &["10.0.0.0/8", "fd00::/64"],
            &["10.0.0.0/33", "10.0.0.0", "x/8"],
        ),
        (
            "mac",
            &["00:1a:2b:3c:4d:5e", "00-1A-2B-3C-4D-5E", "001a.2b3c.4d5e"],
            &["00:1a:2b:3c:4d", "00:1a:2b:3c:4d:5g"],
        ),
        (
            "hostname",
            &[
                "example.com",
                "a",
                "my-host.example.com",
                "xn--bcher-kva.ch",
            ],
            &["-a.com", "a..b", "example.c", "a_b.com", "my-host"],
        ),
        (
            "email",
            &["a@example.com", "Name <a.b@example.com>"],
            &["a@", "@example.com", "a b@example.com"],
        ),
        (
            "uri",
            &[
                "https://example.com/a?b=c",
                "/relative/path",
                "mailto:a@example.com",
            ],
            &["example.com/a", "", "http://host:port/", "/a%zz"],
        ),
        (
            "date",
            &["2024-02-29", "1999-12-31"],
            &["2023-02-29", "2024-13-01", "24-01-01", "2024-1-01"],
        ),
        (
            "duration",
            &["1h30m", "300ms", "-1.5h", "3 days", "1w"],
            &["1x", "h", "", "1.h.2"],
        ),
        (
            "isbn",
            &["0321751043", "978-0321751041"],
            &["0321751044", "978-0321751042"],
        ),
        ("hexcolor", &["#fff", "A0B1C2"], &["#ffff", "#ggg"]),
        (
            "rgbcolor",
            &["rgb(255, 0, 10)"],
            &["rgb(256,0,0)", "rgb(1,2)"],
        ),
        ("ssn", &["123-45-6789"], &["123456789"]),
        (
            "creditcard",
            &["4111 1111 1111 1111"],
            &["4111 1111 1111 1112"],
        ),
        (
            "bsonobjectid",
            &["507f1f77bcf86cd799439011"],
            &["507f1f77bcf86cd79943901"],
        ),
        ("password", &["anything at all"], &[]),
    ];
    for (format, good, bad) in cases {
        for value in *good {
            assert!(check(format, value), "{format} should accept {value:?}");
        }
        for value in *bad {
            assert!(!check(format, value), "{format} should refuse {value:?}");
        }
    }
}

#[test]
fn go_number_printing() {
    assert_eq!(go_fmt::float(1.5), "1.5");
    assert_eq!(go_fmt::float(10.0), "10");
    assert_eq!(go_fmt::float(123456.0), "123456");
    assert_eq!(go_fmt::float(1234567.0), "1.234567e+06");
    assert_eq!(go_fmt::float(0.0001), "0.0001");
    assert_eq!(go_fmt::float(0.00001), "1e-05");
    assert_eq!(go_fmt::float(-2.5e300), "-2.5e+300");
    assert_eq!(
        go_fmt::error_value(&json!({"b": [1, "x", null], "a": 1.5})),
        "map[string]interface {}{\"a\":1.5, \"b\":[]interface {}{1, \"x\", interface {}(nil)}}"
    );
}
