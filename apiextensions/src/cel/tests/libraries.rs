//! Rules using Kubernetes' libraries: compiled against the schema's types, and evaluated.

use serde_json::json;

use super::*;

#[test]
fn library_calls_are_checked_against_the_schema_types() {
    for rule in [
        "quantity(self.name).isGreaterThan(quantity('1'))",
        "isURL(self.name) && url(self.name).getHost() != ''",
        "ip(self.name).family() == 4 && cidr('10.0.0.0/8').containsIP(self.name)",
        "[1, 2].isSorted() && [self.replicas].sum() == self.replicas",
        "[self.replicas].indexOf(1) == 0 && self.name.find('[0-9]+') == '1'",
        "!format.dns1123Label().validate(self.name).hasValue()",
        "semver(self.name).major() == 1",
        "type(ip(self.name)) == net.IP && type(quantity(self.name)) != kubernetes.URL",
    ] {
        compile(&replicas_schema(json!([{"rule": rule}])));
    }
    for (rule, wanted) in [
        (
            "quantity(self.replicas).sign() == 1",
            "found no matching overload for 'quantity' applied to '(int)'",
        ),
        (
            "self.name.isSorted()",
            "found no matching overload for 'isSorted' applied to 'string.()'",
        ),
        (
            "quantity('1').isGreaterThan(semver('1.0.0'))",
            "found no matching overload for 'isGreaterThan'",
        ),
        (
            "quantity('1') < quantity('2')",
            "found no matching overload for '_<_'",
        ),
        ("self.name.find('[') == ''", "invalid regex"),
    ] {
        let message = one(refused(&replicas_schema(json!([{"rule": rule}])))).message;
        assert!(message.contains(wanted), "{rule}: {message}");
    }
}

#[test]
fn library_rules_enforce_what_they_say() {
    let schema = spec(
        json!({
            "endpoint": {"type": "string", "maxLength": 100,
                "x-kubernetes-validations": [{"rule": "isURL(self)", "message": "must be a URL"}]},
            "memory": {"type": "string", "maxLength": 20,
                "x-kubernetes-validations": [{"rule": "quantity(self).isLessThan(quantity('1Gi'))"}]},
            "ports": {"type": "array", "maxItems": 10, "items": {"type": "integer"},
                "x-kubernetes-validations": [{"rule": "self.isSorted() && self.sum() < 1000"}]},
        }),
        json!([]),
    );
    let rules = compile(&schema);
    let good =
        object(json!({"endpoint": "https://example.com", "memory": "512Mi", "ports": [1, 2]}));
    assert!(rules.validate(&good, None).is_empty());
    let bad = object(json!({"endpoint": "example.com", "memory": "2Gi", "ports": [2, 1]}));
    let mut causes = rules.validate(&bad, None);
    causes.sort_by(|a, b| a.field.cmp(&b.field));
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        ["spec.endpoint", "spec.memory", "spec.ports"],
        "{causes:#?}"
    );
    assert_eq!(
        causes[0].message,
        "Invalid value: \"string\": must be a URL"
    );
    let broken = object(json!({"memory": "lots"}));
    let cause = one(rules.validate(&broken, None));
    assert!(
        cause
            .message
            .contains("quantities must match the regular expression"),
        "{}",
        cause.message
    );
}
