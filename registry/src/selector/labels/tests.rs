use super::*;
use crate::error::RegistryError;
use crate::selector::SelectorError;
use rand::Rng;
use serde_json::json;

const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const KEY_NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn parse(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn parse_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(sel) => panic!("{s:?} should not parse, got {sel}"),
        Err(e) => e.to_string(),
    }
}

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn good_strings_round_trip() {
    for (input, canonical) in [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x==a"),
        ("x in (a,b)", "x in (a,b)"),
        ("x notin (a)", "x notin (a)"),
        (
            "example.com/key-with.dash_x=Value_1.x",
            "example.com/key-with.dash_x=Value_1.x",
        ),
    ] {
        assert_eq!(parse(input).to_string(), canonical, "for {input:?}");
    }
}

#[test]
fn canonical_form_sorts_keys_and_values() {
    let sel = parse("z, x in (b, a) ,  !y, w notin (c,,a)");
    assert_eq!(sel.to_string(), "w notin (,a,c),x in (a,b),!y,z");
    assert_eq!(parse("x=a,a=x").to_string(), parse("a=x,x=a").to_string());
    assert_eq!(parse("x in (),y").to_string(), "x in (),y");
    assert_eq!(parse("x in (abc,)").to_string(), "x in (,abc)");
    assert_eq!(parse("x in (b,b,a)").requirements()[0].values(), ["a", "b"]);
}

#[test]
fn whitespace_is_tolerated_everywhere() {
    assert_eq!(parse("\rx").to_string(), "x");
    assert_eq!(parse("foo  in\t (abc)").to_string(), "foo in (abc)");
    assert_eq!(parse("x notin\n (abc)").to_string(), "x notin (abc)");
    assert_eq!(parse("  a  =  b  ,  c  !=  d  ").to_string(), "a=b,c!=d");
}

#[test]
fn in_and_notin_can_be_keys_and_values() {
    let sel = parse("in in (notin),notin=in");
    assert_eq!(sel.to_string(), "in in (notin),notin=in");
    assert!(sel.matches_map(&set(&[("in", "notin"), ("notin", "in")])));
}

#[test]
fn parse_errors_carry_upstream_messages() {
    let cases = [
        ("x=a,y=b c", "found 'c', expected: ',' or 'end of string'"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("x in (a),,", "found ',', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a!", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!a", "unable to parse requirement: found '!', expected: identifier"),
        (
            "x<a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(parse_err(input), message, "for {input:?}");
    }
}

#[test]
fn keys_and_values_are_validated() {
    assert_eq!(
        parse_err("a=b_"),
        format!("unable to parse requirement: values[0][a]: Invalid value: \"b_\": {VALUE_RULE}")
    );
    assert_eq!(
        parse_err("x=a||y=b"),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_RULE}")
    );
    assert_eq!(
        parse_err("a_=b"),
        format!("unable to parse requirement: <nil>: Invalid value: \"a_\": {KEY_NAME_RULE}")
    );
    assert_eq!(
        parse_err("b>-1"),
        format!("unable to parse requirement: values[0][b]: Invalid value: \"-1\": {VALUE_RULE}")
    );
    assert_eq!(
        parse_err("a<x_"),
        format!(
            "unable to parse requirement: [values[0]: Invalid value: \"x_\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"x_\": {VALUE_RULE}]"
        )
    );
    let long = "v".repeat(64);
    assert_eq!(
        parse_err(&format!("a={long}")),
        format!("unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters")
    );
    assert!(parse_err(&format!("{}=b", "k".repeat(64)))
        .contains("name part must be no more than 63 characters"));
    assert!(parse_err("Bad.Prefix/key").contains("prefix part a lowercase RFC 1123 subdomain"));
    assert!(LabelSelector::parse("example.com/key=v").is_ok());
    assert!(LabelSelector::parse("a/b/c").is_err());
}

#[test]
fn input_after_a_nul_byte_is_ignored_like_upstream() {
    assert_eq!(parse("a=b\0 garbage ((").to_string(), "a=b");
}

#[test]
fn matching_follows_upstream() {
    let m = |s: &str, labels: &[(&str, &str)]| parse(s).matches_map(&set(labels));
    assert!(m("", &[("x", "y")]));
    assert!(m("x=y", &[("x", "y")]));
    assert!(m("x==y", &[("x", "y")]));
    assert!(m("x=y,z=w", &[("x", "y"), ("z", "w")]));
    assert!(m("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
    assert!(m("x!=y", &[]));
    assert!(m("x", &[("x", "z")]));
    assert!(m("!x", &[("y", "z")]));
    assert!(m("x>1", &[("x", "2")]));
    assert!(m("x<1", &[("x", "0")]));
    assert!(m("x in (a,b)", &[("x", "b")]));
    assert!(m("x notin (a,b)", &[("x", "c")]));
    assert!(m("x notin (a)", &[]));
    assert!(m("x=", &[("x", "")]));
    assert!(m("x in ()", &[("x", "")]));
    assert!(!m("x=z", &[]));
    assert!(!m("x=y", &[("x", "z")]));
    assert!(!m("x=y,z=w", &[("x", "w"), ("z", "w")]));
    assert!(!m("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
    assert!(!m("x", &[("y", "z")]));
    assert!(!m("!x", &[("x", "z")]));
    assert!(!m("x>1", &[("x", "0")]));
    assert!(!m("x>1", &[("x", "v2")]));
    assert!(!m("x>1", &[]));
    assert!(!m("x<1", &[("x", "2")]));
    assert!(!m("x in (a,b)", &[("x", "c")]));
    assert!(!m("x in (a,b)", &[]));
    assert!(!m("x notin (a,b)", &[("x", "a")]));
    assert!(!m("x=", &[]));
}

#[test]
fn matches_json_labels_and_lookups() {
    let sel = parse("app=web,!canary");
    assert!(sel.matches_labels(&json!({"app": "web", "tier": "front"})));
    assert!(!sel.matches_labels(&json!({"app": "web", "canary": "true"})));
    assert!(!sel.matches_labels(&Value::Null));
    assert!(parse("!app").matches_labels(&Value::Null));
    assert!(parse("").matches_labels(&Value::Null));
    // A non-string label value cannot be matched as one.
    assert!(!parse("n=1").matches_labels(&json!({"n": 1})));
    let lookup = |key: &str| (key == "app").then_some("web");
    assert!(sel.matches(&lookup));
}

#[test]
fn everything_and_nothing() {
    let all = LabelSelector::everything();
    assert!(all.is_empty() && !all.is_nothing());
    assert!(all.matches_map(&set(&[("x", "y")])));
    assert_eq!(all, parse(""));
    assert_eq!(all, parse("  "));
    let none = LabelSelector::nothing();
    assert!(!none.is_empty() && none.is_nothing());
    assert!(!none.matches_map(&BTreeMap::new()));
    assert_eq!(none.to_string(), "");
    assert!(!parse("a").is_empty());
}

#[test]
fn converts_metav1_label_selectors() {
    let from = |v: Value| LabelSelector::from_label_selector_json(&v);
    assert!(from(Value::Null).is_ok_and(|s| s.is_nothing()));
    assert!(from(json!({})).is_ok_and(|s| s.is_empty()));
    assert!(from(json!({"matchLabels": {}, "matchExpressions": []})).is_ok_and(|s| s.is_empty()));
    let sel = from(json!({
        "matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev", "prod"]},
            {"key": "zone", "operator": "NotIn", "values": ["b"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "canary", "operator": "DoesNotExist", "values": []},
        ],
    }))
    .expect("valid selector");
    assert_eq!(
        sel.to_string(),
        "app=web,!canary,env in (dev,prod,prod),gpu,tier=front,zone notin (b)"
    );
    assert!(sel.matches_labels(&json!({"app": "web", "tier": "front", "env": "dev", "gpu": ""})));
    assert!(!sel.matches_labels(&json!({"app": "web", "tier": "front", "env": "qa", "gpu": ""})));
    assert_eq!(
        from(json!({"matchLabels": {"app": "nginx"}})).map(|s| s.to_string()),
        Ok("app=nginx".to_string())
    );
}

#[test]
fn metav1_conversion_errors_match_upstream() {
    let err = |v: Value| match LabelSelector::from_label_selector_json(&v) {
        Ok(sel) => panic!("{v} should fail, got {sel}"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
        "\"Foo\" is not a valid pod selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        err(json!({"matchLabels": {"a_": "b"}})),
        format!("key: Invalid value: \"a_\": {KEY_NAME_RULE}")
    );
    assert_eq!(
        err(json!({"matchLabels": {"a": "b_"}})),
        format!("values[0][a]: Invalid value: \"b_\": {VALUE_RULE}")
    );
    assert!(!err(json!({"matchLabels": {"a": 1}})).is_empty());
    assert!(!err(json!({"matchLabels": []})).is_empty());
    assert!(!err(json!({"matchExpressions": {}})).is_empty());
    assert!(
        !err(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}))
            .is_empty()
    );
    assert!(!err(json!("app=web")).is_empty());
}

#[test]
fn requirement_constructor_checks_value_counts() {
    use LabelOperator::*;
    let new = |op, values: &[&str]| {
        LabelRequirement::new("x", op, values.iter().map(|v| v.to_string()).collect())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        new(Equals, &["a", "b"]),
        Err("values: Invalid value: []string{\"a\", \"b\"}: exact-match compatibility requires one single value".into())
    );
    assert!(new(NotIn, &[]).is_err());
    assert!(new(In, &["foo"]).is_ok());
    assert!(new(GreaterThan, &["1"]).is_ok());
    assert!(new(LessThan, &["blah"]).is_err());
    assert!(new(GreaterThan, &["1", "2"]).is_err());
    assert!(LabelRequirement::new(&"a".repeat(254), Exists, Vec::new()).is_err());
    let req = new(In, &["b", "a"]).expect("valid");
    assert_eq!(
        (req.key(), req.operator(), req.values()),
        ("x", In, &["b".to_string(), "a".to_string()][..])
    );
    assert_eq!(req.to_string(), "x in (a,b)");
}

#[test]
fn selector_errors_become_bad_requests() {
    let err: RegistryError = SelectorError::new("nope").into();
    assert_eq!(err.code(), 400);
    assert_eq!(err.to_string(), "nope");
}

#[test]
fn arbitrary_input_never_panics() {
    let alphabet: Vec<char> = "ab=!(),<>  \t\\/._-1é\0".chars().collect();
    let words = ["in", "notin", "in (", "notin (", "=="];
    let mut rng = rand::rng();
    for _ in 0..5000 {
        let mut s = String::new();
        for _ in 0..rng.random_range(0..16) {
            if rng.random_range(0..4) == 0 {
                s.push_str(words[rng.random_range(0..words.len())]);
            } else {
                s.push(alphabet[rng.random_range(0..alphabet.len())]);
            }
        }
        if let Ok(sel) = LabelSelector::parse(&s) {
            // The canonical form parses back to itself.
            let again = LabelSelector::parse(&sel.to_string()).map(|s| s.to_string());
            assert_eq!(again, Ok(sel.to_string()), "for {s:?}");
        }
    }
}
