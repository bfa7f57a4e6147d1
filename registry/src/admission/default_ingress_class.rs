//! The DefaultIngressClass admission plugin (upstream's
//! plugin/pkg/admission/network/defaultingressclass): an Ingress created naming no class,
//! by field or by the legacy annotation, gets the default IngressClass's name.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::default_class::DefaultClass;
use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, Result};
use crate::object::Object;
use crate::Registry;

/// The annotation that marks the default IngressClass.
pub const DEFAULT_INGRESS_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The class annotation older Ingresses use instead of the field.
const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    Arc::new(DefaultIngressClass {
        classes: DefaultClass::new(
            watched(registry, "networking.k8s.io", "ingressclasses"),
            Qualified::new("networking.k8s.io", "ingressclasses"),
            |class| class["metadata"]["annotations"][DEFAULT_INGRESS_CLASS_ANNOTATION] == "true",
        ),
    })
}

pub struct DefaultIngressClass {
    classes: DefaultClass,
}

fn names_class(ingress: &Value) -> bool {
    ingress["spec"]["ingressClassName"].is_string()
        || ingress["metadata"]["annotations"][LEGACY_CLASS_ANNOTATION].is_string()
}

#[async_trait]
impl Plugin for DefaultIngressClass {
    fn name(&self) -> &'static str {
        "DefaultIngressClass"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create
            && on_main(info, subresource, "networking.k8s.io", "ingresses")
    }

    async fn admit(&self, _: &Attributes<'_>, ingress: Option<&mut Object>) -> Result<()> {
        let Some(ingress) = ingress.filter(|i| !names_class(i)) else {
            return Ok(());
        };
        if let Some(class) = self.classes.name().await? {
            if let Some(spec) = ingress.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("ingressClassName".into(), Value::String(class));
            }
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }
}
