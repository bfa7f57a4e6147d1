//! Audit annotations for the request being served (upstream's audit.AddAuditAnnotation):
//! admission plugins add them deep in a request, the API layer hands them to the request's
//! audit event. Like warnings they ride in a task-local collector, so no signature carries
//! them and writes outside a request (controllers) cost nothing.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static ANNOTATIONS: RefCell<Vec<(String, String)>>;
}

/// The annotations a request's handling added, in the order added (a key keeps its first
/// value), carried on its response for the audit filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations(pub Vec<(String, String)>);

/// Runs `f` collecting the annotations it adds.
pub async fn collect<F: Future>(f: F) -> (F::Output, Annotations) {
    ANNOTATIONS
        .scope(RefCell::new(Vec::new()), async {
            let out = f.await;
            let annotations = ANNOTATIONS.with(|a| a.take());
            (out, Annotations(annotations))
        })
        .await
}

/// Adds an annotation to the current request's audit event, if there is a request.
pub fn annotate(key: impl Into<String>, value: impl Into<String>) {
    let key = key.into();
    let _ = ANNOTATIONS.try_with(|a| {
        let mut a = a.borrow_mut();
        if !a.iter().any(|(k, _)| *k == key) {
            a.push((key, value.into()));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn collects_the_first_value_of_each_key_inside_a_request_only() {
        annotate("outside", "x");
        let ((), annotations) = collect(async {
            annotate("a", "1");
            annotate("b", "2");
            annotate("a", "3");
        })
        .await;
        assert_eq!(
            annotations.0,
            [
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "2".to_string())
            ]
        );
    }
}
