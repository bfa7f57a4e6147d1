//! Upstream's cost limits on CRD rules: each rule's estimated cost, times the most times it
//! can run, and the total of a schema, refused when the CRD is written (as apiextensions'
//! validation words it); and the budget a validation spends evaluating rules.

use registry::error::Cause;

use super::cost::{self, over_budget, PER_EXPRESSION_LIMIT, SCHEMA_LIMIT};
use super::schema::{Kind, Node};

/// The rules contributing most to a schema's total: up to 4, each at least 1% of the limit.
const MOST_EXPENSIVE: usize = 4;

/// The causes for rules over the limits, in the schema rooted at `root` at `path`; each
/// rule's own limit only when `limit_each_rule`.
pub(super) fn check(root: &Node, path: &str, limit_each_rule: bool) -> Vec<Cause> {
    let mut tally = Tally {
        limit_each_rule,
        causes: Vec::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    tally.node(root, Some(1));
    let mut causes = tally.causes;
    if tally.total > SCHEMA_LIMIT {
        for (field, _) in &tally.most_expensive {
            causes.push(Cause::forbidden(
                field,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        causes.push(Cause::forbidden(
            path,
            &over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                tally.total,
                SCHEMA_LIMIT,
            ),
        ));
    }
    causes
}

struct Tally {
    limit_each_rule: bool,
    causes: Vec<Cause>,
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Tally {
    /// Checks the rules of `node` and below; `cardinality` is how many values of it there
    /// can be (the product of the maxItems and maxProperties above), `None` if unbounded.
    fn node(&mut self, node: &Node, cardinality: Option<u64>) {
        for rule in &node.rules {
            let runs = cost::runs(cardinality, node);
            let expression = if rule.cost == 0 {
                0
            } else {
                rule.cost.saturating_mul(runs)
            };
            let field = format!("{}.rule", rule.at);
            if self.limit_each_rule && expression > PER_EXPRESSION_LIMIT {
                self.causes.push(Cause::forbidden(
                    &field,
                    &over_budget("estimated rule cost", expression, PER_EXPRESSION_LIMIT),
                ));
            }
            self.observe(field, expression);
            if let Some(message) = rule.message_cost {
                let field = format!("{}.messageExpression", rule.at);
                if self.limit_each_rule && message > PER_EXPRESSION_LIMIT {
                    self.causes.push(Cause::forbidden(
                        &field,
                        &over_budget(
                            "estimated messageExpression cost",
                            message,
                            PER_EXPRESSION_LIMIT,
                        ),
                    ));
                }
                self.observe(field, message);
            }
        }
        let below = match (cardinality, node.bounds.fan_out) {
            (Some(c), Some(f)) => Some(c.saturating_mul(f)),
            _ => None,
        };
        match &node.kind {
            Kind::Object(fields) => fields.values().for_each(|f| self.node(&f.node, below)),
            Kind::Map(values) => self.node(values, below),
            Kind::List { items, .. } => self.node(items, below),
            _ => {}
        }
    }

    fn observe(&mut self, field: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((field, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(MOST_EXPENSIVE);
    }
}
