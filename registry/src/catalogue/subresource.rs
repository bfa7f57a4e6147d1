//! Subresources as data: what each is called, the kind it speaks and the verbs it takes, as
//! discovery lists it and the OpenAPI documents describe it. A kind's catalogue entry carries
//! its own; the apiserver serves each with the handler registered under its name.

/// The `scale` subresource: where replicas live in the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// JSON path of the label selector string in status, if any (custom resources).
    pub label_selector_path: Option<String>,
}

/// The kind a subresource's requests and answers speak when it is not its parent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Speaks {
    /// "" for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Its OpenAPI definition, e.g. `io.k8s.api.autoscaling.v1.Scale`.
    pub definition: &'static str,
}

/// autoscaling/v1 Scale, which every `scale` subresource speaks.
pub const SCALE: Speaks = Speaks {
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    definition: "io.k8s.api.autoscaling.v1.Scale",
};

/// What a subresource answers with (upstream's REST interface for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// An object: its parent, or the kind it speaks.
    Object,
    /// Plain text (pods' `log`, upstream's streamer).
    Text,
    /// Whatever the far end answers, passed through (nodes' `proxy`, upstream's Connecter).
    Connect,
}

/// One subresource a resource serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// The last segment of its path (`status`, `scale`, `binding`).
    pub name: &'static str,
    /// The kind it speaks; `None`: its parent's.
    pub speaks: Option<Speaks>,
    /// Upstream verb names, as discovery lists them.
    pub verbs: &'static [&'static str],
    pub answer: Answer,
    /// For a connect subresource: the HTTP methods it takes (upstream's ConnectMethods),
    /// which the OpenAPI documents describe one operation each.
    pub methods: &'static [&'static str],
    /// For `scale`: where replicas live in the parent object.
    pub scale: Option<ScaleSubresource>,
}

/// The verbs of a subresource read and written in place (status, scale).
pub const READ_WRITE: &[&str] = &["get", "patch", "update"];
/// The verbs of a subresource that only takes creates (binding, eviction, token).
pub const CREATE: &[&str] = &["create"];

impl SubresourceInfo {
    /// A subresource over the parent object itself, read and written in place (`finalize`
    /// takes updates only).
    pub fn in_place(name: &'static str, verbs: &'static [&'static str]) -> Self {
        Self {
            name,
            speaks: None,
            verbs,
            answer: Answer::Object,
            methods: &[],
            scale: None,
        }
    }

    /// `status`: the parent's status, read and written apart from the rest of it.
    pub fn status() -> Self {
        Self::in_place("status", READ_WRITE)
    }

    /// `scale`: the replicas at `paths`, read and written as an autoscaling/v1 Scale.
    pub fn scale(paths: ScaleSubresource) -> Self {
        Self {
            name: "scale",
            speaks: Some(SCALE),
            verbs: READ_WRITE,
            answer: Answer::Object,
            methods: &[],
            scale: Some(paths),
        }
    }

    /// A subresource that takes creates of the kind it speaks (`binding`, `eviction`,
    /// `token`).
    pub fn creates(name: &'static str, speaks: Speaks) -> Self {
        Self {
            name,
            speaks: Some(speaks),
            verbs: CREATE,
            answer: Answer::Object,
            methods: &[],
            scale: None,
        }
    }

    /// Plain text read from the parent (`log`).
    pub fn text(name: &'static str) -> Self {
        Self {
            name,
            speaks: None,
            verbs: &["get"],
            answer: Answer::Text,
            methods: &[],
            scale: None,
        }
    }

    /// A connection passed through elsewhere (`exec`, `proxy`), speaking its options kind:
    /// the HTTP `methods` it takes, and the `verbs` discovery lists for them (GET is get,
    /// POST create, PUT update, PATCH patch, DELETE delete; HEAD and OPTIONS none).
    pub fn connect(
        name: &'static str,
        speaks: Speaks,
        verbs: &'static [&'static str],
        methods: &'static [&'static str],
    ) -> Self {
        Self {
            name,
            speaks: Some(speaks),
            verbs,
            answer: Answer::Connect,
            methods,
            scale: None,
        }
    }

    /// How the OpenAPI documents describe it; `None` for those they leave out.
    pub fn openapi_spec(&self) -> Option<openapi::SubresourceSpec> {
        let text = self.answer == Answer::Text;
        Some(openapi::SubresourceSpec {
            name: self.name.to_string(),
            verbs: self.verbs.iter().map(|v| v.to_string()).collect(),
            speaks: self.speaks.map(|s| openapi::KindSpec {
                group: s.group.to_string(),
                version: s.version.to_string(),
                kind: s.kind.to_string(),
                definition: s.definition.to_string(),
            }),
            text,
            connect_methods: self.methods.iter().map(|m| m.to_string()).collect(),
        })
    }
}
