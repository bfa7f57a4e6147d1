use super::*;
use serde_json::json;

const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_RULE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_RULE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn dns1123_subdomains() {
    for good in [
        "a",
        "ab",
        "a-b",
        "a.b",
        "0",
        "a1.b2-c.d",
        "123",
        &"a".repeat(253),
    ] {
        assert!(is_dns1123_subdomain(good).is_empty(), "{good:?}");
    }
    for bad in [
        "", "A", "a_b", "-a", "a-", ".a", "a.", "a..b", "a.-b", "é", "a b",
    ] {
        assert_eq!(
            is_dns1123_subdomain(bad),
            vec![SUBDOMAIN_RULE.to_string()],
            "{bad:?}"
        );
    }
    assert_eq!(
        is_dns1123_subdomain(&"a".repeat(254)),
        vec!["must be no more than 253 characters".to_string()]
    );
    assert_eq!(
        is_dns1123_subdomain(&format!("{}_", "a".repeat(253))),
        vec![
            "must be no more than 253 characters".to_string(),
            SUBDOMAIN_RULE.to_string()
        ]
    );
}

#[test]
fn dns1123_labels() {
    for good in ["a", "a-b", "0a", "abc-123", &"a".repeat(63)] {
        assert!(is_dns1123_label(good).is_empty(), "{good:?}");
    }
    assert_eq!(
        is_dns1123_label("a.b"),
        vec!["must not contain dots".to_string()]
    );
    for bad in ["", "A", "a_b", "-a", "a-", "a..b"] {
        assert_eq!(
            is_dns1123_label(bad),
            vec![LABEL_RULE.to_string()],
            "{bad:?}"
        );
    }
    assert_eq!(
        is_dns1123_label(&"a".repeat(64)),
        vec!["must be no more than 63 characters".to_string()]
    );
}

#[test]
fn dns1035_labels() {
    assert!(is_dns1035_label("my-svc1").is_empty());
    assert_eq!(is_dns1035_label("1abc"), vec![DNS1035_RULE.to_string()]);
    assert_eq!(is_dns1035_label(""), vec![DNS1035_RULE.to_string()]);
    assert_eq!(is_dns1035_label(&"a".repeat(64)).len(), 1);
}

#[test]
fn qualified_names() {
    for good in [
        "a",
        "A",
        "a.b_c-D",
        "1",
        "example.com/Key",
        "k8s.io/a",
        &"a".repeat(63),
        &format!("{}/{}", "a".repeat(253), "b".repeat(63)),
    ] {
        assert!(is_qualified_name(good).is_empty(), "{good:?}");
    }
    assert_eq!(is_qualified_name("a_"), vec![NAME_PART_RULE.to_string()]);
    assert_eq!(
        is_qualified_name(""),
        vec![
            "name part must be non-empty".to_string(),
            NAME_PART_RULE.to_string()
        ]
    );
    assert_eq!(
        is_qualified_name("/a"),
        vec!["prefix part must be non-empty".to_string()]
    );
    assert_eq!(
        is_qualified_name("Example.com/a"),
        vec![format!("prefix part {SUBDOMAIN_RULE}")]
    );
    assert_eq!(
        is_qualified_name("example.com/"),
        vec![
            "name part must be non-empty".to_string(),
            NAME_PART_RULE.to_string()
        ]
    );
    assert_eq!(
        is_qualified_name(&"a".repeat(64)),
        vec!["name part must be no more than 63 characters".to_string()]
    );
    assert_eq!(
        is_qualified_name("a/b/c"),
        vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
    );
}

#[test]
fn label_values() {
    for good in ["", "a", "A-b_c.D", "123", &"v".repeat(63)] {
        assert!(is_valid_label_value(good).is_empty(), "{good:?}");
    }
    for bad in ["-a", "a-", "a b", "a/b", "é"] {
        assert_eq!(
            is_valid_label_value(bad),
            vec![VALUE_RULE.to_string()],
            "{bad:?}"
        );
    }
    assert_eq!(
        is_valid_label_value(&"v".repeat(64)),
        vec!["must be no more than 63 characters".to_string()]
    );
}

#[test]
fn path_segment_names() {
    assert_eq!(
        path_segment_name(".", false),
        vec!["may not be '.'".to_string()]
    );
    assert_eq!(
        path_segment_name("..", false),
        vec!["may not be '..'".to_string()]
    );
    assert!(path_segment_name(".", true).is_empty());
    assert!(path_segment_name("...", false).is_empty());
    assert_eq!(
        path_segment_name("a/b%c", false),
        vec![
            "may not contain '/'".to_string(),
            "may not contain '%'".to_string()
        ]
    );
    assert_eq!(
        path_segment_name("a%", true),
        vec!["may not contain '%'".to_string()]
    );
    assert!(path_segment_name("Any_Thing:ok", false).is_empty());
}

#[test]
fn generate_name_prefixes_allow_a_trailing_dash() {
    assert!(name_is_dns_subdomain("web-", true).is_empty());
    assert!(name_is_dns_label("web-", true).is_empty());
    assert!(name_is_dns1035_label("web-", true).is_empty());
    assert_eq!(
        name_is_dns_subdomain("web-", false),
        vec![SUBDOMAIN_RULE.to_string()]
    );
    assert_eq!(
        name_is_dns_subdomain("-", true),
        vec![SUBDOMAIN_RULE.to_string()]
    );
    assert_eq!(
        name_is_dns_subdomain("Web-", true),
        vec![SUBDOMAIN_RULE.to_string()]
    );
    assert_eq!(
        name_is_dns_subdomain("é-", true),
        vec![SUBDOMAIN_RULE.to_string()]
    );
    assert_eq!(
        name_is_dns_label("a.b-", true),
        vec!["must not contain dots".to_string()]
    );
}

#[test]
fn generated_names() {
    let alphabet = "bcdfghjklmnpqrstvwxz2456789";
    let name = generate_name("web-");
    assert_eq!(name.len(), 9);
    assert!(name.starts_with("web-"));
    assert!(name[4..].chars().all(|c| alphabet.contains(c)));
    assert!(is_dns1123_subdomain(&name).is_empty());
    let long = generate_name(&"a".repeat(100));
    assert_eq!(long.len(), 63);
    assert!(long.starts_with(&"a".repeat(58)));
    assert_eq!(generate_name("").len(), 5);
    // Cut at a char boundary rather than inside 'é' (2 bytes at 57..59).
    let cut = generate_name(&format!("{}é", "a".repeat(57)));
    assert_eq!(&cut[..57], "a".repeat(57));
    assert_eq!(cut.len(), 62);
    let names: std::collections::BTreeSet<String> = (0..50).map(|_| generate_name("x-")).collect();
    assert!(names.len() > 40, "names should be random");
}

#[test]
fn quoting_matches_go() {
    assert_eq!(quote("Bad_Name"), "\"Bad_Name\"");
    assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_eq!(
        quote("\n\t\r\u{7}\u{8}\u{c}\u{b}"),
        "\"\\n\\t\\r\\a\\b\\f\\v\""
    );
    assert_eq!(quote("\u{0}\u{1f}\u{7f}"), "\"\\x00\\x1f\\x7f\"");
    assert_eq!(quote("é ü 日本"), "\"é ü 日本\"");
    assert_eq!(
        quote("\u{a0}\u{200b}\u{feff}\u{85}"),
        "\"\\u00a0\\u200b\\ufeff\\u0085\""
    );
    assert_eq!(quote("\u{f0000}"), "\"\\U000f0000\"");
}

#[test]
fn labels_are_validated() {
    assert!(validate_labels(&Value::Null, "metadata.labels").is_empty());
    assert!(validate_labels(&json!({}), "metadata.labels").is_empty());
    assert!(validate_labels(
        &json!({"app": "web", "example.com/tier": ""}),
        "metadata.labels"
    )
    .is_empty());
    let causes = validate_labels(&json!({"a_": "ok", "b": "bad value"}), "metadata.labels");
    assert_eq!(
        causes,
        vec![
            Cause::invalid("metadata.labels", "\"a_\"", NAME_PART_RULE),
            Cause::invalid("metadata.labels", "\"bad value\"", VALUE_RULE),
        ]
    );
    assert_eq!(causes[0].kind, "FieldValueInvalid");
    assert_eq!(
        causes[1].message,
        format!("Invalid value: \"bad value\": {VALUE_RULE}")
    );
    let typed = validate_labels(&json!({"n": 1}), "metadata.labels");
    assert_eq!(typed.len(), 1);
    assert_eq!(typed[0].field, "metadata.labels.n");
    assert_eq!(validate_labels(&json!(["a"]), "metadata.labels").len(), 1);
    let both = validate_labels(&json!({"a/b/c": "-"}), "spec.template.metadata.labels");
    assert_eq!(both.len(), 2);
    assert!(both
        .iter()
        .all(|c| c.field == "spec.template.metadata.labels"));
}

#[test]
fn annotations_are_validated() {
    assert!(validate_annotations(&Value::Null, "metadata.annotations").is_empty());
    // Keys are checked case-insensitively; values are free-form.
    let ok = json!({"Example.COM/Key": "any value / at all", "kubectl.kubernetes.io/last-applied-configuration": "{}"});
    assert!(validate_annotations(&ok, "metadata.annotations").is_empty());
    assert_eq!(
        validate_annotations(&json!({"a_": ""}), "metadata.annotations"),
        vec![Cause::invalid(
            "metadata.annotations",
            "\"a_\"",
            NAME_PART_RULE
        )]
    );
    let at_limit = json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1)});
    assert!(validate_annotations(&at_limit, "metadata.annotations").is_empty());
    let over = json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)});
    let causes = validate_annotations(&over, "metadata.annotations");
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].kind, "FieldValueTooLong");
    assert_eq!(causes[0].field, "metadata.annotations");
    assert_eq!(
        causes[0].message,
        "Too long: may not be more than 262144 bytes"
    );
}
