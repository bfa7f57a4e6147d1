//! Serving custom resources: the definitions' controller runs on every server from start (as
//! upstream's apiextensions controllers do inside kube-apiserver), whether or not this server
//! runs the other controllers.

use std::sync::Arc;

use apiextensions::Installer;

use crate::conversion_webhook::HttpsConversionWebhook;
use client::informer::InformerFactory;
use controllers::apiextensions::{ApiServiceRegistration, DefinitionController};
use openapi::OpenApi;
use tokio_util::sync::CancellationToken;
use tracing::error;

/// Starts following CustomResourceDefinitions; stops when `shutdown` is cancelled.
pub fn start(
    informers: &InformerFactory,
    documents: Arc<OpenApi>,
    shutdown: CancellationToken,
) -> Option<Arc<DefinitionController>> {
    let registry = informers.registry().clone();
    let webhook = Arc::new(HttpsConversionWebhook::new(registry.clone()));
    let installer =
        Arc::new(Installer::new(registry, Some(documents)).with_conversion_webhook(webhook));
    let controller = match DefinitionController::new(informers, installer) {
        Ok(controller) => controller,
        Err(e) => {
            error!(error = %e, "custom resources will not be served");
            return None;
        }
    };
    tokio::spawn(controller.clone().run(shutdown.child_token()));
    match ApiServiceRegistration::new(informers) {
        Ok(registration) => {
            tokio::spawn(registration.run(shutdown.child_token()));
        }
        Err(e) => error!(error = %e, "custom resources' APIServices will not be registered"),
    }
    Some(controller)
}
