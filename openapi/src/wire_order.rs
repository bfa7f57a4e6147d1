//! The JSON field order of every built-in type, as kube-apiserver writes it: the Go struct's
//! field order (encoding/json follows it), with `kind` and `apiVersion` first on kinds and
//! embedded structs flattened where Go inlines them. Generated at build time from the
//! Kubernetes `.proto` files (build/wire_order.rs); maps are not described here, as Go
//! writes a map's keys sorted.

/// A struct type: its JSON fields in order.
#[derive(Debug)]
pub struct Def {
    /// The definition name, e.g. `io.k8s.api.core.v1.Pod`.
    pub name: &'static str,
    /// A field's index in `fields` by its name.
    rank: fn(&str) -> Option<u8>,
    pub fields: &'static [Field],
}

/// One field of a struct.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
}

/// What a field holds, as far as order goes (a list holds its elements' shape).
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A string, number, bool, or a value Go writes as any map (keys sorted).
    Scalar,
    /// A struct of the given type (or a list of them).
    Object(&'static Def),
    /// A map (keys sorted) whose values are structs of the given type.
    Map(&'static Def),
    /// An embedded object (runtime.RawExtension) whose own apiVersion and kind say its type.
    Dynamic,
}

impl Def {
    /// The place of `field` in the struct, if it is one of its fields.
    pub fn rank(&self, field: &str) -> Option<usize> {
        (self.rank)(field).map(usize::from)
    }

    /// The struct type of a struct-valued (or list-of-structs) field.
    pub fn field_type(&self, field: &str) -> Option<&'static Def> {
        match self.fields.get(self.rank(field)?)?.shape {
            Shape::Object(def) => Some(def),
            _ => None,
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/wire_order.rs"));

/// The struct type named `name` (`io.k8s.api.core.v1.Pod`).
pub fn definition(name: &str) -> Option<&'static Def> {
    DEFINITIONS
        .binary_search_by(|def| def.name.cmp(name))
        .ok()
        .map(|at| DEFINITIONS[at])
}

/// The struct type of a built-in kind (`v1`, `Pod`; `meta.k8s.io/v1`, `Table`); None for
/// custom resources, which upstream writes as maps.
pub fn kind(api_version: &str, kind: &str) -> Option<&'static Def> {
    KINDS
        .binary_search_by(|(a, k, _)| (*a, *k).cmp(&(api_version, kind)))
        .ok()
        .map(|at| KINDS[at].2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(def: &Def) -> Vec<&'static str> {
        def.fields.iter().map(|f| f.name).collect()
    }

    fn def(name: &str) -> &'static Def {
        definition(name).unwrap_or_else(|| panic!("{name} is generated"))
    }

    #[test]
    fn kinds_start_with_type_meta_then_go_order() {
        let pod = kind("v1", "Pod").expect("Pod");
        assert_eq!(
            names(pod),
            ["kind", "apiVersion", "metadata", "spec", "status"]
        );
        let list = kind("v1", "PodList").expect("PodList");
        assert_eq!(names(list), ["kind", "apiVersion", "metadata", "items"]);
        let status = kind("v1", "Status").expect("Status");
        assert_eq!(
            names(status),
            [
                "kind",
                "apiVersion",
                "metadata",
                "status",
                "message",
                "reason",
                "details",
                "code"
            ]
        );
        let table = kind("meta.k8s.io/v1", "Table").expect("Table");
        assert_eq!(
            names(table),
            [
                "kind",
                "apiVersion",
                "metadata",
                "columnDefinitions",
                "rows"
            ]
        );
        assert_eq!(
            names(kind("v1", "ConfigMap").expect("ConfigMap")),
            [
                "kind",
                "apiVersion",
                "metadata",
                "immutable",
                "data",
                "binaryData"
            ]
        );
        assert!(kind("example.com/v1", "Widget").is_none());
    }

    #[test]
    fn object_meta_in_go_order() {
        let meta = def("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert_eq!(
            names(meta),
            [
                "name",
                "generateName",
                "namespace",
                "selfLink",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "labels",
                "annotations",
                "ownerReferences",
                "finalizers",
                "managedFields"
            ]
        );
        // Not a kind, though it names apiVersion and kind: its own fields, in its order.
        let owner = def("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference");
        assert_eq!(names(owner)[..3], ["apiVersion", "kind", "name"]);
        assert_eq!(meta.rank("uid"), Some(4));
        assert_eq!(meta.rank("nope"), None);
    }

    #[test]
    fn embedded_structs_are_flattened() {
        let volume = def("io.k8s.api.core.v1.Volume");
        assert_eq!(names(volume)[..3], ["name", "hostPath", "emptyDir"]);
        let probe = def("io.k8s.api.core.v1.Probe");
        assert_eq!(names(probe)[..4], ["exec", "httpGet", "tcpSocket", "grpc"]);
        assert_eq!(names(probe)[4], "initialDelaySeconds");
        let ephemeral = def("io.k8s.api.core.v1.EphemeralContainer");
        assert_eq!(names(ephemeral)[..2], ["name", "image"]);
        assert_eq!(names(ephemeral).last(), Some(&"targetContainerName"));
    }

    #[test]
    fn json_names_that_are_not_proto_names() {
        let props = def("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps");
        assert_eq!(names(props)[..3], ["id", "$schema", "$ref"]);
        assert!(props.rank("x-kubernetes-preserve-unknown-fields").is_some());
        // A schema's nested schemas are schemas, through the OrArray/OrBool unions too.
        let items = &props.fields[props.rank("items").expect("items")];
        assert!(matches!(items.shape, Shape::Object(d) if d.name == props.name));
        let properties = &props.fields[props.rank("properties").expect("properties")];
        assert!(matches!(properties.shape, Shape::Map(d) if d.name == props.name));
    }

    #[test]
    fn nesting_follows_field_types() {
        let pod = kind("v1", "Pod").expect("Pod");
        let Shape::Object(spec) = pod.fields[3].shape else {
            panic!("spec is a struct")
        };
        assert_eq!(spec.name, "io.k8s.api.core.v1.PodSpec");
        assert_eq!(
            names(spec)[..3],
            ["volumes", "initContainers", "containers"]
        );
        let meta = def("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        let labels = &meta.fields[meta.rank("labels").expect("labels")];
        assert!(matches!(labels.shape, Shape::Scalar));
        let created = &meta.fields[meta.rank("creationTimestamp").expect("time")];
        assert!(matches!(created.shape, Shape::Scalar));
        let row = def("io.k8s.apimachinery.pkg.apis.meta.v1.TableRow");
        assert!(matches!(row.fields[2].shape, Shape::Dynamic));
    }

    /// Every property the schemas give a served kind's types has its place: nothing falls
    /// back to the end of an object for want of a proto field.
    #[test]
    fn every_schema_property_has_a_place() {
        let builtin = crate::builtin::builtin();
        let mut missing = Vec::new();
        for name in builtin.definitions.names() {
            let Some(def) = definition(name) else {
                continue;
            };
            let schema = builtin.definitions.get(name);
            let properties = schema
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.as_object());
            for property in properties.into_iter().flat_map(|p| p.keys()) {
                if def.rank(property).is_none() {
                    missing.push(format!("{name}.{property}"));
                }
            }
        }
        assert!(missing.is_empty(), "no place for {missing:?}");
    }
}
