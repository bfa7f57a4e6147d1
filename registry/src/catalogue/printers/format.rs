//! Upstream's shared cell formats: durations, label sets and selectors, container lists.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value};

use super::zero_values::{items, text};

/// apimachinery's duration.HumanDuration: about two significant figures, coarser with age.
pub fn human_duration(d: TimeDelta) -> String {
    let secs = d.num_seconds();
    // Upstream tolerates up to two seconds of clock skew before calling a time invalid.
    if secs < -1 {
        return "<invalid>".to_string();
    }
    if secs < 0 {
        return "0s".to_string();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        };
    }
    format!("{years}y")
}

/// Time elapsed since `t`, `<unknown>` for an unset time.
pub(super) fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or_else(|| "<unknown>".to_string(), |t| human_duration(now - t))
}

/// labels.FormatLabels: sorted `k=v` pairs, `<none>` when empty.
pub(super) fn labels(map: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    }
}

/// metav1.LabelSelectorAsSelector(...).String(); None when the selector is malformed.
/// A missing or empty selector prints as "".
pub(super) fn selector(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return Some(String::new());
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = sel.get("matchLabels").filter(|l| !l.is_null()) {
        let labels = labels.as_object()?;
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", v.as_str()?)));
        }
    }
    for expr in items(sel, &["matchExpressions"]) {
        let key = text(expr, &["key"]);
        let mut values = items(expr, &["values"])
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        values.sort();
        let rendered = match (text(expr, &["operator"]), values.len()) {
            ("In", 1..) => format!("{key} in ({})", values.join(",")),
            ("NotIn", 1..) => format!("{key} notin ({})", values.join(",")),
            ("Exists", 0) => key.to_string(),
            ("DoesNotExist", 0) => format!("!{key}"),
            _ => return None,
        };
        if key.is_empty() {
            return None;
        }
        requirements.push((key.to_string(), rendered));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    let rendered: Vec<String> = requirements.into_iter().map(|(_, r)| r).collect();
    Some(rendered.join(","))
}

/// metav1.FormatLabelSelector: `<none>` for an empty selector, `<error>` for a malformed one.
pub(super) fn label_selector(sel: Option<&Value>) -> String {
    match selector(sel) {
        None => "<error>".to_string(),
        Some(s) if s.is_empty() => "<none>".to_string(),
        Some(s) => s,
    }
}

/// The container names and images of a pod spec, each comma-joined.
pub(super) fn containers(pod_spec: Option<&Value>) -> (String, String) {
    let list = pod_spec.map_or(&[][..], |s| items(s, &["containers"]));
    let names: Vec<&str> = list.iter().map(|c| text(c, &["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| text(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// An IntOrString as upstream prints it.
pub(super) fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A resource.Quantity; unset quantities print as zero.
pub(super) fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// helper.GetAccessModesAsString: the short forms in upstream's fixed order.
pub(super) fn access_modes(modes: &[Value]) -> String {
    const SHORT: [(&str, &str); 4] = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    let present: Vec<&str> = SHORT
        .iter()
        .filter(|(mode, _)| has(mode))
        .map(|(_, short)| *short)
        .collect();
    present.join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn human_duration_matches_upstream_steps() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 86400, "8d"),
            (730 * 86400, "2y"),
            (731 * 86400, "2y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(TimeDelta::seconds(secs)), want, "{secs}s");
        }
    }

    #[test]
    fn selectors_print_like_upstream() {
        let sel = json!({
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["web", "api"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ]
        });
        assert_eq!(
            selector(Some(&sel)).unwrap(),
            "a=1,b=2,!gone,tier in (api,web)"
        );
        assert_eq!(label_selector(None), "<none>");
        assert_eq!(label_selector(Some(&json!({}))), "<none>");
        assert_eq!(
            label_selector(Some(&json!({"matchLabels": null}))),
            "<none>"
        );
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "Like"}]});
        assert_eq!(label_selector(Some(&bad)), "<error>");
        assert_eq!(labels(json!({"z": "1", "a": "2"}).as_object()), "a=2,z=1");
        assert_eq!(labels(None), "<none>");
    }
}
