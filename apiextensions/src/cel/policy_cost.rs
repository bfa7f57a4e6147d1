//! The cost of admission policies' expressions (upstream charges each evaluation of a policy
//! its actual cost: at most `PER_CALL_LIMIT` an expression, at most `RUNTIME_BUDGET` the
//! expressions of one evaluation together). This server charges upstream's cost model's
//! estimate with the sizes of the values at hand, as it charges CRD rules: the values of a
//! request are typed by themselves (objects by their fields, lists by the union of their
//! items) with their own sizes.

use serde_json::Value as Json;

use super::cost::{self, Declared, Scope};
use super::schema::{Bounds, Format, Kind, Node};
use super::{schema, Expression};

/// The most one expression may cost (upstream's PerCallLimit).
pub const PER_CALL_LIMIT: u64 = cost::PER_CALL_LIMIT;
/// The most the expressions of one evaluation of a policy may cost together (upstream's
/// RuntimeCELCostBudget).
pub const RUNTIME_BUDGET: u64 = cost::VALIDATION_BUDGET;

/// What the cost model knows of some bound values: the shape and sizes of each.
pub struct ValueShapes {
    nodes: Vec<(&'static str, Node)>,
}

impl ValueShapes {
    /// The shapes of `values`, by name.
    pub fn of(values: &[(&'static str, &Json)]) -> Self {
        Self {
            nodes: values.iter().map(|(name, v)| (*name, infer(v))).collect(),
        }
    }
}

impl Expression {
    /// What evaluating the expression costs at most with values of `shapes` bound and the
    /// policy's composited `variables` (name, expression), in order.
    pub fn cost(&self, shapes: &[&ValueShapes], variables: &[(&str, &Expression)]) -> u64 {
        let roots: Vec<(&str, &Node)> = shapes
            .iter()
            .flat_map(|s| s.nodes.iter().map(|(name, node)| (*name, node)))
            .collect();
        let variables: Vec<(&str, &cel::Program)> = variables
            .iter()
            .map(|(name, e)| (*name, &e.program))
            .collect();
        let scope = Scope {
            roots: &roots,
            variables: &variables,
        };
        cost::estimate_in(&self.program, &scope, &Declared)
    }
}

/// The node of a value: its kind, with its size (bytes, items, entries) as the largest.
fn infer(value: &Json) -> Node {
    let (kind, size) = match value {
        Json::Object(map) => {
            let fields = map
                .iter()
                .map(|(name, v)| {
                    let field = schema::Field {
                        cel_name: Some(name.clone()),
                        node: infer(v),
                        seen_as: None,
                    };
                    (name.clone(), field)
                })
                .collect();
            (Kind::Object(fields), map.len())
        }
        Json::Array(items) => {
            let merged = items
                .iter()
                .map(infer)
                .reduce(merge)
                .unwrap_or_else(|| leaf(Kind::Any, 0));
            let kind = Kind::List {
                items: Box::new(merged),
                map_keys: None,
            };
            (kind, items.len())
        }
        Json::String(s) => (Kind::String(Format::Plain), s.len()),
        Json::Number(n) if n.is_f64() => (Kind::Number, 0),
        Json::Number(_) => (Kind::Integer, 0),
        Json::Bool(_) => (Kind::Boolean, 0),
        Json::Null => (Kind::Any, 0),
    };
    leaf(kind, size as u64)
}

fn leaf(kind: Kind, size: u64) -> Node {
    Node {
        kind,
        type_name: String::new(),
        has_properties: false,
        rules: Vec::new(),
        has_rules: false,
        bounds: Bounds {
            max_elements: size,
            min_size: 1,
            fan_out: Some(1),
        },
    }
}

/// One node for two values of a list: their fields and items united, the larger sizes.
fn merge(a: Node, b: Node) -> Node {
    let size = a.bounds.max_elements.max(b.bounds.max_elements);
    let kind = match (a.kind, b.kind) {
        (Kind::Object(mut fields), Kind::Object(other)) => {
            for (name, field) in other {
                match fields.remove(&name) {
                    Some(mine) => {
                        let node = merge(mine.node, field.node);
                        fields.insert(name, schema::Field { node, ..field });
                    }
                    None => {
                        fields.insert(name, field);
                    }
                }
            }
            Kind::Object(fields)
        }
        (Kind::List { items, .. }, Kind::List { items: other, .. }) => Kind::List {
            items: Box::new(merge(*items, *other)),
            map_keys: None,
        },
        (Kind::String(f), Kind::String(_)) => Kind::String(f),
        (Kind::Integer, Kind::Integer) => Kind::Integer,
        (Kind::Boolean, Kind::Boolean) => Kind::Boolean,
        (Kind::Number | Kind::Integer, Kind::Number | Kind::Integer) => Kind::Number,
        _ => Kind::Any,
    };
    leaf(kind, size)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn compile(source: &str) -> Expression {
        Expression::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    #[test]
    fn costs_follow_the_values_at_hand() {
        let small = json!({"spec": {"items": ["a", "b"], "name": "web"}});
        let names: Vec<String> = (0..5000).map(|i| format!("name-{i}")).collect();
        let large = json!({"spec": {"items": names, "name": "web"}});
        let nested =
            compile("object.spec.items.all(a, object.spec.items.all(b, a == b || a != b))");
        let cost = |object: &Json| {
            let shapes = ValueShapes::of(&[("object", object)]);
            nested.cost(&[&shapes], &[])
        };
        assert!(cost(&small) < 100, "{}", cost(&small));
        assert!(cost(&large) > PER_CALL_LIMIT, "{}", cost(&large));
        // a plain comparison costs little whatever the object
        let shapes = ValueShapes::of(&[("object", &large)]);
        assert!(compile("object.spec.name == 'web'").cost(&[&shapes], &[]) < 10);
        // fields the value lacks, or a null object (a deletion), cost nothing to look into
        let labels =
            compile("!has(object.metadata.labels) || !('exempt' in object.metadata.labels)");
        assert!(labels.cost(&[&shapes], &[]) < 10);
        let null = ValueShapes::of(&[("object", &Json::Null)]);
        assert!(labels.cost(&[&null], &[]) < 10);
        let label = compile("object.metadata.labels['a'].startsWith('x')");
        let labelled = json!({"metadata": {"labels": {"a": "xyz", "b": "a-longer-value"}}});
        let cost = label.cost(&[&ValueShapes::of(&[("object", &labelled)])], &[]);
        assert!(cost < 10, "{cost}");
        // the libraries' numbers are small
        let message = compile("'size must be below ' + string(variables.limit.asInteger())");
        let limit = compile("quantity('1Gi')");
        let cost = message.cost(&[&shapes], &[("limit", &limit)]);
        assert!(cost < 20, "{cost}");
        // reading a variable costs what computing it does
        let every = compile("object.spec.items.map(a, object.spec.items.filter(b, b == a))");
        let read = compile("size(variables.pairs) > 0");
        let with = read.cost(&[&shapes], &[("pairs", &every)]);
        assert!(with > PER_CALL_LIMIT, "{with}");
        // each variable is estimated once, however many read it: chains stay cheap to cost
        let mut chain = vec![compile("1")];
        for i in 1..60 {
            chain.push(compile(&format!(
                "variables.v{} + variables.v{}",
                i - 1,
                i - 1
            )));
        }
        let names: Vec<String> = (0..60).map(|i| format!("v{i}")).collect();
        let declared: Vec<(&str, &Expression)> =
            names.iter().map(String::as_str).zip(chain.iter()).collect();
        let last = compile("variables.v59 > 0");
        let started = std::time::Instant::now();
        let cost = last.cost(&[&shapes], &declared);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(cost > 0);
        // authorization checks cost 350000 each: two fit in one call
        let two = compile(
            "authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed()",
        );
        let cost = two.cost(&[&shapes], &[]);
        assert!((700_000..PER_CALL_LIMIT).contains(&cost), "{cost}");
        let three = compile("authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed() && authorizer.path('/c').check('get').allowed()");
        assert!(three.cost(&[&shapes], &[]) > PER_CALL_LIMIT);
    }
}
