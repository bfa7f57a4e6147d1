//! Strategic-merge-patch metadata for the built-in kinds: upstream's `patchStrategy` and
//! `patchMergeKey` struct tags, as a small graph of types. A type lists only the fields that
//! carry a strategy or lead to one; every other field merges as upstream merges an untagged
//! field (maps recursively, lists replaced).

mod core;
mod workloads;

/// How a field is patched (upstream's `patchStrategy`, less `retainKeys`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Untagged: maps merge key by key, lists are replaced.
    #[default]
    Default,
    /// Lists merge: by `merge_key` for lists of objects, as a set for lists of primitives.
    Merge,
    /// The patch value replaces the field wholesale.
    Replace,
}

/// One field of a type.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub strategy: Strategy,
    pub merge_key: Option<&'static str>,
    /// `patchStrategy:"...retainKeys"`: clients send `$retainKeys` for this field.
    pub retain_keys: bool,
    /// The field's type, or its elements' type for a list.
    pub ty: Option<&'static PatchSchema>,
}

/// A type: the fields that matter to a strategic merge patch.
#[derive(Debug)]
pub struct PatchSchema {
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// What an undescribed field gets.
pub(crate) static UNTAGGED: Field = Field {
    name: "",
    strategy: Strategy::Default,
    merge_key: None,
    retain_keys: false,
    ty: None,
};

impl PatchSchema {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Field {
    /// A struct-typed field with no strategy of its own.
    pub const fn nested(name: &'static str, ty: &'static PatchSchema) -> Self {
        Self {
            name,
            strategy: Strategy::Default,
            merge_key: None,
            retain_keys: false,
            ty: Some(ty),
        }
    }

    /// A list of objects merged by `key`.
    pub const fn merge(name: &'static str, key: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Merge,
            merge_key: Some(key),
            retain_keys: false,
            ty: None,
        }
    }

    /// A list of objects merged by `key`, whose elements have nested strategies.
    pub const fn merge_of(name: &'static str, key: &'static str, ty: &'static PatchSchema) -> Self {
        Self {
            ty: Some(ty),
            ..Self::merge(name, key)
        }
    }

    /// `patchStrategy:"merge,retainKeys"`.
    pub const fn merge_retain(name: &'static str, key: &'static str) -> Self {
        Self {
            retain_keys: true,
            ..Self::merge(name, key)
        }
    }

    /// A list of primitives merged as an ordered set.
    pub const fn set(name: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Merge,
            merge_key: None,
            retain_keys: false,
            ty: None,
        }
    }

    /// `patchStrategy:"retainKeys"` on a struct field.
    pub const fn retain(name: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Default,
            merge_key: None,
            retain_keys: true,
            ty: None,
        }
    }
}

/// metav1.ObjectMeta.
pub static OBJECT_META: PatchSchema = PatchSchema {
    name: "ObjectMeta",
    fields: &[
        Field::set("finalizers"),
        Field::merge("ownerReferences", "uid"),
    ],
};

/// Kinds whose only tagged fields are in their metadata.
static METADATA_ONLY: PatchSchema = PatchSchema {
    name: "Object",
    fields: &[Field::nested("metadata", &OBJECT_META)],
};

/// A `status` holding only `conditions` merged by type.
pub(crate) static CONDITIONS_STATUS: PatchSchema = PatchSchema {
    name: "Status",
    fields: &[Field::merge("conditions", "type")],
};

/// A kind whose only tagged fields are its metadata and `status.conditions`.
pub(crate) static WITH_CONDITIONS: PatchSchema = PatchSchema {
    name: "Object",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("status", &CONDITIONS_STATUS),
    ],
};

/// The patch metadata of a built-in kind; `None` for kinds this server does not know (custom
/// resources), for which upstream refuses strategic merge patches.
pub fn schema_for(group: &str, kind: &str) -> Option<&'static PatchSchema> {
    let schema = match (group, kind) {
        ("", "Pod") => &core::POD,
        ("", "PodTemplate") => &core::POD_TEMPLATE,
        ("", "ReplicationController") => &core::REPLICATION_CONTROLLER,
        ("", "Service") => &core::SERVICE,
        ("", "ServiceAccount") => &core::SERVICE_ACCOUNT,
        ("", "Node") => &core::NODE,
        ("", "ComponentStatus") => &core::COMPONENT_STATUS,
        ("", "Namespace" | "PersistentVolumeClaim") => &WITH_CONDITIONS,
        (
            "",
            "ConfigMap" | "Secret" | "Endpoints" | "Event" | "LimitRange" | "ResourceQuota"
            | "PersistentVolume" | "Binding",
        ) => &METADATA_ONLY,
        ("apps", "Deployment") => &workloads::DEPLOYMENT,
        ("apps", "ReplicaSet") => workloads::REPLICA_SET,
        ("apps", "StatefulSet") => workloads::STATEFUL_SET,
        ("apps", "DaemonSet") => workloads::DAEMON_SET,
        ("apps", "ControllerRevision") => &METADATA_ONLY,
        ("batch", "Job") => workloads::JOB,
        ("batch", "CronJob") => &workloads::CRON_JOB,
        ("policy", "PodDisruptionBudget") => &WITH_CONDITIONS,
        ("policy", "Eviction") => &METADATA_ONLY,
        ("coordination.k8s.io", "Lease") => &METADATA_ONLY,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &METADATA_ONLY,
        ("events.k8s.io", "Event") => &METADATA_ONLY,
        ("autoscaling", "Scale") => &METADATA_ONLY,
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => &METADATA_ONLY,
        _ => return None,
    };
    Some(schema)
}
