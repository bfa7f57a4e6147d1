use super::*;
use rand::Rng;
use std::collections::BTreeMap;

fn parse(s: &str) -> FieldSelector {
    FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn parse_err(s: &str) -> String {
    match FieldSelector::parse(s) {
        Ok(sel) => panic!("{s:?} should not parse, got {sel}"),
        Err(e) => e.to_string(),
    }
}

fn fields<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    let map: BTreeMap<&str, &str> = pairs.iter().copied().collect();
    move |field: &str| map.get(field).map(|v| v.to_string())
}

#[test]
fn parses_the_three_operators() {
    let sel = parse("metadata.name=web,spec.nodeName==n1,status.phase!=Running");
    assert_eq!(
        sel.requirements(),
        [
            FieldRequirement {
                field: "metadata.name".into(),
                operator: FieldOperator::Equals,
                value: "web".into(),
            },
            FieldRequirement {
                field: "spec.nodeName".into(),
                operator: FieldOperator::Equals,
                value: "n1".into(),
            },
            FieldRequirement {
                field: "status.phase".into(),
                operator: FieldOperator::NotEquals,
                value: "Running".into(),
            },
        ]
    );
    assert_eq!(
        sel.to_string(),
        "metadata.name=web,spec.nodeName=n1,status.phase!=Running"
    );
}

#[test]
fn terms_are_sorted_and_empty_terms_skipped() {
    assert_eq!(parse("b=2,,a=1,").to_string(), "a=1,b=2");
    assert!(parse("").is_empty());
    assert!(parse(",,").is_empty());
    assert!(!parse("a=").is_empty());
    assert_eq!(parse("a=").requirements()[0].value, "");
}

#[test]
fn the_first_operator_splits_the_term() {
    let req = |s: &str| parse(s).requirements()[0].clone();
    assert_eq!(req("a==b").value, "b");
    assert_eq!(req("a!=b!c").value, "b!c");
    let r = req("a!b=c");
    assert_eq!((r.field.as_str(), r.value.as_str()), ("a!b", "c"));
    // No trimming: upstream keeps the spaces, and then rejects the field as unsupported.
    assert_eq!(req(" a = b").field, " a ");
    assert_eq!(req(" a = b").value, " b");
}

#[test]
fn values_unescape_and_reescape() {
    let sel = parse(r"a=x\,y\=z\\w,b!=\\");
    assert_eq!(sel.requirements()[0].value, r"x,y=z\w");
    assert_eq!(sel.requirements()[1].value, r"\");
    assert_eq!(sel.to_string(), r"a=x\,y\=z\\w,b!=\\");
    assert_eq!(escape_value(r"a,b=c\d"), r"a\,b\=c\\d");
    assert_eq!(
        parse(&format!("f={}", escape_value("=,\\é"))).requirements()[0].value,
        "=,\\é"
    );
}

#[test]
fn errors_carry_upstream_messages() {
    assert_eq!(
        parse_err("foo"),
        "invalid selector: 'foo'; can't understand 'foo'"
    );
    assert_eq!(
        parse_err("a=1,foo"),
        "invalid selector: 'a=1,foo'; can't understand 'foo'"
    );
    assert_eq!(
        parse_err(r"a=b\x"),
        r"invalid field selector: invalid escape sequence: \x"
    );
    assert_eq!(
        parse_err(r"a=b\!"),
        r"invalid field selector: invalid escape sequence: \!"
    );
    assert_eq!(
        parse_err(r"a=b\"),
        r"invalid field selector: invalid escape sequence: \"
    );
    // Upstream prints the offending rune as a number.
    assert_eq!(
        parse_err("a=b=c"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        parse_err(r"a=b\\,c"),
        "invalid selector: 'a=b\\\\,c'; can't understand 'c'"
    );
}

#[test]
fn matching_treats_missing_fields_as_empty() {
    let sel = parse("metadata.name=web,status.phase!=Failed");
    assert!(sel.matches(&fields(&[
        ("metadata.name", "web"),
        ("status.phase", "Running")
    ])));
    assert!(sel.matches(&fields(&[("metadata.name", "web")])));
    assert!(!sel.matches(&fields(&[
        ("metadata.name", "web"),
        ("status.phase", "Failed")
    ])));
    assert!(!sel.matches(&fields(&[("metadata.name", "db")])));
    assert!(parse("spec.nodeName=").matches(&fields(&[])));
    assert!(!parse("spec.nodeName!=").matches(&fields(&[("spec.nodeName", "")])));
    assert!(FieldSelector::everything().matches(&fields(&[])));
}

#[test]
fn unsupported_fields_are_reported() {
    let supported = ["metadata.name", "metadata.namespace"];
    assert_eq!(parse("metadata.name=a").check_supported(&supported), Ok(()));
    assert_eq!(
        parse("metadata.name=a,spec.x=b")
            .check_supported(&supported)
            .map_err(|e| e.to_string()),
        Err("field label not supported: spec.x".to_string())
    );
    assert_eq!(parse("").check_supported(&[]), Ok(()));
}

#[test]
fn exact_matches_are_found() {
    let sel = parse("metadata.name!=x,metadata.name=web");
    assert_eq!(sel.requires_exact_match("metadata.name"), Some("web"));
    assert_eq!(
        parse("metadata.name!=x").requires_exact_match("metadata.name"),
        None
    );
    assert_eq!(sel.requires_exact_match("metadata.namespace"), None);
}

#[test]
fn arbitrary_input_never_panics() {
    let alphabet: Vec<char> = "ab=!,\\ é.".chars().collect();
    let mut rng = rand::rng();
    for _ in 0..5000 {
        let s: String = (0..rng.random_range(0..12))
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        if let Ok(sel) = FieldSelector::parse(&s) {
            // The string form holds the same terms, though `==` printed as `=` may sort
            // differently, as upstream's does.
            let key = |r: &FieldRequirement| format!("{r:?}");
            let again = FieldSelector::parse(&sel.to_string()).map(|again| {
                let mut terms = again.requirements().to_vec();
                terms.sort_by_key(key);
                terms
            });
            let mut terms = sel.requirements().to_vec();
            terms.sort_by_key(key);
            assert_eq!(again, Ok(terms), "for {s:?}");
        }
    }
}
