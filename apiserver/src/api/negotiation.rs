//! The answer's format from Accept, as kube-apiserver 1.35 negotiates it
//! (apiserver's handlers/negotiation with goautoneg, and the RequestScope's restrictions on
//! transformed forms): the clauses ordered by q, a wildcard after a specific type; for each
//! clause, the serializers in the server's order (JSON, YAML, protobuf); the first one the
//! clause matches and the endpoint allows wins. Nothing allowed is 406, naming the server's
//! media types. A clause with q=0 still counts, as goautoneg keeps it.

use registry::RegistryError;

use super::response::{Encoding, Format, Metadata};

/// The media types kube-apiserver's codecs list, in its order (also what a 406 names).
const SERIALIZERS: [(&str, &str, Encoding); 3] = [
    ("application", "json", Encoding::Json),
    ("application", "yaml", Encoding::Yaml),
    ("application", "vnd.kubernetes.protobuf", Encoding::Protobuf),
];

/// What an endpoint can answer besides plain JSON and YAML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The object itself in protobuf: built-in kinds (a custom resource's standard
    /// serializers are JSON and YAML only).
    pub protobuf: bool,
    /// meta.k8s.io PartialObjectMetadata(List) in any of the serializers (every resource's
    /// endpoint; not the metrics API).
    pub metadata: bool,
    /// meta.k8s.io Tables (resources and the metrics API; not discovery, whose documents
    /// upstream writes with no transformed form at all).
    pub tables: bool,
}

/// One clause of an Accept header, as goautoneg parses it.
#[derive(Debug, PartialEq)]
struct Clause<'a> {
    kind: &'a str,
    sub: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

impl Clause<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    }
}

/// Go's strconv.ParseFloat(text, 32) as goautoneg reads q: anything unparsable is 0.
fn quality(text: &str) -> f64 {
    text.parse::<f32>().map_or(0.0, f64::from)
}

/// goautoneg's ParseAccept: clauses split on `,` and `;`; a media range without `/` counts
/// only when it is `*`; parameters without `=` are dropped.
fn parse(header: &str) -> Vec<Clause<'_>> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        let mut pieces = part.split(';');
        let range = pieces.next().unwrap_or_default();
        let halves: Vec<&str> = range.split('/').collect();
        let kind = halves[0].trim_matches(' ');
        let sub = match halves.as_slice() {
            [_] if kind == "*" => "*",
            [_, sub] => sub.trim_matches(' '),
            _ => continue,
        };
        let mut clause = Clause {
            kind,
            sub,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let key = key.trim_matches(' ');
            if key == "q" {
                clause.q = quality(value);
            } else {
                clause.params.push((key, value.trim_matches(' ')));
            }
        }
        clauses.push(clause);
    }
    sort(&mut clauses);
    clauses
}

/// goautoneg's order through Go's sort.Sort, which for the dozen clauses a header has is an
/// insertion sort: its comparison is not a strict order, so the same algorithm is needed to
/// land on the same order.
fn sort(clauses: &mut [Clause<'_>]) {
    let less = |a: &Clause<'_>, b: &Clause<'_>| {
        a.q > b.q || (a.kind != "*" && b.kind == "*") || (a.sub != "*" && b.sub == "*")
    };
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && less(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// A transformed form a clause asks for (`as`, `g`, `v`), as the endpoint allows it in the
/// serializer `encoding`: None when it does not (the clause is passed over). Tables are
/// written in JSON or YAML, metadata in any serializer.
fn transform(clause: &Clause<'_>, encoding: Encoding, endpoint: Endpoint) -> Option<Format> {
    let (kind, group, version) = (clause.param("as"), clause.param("g"), clause.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        return match encoding {
            Encoding::Json => Some(Format::Json),
            Encoding::Yaml => Some(Format::Yaml),
            Encoding::Protobuf => endpoint.protobuf.then_some(Format::Protobuf),
        };
    }
    let version = match (group, version) {
        (Some("meta.k8s.io"), Some(v @ ("v1" | "v1beta1"))) => v,
        _ => return None,
    };
    match kind.unwrap_or_default() {
        "Table" if endpoint.tables => match encoding {
            Encoding::Json => Some(Format::Table),
            Encoding::Yaml => Some(Format::YamlTable),
            // No protobuf Table upstream: the clause is passed over.
            Encoding::Protobuf => None,
        },
        kind @ ("PartialObjectMetadata" | "PartialObjectMetadataList") if endpoint.metadata => {
            Some(Format::Metadata(Metadata {
                beta: version == "v1beta1",
                list: kind == "PartialObjectMetadataList",
                encoding,
            }))
        }
        _ => None,
    }
}

/// The parameters apart from the transform that make a serializer refuse a clause: a stream
/// other than `watch` (or any on YAML, which has no stream form) and a server version other
/// than v1.
fn refused(clause: &Clause<'_>, encoding: Encoding) -> bool {
    let stream = clause.param("stream").unwrap_or_default();
    let server_version = clause.param("sv").unwrap_or_default();
    (!stream.is_empty() && (stream != "watch" || encoding == Encoding::Yaml))
        || (!server_version.is_empty() && server_version != "v1")
}

/// The answer's format for `accept` (empty or absent: JSON).
pub fn negotiate(accept: &str, endpoint: Endpoint) -> Result<Format, RegistryError> {
    if accept.is_empty() {
        return Ok(Format::Json);
    }
    for clause in parse(accept) {
        for (kind, sub, encoding) in SERIALIZERS {
            let matches = (clause.kind == kind && (clause.sub == sub || clause.sub == "*"))
                || (clause.kind == "*" && clause.sub == "*");
            if !matches || refused(&clause, encoding) {
                continue;
            }
            if let Some(format) = transform(&clause, encoding, endpoint) {
                return Ok(format);
            }
        }
    }
    Err(not_acceptable())
}

/// Upstream's 406 for an Accept nothing matches.
pub fn not_acceptable() -> RegistryError {
    let types: Vec<String> = SERIALIZERS
        .iter()
        .map(|(kind, sub, _)| format!("{kind}/{sub}"))
        .collect();
    RegistryError::NotAcceptable(format!(
        "only the following media types are accepted: {}",
        types.join(", ")
    ))
}

/// Upstream's 406 for a watch whose Accept names no streaming serializer.
pub fn not_acceptable_stream() -> RegistryError {
    RegistryError::NotAcceptable(
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch".into(),
    )
}

#[cfg(test)]
mod tests;
