use super::*;
use crate::fieldsv1::{from_json_str, to_json_string};
use crate::fixtures::{root, schema};
use serde_json::json;

/// An object and its managers, changed by a sequence of applies and updates.
struct World {
    schema: Schema,
    root: TypeRef,
    ignored: Set,
    live: Value,
    managers: ManagedFields,
}

impl World {
    fn new() -> Self {
        World {
            schema: schema(),
            root: root(),
            ignored: Set::new(),
            live: json!({}),
            managers: ManagedFields::new(),
        }
    }

    fn ignoring(fieldsv1: &str) -> Self {
        let mut w = World::new();
        w.ignored = from_json_str(fieldsv1).unwrap_or_else(|e| panic!("{e}"));
        w
    }

    fn updater(&self) -> Updater<'_> {
        Updater {
            schema: &self.schema,
            root: &self.root,
            options: CompareOptions::default(),
            ignored: self.ignored.clone(),
        }
    }

    fn try_apply(&mut self, manager: &str, config: Value, force: bool) -> Result<bool, ApplyError> {
        let managers = self.managers.clone();
        let applied = self
            .updater()
            .apply(&self.live, &config, "v1", managers, manager, force)?;
        self.managers = applied.managers;
        let changed = applied.object.is_some();
        if let Some(object) = applied.object {
            self.live = object;
        }
        Ok(changed)
    }

    fn apply(&mut self, manager: &str, config: Value) {
        if let Err(e) = self.try_apply(manager, config, false) {
            panic!("apply by {manager}: {e}");
        }
    }

    fn conflicts(&mut self, manager: &str, config: Value) -> Conflicts {
        match self.try_apply(manager, config, false) {
            Err(ApplyError::Conflicts(c)) => c,
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    fn update(&mut self, manager: &str, new: Value) {
        let managers = self.managers.clone();
        match self
            .updater()
            .update(&self.live, &new, "v1", managers, manager)
        {
            Ok(m) => self.managers = m,
            Err(e) => panic!("update by {manager}: {e}"),
        }
        self.live = new;
    }

    /// The manager's fields as FieldsV1, or "-" when it owns nothing.
    fn owned(&self, manager: &str) -> String {
        self.managers
            .get(manager)
            .map_or_else(|| "-".to_string(), |m| to_json_string(&m.set))
    }
}

fn paths(conflicts: &Conflicts) -> Vec<String> {
    conflicts
        .iter()
        .map(|c| format!("{} {}", c.manager, c.path))
        .collect()
}

#[test]
fn apply_creates_from_an_empty_object_and_owns_what_it_applied() {
    let mut w = World::new();
    let config = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2}});
    assert!(w.try_apply("kubectl", config.clone(), false).unwrap());
    assert_eq!(w.live, config);
    assert_eq!(
        w.owned("kubectl"),
        r#"{"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"f:spec":{"f:replicas":{}}}"#
    );
    let entry = &w.managers["kubectl"];
    assert!(entry.applied);
    assert_eq!(entry.api_version, "v1");
}

#[test]
fn a_noop_apply_returns_no_object() {
    let mut w = World::new();
    let config = json!({"spec": {"replicas": 2}});
    w.apply("kubectl", config.clone());
    let before = w.managers.clone();
    assert!(!w.try_apply("kubectl", config, false).unwrap());
    assert_eq!(w.managers, before);
}

#[test]
fn fields_an_applier_stops_applying_are_removed_when_nobody_else_owns_them() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"metadata": {"labels": {"x": "1", "y": "2"}}, "spec": {"replicas": 1}}),
    );
    w.apply("a", json!({"metadata": {"labels": {"x": "1"}}}));
    assert_eq!(w.live, json!({"metadata": {"labels": {"x": "1"}}}));
    assert_eq!(w.owned("a"), r#"{"f:metadata":{"f:labels":{"f:x":{}}}}"#);
    w.apply("a", json!({}));
    assert_eq!(
        w.live,
        json!({}),
        "a struct nobody owns anything in goes whole"
    );
    assert_eq!(w.owned("a"), "-");
}

#[test]
fn two_appliers_of_one_value_share_it_and_it_stays_while_one_applies_it() {
    let mut w = World::new();
    w.apply("a", json!({"spec": {"replicas": 3}}));
    w.apply("b", json!({"spec": {"replicas": 3}}));
    assert_eq!(w.owned("a"), w.owned("b"));
    w.apply("a", json!({"metadata": {"name": "x"}}));
    assert_eq!(w.live["spec"]["replicas"], json!(3), "b still applies it");
    assert_eq!(w.owned("b"), r#"{"f:spec":{"f:replicas":{}}}"#);
    w.apply("b", json!({"metadata": {"name": "x"}}));
    assert!(w.live["spec"].get("replicas").is_none(), "now nobody does");
}

#[test]
fn a_different_value_conflicts_and_force_takes_the_field() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"replicas": 3}, "metadata": {"name": "x"}}),
    );
    let live = w.live.clone();
    let conflicts = w.conflicts("b", json!({"spec": {"replicas": 4}}));
    assert_eq!(paths(&conflicts), vec!["a .spec.replicas"]);
    assert_eq!(
        conflicts.to_string(),
        r#"conflict with "a": .spec.replicas"#
    );
    assert_eq!(w.live, live, "a failed apply changes nothing");
    assert!(w
        .try_apply("b", json!({"spec": {"replicas": 4}}), true)
        .unwrap());
    assert_eq!(w.live["spec"]["replicas"], json!(4));
    assert_eq!(w.owned("b"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert_eq!(w.owned("a"), r#"{"f:metadata":{"f:name":{}}}"#);
    w.apply("b", json!({"spec": {"replicas": 4}}));
    assert!(w
        .try_apply("b", json!({"spec": {"replicas": 5}}), true)
        .is_ok());
    w.apply("a", json!({"spec": {"replicas": 5}}));
    w.apply("a", json!({}));
    assert_eq!(w.owned("a"), "-", "an applier that owns nothing is dropped");
    assert_eq!(w.live["spec"]["replicas"], json!(5));
}

#[test]
fn conflicts_are_sorted_by_manager_then_path() {
    let mut w = World::new();
    w.apply(
        "z",
        json!({"metadata": {"labels": {"b": "1"}}, "spec": {"replicas": 1}}),
    );
    w.apply(
        "m",
        json!({"metadata": {"labels": {"a": "1"}}, "spec": {"port": 80}}),
    );
    let conflicts = w.conflicts(
        "n",
        json!({"metadata": {"labels": {"a": "2", "b": "2"}}, "spec": {"replicas": 2, "port": 81}}),
    );
    assert_eq!(
        paths(&conflicts),
        vec![
            "m .metadata.labels.a",
            "m .spec.port",
            "z .metadata.labels.b",
            "z .spec.replicas",
        ]
    );
    assert_eq!(
        conflicts.to_string(),
        "conflicts with \"m\":\n- .metadata.labels.a\n- .spec.port\n\
         conflicts with \"z\":\n- .metadata.labels.b\n- .spec.replicas"
    );
}

#[test]
fn an_update_takes_what_it_changed_and_later_applies_conflict_with_it() {
    let mut w = World::new();
    w.apply(
        "kubectl",
        json!({"spec": {"replicas": 1, "containers": [
        {"name": "a", "image": "a:1"}]}}),
    );
    let mut new = w.live.clone();
    new["spec"]["replicas"] = json!(5);
    w.update("hpa", new);
    assert_eq!(w.owned("hpa"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert!(!w.owned("kubectl").contains("replicas"));
    assert!(w.managers.get("hpa").is_some_and(|m| !m.applied));
    let conflicts = w.conflicts(
        "kubectl",
        json!({"spec": {"replicas": 1, "containers": [
        {"name": "a", "image": "a:2"}]}}),
    );
    assert_eq!(paths(&conflicts), vec!["hpa .spec.replicas"]);
    w.apply(
        "kubectl",
        json!({"spec": {"containers": [{"name": "a", "image": "a:2"}]}}),
    );
    assert_eq!(
        w.live["spec"]["replicas"],
        json!(5),
        "the updater's field stays"
    );
}

#[test]
fn an_update_that_changes_nothing_owns_nothing_and_removals_are_taken_from_all() {
    let mut w = World::new();
    w.apply("a", json!({"metadata": {"labels": {"x": "1", "y": "1"}}}));
    w.update("c", w.live.clone());
    assert_eq!(w.owned("c"), "-");
    w.update("c", json!({"metadata": {"labels": {"x": "1"}}}));
    assert_eq!(w.owned("a"), r#"{"f:metadata":{"f:labels":{"f:x":{}}}}"#);
    assert_eq!(w.owned("c"), "-", "removing a field owns nothing");
}

#[test]
fn update_from_nothing_owns_every_leaf_and_map_member() {
    let mut w = World::new();
    w.update(
        "creator",
        json!({"metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    assert_eq!(
        w.owned("creator"),
        concat!(
            r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}},"f:name":{}},"#,
            r#""f:spec":{"f:containers":{".":{},"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
        )
    );
}

#[test]
fn ignored_fields_are_never_owned_and_never_conflict() {
    let mut w = World::ignoring(r#"{"f:spec":{"f:replicas":{}}}"#);
    w.apply("a", json!({"spec": {"replicas": 1, "port": 80}}));
    assert_eq!(w.owned("a"), r#"{"f:spec":{"f:port":{}}}"#);
    w.apply("b", json!({"spec": {"replicas": 2}}));
    assert_eq!(w.owned("b"), "-");
    assert_eq!(
        w.live["spec"]["replicas"],
        json!(2),
        "the value is still written"
    );
    let mut new = w.live.clone();
    new["spec"]["replicas"] = json!(3);
    w.update("c", new);
    assert_eq!(w.owned("c"), "-");
}

#[test]
fn map_list_items_are_owned_and_removed_by_key() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"containers": [{"name": "x", "image": "x:1"}]}}),
    );
    w.apply(
        "b",
        json!({"spec": {"containers": [{"name": "y", "image": "y:1"}]}}),
    );
    assert_eq!(
        w.live["spec"]["containers"].as_array().map(Vec::len),
        Some(2)
    );
    w.apply("a", json!({"spec": {"containers": []}}));
    assert_eq!(
        w.live,
        json!({"spec": {"containers": [{"name": "y", "image": "y:1"}]}}),
        "a's item goes, b's stays"
    );
    let conflicts = w.conflicts(
        "a",
        json!({"spec": {"containers": [{"name": "y", "image": "y:2"}]}}),
    );
    assert_eq!(
        paths(&conflicts),
        vec![r#"b .spec.containers[name="y"].image"#]
    );
}

#[test]
fn an_item_an_applier_drops_keeps_the_fields_others_own_in_it_only_if_they_own_the_item() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"containers": [{"name": "x", "image": "x:1"}]}}),
    );
    w.apply(
        "b",
        json!({"spec": {"containers": [{"name": "x", "args": ["run"]}]}}),
    );
    w.apply("a", json!({"spec": {"replicas": 1}}));
    assert_eq!(
        w.live["spec"]["containers"],
        json!([{"name": "x", "args": ["run"]}]),
        "b applied the item too, so only a's image goes"
    );
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"containers": [{"name": "x", "image": "x:1"}]}}),
    );
    let mut new = w.live.clone();
    new["spec"]["containers"][0]["args"] = json!(["run"]);
    w.update("c", new);
    w.apply("a", json!({"spec": {"replicas": 1}}));
    assert_eq!(
        w.live["spec"].get("containers"),
        Some(&json!([])),
        "an updater owning a field of the item does not keep the item (as upstream)"
    );
}

#[test]
fn multi_key_map_lists_match_items_through_key_defaults() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"containers": [{"name": "x",
        "ports": [{"containerPort": 80}]}]}}),
    );
    w.apply(
        "b",
        json!({"spec": {"containers": [{"name": "x",
        "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}),
    );
    assert_eq!(
        w.live["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])
    );
    let conflicts = w.conflicts(
        "a",
        json!({"spec": {"containers": [{"name": "x",
        "ports": [{"containerPort": 80, "name": "web"}]}]}}),
    );
    assert_eq!(
        paths(&conflicts),
        vec![r#"b .spec.containers[name="x"].ports[containerPort=80,protocol="TCP"].name"#]
    );
    w.apply(
        "a",
        json!({"spec": {"containers": [{"name": "x", "ports": [
        {"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]}]}}),
    );
    assert_eq!(
        w.live["spec"]["containers"][0]["ports"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "same port, other protocol: another item"
    );
}

#[test]
fn set_lists_are_owned_by_value_in_the_applied_order() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"metadata": {"finalizers": ["a", "b", "c", "d"]}}),
    );
    w.apply(
        "a",
        json!({"metadata": {"finalizers": ["a", "d", "c", "b"]}}),
    );
    assert_eq!(
        w.live["metadata"]["finalizers"],
        json!(["a", "d", "c", "b"])
    );
    let mut new = w.live.clone();
    new["metadata"]["finalizers"] = json!(["a", "d", "c", "b", "e"]);
    w.update("controller", new);
    assert_eq!(
        w.owned("controller"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"e\"":{}}}}"#
    );
    w.apply("a", json!({"metadata": {"finalizers": ["b", "a"]}}));
    assert_eq!(
        w.live["metadata"]["finalizers"],
        json!(["b", "e", "a"]),
        "c and d go; e stays, after b where it followed it in the live list"
    );
}

#[test]
fn atomic_lists_and_maps_are_owned_and_conflict_whole() {
    let mut w = World::new();
    w.apply(
        "a",
        json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
        "containers": [{"name": "c", "args": ["x", "y"]}]}}),
    );
    assert_eq!(
        w.owned("a"),
        concat!(
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:args":{},"f:name":{}}},"#,
            r#""f:selector":{}}}"#
        )
    );
    let conflicts = w.conflicts(
        "b",
        json!({"spec": {"selector": {"matchLabels": {"tier": "y"}},
        "containers": [{"name": "c", "args": ["y"]}]}}),
    );
    assert_eq!(
        paths(&conflicts),
        vec![r#"a .spec.containers[name="c"].args"#, "a .spec.selector"]
    );
    assert!(w
        .try_apply(
            "b",
            json!({"spec": {"selector": {"matchLabels": {"tier": "y"}}}}),
            true
        )
        .is_ok());
    assert_eq!(
        w.live["spec"]["selector"],
        json!({"matchLabels": {"tier": "y"}}),
        "replaced whole, not merged"
    );
}

#[test]
fn preserved_unknown_fields_are_deduced_and_granular() {
    let mut w = World::new();
    w.apply("a", json!({"spec": {"config": {"x": {"p": 1}, "l": [1]}}}));
    w.apply("b", json!({"spec": {"config": {"x": {"q": 2}}}}));
    assert_eq!(
        w.live["spec"]["config"],
        json!({"x": {"p": 1, "q": 2}, "l": [1]})
    );
    let conflicts = w.conflicts("b", json!({"spec": {"config": {"x": {"p": 9}, "l": [2]}}}));
    assert_eq!(
        paths(&conflicts),
        vec!["a .spec.config.l", "a .spec.config.x.p"]
    );
    w.apply("a", json!({"spec": {"config": {"l": [1]}}}));
    assert_eq!(
        w.live["spec"]["config"],
        json!({"x": {"q": 2}, "l": [1]}),
        "x stays for b, without a's p"
    );
}

#[test]
fn live_duplicates_are_tolerated_and_applied_duplicates_refused() {
    let mut w = World::new();
    w.update(
        "legacy",
        json!({"spec": {"containers": [
        {"name": "a", "image": "1"}, {"name": "a", "image": "2"}, {"name": "b", "image": "3"}]}}),
    );
    assert_eq!(
        w.owned("legacy"),
        concat!(
            r#"{"f:spec":{"f:containers":{".":{},"k:{\"name\":\"a\"}":{},"#,
            r#""k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
        ),
        "the duplicated item is owned whole"
    );
    let err = w.try_apply(
        "x",
        json!({"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}),
        false,
    );
    assert!(
        matches!(err, Err(ApplyError::Invalid(Error::Value { ref path, .. })) if path == ".spec.containers"),
        "{err:?}"
    );
    let conflicts = w.conflicts(
        "x",
        json!({"spec": {"containers": [{"name": "a", "image": "9"}]}}),
    );
    assert_eq!(
        paths(&conflicts),
        vec![r#"legacy .spec.containers[name="a"]"#]
    );
    assert!(w
        .try_apply(
            "x",
            json!({"spec": {"containers": [{"name": "a", "image": "9"}]}}),
            true
        )
        .is_ok());
    assert_eq!(
        w.live["spec"]["containers"],
        json!([{"name": "a", "image": "9"}, {"name": "b", "image": "3"}]),
        "the duplicates collapse into the applied item"
    );
    assert!(w.owned("x").contains(r#"k:{\"name\":\"a\"}"#));
    assert!(!w.owned("legacy").contains(r#"k:{\"name\":\"a\"}"#));
}

#[test]
fn invalid_configurations_are_errors_not_conflicts() {
    let mut w = World::new();
    let err = w.try_apply("a", json!({"spec": {"bogus": 1}}), false);
    assert!(matches!(err, Err(ApplyError::Invalid(_))), "{err:?}");
    let err = w.try_apply(
        "a",
        json!({"spec": {"containers": [{"image": "x"}]}}),
        false,
    );
    assert!(matches!(err, Err(ApplyError::Invalid(_))), "{err:?}");
}
